"""``hetsched sim fidelity``: replay a heterogeneous workload on the real local cluster and in the simulator."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import click

from ..workload import WorkloadError
from .common import emit_json, handle_errors
from .output import json_output_options, write_json

log = logging.getLogger(__name__)
SUMMARY_KEYS = ("jobs", "kendall_tau", "wait_mae_s", "mean_wait_real_s", "mean_wait_sim_s", "power_ups_real",
                "power_ups_sim", "energy_real_kwh", "energy_sim_kwh", "slurm_version")


@click.command("fidelity")
@click.option("--site", default="demo", show_default=True, help="Site name or file the replay cluster runs.")
@click.option("--jobs", "n_jobs", type=click.IntRange(1, 20000), default=300, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--compress", type=click.FloatRange(min=1.0), default=60.0, show_default=True,
              help="Divide the workload's site-scale run and arrival times by this.")
@click.option("--root", default=None, type=click.Path(file_okay=False),
              help="Cluster root (default: $HETSCHED_TEST_ROOT/fidelity or /var/lib/hetsched/fidelity).")
@click.option("--port-base", type=click.IntRange(1024, 65000), default=None,
              help="First of the cluster's ports (default: $HETSCHED_TEST_PORT_BASE + 1900, else 30900).")
@click.option("--no-daemon", is_flag=True, help="Without the job_submit shim and admission daemon (no SiteFactor bands; "
              "with --containers: without the suite's container, so no cycle either).")
@click.option("--no-power", is_flag=True, help="Without Slurm's power saving (every node stays on).")
@click.option("--containers", "release", default=None, type=click.Choice(["bookworm", "trixie"]),
              help="Replay on the container cluster of this Debian release (trixie: Slurm 24.11) instead of the "
                   "local one, with the suite's container: slurmctld's job_submit.lua asks the admission daemon "
                   "(SiteFactor bands) and `hetsched cycle run` steers every 30 s (--cycle-args).")
@click.option("--cycle-args", default=None,
              help="Options of the container cluster's `hetsched cycle run` (default: '--interval 30'; "
                   "'--no-power' leaves powering to Slurm alone).")
@click.option("--from-record", "from_record", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Re-simulate the record in an earlier --json file instead of running the cluster.")
@click.option("--release-s", type=click.FloatRange(min=0.0), default=1.0, show_default=True,
              help="Modelled start latency after a job ends (seconds).")
@click.option("--will-run", is_flag=True,
              help="Backfill plans start when Slurm's select plugin estimates (the end of the last running job "
                   "it removes), not at the earliest fit: off by default (results/sim/fidelity/HISTORY.md, "
                   "session 23).")
@click.option("--timing", "timing_args", multiple=True, metavar="NAME=on|off",
              help="Switch one of the replay's Slurm models on or off for the comparison (repeatable), e.g. "
                   "batch_passes=on, bf_sees_end=off; an unknown NAME lists them.")
@json_output_options
@handle_errors(WorkloadError, ValueError, OSError, RuntimeError, TimeoutError)
def fidelity_cmd(site, n_jobs, seed, compress, root, port_base, no_daemon, no_power, release, cycle_args,
                 from_record, release_s, will_run, timing_args, as_json, output) -> None:
    """Kendall tau of start times, mean waits, node power-ups and energy: real slurmctld vs the simulator.

    --output FILE gets the comparison (issue 22's keys), the Slurm timing used, provenance and the raw record
    (written once the replay ends, before the comparison, so a long replay is never lost)."""
    if output is None and not from_record:
        raise click.UsageError("--output FILE is needed: the replay's record is kept there")
    if cycle_args is not None and (not release or no_daemon):
        raise click.UsageError("--cycle-args is for the container cluster's suite (--containers, without --no-daemon)")
    from ..site import Site
    from ..sim.fidelity_replay import compare_record, parse_timing_switches, replay_timing
    from ..sim.fidelity_workload import hetero_workload
    from ..sim.run import provenance
    from ..sim.fidelity import fidelity_ok
    from ..sim.slurm_timing import OFF

    switches = {"will_run": True} if will_run else {}
    switches |= parse_timing_switches(timing_args)  # checked before a replay starts
    if from_record:
        earlier = json.loads(Path(from_record).read_text())
        record, site_data, args = earlier["record"], earlier["site"], earlier["args"]
    else:
        jobs = hetero_workload(n_jobs, seed, compress)
        base = os.environ.get("HETSCHED_TEST_ROOT")
        name = f"fidelity-{release}" if release else "fidelity"
        root = Path(root or (Path(base) / name if base else f"/var/lib/hetsched/{name}"))
        if port_base is None:
            env = os.environ.get("HETSCHED_TEST_PORT_BASE")
            port_base = int(env) + 1900 if env else 30900
        where = f"the {release} container cluster" if release else f"a local cluster (ports {port_base}..)"
        click.echo(f"replaying {len(jobs)} jobs (last submit at {jobs[-1].offset_s:.0f} s) on {where} under {root}",
                   err=True)
        run_load = os.getloadavg()
        run_commit = provenance()["git_commit"]  # the code that runs the replay (the checkout may move meanwhile)
        log_out = Path(f"{output}.slurmctld.log.gz")
        if release:
            from ..cluster.containers import DEFAULT_CYCLE_ARGS

            cycle_args = None if no_daemon else (DEFAULT_CYCLE_ARGS if cycle_args is None else cycle_args)
            record, site_data = run_on_container_cluster(site, jobs, root, release, power=not no_power,
                                                         log_out=log_out, suite=not no_daemon,
                                                         cycle_args=cycle_args or "")
        else:
            record, site_data = run_on_local_cluster(site, jobs, root, port_base, power=not no_power,
                                                     daemon=not no_daemon, log_out=log_out)
        args = {"site": site, "jobs": n_jobs, "seed": seed, "compress": compress,
                "daemon": not no_daemon, "power": not no_power, "containers": release,
                "cycle": cycle_args if release and not no_daemon else None,
                "run_commit": run_commit, "run_load_avg": run_load,
                "end_load_avg": os.getloadavg()}
        write_json(output, {"args": args, "site": site_data, "record": record})
    site_obj = Site.model_validate(site_data)
    timing = replay_timing(record, site_data, release_s=release_s, **switches)
    result = compare_record(site_obj, record, timing)
    baseline = compare_record(site_obj, record, OFF)
    summary = {k: result[k] for k in SUMMARY_KEYS}
    out = {**summary, "commit": provenance()["git_commit"], "machine": provenance(),
           "load_avg": os.getloadavg(), "args": args, "timing": timing.__dict__,
           "timing_off": {k: baseline[k] for k in SUMMARY_KEYS},
           "detail": {k: v for k, v in result.items() if k not in SUMMARY_KEYS},
           "site": site_data, "record": record}
    shown = summary | {"timing_off_tau": baseline["kendall_tau"], "fidelity_ok": list(fidelity_ok(summary))}
    write_json(output, out)
    if as_json:
        emit_json(shown)
    else:
        click.echo("\n".join(f"{k}: {v}" for k, v in shown.items()))


def run_on_local_cluster(site: str, jobs: list, root, port_base: int, power: bool = True,
                         daemon: bool = True, timeout_s: float = 3600.0,
                         log_out: Path | None = None) -> tuple[dict, dict]:
    """Bring up the replay cluster (``site`` + the replay partition and power settings, job_submit shim and
    admission daemon when ``daemon``) under ``root`` on ports ``port_base``.., record the replay on it
    (:func:`record_on`) and take it down again; returns (record, the site file's data)."""
    from ..cluster.local import LocalCluster
    from ..site import Site
    from ..sim.fidelity import process_start_epoch

    data = _replay_site(site, power)
    site_obj = Site.model_validate(data)
    data["slurm"].update(cluster_name=f"hs-fid-{site_obj.name}"[:40], slurmctld_port=port_base,
                         slurmd_port=port_base + 1)
    site_file = _write_site(root, data)
    cluster = LocalCluster(root)
    cluster.down()  # whatever an earlier run left
    cluster.up(site_file, job_submit=daemon, daemon=daemon)
    try:
        epoch = process_start_epoch(cluster.state()["slurmctld_pid"])
        record = record_on(cluster.client(), jobs, Path(root) / "log" / "slurmctld.log", timeout_s, log_out, epoch)
    finally:
        cluster.down()
    return record, data


def run_on_container_cluster(site: str, jobs: list, root, release: str = "trixie", power: bool = True,
                             timeout_s: float = 3600.0, log_out: Path | None = None, suite: bool = True,
                             cycle_args: str = "--interval 30") -> tuple[dict, dict]:
    """As :func:`run_on_local_cluster` on the container cluster of Debian ``release`` (trixie: Slurm 24.11;
    ``hetsched cluster up --containers``) under ``root``: slurmctld and one slurmd container per node, a node's
    boot its container's start; Slurm's commands run in the ctl container. With ``suite`` the suite's container
    runs too: slurmctld's job_submit.lua asks the admission daemon (SiteFactor bands, as the local replay's shim
    does) and ``hetsched cycle run CYCLE_ARGS`` steers (ranking, moves, power) as it would on a site; the record
    then keeps the cycle's journal entries of the replay (``record["cycle_journal"]``: each action with its
    time, kind, nodes and reason) and the daemon's log lines (``record["daemon_log"]``, the last 200)."""
    from ..cluster.containers import ContainerCluster
    from ..cluster.compose import SUITE

    data = _replay_site(site, power)
    site_file = _write_site(root, data)
    cluster = ContainerCluster(root)
    cluster.down()
    cluster.up(str(site_file), release=release, suite=suite, cycle_args=cycle_args)
    daemon_log = Path(root) / "log" / SUITE / "daemon.log"
    journal = Path(root) / cluster.plan().data("suite") / "journal.jsonl"
    offsets = (_size(daemon_log), _size(journal))
    try:
        record = record_on(cluster.client(), jobs, Path(root) / "log" / "ctl" / "slurmctld.log", timeout_s, log_out)
        record["containers"] = release
        record["suite"] = {"daemon": suite, "cycle_args": cycle_args if suite else None}
        if suite:
            record["cycle_journal"] = [json.loads(line) for line in _tail_from(journal, offsets[1]).splitlines()
                                       if line.strip()]
            record["daemon_log"] = _tail_from(daemon_log, offsets[0]).splitlines()[-200:]
    finally:
        cluster.down()
    return record, data


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _tail_from(path: Path, offset: int) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(offset)
        return fh.read().decode(errors="replace")


def _replay_site(site: str, power: bool) -> dict:
    from ..sim.fidelity_workload import replay_site_data

    return replay_site_data(site, power=power)


def _write_site(root, data: dict) -> Path:
    import yaml

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(data, sort_keys=False))
    return site_file


def record_on(client, jobs: list, ctld_log: Path, timeout_s: float, log_out: Path | None,
              ctld_epoch: float | None = None) -> dict:
    """Record the replay of ``jobs`` on a running replay cluster: slurmctld logs its backfill cycles meanwhile
    (DebugFlags=Backfill); the record gets :func:`~slurm_plugin.sim.fidelity_record.ctld_events` of the
    replay's part of ``ctld_log``, ``log_out`` (if given) that part itself, gzipped; ``ctld_epoch``:
    slurmctld's start (epoch seconds) if known (submits are then kept half a second off its clock)."""
    import gzip

    from ..sim.fidelity_record import ctld_events, record_replay
    from ..sim.fidelity_workload import PARTITION

    client.run("scontrol", "setdebugflags", "+Backfill")
    offset = ctld_log.stat().st_size if ctld_log.exists() else 0
    record = record_replay(client, jobs, PARTITION, timeout_s=timeout_s, backfill_epoch=ctld_epoch)
    if ctld_epoch is not None:
        record["slurmctld_start"] = ctld_epoch
    if ctld_log.exists():
        with ctld_log.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode(errors="replace")
        record["ctld_events"] = ctld_events(text)
        if log_out is not None:
            with gzip.open(log_out, "wt") as fh:
                fh.write(text)
    record["slurm_version"] = str(client.version)
    record["slurm_conf"] = {k: v for k, v in _show_config(client).items()
                            if k in ("SchedulerParameters", "SuspendTime", "SuspendTimeout", "ResumeTimeout",
                                     "PriorityWeightAge", "PriorityWeightJobSize", "PriorityMaxAge", "PriorityCalcPeriod",
                                     "MinJobAge", "KillWait", "OverTimeLimit", "BatchStartTimeout")}
    return record


def _show_config(client) -> dict[str, str]:
    out = {}
    for line in client.run("scontrol", "show", "config").stdout.splitlines():
        if " = " in line:
            k, v = line.split(" = ", 1)
            out[k.strip()] = v.strip()
    return out
