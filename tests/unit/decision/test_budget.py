"""The apply budget's pure parts: the urgency order, the pace of commands, what a deferred result means."""

from __future__ import annotations

from slurm_plugin.cli.why import status_for
from slurm_plugin.cycle.site_factors import applied_site_factors, load_deferred, save_deferred
from slurm_plugin.decision import DrainNodes, MoveJob, PowerNodes, SetPartitionNodes, SetSiteFactor
from slurm_plugin.decision.applier import (FIRST_CHUNK_REFS, Applied, _Pace, by_urgency, deferrable, ids_named,
                                           split_refs)


def test_node_and_partition_actions_first_then_moves_then_site_factors_highest_first():
    low, high = SetSiteFactor((1, 2), 100, "low"), SetSiteFactor((3,), 900, "high")
    move = MoveJob(4, "arm", "aarch64", "pack")
    down = PowerNodes(("n1",), "POWER_DOWN", "idle")
    up = PowerNodes(("n2",), "POWER_UP", "backlog")
    part = SetPartitionNodes("dev", ("n3",), "calendar")
    drain = DrainNodes(("n4",), "DRAIN", "fault")
    ordered = by_urgency([low, move, down, high, up, part, drain])
    assert ordered == (down, up, part, drain, move, high, low)  # node actions keep their own order
    assert [deferrable(a) for a in ordered] == [False] * 4 + [True] * 3


def test_carried_jobs_go_first_within_their_kind_and_a_band_is_split_for_them():
    band = SetSiteFactor((1, 2, 3), 100, "band 1", addresses=((2, "50_2"), (3, "50_3")))
    new = SetSiteFactor((7,), 900, "band 7")
    moves = [MoveJob(5, "a", None, "m"), MoveJob(6, "b", None, "m")]
    ordered = by_urgency([new, band, *moves], carried={2, 6})
    assert [type(a).__name__ for a in ordered] == ["MoveJob", "MoveJob", "SetSiteFactor", "SetSiteFactor",
                                                    "SetSiteFactor"]
    assert [m.job_id for m in ordered[:2]] == [6, 5]
    carried, top, rest = ordered[2:]
    assert (carried.job_ids, carried.site_factor, carried.addresses) == ((2,), 100, ((2, "50_2"),))
    assert carried.reason.endswith("carried from the last cycle (apply budget)")
    assert top is new and rest.job_ids == (1, 3) and rest.addresses == ((3, "50_3"),) and rest.reason == "band 1"


def test_nothing_carried_leaves_actions_whole():
    band = SetSiteFactor((1, 2), 100, "x")
    assert by_urgency([band], carried={9}) == (band,)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_pace_sizes_commands_to_the_time_left_and_always_lets_the_first_go():
    clock = Clock()
    pace = _Pace(10.0, clock)
    assert pace.refs_next() == FIRST_CHUNK_REFS and not pace.spent()
    clock.t += 2.0
    pace.took(200, 2.0)  # 10 ms per reference, 8 s left: sized for 80 % of it
    assert pace.refs_next() == 640 and not pace.spent()
    clock.t += 6.5
    assert pace.spent()  # 1.5 s left, and no command so far took less than 2 s
    zero = _Pace(0.0, clock)
    assert not zero.spent()  # nothing sent yet: the first command goes even with no time at all
    zero.took(1, 0.5)
    assert zero.spent()


def test_split_refs_keeps_array_brackets_whole():
    assert split_refs("123,124_[1-3,7],5") == ["123", "124_[1-3,7]", "5"]
    assert split_refs("") == []


def test_ids_named_resolves_grouped_array_tasks():
    asked = {"10": 10, "50_1": 51, "50_2": 52, "50_4": 54, "60_[3-9]": 60}
    assert ids_named(["50_[1-2,4]", "10", "60_[3-9]"], asked) == [51, 52, 54, 10, 60]


def test_deferred_results_are_not_remembered_as_applied():
    band = SetSiteFactor((1, 2, 3), 100, "x")
    part = Applied(band, False, "deferred", deferred_ids=(2, 3))
    assert part.partial and part.status == "partial" and not part.deferred
    whole = Applied(band, False, "3 of 3 job(s) deferred to the next cycle: apply budget of 1 s spent",
                    deferred_ids=(1, 2, 3))
    assert whole.status == "deferred" and not whole.refused
    assert part.refused  # its error does not say deferred: something else went wrong
    assert Applied(band, False, "x deferred to the next cycle", {1: "gone"}, deferred_ids=(2, 3)).refused
    assert not Applied(band, True).refused and Applied(band, False, "Invalid job id").refused
    assert applied_site_factors({1: 100, 2: 100, 3: 100, 4: 7}, [part]) == {1: 100, 4: 7}
    assert applied_site_factors({1: 100, 2: 100, 3: 100}, [whole]) == {}


def test_why_names_a_deferred_job_and_not_its_sent_neighbours():
    entry = {"t": 1.0, "ok": False, "error": "2 of 3 deferred", "deferred_ids": [2, 3], "job_ids": [1, 2, 3]}
    assert status_for(entry, 2).startswith("DEFERRED to the next cycle")
    assert status_for(entry, 1) == "ok"
    assert status_for({**entry, "failed_ids": {"1": "Job has already finished"}}, 1) == \
        "FAILED (Job has already finished)"


def test_deferred_jobs_file_round_trips(tmp_path):
    path = tmp_path / "deferred-jobs.json"
    assert load_deferred(path) == set()
    save_deferred(path, [5, 3, 5])
    assert path.read_text() == "[3, 5]\n" and load_deferred(path) == {3, 5}
