"""Selection rule 4, the tie-break (slurm_plugin/tune/select.py, tune/stress.py): candidates tied on validation
go to the one ahead at raised load, else to the incumbent, else to the simplest; pure tables, then one tune of a
quiet history on the real simulator."""

import numpy as np
import pytest

from slurm_plugin.sim.machine import GroupSpec, Machine
from slurm_plugin.sim.run import prepare
from slurm_plugin.tune.select import STRESS_LOAD, Entry, choose
from slurm_plugin.tune.stress import compressed, offered_load, stress_factor
from slurm_plugin.tune.tuner import tune_history
from slurm_plugin.workload.jobs import JobTable

from .histories import small_swf


def E(label, complexity, blocks, max_wait=0.0):
    return Entry(label, complexity, float(np.mean(blocks)), max_wait, tuple(blocks), (max_wait,) * len(blocks))


QUIET = [E("fcfs", 0, [1, 1, 1, 1]), E("sjf", 1, [1, 1, 1, 1]), E("multifactor", 1, [1, 1, 1, 1]),
         E("f1", 2, [1, 1, 1, 1])]  # nobody waits on validation: every candidate ties exactly


def test_a_quiet_validation_is_decided_at_raised_load():
    stressed = [E("fcfs", 0, [9, 8, 9, 8]), E("sjf", 1, [3, 2, 3, 2]), E("multifactor", 1, [6, 5, 6, 5]),
                E("f1", 2, [4, 3, 4, 3])]
    c = choose(QUIET, stressed=stressed, stress_factor=12.5, incumbent="multifactor")
    assert (c.winner, c.decided_by, c.stress_tied) == ("sjf", "raised load", ("sjf",))
    assert "compressed 12.5x" in c.why and len(c.tied) == 4


def test_without_evidence_the_incumbent_is_kept_else_the_simplest():
    assert choose(QUIET, incumbent="multifactor").winner == "multifactor"
    assert choose(QUIET, incumbent="multifactor").decided_by == "incumbent"
    c = choose(QUIET, incumbent="dqn")  # the incumbent is not among the tied: the simplest
    assert (c.winner, c.decided_by) == ("fcfs", "simplest")


def test_still_tied_at_raised_load_keeps_the_incumbent_only_if_it_is_still_tied():
    stressed = [E("fcfs", 0, [9, 9, 9, 9]), E("sjf", 1, [3, 3, 3, 3]), E("multifactor", 1, [9, 9, 9, 9]),
                E("f1", 2, [3, 3, 3, 3.01])]
    c = choose(QUIET, stressed=stressed, incumbent="f1")
    assert (c.winner, c.decided_by, set(c.stress_tied)) == ("f1", "incumbent", {"sjf", "f1"})
    c = choose(QUIET, stressed=stressed, incumbent="multifactor")  # fell behind under load: evidence against it
    assert (c.winner, c.decided_by) == ("sjf", "simplest")


def test_raised_load_never_overrides_a_validation_winner_or_a_bound():
    clear = [E("fcfs", 0, [5, 5, 5, 5]), E("sjf", 1, [2, 2, 2, 2])]
    c = choose(clear, stressed=[E("fcfs", 0, [1, 1, 1, 1]), E("sjf", 1, [9, 9, 9, 9])], incumbent="fcfs")
    assert (c.winner, c.decided_by) == ("sjf", "validation")
    # a candidate over the bound on validation is not tied, whatever it does at raised load
    bound = [E("fcfs", 0, [1, 1, 1, 1]), E("sjf", 1, [1, 1, 1, 1], max_wait=500.0)]
    c = choose(bound, bound_s=100.0, stressed=[E("fcfs", 0, [9] * 4), E("sjf", 1, [1] * 4)])
    assert c.winner == "fcfs" and c.tied == ("fcfs",)
    # at raised load the bound applies too, and the reason says it decided (CEA-Curie: F1 over the bound there)
    at_load = [E("fcfs", 0, [1] * 4, max_wait=500.0), E("sjf", 1, [9] * 4)]
    c = choose(QUIET[:2], bound_s=100.0, stressed=at_load, bound_price=None)
    assert (c.winner, c.decided_by) == ("sjf", "raised load") and "1 over it" in c.why
    # ... at its price: keeping it there costs 9x, over the default 1.5x, so it gives way at raised load too
    c = choose(QUIET[:2], bound_s=100.0, stressed=at_load)
    assert (c.winner, c.decided_by) == ("fcfs", "raised load") and "1 over it" not in c.why


