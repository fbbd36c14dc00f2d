"""``hetsched bench submit``: the submit path's latency, throughput and fail-open figures (see issue 3)."""

from __future__ import annotations

import logging
import shlex
import sys
import time
from pathlib import Path

import click
import yaml

from ..cluster.local import LocalCluster
from ..daemon.bench import (chaos_submissions, machine, median_submit_ms, roundtrip_floor, sbatch_burst,
                            shim_roundtrip)
from ..daemon.process import DaemonProcess
from ..site import SITE_CONFIGS
from .common import emit_json
from .output import json_output_options, text_out, write_json

log = logging.getLogger(__name__)
TIMEOUT_MS = 50  # the shim's default, as rendered into hetsched-shim.json
# A job_submit.lua that does nothing: separates the cost of Slurm's Lua plugin itself (it rebuilds its
# slurm.jobs table of every job before each call) from the cost of the shim's round trip.
NOOP_LUA = """function slurm_job_submit(job_desc, part_list, submit_uid) return slurm.SUCCESS end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid) return slurm.SUCCESS end
return slurm.SUCCESS
"""
MODES = ("without_job_submit", "lua_noop", "with_shim")


def _site_file(root: Path, port: int) -> Path:
    """The demo site with this benchmark's own cluster name and ports."""
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["slurm"].update(cluster_name="hs-bench-submit", slurmctld_port=port, slurmd_port=port + 1)
    path = root / "site.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _use_job_submit(cluster: LocalCluster, site: Path, enabled: bool, wait: float = 30.0) -> None:
    """Switch JobSubmitPlugins=lua on/off in the running slurmctld (re-render + reconfigure) and check it took."""
    cluster.up(site, job_submit=enabled, daemon=False)
    want = "lua" if enabled else "(null)"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        out = cluster.client().run("scontrol", "show", "config", check=False).stdout
        line = next((ln for ln in out.splitlines() if ln.startswith("JobSubmitPlugins")), "")
        if line.split("=", 1)[-1].strip() == want:
            return
        time.sleep(0.5)
    raise click.ClickException(f"slurmctld did not switch JobSubmitPlugins to {want}")


def _command() -> str:
    args = sys.argv[sys.argv.index("submit") + 1:] if "submit" in sys.argv else sys.argv[1:]
    return "hetsched bench submit " + shlex.join(args)


@click.command("submit")
@click.option("--quick", is_flag=True, help="Short smoke run (3 s round trip, fewer jobs); not for the README.")
@json_output_options
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), show_default=True,
              default=Path("/var/lib/hetsched/test/submit-bench"), help="The benchmark's own local cluster.")
