"""Job usage records from a simulation run, for the cost report (``hetsched cost report -w``): the same
:class:`~.report.JobUse` the accounting export gives, so a simulated month and a live one are priced alike.

What the simulator does not have is filled in plainly: the account is ``user<N>`` (the trace's user id), the
partition is the first of the site's partitions that holds the group of the job's first node, and there is no
billing TRES (Slurm computes it; the simulator does not)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .report import JobUse


def node_names(site, machine) -> list[tuple[str, str]]:
    """(hostname, node group) of each simulated node index: the machine's groups in order, each group's
    hostnames."""
    hosts = {g.name: g.hostnames for g in site.node_groups}
    names: list[tuple[str, str]] = []
    for g in machine.groups:
        known = hosts.get(g.name)
        if known is None or len(known) != g.count:
            raise ValueError(f"the simulated machine's group '{g.name}' ({g.count} nodes) is not a node group of "
                             f"site {site.name}")
        names += [(h, g.name) for h in known]
    return names


def simulated_usage(site, machine, jobs, begin: np.ndarray, end: np.ndarray,
                    job_nodes: Mapping[int, np.ndarray]) -> list[JobUse]:
    """One JobUse per job that started (``job_nodes``: job index -> node indices), in job order; ``jobs`` is the
    job table the run used (per-node cores, memory and devices), ``begin``/``end`` its times."""
    names = node_names(site, machine)
    part_of: dict[str, str] = {}
    for part in site.partitions:
        for g in part.node_groups:
            part_of.setdefault(g, part.name)
    classes = jobs.class_names
    out = []
    for j in sorted(job_nodes):
        nodes = tuple(names[int(i)][0] for i in job_nodes[j])
        group = names[int(job_nodes[j][0])][1]
        n = len(nodes)
        gres = {}
        if jobs.gres_name[j] >= 0 and jobs.gres_count[j] > 0:
            gres[jobs.gres_names[int(jobs.gres_name[j])]] = float(jobs.gres_count[j]) * n
        wclass = classes[int(jobs.wclass[j])] if 0 <= int(jobs.wclass[j]) < len(classes) else ""
        out.append(JobUse(str(int(jobs.id[j])), f"user{int(jobs.user[j])}", part_of.get(group, ""),
                          wclass, nodes, float(jobs.cores[j]) * n, float(jobs.mem_gb[j]) * n, gres,
                          float(end[j] - begin[j])))
    return out
