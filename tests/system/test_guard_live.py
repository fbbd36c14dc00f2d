"""The live guard on the real cluster (issue 13): a policy file whose twin promised far more than it delivers is
rolled back within 3 cycles, each cycle its own `hetsched cycle once` process (the guard's memory survives
restarts), and the journal and `hetsched why policy` say why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from slurm_plugin.decision import Journal
from tests.waiting import wait_for

POLICY = "packing: {enabled: false}\nscaling: {name: always-on}\nreshape: false\n"
# fcfs behind a full partition: short jobs wait behind the blocker, while the twin promised no slowdown at all
BAD = "ranking: {name: fcfs, age_floor: false}\n" + POLICY + \
      "twin: {objective: avg_bsld, predicted: {avg_bsld: 1.0}, previous: good.yaml}\n"
GOOD = "ranking: {name: sjf, age_floor: false}\n" + POLICY


def _hetsched(cluster, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLURM_CONF": str(cluster.conf)}
    return subprocess.run([sys.executable, "-m", "slurm_plugin", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_policy_behind_its_twin_is_rolled_back_within_3_cycles(cluster, slurm, tmp_path):
    active, state = tmp_path / "policy.yaml", tmp_path / "state"
    active.write_text(BAD)
    (tmp_path / "good.yaml").write_text(GOOD)
    journal, guard_state = state / "journal.jsonl", state / "guard-state.json"

    def cycle() -> list[dict]:
        out = _hetsched(cluster, "cycle", "once", cluster.state()["site_path"], "--policy-file", str(active),
                        "--state-dir", str(state), "--guard-min-jobs", "4", "--json")
        assert out.returncode == 0, out.stderr
        return [r for r in json.loads(out.stdout) if r["kind"] == "policy"]

    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=5", "--output=/dev/null", wrap="sleep 90")
    short: list[int] = []
    try:
        slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
        assert cycle() == []  # cycle 1: the policy goes live (the blocker came before it: not its job)
        short = [slurm.sbatch("-p", "riscv", "-n", "1", "--time=1", "--output=/dev/null", wrap="true")
                 for _ in range(5)]
        rolled, cycles = [], 1
        while not rolled and cycles < 3:
            time.sleep(12)
            rolled, cycles = cycle(), cycles + 1
        assert rolled, f"no rollback in 3 cycles: {json.loads(guard_state.read_text())['last']}"
        [row] = rolled
        assert (row["status"], row["cause"]) == ("ok", "POLICY_ROLLBACK"), row
        assert "behind its twin: live avg_bsld >=" in row["reason"] and "predicted 1" in row["reason"], row

        # the active file is now the previous policy; the bad one is kept beside it
        assert active.read_text().endswith(GOOD) and active.read_text().startswith("# rolled back by the hetsched")
        [kept] = tmp_path.glob("policy-rolled-back-*.yaml")
        assert kept.read_text() == BAD
        [entry] = [e for e in Journal(journal).entries() if e["kind"] == "policy"]
        assert entry["cause"] == "POLICY_ROLLBACK" and entry["ok"] and entry["to"] == str(tmp_path / "good.yaml")

        # the next cycle runs the rolled-back-to policy (no twin): no second rollback, sjf ranks the queue
        assert cycle() == []
        last = json.loads(guard_state.read_text())["last"]
        assert last["verdict"].startswith("no twin section") and not last["rollback"], last
        why = _hetsched(cluster, "why", "policy", "--journal", str(journal), "--guard-state", str(guard_state))
        assert why.returncode == 0, why.stderr
        assert "no twin section" in why.stdout and "policy (POLICY_ROLLBACK): behind its twin" in why.stdout, \
            why.stdout
        print(f"rolled back at cycle {cycles}: {row['reason']}")
    finally:
        slurm.cancel(blocker, *short)


def test_the_cycle_loop_rolls_back_and_runs_the_previous_policy_without_a_restart(cluster, slurm, tmp_path):
    """`hetsched cycle run` (the service's command): the rollback lands within 3 cycles and the same process
    runs the rolled-back-to policy from the next cycle on (it re-reads the file when its content changes). A
    10 % margin: the short jobs' waits reach it by the 3rd cycle even when their submission is slow."""
    import signal

    active, state = tmp_path / "policy.yaml", tmp_path / "state"
    active.write_text(BAD)
    (tmp_path / "good.yaml").write_text(GOOD)
    guard_state, cycle_state = state / "guard-state.json", state / "cycle-state.json"

    def cycles() -> int:
        return json.loads(cycle_state.read_text())["cycles"] if cycle_state.exists() else 0

    def wait(pred):
        return wait_for(lambda: f"guard: {guard_state.exists() and guard_state.read_text()}", pred, 90.0, 0.5)

    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=5", "--output=/dev/null", wrap="sleep 90")
    short: list[int] = []
    env = {**os.environ, "SLURM_CONF": str(cluster.conf)}
    slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
    loop = subprocess.Popen([sys.executable, "-m", "slurm_plugin", "cycle", "run", cluster.state()["site_path"],
                             "--policy-file", str(active), "--state-dir", str(state), "--guard-min-jobs", "4",
                             "--guard-margin", "0.1", "--interval", "12"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait(lambda: cycles() >= 1)
        short = [slurm.sbatch("-p", "riscv", "-n", "1", "--time=1", "--output=/dev/null", wrap="true")
                 for _ in range(5)]
        entry = wait(lambda: next((e for e in Journal(state / "journal.jsonl").entries()
                                if e["kind"] == "policy"), None))
        # the cycle that rolled back: the first whose end (cycle-state.json) comes after the journal entry
        at = wait(lambda: cycles() if (json.loads(cycle_state.read_text()).get("last_ok_t") or 0) >= entry["t"]
                  else 0)
        assert entry["ok"] and entry["cause"] == "POLICY_ROLLBACK" and at <= 3, (entry, at)
        assert active.read_text().endswith(GOOD)
        last = wait(lambda: cycles() > at and json.loads(guard_state.read_text())["last"])
        assert last["verdict"].startswith("no twin section") and not last["rollback"], last
        print(f"cycle run: rolled back at cycle {at}: {entry['reason']}")
    finally:
        loop.send_signal(signal.SIGTERM)
        try:
            loop.wait(timeout=60)
        finally:
            if loop.poll() is None:
                loop.kill()
        slurm.cancel(blocker, *short)
    assert loop.returncode == 0, loop.stderr.read().decode()[-2000:]
