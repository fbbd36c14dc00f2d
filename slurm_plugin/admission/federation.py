"""Follow-the-sun across a Slurm federation: which member a portable job should run on (pure).

A job is portable when its workload class is one of the federation's ``portable_classes`` (every class when
that list is empty) and the user did not pin it to one cluster (``-M NAME``; a ``-M`` list of several members
narrows the choice to them). Among the candidate members, in this order:

1. a member at local night (``federation.night`` read in the member's time zone) with room for the job now;
2. else a member with room (day);
3. else none: the job is left as submitted, and Slurm's sibling jobs start it on the first member that frees
   up.

Ties go to the member with the most free CPUs, then to the order of ``federation.members``. "Room" means the
member's idle CPUs cover the job's and enough of its nodes have idle CPUs for the job's node count (a coarse
test: partitions and whole-node requests are not looked at). A member whose controller did not answer the last
read is not a candidate (an outage sends new work to the others); before the first read nothing is changed.
The choice is applied through Slurm's own knob, the job's ``clusters`` (as ``-M`` sets it), so the federation
runs the job only there.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from ..scale.calendar import is_active
from ..snapshot.federation import FederationView, MemberCapacity
from .request import JobRequest

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..site.schema import FederationMember, WorkloadClass


def route_federation(req: JobRequest, wclass: WorkloadClass | None, site: Site, view: FederationView,
                     now: dt.datetime) -> tuple[dict[str, str], str] | None:
    """``({"clusters": NAME}, reason)`` for a portable job with a member to prefer, ``({}, reason)`` when it
    stays as submitted, None when federation routing does not apply (no federation, not portable)."""
    fed = site.federation
    if fed is None or (fed.portable_classes and (wclass is None or wclass.name not in fed.portable_classes)):
        return None
    asked = [c.strip() for c in (req.clusters or "").split(",") if c.strip()]
    if len(asked) == 1:
        return None  # pinned by the user
    candidates = [m for m in fed.members if not asked or m.cluster in asked]
    if not view.members:
        return {}, "federation: members not read yet: clusters left as submitted"
    down = [m.cluster for m in candidates if view.members.get(m.cluster, "unread") is None]
    night_calendar = _night(site)
    rows = []
    for m in candidates:
        cap = view.members.get(m.cluster)
        if cap is None or not _fits(req, cap):
            continue
        rows.append((not is_active(night_calendar, now, m.timezone), -cap.free_cpus, len(rows), m, cap))
    outage = f"; {', '.join(down)} not answering" if down else ""
    if not rows:
        return {}, f"federation: no member has room now{outage}: Slurm's sibling jobs start it where room frees"
    day, _, _, best, cap = min(rows, key=lambda r: r[:3])
    others = [f"{_where(m, now, night_calendar)}" for _, _, _, m, _ in rows if m is not best]
    why = (f"follow-the-sun: {_where(best, now, night_calendar)}, {cap.free_cpus} CPUs free"
           + (f" (also with room: {', '.join(others)})" if others else "") + outage + f": clusters={best.cluster}")
    return {"clusters": best.cluster}, why


def _fits(req: JobRequest, cap: MemberCapacity) -> bool:
    nodes = max(req.min_nodes or 1, 1)
    return cap.free_cpus >= req.cpus_per_node * nodes and cap.free_nodes >= nodes


def _where(m: FederationMember, now: dt.datetime, night) -> str:
    local = now.astimezone(_zone(m.timezone))
    return f"{m.cluster} ({m.timezone} {local:%H:%M}, {'night' if is_active(night, now, m.timezone) else 'day'})"


def _night(site: Site):
    from ..site.schema import Calendar  # loaded already: the site is made of its models

    return Calendar(name="night", windows=site.federation.night)


def _zone(name: str):
    import zoneinfo

    return zoneinfo.ZoneInfo(name)