@click.option("--port", type=int, default=17977, show_default=True, help="slurmctld port (slurmd ports follow).")
@click.option("--rate", type=float, default=1000.0, show_default=True, help="Shim calls per second.")
@click.option("--seconds", type=float, default=10.0, show_default=True, help="Round-trip run length.")
@click.option("--jobs", type=int, default=300, show_default=True, help="sbatch per mode per round.")
@click.option("--rounds", type=int, default=2, show_default=True, help="Alternating rounds of both modes.")
@click.option("--threads", type=int, default=2, show_default=True, help="Parallel sbatch submitters.")
@click.option("--keep", is_flag=True, help="Leave the cluster and daemon running afterwards.")
def submit_cmd(quick, as_json, output, root, port, rate, seconds, jobs, rounds, threads, keep) -> None:
    """Measure the job_submit shim + daemon on a real local cluster and write one JSON result.

    Round trip through the real job_submit.lua (lua5.1, stand-in slurm table) at a steady RATE; sbatch
    throughput with the shim+daemon vs without a job_submit plugin (and vs a no-op job_submit.lua, which
    isolates Slurm's own Lua plugin cost), alternating rounds in the same run, with slurmctld's sdiag figures; submission time with the daemon healthy, absent and hung (SIGSTOP); and a
    chaos run counting submissions the shim made fail.
    """
    say = text_out(as_json)
    if quick:
        seconds, jobs, rounds = min(seconds, 3.0), min(jobs, 60), 1
    root.mkdir(parents=True, exist_ok=True)
    site = _site_file(root, port)
    cluster = LocalCluster(root)
    cluster.down()
    cluster.up(site, job_submit=True, daemon=False)
    client = cluster.client()
    daemon = DaemonProcess(root, refresh_s=5.0)
    host = machine()
    doc: dict = {"slurm_version": str(client.version), "machine": host, "commit": host.get("git_commit", ""),
                 "command": _command(), "quick": quick}
    try:
        daemon.start()
        say(f"round trip: {rate:.0f}/s for {seconds:.0f} s through {daemon.socket} ...")
        doc.update(shim_roundtrip(daemon.socket, rate, seconds, TIMEOUT_MS))
        say("round trip floor: the same driver against a fixed-reply server ...")
        doc["roundtrip_floor_us"] = roundtrip_floor(rate, seconds)

        bursts: dict[str, list] = {mode: [] for mode in MODES}
        for r in range(rounds):
            for mode in bursts:
                _use_job_submit(cluster, site, mode != "without_job_submit")
                if mode == "lua_noop":
                    (root / "etc" / "job_submit.lua").write_text(NOOP_LUA)  # slurmctld reloads it by mtime
                say(f"sbatch round {r + 1}/{rounds} {mode}: {jobs} jobs, {threads} submitters ...")
                bursts[mode].append(sbatch_burst(client, jobs, threads))
                client.run("scancel", "--user", "root", check=False)
        per_s = {m: round(sum(len(b.ids) for b in runs) / sum(b.seconds for b in runs), 1)
                 for m, runs in bursts.items()}
        sdiag = {m: {"count": sum(b.sdiag["count"] for b in runs),
                     "ave_time_us": round(sum(b.sdiag["total_time_us"] for b in runs)
                                          / max(sum(b.sdiag["count"] for b in runs), 1), 1)}
                 for m, runs in bursts.items()}
        doc.update(sbatch_per_s=per_s, sbatch_jobs_per_mode=jobs * rounds, sbatch_threads=threads,
                   sbatch_throughput_ratio=round(per_s["with_shim"] / per_s["without_job_submit"], 3),
                   sbatch_throughput_ratio_vs_lua_noop=round(per_s["with_shim"] / per_s["lua_noop"], 3),
                   sdiag_request_submit_batch_job=sdiag)
        rejected = [f for b in bursts["with_shim"] for f in b.failures]

        _use_job_submit(cluster, site, True)  # the real shim again
        n = 7 if quick else 15
        healthy, f1 = median_submit_ms(client, n, "--constraint=aarch64|x86_64")
        daemon.kill()
        absent, f2 = median_submit_ms(client, n, "--constraint=aarch64|x86_64")
        daemon.start()
        daemon.hang()
        hung, f3 = median_submit_ms(client, n, "--constraint=aarch64|x86_64")
        daemon.resume()
        doc.update(fail_open_healthy_ms=healthy, fail_open_absent_ms=absent, fail_open_hung_ms=hung,
                   fail_open_hung_delay_ms=round(hung - absent, 2), shim_timeout_ms=TIMEOUT_MS,
                   fail_open_samples=n)
        say("chaos: kill/hang/resume/restart while submitting ...")
        chaos = chaos_submissions(client, daemon, 5.0 if quick else 15.0)
        doc["chaos"] = chaos
        rejected += f1 + f2 + f3
        doc["shim_rejections"] = len(rejected) + chaos["rejections"]
        doc["rejection_samples"] = (rejected + chaos["failures"])[:5]
        client.run("scancel", "--user", "root", check=False)
    finally:
        if not keep:
            daemon.stop()
            cluster.down()
    rt = doc["roundtrip_us"]
    doc["targets"] = {
        "roundtrip_p99_under_1000us": rt["p99"] < 1000, "roundtrip_p50_under_200us": rt["p50"] < 200,
        "rate_at_least_1000_per_s": doc["rate_per_s"] >= 0.99 * 1000,
        "sbatch_ratio_at_least_0.9": doc["sbatch_throughput_ratio"] >= 0.9,
        "hung_delay_at_most_timeout_plus_10ms": doc["fail_open_hung_delay_ms"] <= TIMEOUT_MS + 10,
        "absent_unaffected": doc["fail_open_absent_ms"] <= doc["fail_open_healthy_ms"] + 5,
        "zero_shim_rejections": doc["shim_rejections"] == 0,
    }
    for key, value in doc["targets"].items():
        say(f"{'met   ' if value else 'MISSED'} {key}")
    floor = doc["roundtrip_floor_us"]
    say(f"round trip p50 {rt['p50']} us, p99 {rt['p99']} us, max {rt['max']} us at {doc['rate_per_s']}/s "
               f"(floor without a daemon: p50 {floor['p50']} us, p99 {floor['p99']} us); "
               f"sbatch ratio {doc['sbatch_throughput_ratio']}; absent {doc['fail_open_absent_ms']} ms, "
               f"hung {doc['fail_open_hung_ms']} ms; shim rejections {doc['shim_rejections']}")
    write_json(output, doc)
    if as_json:
        emit_json(doc)
