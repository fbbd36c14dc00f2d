"""Checks that span several fields of a parsed :class:`Site` (the models check single fields)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from .errors import Problem, format_loc
from .priority import BAND_SPAN, CLASS_STEP, SITE_FACTOR_MAX, highest_site_factor, top_band
from .bounds import MAX_NODES
from .schema import Site

HOSTNAME_MAX = 64  # Slurm's node names are host names


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(choices)})"


def site_problems(site: Site) -> Iterator[Problem]:
    """Yield every cross-field problem of ``site``; an empty iterator means the site is consistent."""
    total = site.node_count()
    if total > MAX_NODES:  # checked before any hostname is expanded
        yield Problem(("clusters",), f"{total} nodes in all; at most {MAX_NODES} per site")
        return
    group_names: dict[str, tuple] = {}
    hosts: dict[str, tuple] = {}
    for ci, cluster in enumerate(site.clusters):
        for gi, group in enumerate(cluster.node_groups):
            loc = ("clusters", ci, "node_groups", gi)
            if group.name in group_names:
                yield Problem(loc + ("name",), f"duplicate node group name '{group.name}' "
                              f"(first at {format_loc(group_names[group.name])})")
            group_names.setdefault(group.name, loc)
            longest = max(group.hostnames[0], group.hostnames[-1], key=len)
            if len(longest) > HOSTNAME_MAX:
                yield Problem(loc + ("prefix",), f"node name '{longest[:20]}...' is {len(longest)} characters; "
                              f"at most {HOSTNAME_MAX}")
            for host in group.hostnames:
                if host in hosts:
                    yield Problem(loc + ("prefix",), f"duplicate node name '{host}' "
                                  f"(also in {format_loc(hosts[host])})")
                    break
                hosts[host] = loc
    known = list(group_names)
    part_names: set[str] = set()
    defaults = 0
    for pi, part in enumerate(site.partitions):
        if part.name in part_names:
            yield Problem(("partitions", pi, "name"), f"duplicate partition name '{part.name}'")
        part_names.add(part.name)
        defaults += part.default
        for ni, gname in enumerate(part.node_groups):
            if gname not in group_names:
                yield Problem(("partitions", pi, "node_groups", ni),
                              f"partition '{part.name}' names node group '{gname}' that does not exist"
                              + _did_you_mean(gname, known))
    if defaults > 1:
        yield Problem(("partitions",), f"{defaults} partitions are marked default; at most one may be")
    yield from _policy_problems(site)
    yield from _federation_problems(site)


def _policy_problems(site: Site) -> Iterator[Problem]:
    policy = site.policy
    if highest_site_factor(site) > SITE_FACTOR_MAX:
        tiers = policy.qos_tiers
        loc = (("policy", "qos_tiers", max(range(len(tiers)), key=lambda k: tiers[k].priority), "priority")
               if tiers else ("policy", "workload_classes"))
        yield Problem(loc, f"top band {top_band(site):,} (top tier priority + {CLASS_STEP} per class after the "
                      f"first) gives SiteFactor {highest_site_factor(site):,} to jobs past the age floor; the shim "
                      f"accepts at most {SITE_FACTOR_MAX:,}, so keep the top band at most "
                      f"{SITE_FACTOR_MAX // BAND_SPAN - 2:,}")
    classes = [c.name for c in policy.workload_classes]
    for i, name in enumerate(classes):
        if name in classes[:i]:
            yield Problem(("policy", "workload_classes", i, "name"), f"duplicate workload class '{name}'")
    if policy.default_class and policy.default_class not in classes:
        yield Problem(("policy", "default_class"), f"unknown workload class '{policy.default_class}'"
                      + _did_you_mean(policy.default_class, classes))
    tiers = [t.name for t in policy.qos_tiers]
    for i, tier in enumerate(policy.qos_tiers):
        for j, name in enumerate(tier.preempts):
            if name == tier.name:
                yield Problem(("policy", "qos_tiers", i, "preempts", j), f"tier '{name}' cannot preempt itself")
            elif name not in tiers:
                yield Problem(("policy", "qos_tiers", i, "preempts", j), f"unknown QoS tier '{name}'"
                              + _did_you_mean(name, tiers))
    for i, wc in enumerate(policy.workload_classes):
        if wc.qos and wc.qos not in tiers:
            yield Problem(("policy", "workload_classes", i, "qos"), f"unknown QoS tier '{wc.qos}'"
                          + _did_you_mean(wc.qos, tiers))
    for i, grant in enumerate(policy.grants):
        for kind, names, known in (("classes", grant.classes, classes), ("tiers", grant.tiers, tiers)):
            for j, name in enumerate(names):
                if name not in known:
                    yield Problem(("policy", "grants", i, kind, j), f"unknown {kind[:-2] if kind == 'classes' else 'tier'}"
                                  f" '{name}'" + _did_you_mean(name, known))
    if policy.rightsize.mode == "apply":
        for i, name in enumerate(policy.rightsize.classes):
            if name not in classes:
                yield Problem(("policy", "rightsize", "classes", i), f"unknown workload class '{name}'"
                              + _did_you_mean(name, classes))
    cal_names = [c.name for c in policy.calendars]
    for i, name in enumerate(cal_names):
        if name in cal_names[:i]:
            yield Problem(("policy", "calendars", i, "name"), f"duplicate calendar '{name}'")
    parts = [p.name for p in site.partitions]
    groups = [g.name for g in site.node_groups]
    for i, r in enumerate(policy.reshapes):
        loc = ("policy", "reshapes", i)
        if r.calendar not in cal_names:
            yield Problem(loc + ("calendar",), f"unknown calendar '{r.calendar}'" + _did_you_mean(r.calendar, cal_names))
        if r.partition not in parts:
            yield Problem(loc + ("partition",), f"unknown partition '{r.partition}'" + _did_you_mean(r.partition, parts))
        for j, g in enumerate(r.add_groups):
            if g not in groups:
                yield Problem(loc + ("add_groups", j), f"unknown node group '{g}'" + _did_you_mean(g, groups))
        if not r.add_groups and r.keep_fraction is None:
            yield Problem(loc, "a reshape needs add_groups and/or keep_fraction")


def _federation_problems(site: Site) -> Iterator[Problem]:
    fed = site.federation
    if fed is None:
        return
    names = [m.cluster for m in fed.members]
    for i, name in enumerate(names):
        if name in names[:i]:
            yield Problem(("federation", "members", i, "cluster"), f"cluster '{name}' is listed twice")
    if site.slurm.cluster_name not in names:
        yield Problem(("federation", "members"), f"this site's cluster '{site.slurm.cluster_name}' "
                      f"(slurm.cluster_name) is not a member" + _did_you_mean(site.slurm.cluster_name, names))
    classes = [c.name for c in site.policy.workload_classes]
    for i, name in enumerate(fed.portable_classes):
        if name not in classes:
            yield Problem(("federation", "portable_classes", i), f"unknown workload class '{name}'"
                          + _did_you_mean(name, classes))
