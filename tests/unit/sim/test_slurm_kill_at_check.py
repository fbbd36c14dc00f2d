"""Jobs killed at their time limit end at slurmctld's time-limit check, and a backfill cycle takes the nodes of
every job whose run has ended (``kill_at_check``, ``bf_sees_end``; results/sim/fidelity/kill-check-s25/)."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.slurm_backfill import SlurmBackfillEngine
from slurm_plugin.sim.slurm_timing import SlurmTiming, check_clock

from .helpers import jobs, machine, nodes


def test_check_clock_gives_the_first_check_at_or_after_a_time():
    clock = check_clock(check_epoch=1005.0, t0=1000.0)  # checks at simulated 5, 35, 65, ...
    assert clock(70.0) == 95.0
    assert clock(65.0) == 65.0
    assert clock(0.0) == 5.0


def _killed_engine(**kw) -> SlurmBackfillEngine:
    """One node; a job submitted at 10.4 s that asked for 90 s with a 60 s limit, recorded as killed after 61 s
    (its recorded run: end second - start second), release 1 s; time-limit checks at 5, 35, 65, 95 s."""
    e = SlurmBackfillEngine(machine(nodes(1, cores=4)), jobs(dict(submit=10.4, run=61, limit=60)),
                            ranking("fcfs"), reservations=100, release_s=1.0,
                            killed=np.array([True]), **kw)
    e.run_eff = np.array([62.0])  # the replay's effective run: the recorded run + release_s
    return e


def test_a_killed_job_holds_its_nodes_until_the_check_that_kills_it():
    """Its end_time is its start second (10) + 60 s = 70 s; the first check at or after that is at 95 s, so it
    holds its node until 95 s, then the release: 96 s. Its recorded run would have ended it at 72.4 s."""
    e = _killed_engine(kill_clock=check_clock(1005.0, 1000.0), epoch=1000.0)
    out = e.run()
    assert out.begin[0] == pytest.approx(10.4)
    assert out.end[0] == pytest.approx(96.0)
    assert _killed_engine().run().end[0] == pytest.approx(72.4)  # without the clock: the recorded run


def test_a_job_not_killed_keeps_its_recorded_run():
    e = SlurmBackfillEngine(machine(nodes(1, cores=4)), jobs(dict(submit=10.4, run=61, limit=60)),
                            ranking("fcfs"), reservations=100, release_s=1.0, killed=np.array([False]),
                            kill_clock=check_clock(1005.0, 1000.0), epoch=1000.0)
    e.run_eff = np.array([62.0])
    assert e.run().end[0] == pytest.approx(72.4)


def _blocked_queue(**kw) -> SlurmBackfillEngine:
    """Two 4-core nodes. A holds node 0 for 30 s (31 s with the release), X holds node 1 until 300 s. H (both
    nodes) is the head from 5 s: planned at 300 s. B (one node, limit 60 s) can only be backfilled: the main
    pass stops at H. Backfill cycles at 30.5 and 60.5 s."""
    e = SlurmBackfillEngine(machine(nodes(2, cores=4)),
                            jobs(dict(submit=0, run=30, cores=4), dict(submit=0, run=300, cores=4),
                                 dict(submit=5, run=60, cores=4, nodes=2), dict(submit=6, run=60, cores=4)),
                            ranking("fcfs"), reservations=100, release_s=1.0, bf_interval_s=30.0,
                            bf_times=[30.5, 60.5], **kw)
    e.run_eff = np.array([31.0, 301.0, 61.0, 61.0])
    return e


def test_a_backfill_cycle_takes_the_nodes_of_a_run_that_has_ended():
    """A's run ends at 30 s; the main scheduler would see its node at 31 s, but the cycle at 30.5 s tests the
    nodes as they are and starts B there. Without the switch B waits for the next cycle, at 60.5 s."""
    assert _blocked_queue(bf_sees_end=True).run().begin[3] == pytest.approx(30.5)
    assert _blocked_queue().run().begin[3] == pytest.approx(60.5)


def test_a_run_ended_by_a_cycle_counts_as_idle_from_its_release():
    """The node's SuspendTime clock (idle_since, less release_s: slurmctld's last_busy) stays at the run's end,
    and the job's END event that follows is skipped (it would release the node a second time)."""
    e = SlurmBackfillEngine(machine(nodes(1, cores=4)), jobs(dict(submit=0, run=30, cores=4)), ranking("fcfs"),
                            reservations=100, release_s=1.0, bf_interval_s=30.0, bf_times=[30.5],
                            bf_sees_end=True)
    e.run_eff = np.array([31.0])
    seen = []
    e.observer = lambda eng, t: seen.append((t, float(eng.idle_since[0]), eng.cluster.free_c[0]))
    out = e.run()
    assert out.end[0] == pytest.approx(31.0)
    assert (30.5, 31.0, 4) in seen  # freed at the cycle, idle from 31 s
    assert all(free == 4 for t, _, free in seen if t >= 30.5)


def test_the_switches_need_slurms_backfill_engine():
    with pytest.raises(ValueError, match="kill_at_check needs bf_resolution_s"):
        SlurmTiming(kill_at_check=True)
    with pytest.raises(ValueError, match="bf_sees_end needs bf_resolution_s"):
        SlurmTiming(bf_sees_end=True)


def test_killed_must_name_every_job():
    with pytest.raises(ValueError, match="killed has 2 entries for 1 jobs"):
        SlurmBackfillEngine(machine(nodes(1)), jobs(dict(submit=0, run=1)), ranking("fcfs"), reservations=100,
                            killed=np.array([True, False]))


def test_the_replay_marks_the_jobs_slurm_killed_by_id_not_by_position(monkeypatch):
    """The replay's job table is sorted by submit time, which is not the record's job order on some records
    (here a committed 24.11 replay): the killed flags must follow the table (they followed the record's order
    at first, and three records had the wrong jobs killed)."""
    import json
    from pathlib import Path

    from slurm_plugin.sim import fidelity_replay
    from slurm_plugin.site import Site

    path = Path(__file__).parents[3] / "results/sim/fidelity/fidelity_300_seed51_trixie_suite.json"
    doc = json.loads(path.read_text())
    record = doc["record"]
    jobs = fidelity_replay.ran_jobs(record)
    seen = {}
    init = SlurmBackfillEngine.__init__

    def spy(self, *args, **kw):
        init(self, *args, **kw)
        seen["killed"] = {int(i) for i in self.jobs.id[self.killed]}
        seen["table_order"] = self.jobs.id.tolist()

    monkeypatch.setattr(SlurmBackfillEngine, "__init__", spy)
    fidelity_replay.simulate_record(Site.model_validate(doc["site"]), record,
                                    fidelity_replay.replay_timing(record, doc["site"]))
    assert seen["table_order"] != [j["id"] for j in jobs]  # the case this test is about
    assert seen["killed"] == {j["id"] for j in jobs if j["state"] == "TIMEOUT"} and seen["killed"]
