"""Workload class and QoS tier of a job, and the priority band they map to.

The convention (documented for users in job_submit/README.md; who may have what: docs/trust.md):

- workload class (what the job is, for routing, packing and right-sizing): ``--comment="class=NAME"`` (a
  ``class=`` word anywhere in the comment), else ``--wckey=NAME`` or ``--wckey=class=NAME``, else
  ``--account=NAME`` when NAME is a class, else the policy's ``default_class``;
- priority class: the workload class when the job's owner is entitled to it (:mod:`.trust`: root, a site
  grant, or an account Slurm's accounting enforces), else the ``default_class``: a claim never raises priority;
- tier: ``--qos=NAME`` when NAME is a tier and Slurm's accounting enforces QOS access or the owner is granted
  it, else ``--comment="tier=NAME"`` if it is not above the priority class's own tier (users may only lower
  their band), else that class's ``qos``, else the lowest tier;
- band: ``tier.priority + CLASS_STEP * (number of classes - 1 - position of the priority class)``, so tiers
  dominate and, within a tier, classes keep the policy's order (first = highest);
- SiteFactor: ``band x BAND_SPAN`` (:func:`band_site_factor`). One band unit spans the live ranker's
  ``RANK_LEVELS`` levels of ``LEVEL_STEP`` (:mod:`slurm_plugin.rank.dqn.live` adds ``level x LEVEL_STEP``), so
  the value admission sets at submit and the one the cycle sets later are on one scale: a new job of a higher
  band is never below a ranked job of a lower one.

Admission and the cycle's ranker call the same :func:`classify` on what Slurm keeps for the job (owner uid,
qos, account, comment), so a comment edited after submission can lower a job's band but never raise it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..site.priority import (  # noqa: F401  (the scale is the site's; re-exported here)
    BAND_SPAN, CLASS_STEP, LEVEL_STEP, RANK_LEVELS, SITE_FACTOR_MAX, band_site_factor, top_band)
from .request import JobRequest
from .trust import Accounting, Entitlement, entitlement

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..site.schema import QosTier, WorkloadClass


@dataclass(frozen=True)
class Classification:
    """The job's class (None if the site has none), tier (None if the site has none), band, and why;
    ``priority_class``: the class the band was computed for (the workload class, or the default class when
    the owner is not entitled to it)."""

    workload_class: WorkloadClass | None
    tier: QosTier | None
    band: int
    why: str
    priority_class: str | None = None


def _find_class(req: JobRequest, classes: dict[str, WorkloadClass],
                default_account: str = "") -> tuple[str | None, str, str]:
    """(class name, where it came from, a complaint about an unknown name or ''); ``default_account``: the
    user's in slurmdbd (the account Slurm gives a job that names none)."""
    tagged = req.comment_tags.get("class")
    if tagged:
        if tagged in classes:
            return tagged, "comment", ""
        return None, "", f"unknown class '{tagged}' in --comment (known: {', '.join(classes)})"
    wckey = (req.wckey or "").removeprefix("class=")
    if wckey in classes:
        return wckey, "wckey", ""
    if req.account in classes:
        return req.account, "account", ""
    if not req.account and default_account in classes:
        return default_account, "default account", ""
    return None, "", ""


def workload_class_name(site: Site, comment: str | None, wckey: str | None, account: str | None) -> str | None:
    """The workload class a job's comment, wckey and account name (the rule above), else the policy's default
    class (None if it has none): for readers of history (``hetsched cost report``) that have no owner."""
    req = JobRequest(comment=comment or None, wckey=wckey or None, account=account or None)
    name, _source, _complaint = _find_class(req, {c.name: c for c in site.policy.workload_classes})
    return name or site.policy.default_class


def _lowest(tiers: tuple[QosTier, ...]) -> QosTier | None:
    return min(tiers, key=lambda t: t.priority, default=None)


def _find_tier(req: JobRequest, site: Site, pclass: WorkloadClass | None, ent: Entitlement,
               accounting: Accounting) -> tuple[QosTier | None, str]:
    tiers = {t.name: t for t in site.policy.qos_tiers}
    note = ""
    if req.qos in tiers:
        known = ent.associations is not None  # slurmdbd's association decides, not the enforce flag
        if ent.has_tier(req.qos) or accounting.qos and not known:
            return tiers[req.qos], "--qos" + (" (slurmdbd association)" if known else
                                              " (enforced by accounting)" if accounting.qos else "")
        note = (f"; --qos={req.qos} ignored (not in the user's slurmdbd association)" if known else
                f"; --qos={req.qos} ignored (not enforced by Slurm accounting, not granted)")
    ceiling = tiers.get(pclass.qos) if pclass and pclass.qos else None
    assoc = ent.associations
    if assoc is not None:  # no tier the job's association cannot use (Slurm would refuse the job's QOS)
        allowed = assoc.qos(req.account if req.account in assoc.accounts else None)
        fits = [t for t in tiers.values() if t.name in allowed and (ceiling is None or t.priority <= ceiling.priority)]
        best = max(fits, key=lambda t: t.priority, default=None)
        if ceiling is not None and best is not ceiling:
            note += f"; tier {ceiling.name} of class {pclass.name} is not a QOS of the job's association"
            ceiling = best
        tiers = {n: t for n, t in tiers.items() if n in allowed}
    asked = tiers.get(req.comment_tags.get("tier", ""))
    if asked and (ceiling is None or asked.priority <= ceiling.priority) and (
            ceiling is not None or ent.has_tier(asked.name)):
        return asked, "comment" + note
    if ceiling:
        return ceiling, f"class {pclass.name}" + note
    return _lowest(site.policy.qos_tiers), "lowest tier" + note


def classify(req: JobRequest, site: Site, accounting: Accounting = Accounting()) -> Classification:
    """Class, tier and band for ``req`` under ``site.policy``, granted to its ``user_id`` (see the module doc).

    >>> # --comment=class=web on the demo site by root: class web (position 2 of 4), tier silver (500) -> 510;
    >>> # by a user without a grant: class web for routing, priority of batch/bronze -> 0
    """
    policy = site.policy
    classes = {c.name: c for c in policy.workload_classes}
    ent = entitlement(req.user_id, policy, accounting.table(), req.account)
    assoc = ent.associations
    name, source, complaint = _find_class(req, classes, assoc.default_account if assoc else "")
    if name is None and policy.default_class in classes:
        name, source = policy.default_class, "default"
    wclass = classes.get(name) if name else None
    granted = name is None or source == "default" or ent.has_class(name) or (
        source == "account" and accounting.associations and assoc is None)
    pname = name if granted else (policy.default_class if policy.default_class in classes else None)
    pclass = classes.get(pname) if pname else None
    tier, tier_source = _find_tier(req, site, pclass, ent, accounting)
    position = list(classes).index(pname) if pname else len(classes) - 1
    band = (tier.priority if tier else 0) + CLASS_STEP * max(len(classes) - 1 - position, 0)
    claim = "" if granted else f", priority of class {pname or '-'} ({name} not granted to {ent.why})"
    if granted and assoc is not None and name in assoc.accounts and source != "default":
        claim = ", granted by the user's slurmdbd associations"
    why = (f"class {name or '-'} (from {source or 'nothing'}{claim}), tier {tier.name if tier else '-'} "
           f"(from {tier_source}), priority band {band}")
    return Classification(wclass, tier, band, f"{complaint}; {why}" if complaint else why, pname)
