"""Which nodes Slurm 22.05 gives a job among those that can take it (select/cons_tres with power saving), for
fidelity replays; the engine's own FirstFit takes nodes that are on first, then the rest in Weight order.

What slurmctld does (src/slurmctld/node_scheduler.c ``_build_node_list``/``_set_sched_weight`` and the
cons_tres ``_eval_nodes``), and what the replays' records show:

- nodes are tried in tiers of equal scheduling weight, lowest first: the powered nodes (on, or already
  powering up) by their node Weight, then every powered-down node in one last tier: a powered-down node's
  set gets the reboot weight and the "boot required" flag, so its own Weight no longer orders it. Seen in
  the seed-21 record: a 32-core arm job went to the GPU node that was already booting (Weight 7) rather than
  to a powered-down arm node (Weight 2), and a 2-node x86 job took the powered-up A100 node and then the
  powered-down DPU node rather than the powered-down x86 nodes of lower Weight.
- a node the same scheduling pass has just given a job is still powered down for the rest of that pass
  (slurmctld's power thread resumes it afterwards);
- inside a tier, nodes form runs of consecutive node indices; the best-fitting run is used first (the one
  with the fewest free CPUs that holds what is still needed; if none holds it, the largest run);
- from that run, a job that needs one more node takes the node with the fewest free CPUs that fits (the
  first such on a tie), a job that needs more takes the run's nodes in index order.
"""

from __future__ import annotations

import numpy as np


def select_nodes(cand: np.ndarray, need: int, free: np.ndarray, weight: np.ndarray,
                 powered_down: np.ndarray) -> np.ndarray:
    """``need`` nodes of ``cand`` (node indices, each able to take one share of the job) as Slurm picks them
    (module docstring). ``free``, ``weight`` and ``powered_down`` are per node of the whole machine (free
    CPUs, node Weight, whether Slurm sees it powered down). Returns the chosen indices in tier order."""
    cand = np.asarray(cand, dtype=np.int64)
    if need >= len(cand):
        return cand[:need]
    down = powered_down[cand]
    tiers = [cand[~down & (weight[cand] == w)] for w in np.unique(weight[cand[~down]])] + [cand[down]]
    out: list[int] = []
    for tier in tiers:
        if len(out) == need:
            break
        out += _from_tier(np.sort(tier), need - len(out), free)
    return np.asarray(out, dtype=np.int64)


def _from_tier(nodes: np.ndarray, need: int, free: np.ndarray) -> list[int]:
    """Up to ``need`` nodes of one tier (sorted indices): best-fit runs of consecutive indices first."""
    if not len(nodes):
        return []
    cuts = np.flatnonzero(np.diff(nodes) != 1) + 1
    runs = [r.tolist() for r in np.split(nodes, cuts)]
    out: list[int] = []
    while runs and len(out) < need:
        rem = need - len(out)  # every node here holds a share: a run holds what is needed if it has the nodes
        best, best_cpus, best_ok = 0, -1, False
        for k, run in enumerate(runs):
            cpus, ok = int(free[run].sum()), len(run) >= rem
            if best_cpus < 0 or (ok and not best_ok) or (ok and cpus < best_cpus) or (not ok and not best_ok
                                                                                        and cpus > best_cpus):
                best, best_cpus, best_ok = k, cpus, ok
        run = runs.pop(best)
        if rem == 1:
            out.append(run[int(np.argmin(free[run]))])  # fewest free CPUs; argmin takes the first on a tie
        else:
            out += run[:rem]
    return out
