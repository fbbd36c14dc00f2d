"""``hetsched daemon``: the admission daemon that job_submit.lua asks about every submission."""

from __future__ import annotations

import asyncio
import faulthandler
import functools
import gc
import io
import json
import logging
import os
import signal
import socket
import sys
from dataclasses import replace

import click

from .common import fail, handle_errors, resolve_site

log = logging.getLogger(__name__)


@click.group()
def daemon() -> None:
    """Run or query the admission daemon (see daemon/hetsched.yaml)."""


@daemon.command("run")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="YAML settings (e.g. /etc/hetsched/hetsched.yaml); options below override it.")
@click.option("--socket", "socket_path", help="Unix socket to serve (the shim's hetsched-shim.json 'socket').")
@click.option("--site", help="Site file the cluster runs ('demo' for the bundled example); default: the config's "
                               "site, $HETSCHED_SITE, then /etc/hetsched/site.yaml.")
@click.option("--slurm-conf", help="slurm.conf of the cluster to snapshot (default: $SLURM_CONF).")
@click.option("--allow-user", "allow_users", multiple=True, help="User (name or uid) allowed to ask; repeatable.")
@click.option("--pid-file", help="Write the daemon's pid here while it runs.")
@click.option("--refresh", "refresh_s", type=float, help="Seconds between snapshot refreshes.")
@click.option("--metrics-listen", help="HOST:PORT serving Prometheus /metrics, or 'off' (default: the config's "
                                       "metrics.listen, 127.0.0.1:9817).")
@click.option("--metrics-textfile", help="Also rewrite this file for node_exporter's textfile collector.")
@click.option("--queue-file", type=click.Path(dir_okay=False),
              help="Take the job queue from this file while it is young enough (what `cycle run --queue-file` "
                   "publishes; default: the config's queue_file, none).")
