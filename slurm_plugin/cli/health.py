"""Node health: the fault signature library and the health check (Slurm's HealthCheckProgram)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.group()
def health() -> None:
    """Node health: fault signatures (NVIDIA, AMD, Intel, Ascend, NICs, CPU/memory, PCIe, NVMe, BMC) and checks."""


def _library(directory: Path | None):
    from ..health.signatures import SignatureError, load_library

    try:
        return load_library(directory)
    except SignatureError as exc:
        raise click.ClickException(str(exc)) from None


_DIR = click.option("--signatures", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
                    help="A directory of signature files instead of the shipped library.")


@health.command()
@_DIR
@click.option("--json", "as_json", is_flag=True, help="Print {\"signatures\": [...]} as JSON.")
@click.option("--coverage", is_flag=True, help="Print the coverage table per vendor instead of the list.")
def signatures(directory: Path | None, as_json: bool, coverage: bool) -> None:
    """List the fault signatures (id, vendor, subsystem, severity, action, source)."""
    from ..health.validate import coverage as cov
    from ..health.validate import coverage_table

    lib = _library(directory)
    if coverage:
        click.echo(json.dumps(cov(lib), indent=1) if as_json else coverage_table(lib))
        return
    rows = [s.summary() for s in lib.signatures]
    if as_json:
        click.echo(json.dumps({"signatures": rows}, indent=1))
        return
    for r in rows:
        click.echo(f"{r['id']:<48} {r['vendor']:<18} {r['subsystem']:<10} {r['severity']:<8} {r['action']}")


@health.command()
@_DIR
def validate(directory: Path | None) -> None:
    """Check the library: ids, own examples and counterexamples, overlapping or shadowed matchers (exit 1 on any)."""
    from ..health.validate import problems

    lib = _library(directory)
    found = problems(lib)
    for p in found:
        click.echo(p, err=True)
    if found:
        sys.exit(1)
    click.echo(f"{len(lib)} signatures, no problems")


@health.command()
@_DIR
@click.argument("file", type=click.File("r", errors="replace"))
@click.option("--json", "as_json", is_flag=True, help="Print {\"lines\": [...]} as JSON.")
@click.option("--gpu", "gpu_type", default=None, metavar="TYPE",
              help="The NVIDIA GPU type the lines come from (e.g. a100, h100, gb200): Xids are read by NVIDIA's "
                   "catalog for its generation.")
def classify(directory: Path | None, file, as_json: bool, gpu_type: str | None) -> None:
    """Classify FILE's lines (kernel/journal lines, `ipmitool sel elist`, JSON objects of tools and Redfish; - for
    stdin): one result per line that matches a signature."""
    from ..health.classify import classify_lines

    matches = classify_lines(_library(directory), file, gpu_type)
    if as_json:
        click.echo(json.dumps({"lines": [m.as_dict() for m in matches]}, indent=1))
        return
    for m in matches:
        s = m.signature
        click.echo(f"{m.line_no:>6} {s.id:<44} {s.severity:<8} {s.action:<12} {s.fault_class}")


@health.command()
@click.option("--node", default=None, help="The node (default: $SLURMD_NODENAME, which slurmd sets, else the host name).")
@click.option("--log", "logs", multiple=True, default=("/var/log/kern.log",), show_default=True,
              help="A log file to read since the last run ({node} is the node name); repeatable.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("/var/lib/hetsched/health"),
              show_default=True, help="Where each node's cursor, counts and drains are kept.")
@click.option("--slurm-conf", default=None, help="slurm.conf of the cluster (default: $SLURM_CONF).")
@click.option("--no-tools", is_flag=True, help="Do not run the accelerator tools (nvidia-smi ...).")
@click.option("--tool-timeout", type=float, default=5.0, show_default=True, help="Seconds each tool may take.")
@click.option("--site", "site_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Site file: read this node's BMC as its node group names it (IPMI SEL or Redfish health).")
@click.option("--site-facts", type=click.Path(dir_okay=False), default=None,
              help="What the check needs of --site per node (GPU type, BMC settings) as `conf render` wrote it "
                   "(no site load); ignored when made from another version of the site file.")
@click.option("--bmc-timeout", type=float, default=5.0, show_default=True,
              help="Seconds the BMC read may take in all (then skipped this run).")
@click.option("--no-reboot", is_flag=True, help="drain_reboot faults only drain (no `scontrol reboot`).")
@click.option("--gpu", "gpu_type", default=None, metavar="TYPE",
              help="The node's NVIDIA GPU type for reading Xids by generation (default: its group's gpu in --site).")
@click.option("--dry-run", is_flag=True, help="Decide and print, change nothing in Slurm (the cursor still moves).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_DIR
def check(node: str | None, logs: tuple[str, ...], state_dir: Path, slurm_conf: str | None, no_tools: bool,
          tool_timeout: float, site_path: str | None, site_facts: str | None, bmc_timeout: float, no_reboot: bool,
          gpu_type: str | None, dry_run: bool, as_json: bool, directory: Path | None) -> None:
    """One health check of this node (Slurm's HealthCheckProgram): read what is new in its logs, tools and BMC,
    match the fault signatures, drain/requeue/reboot/resume through Slurm with reasons tagged 'hetsched: health'."""
    import gc
    import os
    import socket

    from ..health.check import run_check
    from ..slurm.client import SlurmClient, SlurmError

    node = node or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    # the check allocates a few objects per log line and makes no cycles worth collecting: the cyclic collector's
    # passes over them cost about a third of the classification's CPU time and free nothing
    collecting = gc.isenabled()
    gc.disable()
    try:
        site = None
        if site_path:
            from ..health.site_facts import node_site
            from ..site import SiteError

            try:
                facts = node_site(site_path, node, state_dir, site_facts)
            except (SiteError, OSError) as exc:
                raise click.ClickException(str(exc)) from None
            site, gpu_type = facts.bmc, gpu_type or facts.gpu
        res = run_check(node, list(logs), state_dir, SlurmClient(slurm_conf), _library(directory), dry_run=dry_run,
                        tools=not no_tools, tool_timeout=tool_timeout, site=site, bmc_timeout=bmc_timeout,
                        reboot=not no_reboot, gpu_type=gpu_type)
    except SlurmError as exc:
        raise click.ClickException(f"{node}: {exc}") from None
    finally:
        if collecting:
            gc.enable()
    if as_json:
        click.echo(json.dumps(res.as_dict(), indent=1))
    else:
        click.echo(f"{node}: " + (f"skipped ({res.skipped})" if res.skipped else
                                  f"{res.lines_read} new line(s), {len(res.findings)} finding(s), "
                                  f"{len(res.actions)} action(s) in {res.seconds:.2f} s"))
        for f in res.findings:
            click.echo(f"  {f}")
        for a in res.actions:
            click.echo(f"  {a['status']}: {' '.join(a['commands'][0]) if a['commands'] else a['kind']}")
    if any(a["status"] != "ok" for a in res.actions):
        sys.exit(1)
