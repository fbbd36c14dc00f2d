"""``hetsched bench deploy``: the deployment targets of issue 19 on a real local cluster (its own root and
ports): container start (job start on the node -> the container's first instruction, warm and cold), function
invocation round trip at a steady rate, cold start and scale to zero, and isolation over mixed submissions."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import click
import yaml

from ..cluster.local import LocalCluster
from ..cluster.procs import spawn_detached, stop_pid
from ..daemon.bench import machine, summarize
from ..deploy import audit, isolation
from ..deploy.build import build_busybox
from ..deploy.site_patch import patch_site, wipe_cycle_argv
from ..site import SITE_CONFIGS
from .output import json_output_options, text_out, write_json

PROBE = "#!/bin/sh\n#HETSCHED image=busybox\ncut -d' ' -f1 /proc/uptime\n"
HOST = "#!/bin/sh\ncut -d' ' -f1 /proc/uptime\n"


def _site_file(root: Path, port: int) -> Path:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["slurm"].update(cluster_name="hs-bench-deploy", slurmctld_port=port, slurmd_port=port + 1,
                         suspend_timeout=5, resume_timeout=60)
    patch_site(data, root)
    path = root / "site.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _start_ms(cluster: LocalCluster, script: str, n: int, cold_bundle: Path | None = None) -> list[float]:
    """Run ``n`` jobs of ``script`` one after another; ms from the Prolog's stamp to the script's first line."""
    client, out = cluster.client(), []
    for _ in range(n):
        if cold_bundle is not None:
            shutil.rmtree(cold_bundle / "rootfs", ignore_errors=True)
        proc = client.run("sbatch", "--parsable", "-p", "arm", "-o", f"{cluster.root}/bench-%j.out", input=script)
        job = proc.stdout.strip().split(";")[0]
        client.wait_job(int(job), timeout=120)
        first = float((cluster.root / f"bench-{job}.out").read_text().split()[0])
        start = float((cluster.root / "run" / "stamps" / job).read_text())
        out.append(round((first - start) * 1000, 1))
    return out


def _post(conn_url: str, name: str, args: list[str]) -> dict:
    req = urllib.request.Request(f"{conn_url}/invoke/{name}", json.dumps({"args": args}).encode())
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())


def _paced(url: str, rate: float, seconds: float) -> list[float]:
    """Client round trips (ms) of invocations sent at ``rate``/s for ``seconds`` (open loop, 8 senders)."""
    n = int(rate * seconds)
    t0 = time.monotonic() + 0.2

    def one(i: int) -> float:
        time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        s = time.monotonic()
        _post(url, "bench", [str(i)])
        return (time.monotonic() - s) * 1000

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return [round(x, 2) for x in pool.map(one, range(n))]


def _functions(cluster: LocalCluster, site_file: Path, port: int, rate: float, seconds: float, say) -> dict:
    state = cluster.root / "fn"
    hetsched = [sys.executable, "-m", "slurm_plugin"]
    subprocess.run([*hetsched, "fn", "deploy", "bench", "--image", "busybox", "--class", "burst", "--site",
                    str(site_file), "--state", str(state)], check=True, capture_output=True)
    pid = spawn_detached([*hetsched, "fn", "serve", "--site", str(site_file), "--state", str(state), "--listen",
                          f"127.0.0.1:{port}", "--runtime-root", str(cluster.root / "run" / "fn"), "--slurm-conf",
                          str(cluster.conf)], cluster.root / "log" / "fn.log",
                         env={**os.environ, "SLURM_CONF": str(cluster.conf)})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        say("function: cold start (no pilot) ...")
        t = time.monotonic()
        cold = _post(url, "bench", ["cold"])
        cold_ms = round((time.monotonic() - t) * 1000, 1)
        say(f"function: warm, {rate:.0f}/s for {seconds:.0f} s ...")
        warm = _paced(url, rate, seconds)
        say("function: waiting for scale to zero ...")
        t = time.monotonic()
        client = cluster.client()
        while client.show_job(int(cold["pilot"]))["JobState"] not in ("COMPLETED", "CANCELLED", "FAILED"):
            time.sleep(0.5)
        zero_s = round(time.monotonic() - t, 1)
        return {"fn_invoke_ms": {**summarize(warm), "rate_per_s": rate, "seconds": seconds,
                                 "load": "client, gateway and pilot on this host"},
                "fn_cold_start_ms": cold_ms, "fn_scale_to_zero_s_after_last_call": zero_s,
                "fn_idle_timeout_s": 10}
    finally:
        stop_pid(pid, "fn serve")


def _isolation(cluster: LocalCluster, site_file: Path, jobs: int, every: int, say) -> dict:
    client = cluster.client()
    trace = cluster.root / "trace.log"
    trace.unlink(missing_ok=True)
    power_log = cluster.root / "log" / "power.log"
    power_from = power_log.stat().st_size if power_log.exists() else 0  # the log outlives earlier runs
    # the power cycle after sensitive work is the steering cycle's wipe step (no process of its own)
    steering = spawn_detached(wipe_cycle_argv(sys.executable, site_file, cluster.root / "cycle"),
                              cluster.root / "log" / "cycle.log", env={**os.environ, "SLURM_CONF": str(cluster.conf)})
    t0 = time.monotonic()
    try:
        sensitive, ids = set(), []
        for is_sensitive, args in isolation.mixed_jobs(jobs, every):
            proc = client.run("sbatch", "--parsable", "-o", "/dev/null", *args,
                              input=isolation.job_script(str(trace), 0.2), check=False)
            if proc.returncode != 0:
                raise click.ClickException(f"sbatch refused: {proc.stderr.strip()}")
            job = proc.stdout.strip().split(";")[0]
            ids.append(job)
            if is_sensitive:
                sensitive.add(job)
        say(f"isolation: {jobs} submitted ({len(sensitive)} sensitive), waiting ...")
        while client.run("squeue", "-h", "-o", "%i", check=False).stdout.strip():
            time.sleep(2)
        events = isolation.parse(trace.read_text())
        problems = isolation.violations(events, sensitive)
        records = audit.records(cluster.root / "audit.jsonl")
        audited = {str(r["job_id"]) for r in records if r["event"] == "end"} & sensitive
        return {"isolation_violations": len(problems),
                "isolation": {"submissions": jobs, "sensitive": len(sensitive), "ran": len({e.job for e in events
                                                                                             if e.kind == "end"}),
                              "violations": problems[:20], "audited_sensitive": len(audited),
                              "audit_chain_problems": audit.verify(cluster.root / "audit.jsonl"),
                              "power_cycles": power_log.read_bytes()[power_from:].decode().count(" suspend "),
                              "wall_s": round(time.monotonic() - t0, 1)}}
    finally:
        stop_pid(steering, "cycle run")


@click.command("deploy")
@json_output_options
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), show_default=True,
              default=Path("/var/lib/hetsched/test/deploy-bench"), help="The benchmark's own local cluster.")
@click.option("--port", type=int, default=17997, show_default=True, help="slurmctld port (slurmd ports follow; "
                                                                         "the gateway takes port + 15).")
@click.option("--warm", type=int, default=30, show_default=True, help="Warm container jobs (one at a time).")
@click.option("--cold", type=int, default=5, show_default=True, help="Cold container jobs (rootfs removed first).")
@click.option("--rate", type=float, default=50.0, show_default=True, help="Function invocations per second.")
@click.option("--seconds", type=float, default=10.0, show_default=True, help="Length of the paced run.")
@click.option("--jobs", type=int, default=1000, show_default=True, help="Mixed submissions for isolation.")
@click.option("--sensitive-every", type=int, default=50, show_default=True, help="Every N-th one is sensitive.")
def deploy_cmd(as_json, output, root, port, warm, cold, rate, seconds, jobs, sensitive_every) -> None:
    """Container start (job start on the node -> first instruction), function invoke round trip and cold start, isolation over mixed submissions, on a real local cluster.

    Container start: the Prolog's stamp vs the container's first line, both the node's clock (10 ms
    resolution); functions at RATE/s, cold start and scale to zero; isolation over JOBS mixed submissions.
    One JSON result."""
    say = text_out(as_json)
    root.mkdir(parents=True, exist_ok=True)
    site_file = _site_file(root, port)
    cluster = LocalCluster(root)
    cluster.down()
    cluster.up(site_file, job_submit=True)
    host = machine()
    doc: dict = {"slurm_version": str(cluster.client().version), "machine": host, "commit": host.get("git_commit", ""),
                 "command": "hetsched bench deploy " + shlex.join(sys.argv[sys.argv.index("deploy") + 1:])
                 if "deploy" in sys.argv else ""}
    try:
        site = cluster.site()
        image = build_busybox(site.deploy.image_store, "busybox:latest")
        bundle = Path(site.deploy.bundle_cache) / image.key
        say(f"containers: {cold} cold, {warm} warm, {warm} host jobs ...")
        cold_ms = _start_ms(cluster, PROBE, cold, cold_bundle=bundle)
        warm_ms = _start_ms(cluster, PROBE, warm)
        host_ms = _start_ms(cluster, HOST, warm)
        doc["container_start_ms"] = {**summarize(warm_ms), "cold_p50": summarize(cold_ms)["p50"],
                                     "cold": summarize(cold_ms), "host_job": summarize(host_ms),
                                     "runtime": site.deploy.runtime}
        doc.update(_functions(cluster, site_file, port + 15, rate, seconds, say))
        doc.update(_isolation(cluster, site_file, jobs, sensitive_every, say))
        doc["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        cluster.down()
    write_json(output, doc)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
    else:
        c, f = doc["container_start_ms"], doc["fn_invoke_ms"]
        click.echo(f"container start warm p50 {c['p50']} ms p99 {c['p99']} ms, cold p50 {c['cold_p50']} ms; "
                   f"fn p50 {f['p50']} ms p99 {f['p99']} ms at {rate:.0f}/s, cold {doc['fn_cold_start_ms']} ms; "
                   f"isolation violations {doc['isolation_violations']}")
