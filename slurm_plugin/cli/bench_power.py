"""``hetsched bench power``: N nodes resumed through a real Redfish service, the way Slurm's ResumeProgram does it.

Each run starts a fresh sushy-tools emulator (fake driver) serving one system per node, all off, writes a site
file whose node group names that BMC, and times ``hetsched power resume --site SITE 'rf[001-N]'`` in a fresh
process from fork to exit (Python start-up, site load, every node's state read and reset on the bounded pool).
"Done" is the BMC accepting the reset; the fake driver then applies it 1-11 s later (reported, not timed).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import yaml

from .common import handle_errors
from .output import deliver, json_output_options

TARGET_S = 10.0


def _run_once(nodes: int, work: Path) -> dict:
    from ..cluster.procs import stop_pid
    from ..power.emulator import start_sushy
    from ..power.redfish import BmcTarget, RedfishPower

    names = [f"rf{i:03d}" for i in range(1, nodes + 1)]
    pid, url = start_sushy(work / "sushy", names)
    try:
        site = work / "site.yaml"
        site.write_text(yaml.safe_dump({
            "name": "bench", "clusters": [{"name": "c", "node_groups": [
                {"name": "rf", "prefix": "rf", "count": nodes, "digits": 3, "cpu": {"arch": "x86_64", "cores": 8},
                 "memory_gb": 16, "bmc": {"protocol": "redfish", "address": url, "system": "{node}"}}]}],
            "partitions": [{"name": "all", "node_groups": ["rf"]}]}))
        argv = [sys.executable, "-m", "slurm_plugin", "power", "resume", "--site", str(site), "--no-mark-down",
                "--log-file", str(work / "power.log"), f"rf[001-{nodes:03d}]"]
        t0 = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        wall = time.monotonic() - t0
        ok = proc.stdout.count(": ok (redfish")
        be = RedfishPower({n: BmcTarget(url, n, None, True) for n in names})
        t1, on = time.monotonic(), 0
        while time.monotonic() - t1 < 30:
            on = sum(be.power_state(n) == "On" for n in names)
            if on == nodes:
                break
            time.sleep(1)
        return {"wall_s": round(wall, 3), "exit": proc.returncode, "ok": ok, "failed": nodes - ok,
                "all_on_after_s": round(time.monotonic() - t0, 1) if on == nodes else None,
                "errors": proc.stderr.strip().splitlines()[-3:] if proc.returncode else []}
    finally:
        stop_pid(pid, "sushy-emulator")


@click.command("power")
@click.option("--nodes", type=click.IntRange(1, 999), default=100, show_default=True, help="Systems in the emulator.")
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True, help="Runs (median reported).")
@json_output_options
@handle_errors(RuntimeError, OSError)
def power_cmd(nodes: int, repeat: int, as_json: bool, output: Path | None) -> None:
    """Wall time of `hetsched power resume` for N nodes through sushy-tools' Redfish emulator (target < 10 s)."""
    from ..power.redfish import RedfishPower
    from ..sim.run import provenance

    load_before = os.getloadavg()
    runs = []
    for i in range(repeat):
        with tempfile.TemporaryDirectory(prefix="hetsched-bench-power-") as tmp:
            runs.append(_run_once(nodes, Path(tmp)))
        r = runs[-1]
        click.echo(f"run {i + 1}: {r['ok']}/{nodes} ok in {r['wall_s']:.2f} s (exit {r['exit']}); "
                   f"all On after {r['all_on_after_s']} s", err=True)
    p50 = statistics.median(r["wall_s"] for r in runs)
    met = p50 < TARGET_S and all(r["failed"] == 0 for r in runs)
    host = {**provenance(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    doc = {"nodes": nodes, "workers": RedfishPower({}).workers, "emulator": "sushy-emulator --fake (one process)",
           "runs": runs, "p50_wall_s": p50, "target_s": TARGET_S, "met": met, "machine": host,
           "commit": host.get("git_commit", ""), "command": f"hetsched bench power --nodes {nodes} --repeat {repeat} --output FILE"}
    deliver(doc, as_json, output, lambda: click.echo(
        f"{nodes} nodes resumed: median {p50:.2f} s (target < {TARGET_S:g} s): {'met' if met else 'MISSED'}"))
