"""The decide budget: each step is told its seconds; optional steps are skipped once it is spent."""

from __future__ import annotations

from dataclasses import dataclass

from slurm_plugin.cycle.policy import cycle_budget, cycle_config
from slurm_plugin.cycle.steps import CycleBudget, CycleMemory, run_steps
from slurm_plugin.decision import Decision, PowerNodes, SetSiteFactor
from slurm_plugin.policy import policy_from_dict


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@dataclass
class Slow:
    """A step that takes ``seconds`` on the fake clock and records the budget it was given."""

    name: str
    seconds: float
    clock: Clock
    seen: list

    def decide(self, inputs, memory):
        self.seen.append((self.name, inputs.budget_s))
        self.clock.t += self.seconds
        action = PowerNodes(("n1",), "POWER_UP", "x") if self.name == "power" else SetSiteFactor((1,), 5, "x")
        return Decision((action,), self.name), memory


def steps(clock, seen, rank=2.5, pack=1.0):
    return [Slow("wipe", 0.0, clock, seen), Slow("rank", rank, clock, seen), Slow("pack", pack, clock, seen),
            Slow("reshape", 0.1, clock, seen), Slow("power", 0.2, clock, seen), Slow("guard", 0.0, clock, seen)]


def test_without_a_budget_every_step_runs_unbounded():
    clock, seen = Clock(), []
    decision, _ = run_steps(steps(clock, seen), None, None, CycleMemory(), 0.0, None, clock)
    assert [b for _, b in seen] == [None] * 6 and len(decision.actions) == 6 and not decision.notes


def test_a_spent_decide_budget_skips_the_optional_steps_but_not_power_or_guard():
    clock, seen = Clock(), []
    budget = CycleBudget(decide_s=3.0, steps_s={"rank": 2.0})
    decision, _ = run_steps(steps(clock, seen), None, None, CycleMemory(), 0.0, budget, clock)
    assert seen[:3] == [("wipe", 3.0), ("rank", 2.0), ("pack", 0.5)]  # pack gets what the decide budget has left
    ran = [name for name, _ in seen]
    assert ran == ["wipe", "rank", "pack", "power", "guard"]  # reshape skipped: 3.5 s used of 3
    assert ("budget.over", "rank") in decision.notes and ("budget.skipped", "reshape") in decision.notes
    assert [a.kind for a in decision.actions] == ["site_factor"] * 3 + ["power"] + ["site_factor"]
    assert "reshape:skipped" in decision.source


def test_pack_caps_its_milp_at_its_budget():
    from slurm_plugin.cycle.steps import PackStep, StepInputs

    seen = []

    import slurm_plugin.cycle.steps as steps_module

    real = steps_module.pack_moves
    try:
        steps_module.pack_moves = lambda snap, site, bands, cap: seen.append(cap) or Decision()
        PackStep(1.0).decide(StepInputs(None, None, 0.0, (), 0.3), CycleMemory())
        PackStep(1.0).decide(StepInputs(None, None, 0.0, (), None), CycleMemory())
        PackStep(1.0).decide(StepInputs(None, None, 0.0, (), 0.0), CycleMemory())
    finally:
        steps_module.pack_moves = real
    assert seen == [0.3, 1.0, 0.05]


def test_policy_budget_section_becomes_the_cycle_budget():
    spec = policy_from_dict({"budget": {"decide_s": 3, "pack_s": 1, "apply_s": 5}})
    assert cycle_budget(spec) == CycleBudget(3.0, {"pack": 1.0}, 5.0)
    assert cycle_config(spec).budget == CycleBudget(3.0, {"pack": 1.0}, 5.0)
    assert cycle_budget(policy_from_dict({})) is None


def test_the_apply_gets_what_the_cycle_budget_has_left():
    assert CycleBudget(cycle_s=10.0).apply_budget(8.0) == 0.9 * 2.0  # a tenth kept for what follows the apply
    assert CycleBudget(cycle_s=10.0, apply_s=1.0).apply_budget(2.0) == 1.0
    assert CycleBudget(cycle_s=10.0).apply_budget(12.0) == 0.0  # the applier still sends its first command
    assert CycleBudget(decide_s=3.0).apply_budget(5.0) is None
    assert cycle_budget(policy_from_dict({"budget": {"cycle_s": 10}})) == CycleBudget(cycle_s=10.0)


def test_gc_paused_restores_the_collector_as_it_was():
    import gc

    from slurm_plugin.gcpause import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as the outer one set it
    assert gc.isenabled()
