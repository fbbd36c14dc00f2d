"""Vendor hardware profiles: apply a node group's BIOS profile through Redfish, audit for drift."""

from __future__ import annotations

import json
import sys

import click

from .common import site_from

_site = click.option("--site", "site_option", metavar="SITE", help="Site file (default $HETSCHED_SITE, then /etc/hetsched/site.yaml).")


@click.group()
def hw() -> None:
    """Vendor hardware profiles: BIOS settings per node model through Redfish (apply, audit drift)."""


def _setup(site_path, hostlist):
    import hostlist as hl

    from ..hw.bios import RedfishBios
    from ..hw.profiles import ProfileError, profiles_of
    from ..power.redfish import targets_from_site
    from ..site import load_site

    site = load_site(site_path)
    hosts = hl.expand_hostlist(hostlist) if hostlist else None
    try:
        profiles = profiles_of(site, hosts)
    except ProfileError as exc:
        raise click.UsageError(str(exc)) from None
    return RedfishBios(targets_from_site(site, list(profiles))), profiles


def _rows(bios, profiles, apply: bool) -> list[dict]:
    from ..hw.profiles import changes, compare
    from ..power.base import PowerError

    rows = []
    for node, prof in sorted(profiles.items()):
        try:
            current, pending = bios.read(node)
            patch = changes(prof, current, pending)
            if apply and patch:
                bios.patch(node, patch)
                current, pending = bios.read(node)  # read back: the BMC must now hold them as pending
            settings = compare(prof, current, pending)
            rows.append({"node": node, "profile": prof.name, "patched": patch if apply else {},
                         "settings": [s.__dict__ for s in settings],
                         "drift": [s.attribute for s in settings if s.state == "drift"],
                         "pending": [s.attribute for s in settings if s.state == "pending"], "error": ""})
        except PowerError as exc:
            rows.append({"node": node, "profile": prof.name, "patched": {}, "settings": [], "drift": [],
                         "pending": [], "error": str(exc)})
    return rows


def _report(rows: list[dict], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"nodes": rows}, indent=1))
    else:
        for r in rows:
            state = r["error"] or ("drift: " + ", ".join(r["drift"]) if r["drift"] else
                                   "pending reboot: " + ", ".join(r["pending"]) if r["pending"] else "ok")
            click.echo(f"{r['node']:<16} {r['profile']:<24} {state}")


def _profile_command(apply: bool):
    """`hw audit` (apply False) or `hw apply`: the same options, rows and exit status (1 on drift or error)."""

    def command(site_option: str | None, hostlist: str | None, as_json: bool) -> None:
        bios, profiles = _setup(site_from(None, site_option), hostlist)
        rows = _rows(bios, profiles, apply=apply)
        _report(rows, as_json)
        if any(r["drift"] or r["error"] for r in rows):
            sys.exit(1)

    return _site(click.argument("hostlist", required=False)(
        click.option("--json", "as_json", is_flag=True)(command)))


audit = hw.command("audit", help="Compare each node's BIOS (current and pending) with its group's profile; exit 1 "
                                 "on drift or error.")(_profile_command(apply=False))
apply = hw.command("apply", help="PATCH what differs from the profile into each node's BIOS settings (applied at "
                                 "its next reboot), then read them back; exit 1 if a node still drifts or "
                                 "failed.")(_profile_command(apply=True))


@hw.group()
def bench() -> None:
    """Benchmarks as Slurm jobs: per-node GEMM and memory bandwidth, slow nodes within a group drained."""


@bench.command("run")
@click.option("--output", type=click.Path(dir_okay=False), required=True, help="JSON file for this node's result.")
@click.option("--node", default=None, help="Node name (default: $SLURMD_NODENAME, set in a job).")
def bench_run(output: str, node: str | None) -> None:
    """Measure this node (what each benchmark job runs)."""
    import os
    import socket

    from ..fsio import write_file_atomic
    from ..hw.bench import measure

    node = node or os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    result = {"node": node, **measure(), "job": os.environ.get("SLURM_JOB_ID")}
    write_file_atomic(output, json.dumps(result))
    click.echo(json.dumps(result))


