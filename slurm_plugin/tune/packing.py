"""The twin's packing sweep (issue 13, item 1: "packing on/off"): after the ranking is chosen, replay the chosen
ranking with the simulator's packing step (:mod:`slurm_plugin.sim.packing`: the daemon's MILP every cycle) on
and off, and choose.

Both arms run with the site's per-class speed factors (``simulate(packing="off"|"milp")``), so they compare the
same physics; the ranking sweep runs without them, so the figures here are not the ranking's. Each arm is
replayed on the tuning part (judged on the same rolling-origin validation blocks as the ranking) and on the whole
history (scored on the held-back jobs only: the prediction). The choice is :func:`.select.choose` on the two
arms with the ranking's bound, ``z`` and tie margin and no incumbent, off being the simpler: packing is turned on
only when it is ahead on the site's objective by more than the tie margin; a tie goes to off.

Packing needs a site model whose node groups are the machine's (a history with no site, e.g. an SWF trace on
its own header's machine, has none): then nothing is swept and the policy file keeps the previous file's
packing section, as before this sweep existed; :attr:`PackingTune.reason` says why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..policy import RankingSpec
from ..sim.run import Prepared
from .score import Score, score
from .select import BOUND_PRICE, Choice, Entry, choose
from .tuner import TuneResult, _entry

ARMS = (False, True)  # packing off, on
COMPLEXITY = {False: 0.0, True: 1.0}  # off is the simpler: ties go to it


def arm_label(enabled: bool) -> str:
    return f"packing {'on' if enabled else 'off'}"


@dataclass
class PackingTune:
    """The packing sweep of one backfill mode (``swept`` False: not run, ``reason`` says why)."""

    backfill: bool
    ranking: str  # the chosen ranking's label, replayed under both arms
    swept: bool
    reason: str
    choice: Choice | None = None
    entries: dict[bool, Entry] = field(default_factory=dict)  # arm -> validation entry (tuning part)
    test: dict[bool, Score] = field(default_factory=dict)  # arm -> held-back score
    stats: dict[bool, dict] = field(default_factory=dict)  # arm -> the packing step's stats on the whole history
    cpu_s: float = 0.0

    @property
    def enabled(self) -> bool | None:
        return None if self.choice is None else self.choice.winner == arm_label(True)

    @property
    def runner_up(self) -> bool | None:
        return None if self.enabled is None else not self.enabled


def unavailable(p: Prepared) -> str | None:
    """Why packing cannot be replayed on ``p`` (None: it can)."""
    if p.site is None:
        return "the history has no site model (give --site)"
    site_groups = sorted(g.name for g in p.site.node_groups)
    machine_groups = sorted(g.name for g in p.machine.groups)
    if site_groups != machine_groups:
        return (f"the site's node groups ({', '.join(site_groups)}) are not the machine's "
                f"({', '.join(machine_groups)})")
    try:
        from ..sim.packing import MilpPacking

        MilpPacking(p.site, p.machine, p.workload.jobs)
    except (ValueError, KeyError) as err:
        return f"packing cannot run on this site: {err}"
    return None


def _run(twin, task: tuple[RankingSpec, bool, str, bool]) -> tuple[dict[str, Score], dict | None, float]:
    """One replay (module-level for the worker processes): (part -> score, packing stats, CPU s)."""
    from ..sim.policy import sim_ranking
    from ..sim.run import simulate

    t0 = time.process_time()
    spec, backfill, scope, enabled = task
    p = {"tune": twin.tune, "whole": twin.whole}[scope]
    rank = sim_ranking(spec, p.site, float(p.machine.cores))
    row, out = simulate(p, rank, backfill=backfill, packing="milp" if enabled else "off")
    scores = {part: score(p.workload.jobs, out.begin, out.end, mask, twin.objective)
              for part, mask in twin.masks[scope].items()}
    return scores, row.get("pack_stats"), time.process_time() - t0


def tune_packing(result: TuneResult, backfill: bool, jobs: int | None = None, z: float = 1.0) -> PackingTune:
    """Sweep packing on/off under the ranking chosen for ``backfill`` (see the module's docstring)."""
    from ..sim.parallel import run_all

    twin = result.twin
    m = result.modes[backfill]
    spec = m.candidate(m.choice.winner).spec
    why = unavailable(twin.whole)
    if why is not None:
        return PackingTune(backfill, m.choice.winner, False,
                           f"{why}: packing not swept, the previous file's packing is kept")
    tasks = [(spec, backfill, scope, arm) for scope in ("whole", "tune") for arm in ARMS]
    done = run_all(_run, twin, tasks, jobs, desc=f"tune {twin.whole.workload.name} (packing)")
    got = {(scope, arm): r for (_, _, scope, arm), r in zip(tasks, done)}
    entries = {arm: _entry(arm_label(arm), COMPLEXITY[arm], [got[("tune", arm)][0][f"val{k}"]
                                                              for k in range(twin.folds)]) for arm in ARMS}
    choice = decide(entries[False], entries[True], result.bound_s, z, result.bound_price)
    out = PackingTune(backfill, m.choice.winner, True, choice.why, choice, entries,
                      {arm: got[("whole", arm)][0]["test"] for arm in ARMS},
                      {arm: got[("whole", arm)][1] for arm in ARMS}, sum(r[2] for r in done))
    result.cpu["packing sweep"] = result.cpu.get("packing sweep", 0.0) + out.cpu_s
    return out


def decide(off: Entry, on: Entry, bound_s: float | None = None, z: float = 1.0,
           bound_price: float | None = BOUND_PRICE) -> Choice:
    """:func:`.select.choose` on the two arms (labels :func:`arm_label`), no incumbent: on wins only when it is
    ahead by more than the tie margin (rule 3), a tie goes to off (the simpler)."""
    return choose([off, on], bound_s, z, bound_price=bound_price)


def _predicted(s: Score) -> dict:
    return {"avg_bsld": s.avg_bsld, "avg_wait_s": s.avg_wait_s, "max_wait_s": s.max_wait_s}


def twin_packing(pt: PackingTune) -> dict:
    """The policy file's ``twin.packing`` (:class:`slurm_plugin.policy.twin.TwinPacking`)."""
    if not pt.swept:
        return {"swept": False, "why": pt.reason}
    return {"swept": True, "enabled": pt.enabled, "ranking": pt.ranking, "predicted": _predicted(pt.test[pt.enabled]),
            "runner_up": {"enabled": pt.runner_up, "predicted": _predicted(pt.test[pt.runner_up])},
            "why": pt.reason}


def rows(pt: PackingTune) -> list[dict]:
    """The evaluation JSON's rows: each arm on the held-back part (empty: not swept)."""
    if not pt.swept:
        return []
    return [{"packing": arm, "backfill": pt.backfill, "ranking": pt.ranking, "avg_bsld": pt.test[arm].avg_bsld,
             "avg_wait_s": pt.test[arm].avg_wait_s, "max_wait_s": pt.test[arm].max_wait_s,
             "validation_objective": pt.entries[arm].objective, "chosen": arm == pt.enabled,
             "pack_stats": pt.stats.get(arm)} for arm in ARMS]


def selection(pt: PackingTune) -> dict:
    """The evaluation/tune JSON's ``packing_selection`` entry for one mode."""
    doc = {"swept": pt.swept, "ranking": pt.ranking, "why": pt.reason}
    if pt.swept:
        doc.update(enabled=pt.enabled, runner_up=pt.runner_up, decided_by=pt.choice.decided_by,
                   tied=list(pt.choice.tied), replay_cpu_s=pt.cpu_s,
                   validation={arm_label(a): {"objective": e.objective, "blocks": list(e.blocks),
                                              "block_max_wait_s": list(e.block_max_wait)}
                               for a, e in pt.entries.items()})
    return doc


def explain_lines(pt: PackingTune) -> list[str]:
    """``--explain``'s packing rows for one mode."""
    mode = "on" if pt.backfill else "off"
    if not pt.swept:
        return ["", f"packing (backfill {mode}): {pt.reason}"]
    lines = ["", f"packing (backfill {mode}, ranking {pt.ranking}; both arms with the site's speed factors, so the "
                 f"figures are not the ranking table's):",
             "| packing | validation objective (mean of blocks) | per block | validation max wait s | held-back avg bsld "
             "| held-back avg wait s | held-back max wait s | moves (whole history) | note |", "|" + "---|" * 9]
    for arm in ARMS:
        e, t = pt.entries[arm], pt.test[arm]
        note = "CHOSEN" if arm == pt.enabled else "runner-up"
        moves = (pt.stats.get(arm) or {}).get("moves", "-")
        lines.append(f"| {'on' if arm else 'off'} | {e.objective:.2f} | {' / '.join(f'{b:.3g}' for b in e.blocks)} | "
                     f"{e.max_wait_s:.0f} | {t.avg_bsld:.2f} | {t.avg_wait_s:.0f} | {t.max_wait_s:.0f} | {moves} | "
                     f"{note} |")
    lines.append(f"packing {'on' if pt.enabled else 'off'}: {pt.reason}")
    return lines


def not_swept(result: TuneResult, backfill: bool, why: str) -> PackingTune:
    """A sweep that did not run (e.g. ``--no-packing``), for the same report paths."""
    return PackingTune(backfill, result.modes[backfill].choice.winner, False,
                       f"{why}: packing not swept, the previous file's packing is kept")
