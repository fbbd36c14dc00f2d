"""slurmdbd's history, straight from the real slurmdbd: `hetsched accounting export` writes the sacct export the
twin replays (read back as a workload), and `hetsched sla report` measures each QoS tier's waits against its
max_wait."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from slurm_plugin.workload import load_workload
from tests.waiting import until

pytestmark = pytest.mark.containers
QUIET = ("-D", "/tmp", "-o", "/dev/null")


def _hetsched(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "slurm_plugin", *args], capture_output=True, text=True, timeout=120)


def test_the_export_feeds_the_twin_and_the_sla_report_measures_the_tiers(cluster, tmp_path):
    alice = cluster.client("alice")
    gold = [alice.sbatch(*QUIET, "-A", "ai-training", "-p", "x86", "-t", "2", wrap="sleep 1") for _ in range(3)]
    for job in gold:
        alice.wait_job(job, 90)
    root = str(cluster.root)
    out = tmp_path / "history.txt"

    def exported():  # slurmdbd names a finished job's QOS a little after it ends
        proc = _hetsched("accounting", "export", "--since", "2h", "-o", str(out), "--containers", root)
        assert proc.returncode == 0, proc.stderr
        rows = [r.split("|") for r in out.read_text().splitlines()[1:]]
        return rows if all(any(r[0] == str(j) and r[3] == "gold" for r in rows) for j in gold) else None

    assert until(exported, 60, 2), out.read_text()[-2000:]
    header = out.read_text().splitlines()[0].split("|")
    assert header[:5] == ["JobID", "User", "Account", "QOS", "Submit"]
    history = load_workload(str(out))  # what `hetsched tune --history FILE` reads
    assert set(gold) <= set(history.jobs.id.tolist())

    proc = _hetsched("sla", "report", "--site", cluster.state()["site_path"], "--since", "2h", "--containers", root,
                     "--json", "-o", "tier,jobs,met,decided,attainment_pct,wait_p50_s,max_wait_s,verdict")
    assert proc.returncode in (0, 1), proc.stderr  # 1: a tier missed its target (other tests' jobs waited)
    rows = {r["tier"]: r for r in json.loads(proc.stdout)}
    assert list(rows)[:3] == ["gold", "silver", "bronze"]
    g = rows["gold"]
    assert g["jobs"] >= 3 and g["max_wait_s"] == 600.0 and g["decided"] >= 3 and g["met"] >= 3, g
    assert g["verdict"] in ("met", "missed") and g["wait_p50_s"] is not None
    bad = _hetsched("sla", "report", "--since", "7 days", "--containers", root)
    assert bad.returncode == 2 and "Nd, Nh, Nm" in bad.stderr
