"""``hetsched cluster``: the real local multi-node Slurm cluster."""

from __future__ import annotations

from pathlib import Path

import click

from ..cluster import DEFAULT_ROOT, ClusterError, deps
from ..slurm import SlurmError
from .common import fail, handle_errors
from .output import TABLE_CONTEXT, emit_table, table_options

root_option = click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_ROOT,
                           show_default=True, envvar="HETSCHED_CLUSTER", help="The cluster's state directory.")


STATUS_FIELDS = ("name", "type", "pid", "state", "features")
containers_option = click.option("--containers", is_flag=True,
                                 help="The container cluster (Podman: slurmdbd + MariaDB, a container per node).")


def _root(root: Path, containers: bool) -> Path:
    """--root as given; with --containers and no --root, the container cluster's own default."""
    from ..cluster.containers import CONTAINER_ROOT

    source = click.get_current_context().get_parameter_source("root")
    return CONTAINER_ROOT if containers and source is click.core.ParameterSource.DEFAULT else root
DEMO_FIELDS = ("job_id", "what", "args", "state", "partition", "nodes", "features")


@click.group()
def cluster() -> None:
    """Run a real Slurm cluster (slurmctld + one slurmd per node) on this host."""


@cluster.command("deps")
@click.option("--install", is_flag=True, help="apt-get install what is missing.")
def deps_cmd(install: bool) -> None:
    """List the Debian packages the local cluster needs; with --install, install the missing ones."""
    for req in deps.requirements():
        click.echo(f"{'ok     ' if req.present else 'MISSING'} {req.package:14} {req.why}")
    missing = deps.missing()
    if missing and install:
        deps.install([r.package for r in missing])
        still = deps.missing()
        if still:
            fail("still missing after install: " + ", ".join(r.package for r in still))
    elif missing:
        fail("missing packages; run `hetsched cluster deps --install`")


@cluster.command()
@click.argument("site", required=False)
@root_option
@click.option("--job-submit", is_flag=True, help="Load job_submit/job_submit.lua into slurmctld and start the admission daemon it asks.")
@click.option("--wait", type=float, default=90.0, show_default=True, help="Seconds to wait for the daemons.")
@containers_option
@click.option("--release", type=click.Choice(["bookworm", "trixie"]), default="bookworm", show_default=True,
              help="With --containers: the Debian release of the images (Slurm 22.05 / 24.11).")
@click.option("--user", "users", multiple=True, help="With --containers: a user to create in every container.")
@click.option("--write-only", is_flag=True, help="With --containers: only write the configs and compose.yaml "
              "(for `docker compose`), start nothing.")
@click.option("--no-suite", is_flag=True, help="With --containers: no suite container (admission daemon, cycle) "
              "and no job_submit.lua in slurmctld.")
@click.option("--cycle-args", default=None, metavar="OPTIONS",
              help="With --containers: options of the suite container's `hetsched cycle run` (default: "
                   "'--interval 30').")
@click.option("--member-of", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="ROOT",
              help="With --containers: use the network, MariaDB and slurmdbd of the running container cluster at "
                   "ROOT (one accounting database: a Slurm federation, `hetsched accounting federate`).")
@click.option("--powered-down", is_flag=True, help="Every node starts powered down (State=CLOUD) and no slurmd is "
              "started: a site of thousands of nodes on one host; the resume program boots a node on demand.")
@click.option("--bootable", default=None, metavar="HOSTLIST", help="With --powered-down: the only nodes the resume "
              "program may start a slurmd for (others are set DOWN with the reason); default: all.")
@click.option("--port-span", type=click.IntRange(1, 60000), default=None, metavar="N",
              help="The slurmds share N ports (each node its own 127.1.x.y address); default: one port per node.")
@handle_errors(ClusterError, SlurmError, OSError, RuntimeError)
def up(site: str | None, root: Path, job_submit: bool, wait: float, containers: bool, release: str,
       users: tuple[str, ...], write_only: bool, no_suite: bool, cycle_args: str | None,
       member_of: Path | None, powered_down: bool, bootable: str | None, port_span: int | None) -> None:
    """Start the local cluster for SITE (default: the embedded demo site). Harmless if already up.

    With --containers: the container cluster (images built when missing, configs rendered and mounted,
    accounting set up from the site file, the suite's daemon and cycle in their own container)."""
    from ..cluster.local import LocalCluster

    from ..cluster.containers import DEFAULT_CYCLE_ARGS

    cycle_args = DEFAULT_CYCLE_ARGS if cycle_args is None else cycle_args
    if containers and write_only:
        from ..cluster.containers import ContainerCluster

        state = ContainerCluster(_root(root, True)).write(site, release, list(users), not no_suite, cycle_args)
        click.echo(f"wrote {state['root']}/compose.yaml and etc/: docker compose -f {state['root']}/compose.yaml up -d")
        return
    if containers:
        _containers_up(site, _root(root, True), release, users, wait, not no_suite, cycle_args, member_of)
        return
    if bootable is not None and not powered_down:
        raise click.UsageError("--bootable needs --powered-down")
    import hostlist

    state = LocalCluster(root).up(site, job_submit=job_submit, wait=wait, powered_down=powered_down,
                                  port_span=port_span,
                                  bootable=None if bootable is None else hostlist.expand_hostlist(bootable))
    click.echo(f"cluster '{state['site_name']}' up at {root} (Slurm {state['slurm_version']}); "
               f"export SLURM_CONF={root}/etc/slurm.conf")


