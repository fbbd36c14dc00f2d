"""Calendar reshaping: which nodes each partition should have now, and the moves that get it there.

Pure: ``plan_reshape(snapshot, site, now)`` compares every partition named by a reshape rule with the nodes its
active rules want (see :class:`~slurm_plugin.site.schema.Reshape`) and returns one ``SetPartitionNodes`` per
partition that must change. Drain-then-move without draining: a node that should leave but still runs a job of
that partition stays until the job ends (the reason says so), then leaves on a later cycle.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING

import hostlist

from ..decision import Cause, Decision, SetPartitionNodes
from ..snapshot import Snapshot
from .calendar import is_active

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site


def wanted_nodes(site: Site, partition: str, now: dt.datetime) -> tuple[list[str], list[str]]:
    """(nodes the partition should have now, names of the rules that shaped it), in site order."""
    part = next(p for p in site.partitions if p.name == partition)
    calendars = {c.name: c for c in site.policy.calendars}
    keep: dict[str, float] = {}
    extra: list[str] = []
    why: list[str] = []
    for rule in site.policy.reshapes:
        if rule.partition != partition:
            continue
        cal = calendars[rule.calendar]
        if rule.keep_fraction is not None:
            for gname in part.node_groups:
                if is_active(cal, now, site.group(gname).timezone or "UTC"):
                    keep[gname] = min(keep.get(gname, 1.0), rule.keep_fraction)
                    why.append(f"{rule.name} ({gname} keeps {rule.keep_fraction:.0%})")
        for gname in rule.add_groups:
            if is_active(cal, now, site.group(gname).timezone or "UTC"):
                extra += [h for h in site.group(gname).hostnames if h not in extra]
                why.append(f"{rule.name} (+{gname})")
    nodes: list[str] = []
    for gname in part.node_groups:
        hosts = list(site.group(gname).hostnames)
        nodes += hosts[: math.ceil(len(hosts) * keep.get(gname, 1.0))]
    nodes += [h for h in extra if h not in nodes]
    return nodes, why


def plan_reshape(snapshot: Snapshot, site: Site, now: dt.datetime) -> Decision:
    """The partition changes the calendar asks for now (empty if every partition already matches)."""
    actions = []
    for partition in dict.fromkeys(r.partition for r in site.policy.reshapes):
        current = snapshot.partition(partition)
        if current is None:
            continue
        want, why = wanted_nodes(site, partition, now)
        running = {h for j in snapshot.jobs if j.running and j.partition == partition and j.nodes
                   for h in hostlist.expand_hostlist(j.nodes)}
        leaving = [h for h in current.nodes if h not in want]
        held = [h for h in leaving if h in running]
        target = [h for h in current.nodes if h in want or h in held] + [h for h in want if h not in current.nodes]
        if set(target) == set(current.nodes):
            continue
        reason = (f"calendar: {', '.join(why) if why else 'no rule active: back to the site layout'}; "
                  f"{len(target)} nodes")
        if held:
            reason += f"; {hostlist.collect_hostlist(held)} still run jobs of {partition} and leave when they end"
        actions.append(SetPartitionNodes(partition, tuple(target), reason, Cause.CALENDAR))
    return Decision(tuple(actions), "reshape")
