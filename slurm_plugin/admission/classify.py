"""Workload class and QoS tier of a job, and the priority band they map to.

The convention (documented for users in job_submit/README.md):

- class: ``--comment="class=NAME"`` (a ``class=`` word anywhere in the comment), else ``--wckey=NAME`` or
  ``--wckey=class=NAME``, else ``--account=NAME`` when NAME is a class, else the policy's ``default_class``;
- tier: ``--qos=NAME`` when NAME is a tier (Slurm itself checks the user may use it), else
  ``--comment="tier=NAME"`` if it is not above the class's own tier (users may only lower their band),
  else the class's ``qos``, else the lowest tier;
- band: ``tier.priority + CLASS_STEP * (number of classes - 1 - position of the class)``, so tiers dominate
  and, within a tier, classes keep the policy's order (first = highest);
- SiteFactor: ``band x BAND_SPAN`` (:func:`band_site_factor`). One band unit spans the live ranker's
  ``RANK_LEVELS`` levels of ``LEVEL_STEP`` (:mod:`slurm_plugin.rank.dqn.live` adds ``level x LEVEL_STEP``), so
  the value admission sets at submit and the one the cycle sets later are on one scale: a new job of a higher
  band is never below a ranked job of a lower one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..site import Site
from ..site.schema import QosTier, WorkloadClass
from .request import JobRequest

CLASS_STEP = 10
RANK_LEVELS = 40  # levels the live ranker orders jobs by inside one band
LEVEL_STEP = 100  # SiteFactor per level
BAND_SPAN = RANK_LEVELS * LEVEL_STEP  # SiteFactor per band unit


def band_site_factor(band: int, level: int = 0, level_step: int = LEVEL_STEP) -> int:
    """The SiteFactor of a job in ``band`` at ``level`` (0 = admission's value before any ranking)."""
    return int(band) * RANK_LEVELS * level_step + int(level) * level_step


@dataclass(frozen=True)
class Classification:
    """The job's class (None if the site has none), tier (None if the site has none), band, and why."""

    workload_class: WorkloadClass | None
    tier: QosTier | None
    band: int
    why: str


def _find_class(req: JobRequest, classes: dict[str, WorkloadClass]) -> tuple[str | None, str, str]:
    """(class name, where it came from, a complaint about an unknown name or '')."""
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
    return None, "", ""


def _lowest(tiers: tuple[QosTier, ...]) -> QosTier | None:
    return min(tiers, key=lambda t: t.priority, default=None)


def _find_tier(req: JobRequest, site: Site, wclass: WorkloadClass | None) -> tuple[QosTier | None, str]:
    tiers = {t.name: t for t in site.policy.qos_tiers}
    if req.qos in tiers:
        return tiers[req.qos], "--qos"
    ceiling = tiers.get(wclass.qos) if wclass and wclass.qos else None
    asked = tiers.get(req.comment_tags.get("tier", ""))
    if asked and (ceiling is None or asked.priority <= ceiling.priority):
        return asked, "comment"
    if ceiling:
        return ceiling, f"class {wclass.name}" if wclass else "class"
    return _lowest(site.policy.qos_tiers), "lowest tier"


def top_band(site: Site) -> int:
    """The highest band :func:`classify` can give on ``site`` (top tier, first class)."""
    policy = site.policy
    return (max([t.priority for t in policy.qos_tiers] or [0])
            + CLASS_STEP * max(len(policy.workload_classes) - 1, 0))


def classify(req: JobRequest, site: Site) -> Classification:
    """Class, tier and band for ``req`` under ``site.policy`` (pure).

    >>> # --comment=class=web on the demo site: class web (position 2 of 4), tier silver (500) -> 510
    """
    policy = site.policy
    classes = {c.name: c for c in policy.workload_classes}
    name, source, complaint = _find_class(req, classes)
    if name is None and policy.default_class in classes:
        name, source = policy.default_class, "default"
    wclass = classes.get(name) if name else None
    tier, tier_source = _find_tier(req, site, wclass)
    position = list(classes).index(name) if name else len(classes) - 1
    band = (tier.priority if tier else 0) + CLASS_STEP * max(len(classes) - 1 - position, 0)
    why = (f"class {name or '-'} (from {source or 'nothing'}), tier {tier.name if tier else '-'} "
           f"(from {tier_source}), priority band {band}")
    return Classification(wclass, tier, band, f"{complaint}; {why}" if complaint else why)