@bench.command("submit")
@_site
@click.argument("hostlist", required=False)
@click.option("--dir", "out_dir", type=click.Path(file_okay=False), required=True, help="Where results go (shared).")
@click.option("-p", "--partition", default=None, help="Partition of the jobs (default: Slurm's default).")
def bench_submit(site_option: str | None, hostlist: str | None, out_dir: str, partition: str | None) -> None:
    """Submit one exclusive benchmark job per node (of HOSTLIST, default every node of the site)."""
    import shlex
    from pathlib import Path

    import hostlist as hl

    from ..conf.programs import package_parent
    from ..site import load_site
    from ..slurm.client import SlurmClient

    site = load_site(site_from(None, site_option))
    nodes = hl.expand_hostlist(hostlist) if hostlist else [h for g in site.node_groups for h in g.hostnames]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    client, pp = SlurmClient(), package_parent()
    env = f"PYTHONPATH={shlex.quote(pp)} " if pp else ""
    for node in nodes:
        cmd = (f"{env}{shlex.quote(sys.executable)} -m slurm_plugin hw bench run --output "
               f"{shlex.quote(str(Path(out_dir).resolve() / (node + '.json')))}")
        args = ["-w", node, "--exclusive", "-J", "hetsched-bench", "--time=10", "--output=/dev/null"]
        job = client.sbatch(*args, *(["-p", partition] if partition else []), wrap=cmd)
        click.echo(f"{node}: job {job}")


@bench.command("analyze")
@_site
@click.argument("out_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="A node below (1 - threshold) x its group's median on a metric is slow.")
@click.option("--drain", is_flag=True, help="Drain the slow nodes through Slurm (reason 'hetsched: bench ...').")
@click.option("--factors", "factors_out", type=click.Path(dir_okay=False), default=None,
              help="Write the measured speed factors per node group here (the site's speed_factors overlay).")
@click.option("--json", "as_json", is_flag=True)
def bench_analyze(site_option: str | None, out_dir: str, threshold: float, drain: bool, factors_out: str | None,
                  as_json: bool) -> None:
    """Per-node performance factors (node / group median) from the results in OUT_DIR, and the slow nodes;
    with --factors, the group speed factors the site model uses (name the file as the site's speed_factors)."""
    from pathlib import Path

    from ..decision.applier import SlurmApplier
    from ..hw.bench import METRICS, analyze, drains
    from ..site import load_site
    from ..slurm.client import SlurmClient

    site = load_site(site_from(None, site_option))
    groups = {h: g.name for g in site.node_groups for h in g.hostnames}
    results = {}
    for path in sorted(Path(out_dir).glob("*.json")):
        rec = json.loads(path.read_text())
        if all(isinstance(rec.get(m), (int, float)) for m in METRICS):
            results[rec["node"]] = rec
    verdicts = analyze(results, groups, threshold)
    if factors_out:
        import yaml

        from ..fsio import write_file_atomic
        from ..hw.bench import factor_overlay

        archs = {g.name: g.cpu.arch for g in site.node_groups}
        overlay = factor_overlay(results, groups, archs, verdicts, {
            "results": str(Path(out_dir).resolve()), "site": site.name, "command": " ".join(sys.argv)})
        write_file_atomic(factors_out, yaml.safe_dump(overlay, sort_keys=False))
    decision = drains(verdicts, threshold)
    applied = SlurmApplier(SlurmClient()).apply(decision) if drain else []
    if as_json:
        click.echo(json.dumps({"nodes": [{"node": v.node, "group": v.group, "factors": dict(v.factors),
                                          "slow": list(v.slow)} for v in verdicts],
                               "drains": [a.nodes[0] for a in decision.actions],
                               "applied": [a.status for a in applied]}, indent=1))
    else:
        for v in verdicts:
            click.echo(f"{v.node:<14} {v.group:<14} " + " ".join(f"{m} {f:.2f}" for m, f in v.factors.items())
                       + (f"  SLOW ({', '.join(v.slow)})" if v.slow else ""))
    if any(a.status != "ok" for a in applied):
        sys.exit(1)