def _table(submit, nodes, run, gres=None):
    n = len(submit)
    cols = {"submit": list(submit), "run": list(run), "limit": [r * 2 for r in run], "nodes": list(nodes),
            "cores": [2] * n}
    names = {}
    if gres is not None:
        cols |= {"gres_name": [0 if g else -1 for g in gres], "gres_count": list(gres)}
        names = {"gres_names": ("gpu",)}
    return JobTable.build(cols, **names)


def test_offered_load_is_the_bottleneck_and_compression_multiplies_it():
    m = Machine("m", (GroupSpec("a", 10, cores=4, gres={("gpu", "v100"): 2}),))  # 40 cores, 20 GPUs
    # jobs take half a node's cores and all its GPUs; 1,000 s span: cores 2 jobs x 5 nodes x 2 x 400 s = 8,000
    # / 40,000 = 0.2; GPUs 2 x 5 x 2 x 400 = 8,000 / 20,000 = 0.4 (the bottleneck)
    j = _table([0, 500, 1000], [5, 5, 1], [400, 400, 0], gres=[2, 2, 0])
    assert offered_load(j, m) == pytest.approx(0.4)
    assert offered_load(j, m, start=1) == pytest.approx(4000 / (20 * 500))  # from the second job: 0.4
    assert offered_load(_table([0, 500, 1000], [5, 5, 1], [400, 400, 0]), m) == pytest.approx(0.2)  # no GPUs
    assert stress_factor(j, m, 0, 0.4) is None and stress_factor(j, m, 1, 0.3) is None
    assert stress_factor(j, m, 1, STRESS_LOAD) == pytest.approx(STRESS_LOAD / 0.4)
    assert offered_load(_table([5, 5], [1, 1], [10, 10]), m) is None  # all at once: no span


def test_compressed_keeps_order_and_run_times_and_reaches_the_target(tmp_path):
    p = prepare(str(small_swf(tmp_path / "q.swf", 200, 5000.0)))
    j = p.workload.jobs
    f = stress_factor(j, p.machine, 80, STRESS_LOAD)
    q = compressed(p, f)
    k = q.workload.jobs
    assert f > 1 and q.workload.compress == pytest.approx(f)
    assert np.array_equal(k.run, j.run) and np.all(np.diff(k.submit) >= 0) and k.submit[0] == j.submit[0]
    assert offered_load(k, q.machine, 80) == pytest.approx(STRESS_LOAD)


def test_a_quiet_history_is_tuned_at_raised_load(tmp_path):
    """Real simulator: nobody waits on validation, so every candidate ties; the tie-break replays the tied
    ones with arrivals compressed to STRESS_LOAD and the winner is the best there (not FCFS by simplicity)."""
    p = prepare(str(small_swf(tmp_path / "quiet.swf", 240, 20000.0)))
    r = tune_history(p, (True,), names=("fcfs", "sjf"), jobs=1)
    m = r.modes[True]
    assert set(m.choice.tied) == set(m.entries)  # quiet: a validation that cannot tell them apart
    assert max(e.objective for e in m.entries.values()) < 1.01
    assert r.stress_factor is not None and r.stress_factor > 5
    assert set(m.stressed) == set(m.entries)
    best = min(e.objective for e in m.stressed.values())
    assert m.stressed[m.choice.winner].objective <= best * 1.01 + 1e-9
    assert m.stressed["fcfs"].objective > best * 1.5  # under load FCFS is clearly behind here
    assert m.choice.winner != "fcfs" and m.choice.decided_by in ("raised load", "incumbent", "simplest")
    assert m.choice.winner in m.test_scores  # the held-back replay is of the new winner


def test_the_incumbent_is_the_ranking_of_the_file_being_replaced(tmp_path, caplog):
    from slurm_plugin.cli.tune import _incumbent

    f = tmp_path / "policy.yaml"
    assert _incumbent(f) is None  # no file: the shipped default runs (tune_history's default)
    f.write_text("ranking: {name: sjf}\n")
    assert _incumbent(f) == "sjf+floor"
    f.write_text("ranking: {name: nosuch}\n")
    assert _incumbent(f) is None and "incumbent" in caplog.text
