"""fidelity_ok: the twin's gate on a fidelity record (issue 22's keys and targets)."""

from __future__ import annotations

from slurm_plugin.sim.fidelity import FidelityThresholds, fidelity_ok

GOOD = {"jobs": 300, "kendall_tau": 0.95, "wait_mae_s": 3.0, "mean_wait_real_s": 40.0, "mean_wait_sim_s": 42.0,
        "power_ups_real": 20, "power_ups_sim": 21, "energy_real_kwh": 1.00, "energy_sim_kwh": 1.03,
        "slurm_version": "22.05.8"}


def test_met():
    ok, why = fidelity_ok(GOOD)
    assert ok and "tau 0.950" in why


def test_each_target_can_fail_and_is_named():
    cases = {"kendall_tau": (0.85, "Kendall tau 0.850 < 0.9"), "mean_wait_sim_s": (45.0, "mean wait simulated 45"),
             "power_ups_sim": (25, "power-ups simulated 25 vs real 20"),
             "energy_sim_kwh": (1.06, "energy simulated 1.06 vs real 1 (off by 6.0 %, allowed 5 %)")}
    for key, (value, text) in cases.items():
        ok, why = fidelity_ok({**GOOD, key: value})
        assert not ok and text in why and "300 jobs" in why, (key, why)


def test_thresholds_are_parameters():
    assert fidelity_ok({**GOOD, "kendall_tau": 0.86}, FidelityThresholds(min_tau=0.85))[0]


def test_missing_or_nan_key_fails():
    ok, why = fidelity_ok({k: v for k, v in GOOD.items() if k != "energy_sim_kwh"})
    assert not ok and "energy_sim_kwh" in why
    ok, why = fidelity_ok({**GOOD, "kendall_tau": float("nan")})
    assert not ok and "kendall_tau" in why


def test_zero_real_power_ups():
    assert fidelity_ok({**GOOD, "power_ups_real": 0, "power_ups_sim": 0})[0]
    ok, why = fidelity_ok({**GOOD, "power_ups_real": 0, "power_ups_sim": 2})
    assert not ok and "power-ups" in why