@click.option("--cpu-latency-us", type=click.IntRange(0, 2_000_000_000),
              help="Hold the CPU wake-up latency limit (/dev/cpu_dma_latency) at this many µs while serving "
                   "(default: the config's cpu_latency_us, off).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
@handle_errors()
def run_cmd(config_path, socket_path, site, slurm_conf, allow_users, pid_file, refresh_s, metrics_listen,
            metrics_textfile, queue_file, cpu_latency_us, log_level) -> None:
    """Serve admission requests until SIGTERM/SIGINT (foreground; systemd runs it as hetsched.service).
    SIGUSR1 writes every thread's stack to stderr (the journal or log) without stopping it: what a daemon that
    does not answer is doing."""
    from ..admission.trust import Accounting
    from ..daemon import AdmissionServer, DaemonConfig, PidFile, run_until_signal
    from ..daemon.config import MetricsSettings
    from ..daemon.cpu_latency import CpuLatencyHold
    from ..daemon.peercred import resolve_uid
    from ..daemon.pool import prepare_pool
    from ..scale.rightsize import apply_table
    from ..site import load_site, resolve_site_path
    from ..slurm.associations import ASSOC_REFRESH_S
    from ..snapshot import ProcessCollector, SnapshotRefresher

    logging.getLogger().setLevel(log_level.upper())
    _stacks_on_sigusr1()
    cfg = DaemonConfig.load(config_path, socket=socket_path, site=site, slurm_conf=slurm_conf,
                            allow_users=allow_users or None, pid_file=pid_file, refresh_s=refresh_s,
                            queue_file=queue_file, cpu_latency_us=cpu_latency_us)
    cfg = cfg.model_copy(update={"site": resolve_site(cfg.site)})
    if metrics_listen is not None or metrics_textfile is not None:
        try:
            metrics_cfg = MetricsSettings.model_validate({**cfg.metrics.model_dump(), **{k: v for k, v in (
                ("listen", metrics_listen), ("textfile", metrics_textfile)) if v is not None}})
        except ValueError as err:
            fail(f"--metrics-listen/--metrics-textfile: {err}", 2)
        cfg = cfg.model_copy(update={"metrics": metrics_cfg})
    try:
        uids = {resolve_uid(u) for u in cfg.allow_users}
        ctld_uid = resolve_uid(cfg.priority_user) if cfg.priority_user is not None else None
    except KeyError as err:
        fail(f"allow_users/slurmctld_user names an unknown user: {err}", 2)
    site_model = load_site(cfg.site)
    conf = cfg.slurm_conf or os.environ.get("SLURM_CONF")
    accounting = Accounting.of_file(conf)  # which --qos/--account slurmctld validates (docs/trust.md)
    accounting = accounting.with_associations(conf, site_model.slurm.cluster_name)  # what users may use
    log.info("trust: %s; %d site grant(s)%s", accounting.describe(), len(site_model.policy.grants),
             f"; slurmdbd associations read every {ASSOC_REFRESH_S:.0f} s" if accounting.db else "")
    options = replace(cfg.admission.options(), accounting=accounting)
    if site_model.policy.rightsize.mode == "apply":
        try:
            table = apply_table(site_model, resolve_site_path(cfg.site).parent)
        except ValueError as err:
            fail(f"policy.rightsize: {err}", 2)
        for s in table.values():
            log.info("right-sizing class %s: cpus x %.2f, memory x %.2f (%d jobs)", s.wclass, s.factor("cpus"),
                     s.factor("memory"), s.jobs)
        options = replace(options, rightsize=table)
    # Slurm commands run and their JSON is parsed in a worker process: the request path never waits for
    # the GIL while a snapshot is being built (that showed up as millisecond stalls in the p99).
    # ... and so is the pool summary the metrics report (daemon/pool.py), which travels in the snapshot's memo.
    # Admission reads nodes and partitions only: the whole job queue (the costly RPC) is read every
    # jobs_refresh_s for the metrics, not at every refresh.
    collector = ProcessCollector(conf, prepare=functools.partial(prepare_pool, str(resolve_site_path(cfg.site))),
                                 jobs_max_age_s=cfg.jobs_refresh_s, queue_file=cfg.queue_file,
                                 queue_file_max_age_s=cfg.queue_file_max_age_s)
    if cfg.queue_file:
        log.info("jobs from %s while at most %.0f s old (the cycle's), else read every %.0f s", cfg.queue_file,
                 cfg.queue_file_max_age_s, cfg.jobs_refresh_s)
    refresher = SnapshotRefresher(collector, interval=cfg.refresh_s)
    refresher.start()  # the first snapshot comes in the background: until then nothing is refused or moved
    federation = None
    if site_model.federation is not None:  # follow-the-sun: every member's free CPUs, read in the background
        from ..slurm import SlurmClient
        from ..snapshot.federation import FederationRefresher

        fed = site_model.federation
        federation = FederationRefresher(SlurmClient(conf), [m.cluster for m in fed.members], fed.refresh_s)
        federation.start()
        log.info("federation %s: members %s read every %.0f s", fed.name,
                 ", ".join(m.cluster for m in fed.members), fed.refresh_s)
    gc.freeze()  # what is loaded now lives for the whole run: keep it out of every later collection
    server = AdmissionServer(cfg.socket, site_model, refresher, uids, options,
                             socket_mode=cfg.socket_mode, read_timeout_s=cfg.read_timeout_s,
                             max_connections=cfg.max_connections, idle_timeout_s=cfg.idle_timeout_s,
                             max_connections_per_user=cfg.max_connections_per_user, priority_uid=ctld_uid,
                             federation=federation)
    server.metrics.serve(cfg.metrics.listen)
    server.metrics.start_textfile(cfg.metrics.textfile, cfg.metrics.textfile_interval_s)
    try:
        with PidFile(cfg.pid_file), CpuLatencyHold(cfg.cpu_latency_us):
            _event_loop_runner()(run_until_signal(server))
    except RuntimeError as err:
        fail(str(err))
    finally:
        server.metrics.close()
        refresher.stop(wait=2.0)
        if federation is not None:
            federation.stop(wait=2.0)
        collector.close()


def _stacks_on_sigusr1() -> None:
    """SIGUSR1 writes every thread's stack to stderr (when stderr is a file: not under a test's CliRunner)."""
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, io.UnsupportedOperation):
        log.debug("stderr has no file descriptor: SIGUSR1 does not dump the stacks")


def _event_loop_runner():
    """uvloop's runner when installed (about halves the event loop's share of a round trip), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


@daemon.command("ask")
@click.option("--socket", "socket_path", required=True, help="The daemon's Unix socket.")
@click.argument("job_json")
def ask_cmd(socket_path: str, job_json: str) -> None:
    """Send one submit request with JOB_JSON as its job fields and print the reply, e.g.
    ``hetsched daemon ask --socket /run/hetsched/hetsched.sock '{"gres": "gres:gpu:1"}'``."""
    line = json.dumps({"v": 1, "op": "submit", "job": json.loads(job_json)}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(socket_path)
            sock.sendall(line)
            reply = sock.makefile("rb").readline()
        except OSError as err:
            fail(f"cannot reach the daemon at {socket_path}: {err}")
    click.echo(reply.decode().strip())