def _containers_up(site: str | None, root: Path, release: str, users: tuple[str, ...], wait: float, suite: bool,
                   cycle_args: str, member_of: Path | None = None) -> None:
    from ..site import load_site

    import os
    import resource
    import time

    from ..conf.accounting import apply_site
    from ..cluster.containers import ContainerCluster

    def phase(name: str, seconds: float) -> None:  # as each phase ends, so a slow one shows while it runs
        click.echo(f"  {name:<34} {seconds:7.1f} s   (load {os.getloadavg()[0]:.1f})")

    t0 = time.monotonic()
    c = ContainerCluster(root)
    state = c.up(site, release=release, users=list(users), wait=wait, suite=suite, cycle_args=cycle_args,
                 member_of=member_of, report=phase)
    t1 = time.monotonic()
    done = apply_site(c.client(), load_site(state["site_path"]), state["users"])
    phase("accounting (sacctmgr)", time.monotonic() - t1)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    click.echo(f"container cluster '{state['site_name']}' up at {root} (Slurm {state['slurm_version']}, "
               f"{release}) in {time.monotonic() - t0:.0f} s (CPU of this command's children: "
               f"{cpu.ru_utime + cpu.ru_stime:.0f} s; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}); "
               f"accounting: {len(done)} sacctmgr change(s)")
    ctl = c.plan().container("ctl")
    if suite:
        click.echo(f"admission daemon: {c.socket} (job_submit.lua in slurmctld asks it), metrics {c.metrics_url()}")
    if c.host_client():
        click.echo(f"export SLURM_CONF={root}/etc/slurm.conf   (host clients work; or: podman exec -it {ctl} bash)")
    else:
        click.echo(f"host clients cannot reach it (other Slurm version or no munged with the same key): "
                   f"podman exec -it {ctl} squeue   (CONTAINERS_CONF={root}/containers.conf)")


@cluster.command(context_settings=TABLE_CONTEXT)
@root_option
@containers_option
@table_options(STATUS_FIELDS)
@handle_errors(ClusterError, SlurmError, RuntimeError)
def status(root: Path, containers: bool, fields, noheader, parsable, as_json) -> None:
    """Show the cluster's processes and nodes, one row each; exit 1 if slurmctld is not running.

    Fields (-o): name, type (process or node; container with --containers), pid (the container's id with
    --containers), state (running/stopped, or Slurm's node state), features."""
    from ..cluster.local import LocalCluster

    if containers:
        from ..cluster.containers import ContainerCluster

        c = ContainerCluster(_root(root, True))
        rows = [{"name": r["container"], "type": "container", "pid": r["id"], "state": r["state"]} for r in c.status()]
        if not rows:
            fail(f"no container cluster at {c.root}")
        up_ = any(r["name"].endswith("-ctl") and r["state"] == "running" for r in rows)
        rows += [{"name": n["NodeName"], "type": "node", "state": n.get("State", ""),
                  "features": n.get("AvailableFeatures", "")} for n in (c.client().show_nodes() if up_ else [])]
        emit_table(rows, fields, noheader, parsable, as_json)
        if not up_:
            raise SystemExit(1)
        return
    c = LocalCluster(root)
    procs = c.status()
    if not procs or not c.state():
        fail(f"no cluster at {root}")
    nodes = c.client().show_nodes() if procs[0].running else []
    rows = [{"name": p.name, "type": "process", "pid": p.pid, "state": "running" if p.running else "stopped"}
            for p in procs]
    rows += [{"name": n["NodeName"], "type": "node", "state": n.get("State", ""),
              "features": n.get("AvailableFeatures", "")} for n in nodes]
    emit_table(rows, fields, noheader, parsable, as_json)
    if not procs[0].running:
        raise SystemExit(1)


@cluster.command()
@root_option
@containers_option
@handle_errors(ClusterError, SlurmError, RuntimeError)
def down(root: Path, containers: bool) -> None:
    """Cancel jobs and stop every process the cluster started, by pid (with --containers: every container
    it started, by id; configs, logs and the accounting database stay)."""
    from ..cluster.local import LocalCluster

    if containers:
        from ..cluster.containers import ContainerCluster

        stopped = ContainerCluster(_root(root, True)).down()
    else:
        stopped = LocalCluster(root).down()
    click.echo("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


@cluster.command(context_settings=TABLE_CONTEXT)
@root_option
@click.option("--seconds", default=3, show_default=True, help="How long each demo job runs.")
@table_options(DEMO_FIELDS)
@handle_errors(ClusterError, SlurmError)
def demo(root: Path, seconds: int, fields, noheader, parsable, as_json) -> None:
    """Submit a mix of plain sbatch jobs to the running cluster and show where each one ran.

    Fields (-o): job_id, what (asked for), args (sbatch directives), state, partition, nodes (ran on), features
    (of those nodes). Exit 1 unless every job completed."""
    from ..cluster.local import LocalCluster

    from dataclasses import asdict

    from ..cluster.demo import run_demo

    c = LocalCluster(root)
    rows = [asdict(r) for r in run_demo(c.client(), seconds=seconds, admission=bool(c.state().get("job_submit")))]
    emit_table(rows, fields, noheader, parsable, as_json)
    if any(r["state"] != "COMPLETED" for r in rows):
        raise SystemExit(1)
