"""``hetsched power``: what Slurm's ResumeProgram/SuspendProgram/ResumeFailProgram run.

Each node's backend comes from its node group in the site file (``bmc.protocol``: ipmi, redfish; ``local`` for
the local cluster), so the programs need no flags beyond the site. Every call is logged (node, backend,
duration, result) to syslog and a log file; a node that cannot be powered up is set DOWN with the reason.
Imports stay inside the functions: Slurm starts this command on every power event.
"""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_SITE = "/etc/hetsched/site.yaml"


@click.group()
def power() -> None:
    """Power nodes up/down through their BMCs (what Slurm's power-save programs run, with a hostlist)."""


def _site(path: str | None, needed: bool):
    """The site named by --site / HETSCHED_SITE, else /etc/hetsched/site.yaml if it exists; None if none."""
    from ..site import load_site

    path = path or (DEFAULT_SITE if Path(DEFAULT_SITE).exists() else None)
    if path is None:
        return None
    return load_site(path) if needed else None


def _run(action: str, hosts: tuple[str, ...], backend: str | None, cluster: str | None, site_path: str | None,
         log_file: str | None, slurm_conf: str | None, mark: bool, as_json: bool = False) -> None:
    from ..power.calllog import CallLog
    from ..power.mark_down import PREFIX, mark_down
    from ..power.pool import run_bounded
    from ..power.registry import make_backend, route
    from .common import emit_json, expand_hosts, fail
    from .output import text_out

    say = text_out(as_json)  # under --json the lines go to stderr and stdout carries one JSON list
    report: dict[str, dict] = {}

    names = expand_hosts(hosts)
    calls = CallLog(log_file)
    try:
        site = _site(site_path, needed=backend != "local")
    except Exception as err:  # a site that cannot be read fails every node the same way
        fail(str(err), 2)
    plan, failed = route(names, site, cluster, backend)
    done: dict[str, tuple[str, float, str]] = {}
    backend_of = {h: name for name, hs in plan.items() for h in hs}
    seconds: dict[str, float] = {}

    def run_backend(name: str) -> str:
        if action == "resume-fail":  # Slurm already gave up on these nodes: record it, nothing to call
            failed.update({h: "ResumeTimeout reached: the node did not register" for h in plan[name]})
            return "recorded"
        try:
            be = make_backend(name, site=site, cluster=cluster, hosts=plan[name])
        except (ValueError, OSError) as err:
            failed.update({h: str(err) for h in plan[name]})
            return "not built"
        res = getattr(be, action)(plan[name])
        seconds.update(res.seconds)
        failed.update(res.failed)
        done.update({h: (name, res.seconds.get(h, 0.0), res.said.get(h, "")) for h in res.done})
        return "ran"

    run_bounded(plan, run_backend, workers=len(plan) or 1, timeout=3600)  # backends side by side
    for host in names:
        if host in done:
            name, secs, said = done[host]
            calls.record(action, host, name, secs, True, said)
            say(f"{action} {host}: ok ({name}, {secs:.2f} s{': ' + said if said else ''})")
            report[host] = {"host": host, "action": action, "backend": name, "ok": True, "seconds": secs,
                            "said": said, "error": ""}
        elif host in failed:
            name = backend_of.get(host, "none")
            calls.record(action, host, name, seconds.get(host, 0.0), False, failed[host])
            say(f"{action} {host}: FAILED ({name}): {failed[host]}", err=True)
            report[host] = {"host": host, "action": action, "backend": name, "ok": False,
                            "seconds": seconds.get(host, 0.0), "said": "", "error": failed[host]}
    if mark and action in ("resume", "resume-fail") and failed:
        client = None
        if backend == "container" and cluster:  # its Slurm answers inside its ctl container, not on the host
            from ..cluster.containers import ContainerCluster
            client = ContainerCluster(cluster).client()
        for host, why in mark_down(failed, backend_of, slurm_conf, client=client).items():
            if why is None:
                say(f"{action} {host}: set DOWN (reason '{PREFIX} ({backend_of.get(host, 'none')}): ...')",
                    err=True)
            else:
                calls.record("mark-down", host, backend_of.get(host, "none"), 0.0, False, why)
                say(f"{action} {host}: could not set DOWN: {why}", err=True)
            if host in report:
                report[host]["marked_down"] = why is None
    if as_json:
        emit_json([report[h] for h in names if h in report])
    if failed:
        raise SystemExit(1)


def _command(action: str, help_text: str) -> click.Command:
    @click.argument("hosts", nargs=-1, required=True)
    @click.option("--site", envvar="HETSCHED_SITE", show_envvar=True,
                  help=f"Site file naming each node group's BMC [default: {DEFAULT_SITE}].")
    @click.option("--backend", type=click.Choice(["container", "ipmi", "local", "redfish"]),
                  help="Use this backend for every node instead of the one its node group names.")
    @click.option("--cluster", help="Local cluster root: nodes of groups without a bmc are its slurmd processes "
                                    "(with --backend container: the container cluster's root).")
    @click.option("--log-file", help="Append one line per call here [default: $HETSCHED_POWER_LOG or "
                                     "/var/log/hetsched/power.log]; syslog gets the same lines.")
    @click.option("--slurm-conf", envvar="SLURM_CONF", help="slurm.conf for scontrol (marking failed nodes DOWN).")
    @click.option("--mark-down/--no-mark-down", default=True, show_default=True,
                  help="Set a node that could not be powered up DOWN with the error as its reason.")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print one JSON object per node (host, action, backend, ok, seconds, said, error).")
    def cmd(hosts, site, backend, cluster, log_file, slurm_conf, mark_down, as_json) -> None:
        _run(action, hosts, backend, cluster, site, log_file, slurm_conf, mark_down, as_json)

    cmd.__doc__ = help_text
    return power.command(action)(cmd)


resume = _command("resume", "Power up HOSTS (a Slurm hostlist); a node that fails is set DOWN with the error.")
suspend = _command("suspend", "Power down HOSTS (a Slurm hostlist).")
resume_fail = _command("resume-fail", "Record that HOSTS did not come up (Slurm's ResumeFailProgram): log each "
                                      "and set it DOWN with a reason naming its backend.")
