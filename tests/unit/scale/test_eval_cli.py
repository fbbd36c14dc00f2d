"""`hetsched scale eval` with an SWF trace and no --site: the header's homogeneous machine with the documented
default watts and boot times, and the JSON keys the issue's reviewer script reads."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.sim.machine import SWF_NODE_POWER


def test_swf_without_site_runs_on_the_headers_machine(tmp_path):
    lines = ["; MaxNodes: 8", "; MaxProcs: 8"]
    for i in range(60):  # bursts of 1-4 node jobs, quiet gaps of four hours between bursts
        submit = (i // 6) * 4 * 3600 + (i % 6) * 30
        run, procs = 600 + 60 * (i % 5), 1 + i % 4
        lines.append(f"{i + 1} {submit} -1 {run} {procs} -1 -1 {procs} 1200 -1 1 1 1 -1 1 -1 -1 -1")
    swf = tmp_path / "tiny.swf"
    swf.write_text("\n".join(lines) + "\n")
    out = tmp_path / "eval.json"
    result = CliRunner().invoke(main, ["scale", "eval", "-w", str(swf), "--output", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    rows = {r["policy"]: r for r in doc["rows"]}
    assert {"always-on", "idle-timer", "hetsched"} <= set(rows)
    for r in rows.values():
        assert r["energy_kwh"] > 0 and r["avg_wait_s"] >= 0 and 0 < r["utilization"] <= 1
    assert rows["hetsched"]["energy_kwh"] < rows["always-on"]["energy_kwh"]  # hours idle: nodes go down
    assert rows["idle-timer"]["avg_wait_s"] > rows["always-on"]["avg_wait_s"]  # boots cost wait (120 s default)
    assert set(doc["pid_step"]) >= {"settle_periods", "overshoot"} and "simulator" in doc["pid_step"]["plant"]
    assert doc["machine"] and doc["uname_m"] and doc["git_commit"] is not None
    assert SWF_NODE_POWER["boot_s"] == 120.0 and SWF_NODE_POWER["idle_w"] == 100.0
