"""The admission function the daemon calls for every submission and modification."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..deploy.form import DeployView, choose_form, deploy_active
from ..intent.admission import intent_fields
from ..snapshot import Snapshot
from ..snapshot.federation import FederationView
from ..tags import format_tags
from .accel import map_accelerators
from .arch import route_arch
from .classify import band_site_factor, classify
from .decision import Admission, AdmissionBuilder
from .federation import route_federation
from .request import JobRequest
from .rightsize import rightsize_request
from .trust import Accounting

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..scale.rightsize import ClassSuggestion


@dataclass(frozen=True)
class AdmissionOptions:
    """What the daemon may change besides partition/features.

    ``set_qos``: also set ``--qos`` to the tier name (only where those QOS exist in slurmdbd: an unknown QOS
    makes slurmctld reject the job); ``site_factor``: set the job's SiteFactor to the priority band;
    ``annotate_comment``: write ``hetsched:class=..,tier=..`` into an empty comment, with ``,flex=a|b`` when
    the job was routed to one of several arches its user allowed (the daemon's cycle may re-route it then).
    ``rightsize``: class name -> right-sizing suggestion to apply to new jobs (site ``policy.rightsize``
    in ``apply`` mode; see :mod:`.rightsize`); None = off. ``accounting``: what slurmctld validates (read from
    slurm.conf by the daemon), so which ``--qos``/``--account`` may grant a tier/class (:mod:`.trust`).
    ``deploy``: the image store and bundle cache as the daemon last read them (deploy/form.py).
    ``federation``: the federation's members as the daemon last read them (follow-the-sun, :mod:`.federation`).
    """

    set_qos: bool = False
    site_factor: bool = True
    annotate_comment: bool = True
    rightsize: Mapping[str, ClassSuggestion] | None = None
    accounting: Accounting = Accounting()
    deploy: DeployView = DeployView()
    federation: FederationView = FederationView()


def admit(req: JobRequest, snap: Snapshot, site: Site, options: AdmissionOptions = AdmissionOptions()) -> Admission:
    """Decide one request (pure, no I/O): accept with changes, or reject, always with reasons.

    Submissions get class/tier (priority band), accelerator mapping and arch routing; modifications are only
    checked for GRES no node could serve, and re-classified for the log (nothing is set on a modification:
    the cycle derives class and tier again from the job's owner, docs/trust.md). An empty snapshot (daemon just started) never causes a refusal.

    Example (demo site): ``--gres=gpu:1`` with no partition -> accept, ``partition=gpu``, reason
    "gpu:1 can run on a100, h100: partition gpu (2 suitable nodes free now)".
    """
    try:
        _ = req.routing_gres
    except ValueError as err:
        return Admission(reasons=(f"GRES request not understood ({err}): unchanged",))
    out = AdmissionBuilder()
    if req.op == "modify":  # checked and re-classified (logged); class and tier are re-derived by the cycle
        refused = map_accelerators(req, snap, None, AdmissionBuilder())
        return refused or Admission(reasons=("modification checked", classify(req, site, options.accounting).why))
    if req.intent is not None:  # the script's #HETSCHED intent line: its fields, then admission as usual
        derived = intent_fields(req, site)
        if isinstance(derived, str):
            return Admission.reject(derived, cause="intent")
        out.add("intent", derived[1], **derived[0])
        req = replace(req, **{k: v for k, v in derived[0].items() if k in ("features", "comment", "time_limit")})
    cls = snap.memo(("class", req.comment, req.wckey, req.account, req.qos, req.user_id, id(site)),
                    lambda: classify(req, site, options.accounting))
    wclass = cls.workload_class
    changes: dict[str, str | int] = {}
    if options.site_factor and cls.band:
        changes["site_factor"] = band_site_factor(cls.band)
    if options.set_qos and cls.tier and not req.qos:
        changes["qos"] = cls.tier.name
    if options.annotate_comment and not req.comment and (wclass or cls.tier):
        changes["comment"] = format_tags(class_=wclass.name if wclass else "-", tier=cls.tier.name if cls.tier else "-")
        if wclass and cls.priority_class != wclass.name:  # a claim not granted: say whose band it has
            changes["comment"] += f",band-of={cls.priority_class or '-'}"
    out.add("class", cls.why, **changes)
    if deploy_active(site):
        form = choose_form(req, wclass, site, options.deploy)
        if form.refuse:
            return Admission.reject(form.reason)
        out.add("form", form.reason, **form.changes)
        if "partition" in form.changes:  # route the job as it will run
            req = replace(req, partition=form.changes["partition"])
    sized = rightsize_request(req, wclass.name if wclass else None, options.rightsize)
    if sized:
        resized, why, tag = sized
        out.add("rightsize", why, **resized)
        if resized:  # route the job as it will run
            req = replace(req, **{_REQ_FIELD.get(k, k): v for k, v in resized.items()})
    refused = map_accelerators(req, snap, wclass, out)
    if refused:
        return refused
    allowed = route_arch(req, snap, wclass, out)
    if allowed and options.annotate_comment and not req.comment:
        tag = out.changes.get("comment") or format_tags(class_="-", tier="-")
        out.changes["comment"] = f"{tag},flex={'|'.join(sorted(allowed))}"
    if sized and sized[2]:
        base = out.changes.get("comment") or req.comment
        out.changes["comment"] = f"{base},{sized[2]}" if base else sized[2]
    if site.federation is not None and snap.taken_at:  # "now" is the snapshot's time: none before the first
        routed = route_federation(req, wclass, site, options.federation,
                                  dt.datetime.fromtimestamp(snap.taken_at, dt.timezone.utc))
        if routed:
            out.add("federation", routed[1], **routed[0])
    return out.build()


# job_desc field (what a decision sets) -> JobRequest field (what the shim sent), where they differ
_REQ_FIELD = {"min_mem_per_cpu": "mem_per_cpu_mb", "min_mem_per_node": "mem_per_node_mb"}
