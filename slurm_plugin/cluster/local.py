"""A real multi-node Slurm cluster on one host, as plain processes (no containers).

Layout under ``root`` (see :class:`~slurm_plugin.conf.LocalLayout`): ``etc/`` rendered configs, ``spool/``,
``log/``, ``run/`` (our pid files), ``dev/<node>/`` fake accelerator devices, ``bin/resume|suspend``
power-save programs, and ``cluster.json`` (what was started, for ``status``/``down``).
Every process is started detached and stopped by the pid we recorded, never by name.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..conf import LocalLayout, render_site, write_atomic
from ..conf.render import device_files
from ..data import child_pythonpath, data_file
from ..fsio import write_file_atomic
from ..deploy.programs import deploy_files
from ..site import Site, load_site, resolve_site_path
from ..slurm import SlurmClient, SlurmError
from . import DEFAULT_ROOT, ClusterError, deps  # noqa: F401 - both named here too (cli, tests)
from .procs import (NODE_UNREADY, RecordedState, cmdline, how_it_ended, is_running, read_pid, spawn_detached,
                    stop_pid, wait_nodes_ready)

log = logging.getLogger(__name__)
JOB_SUBMIT_LUA = data_file("job_submit", "job_submit.lua")
MUNGED = "/usr/sbin/munged"
# Local clusters on this host share one munged: each running cluster registers here, and the munged the
# suite started (its pid in munged.pid) is stopped only by the last cluster to go down.
REGISTRY = Path("/run/hetsched/clusters")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def daemon_path(name: str) -> str:
    """Absolute path of a Slurm daemon: slurmctld runs Resume/SuspendProgram with a minimal PATH."""
    found = shutil.which(name, path=os.pathsep.join([SYSTEM_PATH, os.environ.get("PATH", "")]))
    if not found:
        raise ClusterError(f"{name} is not installed (`hetsched cluster deps --install`)")
    return found


def boot_command(argv: list[str], delay: float) -> list[str]:
    """Wrap a slurmd command line so it starts like a node that just booted: after ``delay`` seconds, with
    ``-b`` (slurmd reports its uptime from its own start), in a new time namespace whose boot clock starts then
    (what its jobs see, e.g. the isolation audit's boot time).

    slurmctld only counts a powered-up (or rebooted) node as up when its slurmd reports a boot time no older
    than the request, in whole seconds (its clock truncated, minus an uptime rounded up); a slurmd restarted
    on a running host would report the host's boot time and be ignored until ResumeTimeout. With ``-b`` that
    boot time is at most 2 s before slurmd's start, so a ``delay`` of 2 s after the request always counts; the
    namespace's clock alone could lose 3 s. Time namespaces need Linux >= 5.6; without them, a plain start.
    """
    unshare = shutil.which("unshare", path=SYSTEM_PATH)
    fresh = ""
    if unshare and Path("/proc/self/ns/time").exists():
        # the offset is from the initial namespace's clock: inside one already (a node restarted by its own
        # RebootProgram) its offset is added back to the uptime seen here
        fresh = (f"{unshare} --time --boottime -$(($(cut -d. -f1 /proc/uptime) - "
                 f"$(awk '/^boottime/{{print $2}}' /proc/self/timens_offsets 2>/dev/null || echo 0))) ")
    else:
        log.warning("no time namespaces here: a node's jobs see the host's boot time")
    return ["/bin/sh", "-c", f'sleep {delay:g}; exec {fresh}"$@" -b', "boot", *argv]


@dataclass(frozen=True)
class ProcStatus:
    name: str
    pid: int | None
    running: bool


def munge_ok() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5)
        return cred.returncode == 0 and subprocess.run(
            ["unmunge"], input=cred.stdout, capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class LocalCluster(RecordedState):
    """One local cluster, identified by its ``root`` directory."""

    def __init__(self, root: str | Path = DEFAULT_ROOT):
        super().__init__(root)

    def client(self) -> SlurmClient:
        return SlurmClient(str(self.conf))

    def site(self) -> Site:
        state = self.state()
        if not state:
            raise ClusterError(f"no cluster at {self.root} (run `hetsched cluster up` first)")
        return load_site(state["site_path"])

    def layout(self, site: Site | None = None) -> LocalLayout:
        state = self.state()
        site = site or self.site()
        return LocalLayout.under(self.root, site, job_submit=state.get("job_submit", False),
                                 powered_down=state.get("powered_down", False), port_span=state.get("port_span"))

    def _pidfile(self, name: str) -> Path:
        return self.root / "run" / f"hs-{name}.pid"

    # --- processes ----------------------------------------------------------------------------------------
    def slurmd_running(self, host: str) -> bool:
        return is_running(read_pid(self._pidfile(f"slurmd-{host}")), "slurmd")

    def start_slurmd(self, host: str, boot_delay: float = 0.0) -> int:
        """Start ``host``'s slurmd unless it already runs (idempotent: Slurm may resume a node twice).

        ``boot_delay`` seconds pass first, as a real boot would take; the recorded pid is that of the
        waiting shell, which then becomes slurmd (exec), so a stop during the delay cancels the boot.
        """
        pidfile = self._pidfile(f"slurmd-{host}")
        pid = read_pid(pidfile)
        if is_running(pid, "slurmd"):
            return pid
        argv = boot_command([daemon_path("slurmd"), "-D", "-f", str(self.conf), "-N", host], boot_delay)
        pid = spawn_detached(argv, self.root / "log" / f"slurmd-{host}.out")
        pidfile.write_text(f"{pid}\n")
        return pid

    def stop_slurmd(self, host: str) -> bool:
        """Stop ``host``'s slurmd by its recorded pid; True if it is not running afterwards."""
        pidfile = self._pidfile(f"slurmd-{host}")
        ok = stop_pid(read_pid(pidfile) or 0, "slurmd")
        if ok:
            pidfile.unlink(missing_ok=True)
        return ok

    def _ensure_munge(self) -> int | None:
        """Start munged if no munge daemon answers; returns its pid if we started it. Clusters started at the
        same moment race here: the loser's munged refuses the socket the winner's holds, and the loser then
        uses the winner's (None: not ours to stop)."""
        if munge_ok():
            return None
        if not Path("/etc/munge/munge.key").exists():
            raise ClusterError("/etc/munge/munge.key is missing: reinstall munge (`hetsched cluster deps`)")
        run = Path("/run/munge")
        run.mkdir(parents=True, exist_ok=True)
        shutil.chown(run, "munge", "munge")
        started = subprocess.run(["runuser", "-u", "munge", "--", MUNGED], capture_output=True, text=True, timeout=20)
        for _ in range(50):
            if munge_ok():
                return read_pid(run / "munged.pid") if started.returncode == 0 else None
            time.sleep(0.1)
        raise ClusterError(f"munged did not come up (exit {started.returncode}: {started.stderr.strip()[-300:]}); "
                           "see /var/log/munge/munged.log")

    def _make_devices(self, site: Site, layout: LocalLayout) -> None:
        """Fake accelerator devices: character devices 1:3 (like /dev/null), plain files if mknod fails."""
        for group in site.node_groups:
            for owner, _ in layout.device_owners(group):
                d = Path(layout.device_dir(owner))
                d.mkdir(parents=True, exist_ok=True)
                items = ([("gpu", group.gpu.vendor, group.gpu.count)] if group.gpu else []) + [
                    (a.kind, a.vendor, a.count) for a in group.accelerators]
                for name, vendor, count in items:
                    for dev in device_files(name, vendor, count):
                        path = d / dev
                        if path.exists():
                            continue
                        try:
                            os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))
                        except OSError:
                            path.touch()

    def _write_power_programs(self, site_path: str | Path | None = None) -> None:
        """bin/resume|suspend|resume-fail: ``hetsched power ... --backend local`` (paths shell-quoted);
        bin/healthcheck and bin/reboot (RebootProgram: restarts the node's slurmd as a fresh boot)."""
        from ..conf.programs import health_check_text, local_reboot_text, power_programs

        root = str(self.root)
        files = power_programs(["--backend", "local", "--cluster", root, "--log-file", f"{root}/log/power.log",
                                "--slurm-conf", str(self.conf)], output=f"{root}/log/power.out",
                               extra={"resume-fail": ["--no-mark-down"]})  # Slurm's own DOWN reason stays
        # each node's "kernel log" is <root>/log/kern-<node>.log (the host's own kernel is not the node's)
        # (--site: the check reads the BMC of a node whose group names one)
        site_path = site_path or self.state().get("site_path")
        site = ["--site", str(site_path)] if site_path else []
        if site_path:  # what the check needs of the site per node, so that no run loads it
            from ..health.site_facts import SITE_FACTS, facts_text

            write_file_atomic(self.root / "etc" / SITE_FACTS, facts_text(load_site(site_path), site_path))
            site += ["--site-facts", str(self.root / "etc" / SITE_FACTS)]
        files["healthcheck"] = health_check_text(["--log", f"{root}/log/kern-{{node}}.log", "--state-dir",
                                                  f"{root}/health", "--slurm-conf", str(self.conf), *site],
                                                 output=f"{root}/log/health.out")
        files["reboot"] = local_reboot_text(root, output=f"{root}/log/reboot.log")
        write_atomic(self.root / "bin", files, mode=0o755)

    # --- lifecycle ----------------------------------------------------------------------------------------
    def up(self, site_name: str | Path | None = None, job_submit: bool = False, wait: float = 90.0,
           daemon: bool | None = None, powered_down: bool = False, port_span: int | None = None,
           bootable: list[str] | None = None) -> dict:
        """Render configs and start munge, slurmctld and one slurmd per node; harmless when already up.

        On a running cluster it only starts what is missing (munged, a slurmd, the daemon) and never stops
        what runs; when slurmctld died without ``down`` (its pid is still recorded) it is restarted warm
        (no ``-c``) so queued and running jobs and node power states survive. After ``down`` or on a fresh
        root, slurmctld cold-starts. Nodes Slurm shows powered down keep their slurmd stopped.

        With ``job_submit`` slurmctld loads the shim and, unless ``daemon`` is False, the admission daemon it
        asks is started too (tests that run their own daemon on the same socket pass ``daemon=False``).

        With ``powered_down`` every node is State=CLOUD (``LocalLayout.powered_down``): slurmctld starts them
        all powered down and no slurmd is started here; the resume program starts one when Slurm or the suite
        powers a node up, for the nodes of ``bootable`` only (None: any; see :class:`~slurm_plugin.power.local.
        LocalPower`), so a site of thousands of nodes runs with a few slurmd. ``port_span``: see
        :meth:`LocalLayout.under`.

        Returns the recorded state. Raises :class:`ClusterError` with a remedy when a package is missing or
        a daemon does not come up within ``wait`` seconds.
        """
        missing = [r for r in deps.missing() if not r.tests_only]
        if missing:
            raise ClusterError("missing Debian packages: " + ", ".join(f"{r.package} ({r.why})" for r in missing)
                               + "\ninstall them with `hetsched cluster deps --install` (runs apt-get)")
        site_path = resolve_site_path(site_name)
        site = load_site(site_path)
        state = self.state()
        if state and state.get("site_name") != site.name and self._ctld_running(state):
            raise ClusterError(f"{self.root} already runs site '{state.get('site_name')}': "
                               "run `hetsched cluster down` first")
        layout = LocalLayout.under(self.root, site, job_submit=job_submit, powered_down=powered_down,
                                   port_span=port_span)
        for sub in ("etc", "spool/ctld", "log", "run", "bin", "dev"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        files = render_site(site, layout)
        etc_deploy, bin_deploy = deploy_files(site, layout, str(self.conf), f"{self.root}/log",
                                              stamp_dir=f"{self.root}/run/stamps")
        files.update(etc_deploy)
        if job_submit:
            if not JOB_SUBMIT_LUA.exists():
                raise ClusterError(f"{JOB_SUBMIT_LUA} is missing")
            files["job_submit.lua"] = JOB_SUBMIT_LUA.read_text()
        changed = any(
            not (self.root / "etc" / n).exists() or (self.root / "etc" / n).read_text() != t for n, t in files.items())
        write_atomic(self.root / "etc", files)
        self._make_devices(site, layout)
        self._write_power_programs(site_path.resolve())
        if bin_deploy:
            (self.root / "run" / "stamps").mkdir(parents=True, exist_ok=True)
            write_atomic(self.root / "bin", bin_deploy, mode=0o755)
        was_running = self._ctld_running(state)
        # slurmctld died without `down` (its pid is still recorded): keep its jobs and node states
        warm = not was_running and bool(state.get("slurmctld_pid")) and (self.root / "spool/ctld/job_state").exists()
        recovering = was_running or warm
        started: list[str] = []
        try:
            started_munged = self._ensure_munge()
            self._register()
            state = {**state, "root": str(self.root), "site_path": str(site_path.resolve()), "site_name": site.name,
                     "job_submit": job_submit, "slurmctld_port": site.slurm.slurmctld_port,
                     "slurmd_ports": layout.slurmd_ports, "powered_down": powered_down, "port_span": port_span,
                     "bootable": bootable}
            if started_munged:
                (REGISTRY / "munged.pid").write_text(f"{started_munged}\n")
            client = self.client()
            if self._ctld_running(state):
                if changed:
                    log.warning("config changed while running: `scontrol reconfigure` (node changes need down/up)")
                    client.run("scontrol", "reconfigure", check=False)
            else:
                # warm: only slurmctld's port must be free (a slurmd that cannot start is Slurm's to mark DOWN)
                self._check_ports_free(site, layout, skip=list(layout.slurmd_ports) if warm else [])
                # -c (cold start) unless slurmctld died under a running cluster: then its saved state (queued
                # and running jobs, node power states) is what must survive.
                if warm:
                    log.warning("slurmctld was not stopped by `cluster down`: warm start from %s/spool/ctld",
                                self.root)
                cold = [] if warm else ["-c"]
                if not warm:  # a cold start keeps nothing, but slurmctld refuses a root an earlier site named
                    (self.root / "spool" / "ctld" / "clustername").unlink(missing_ok=True)  # otherwise (fatal)
                state["slurmctld_pid"] = spawn_detached([daemon_path("slurmctld"), "-D", *cold, "-f", str(self.conf)],
                                                        self.root / "log" / "slurmctld.out")
                started.append("slurmctld")
                self._pidfile("slurmctld").write_text(f"{state['slurmctld_pid']}\n")
            state["slurm_version"] = str(client.version)
            self._save_state(state)
            self._wait_ctld(client, wait)
            hosts = [h for g in site.node_groups for h in g.hostnames]
            if recovering:  # nodes in a power state (off, booting, going down) are the power programs' business
                shown = {n["NodeName"]: n.get("State", "") for n in client.show_nodes()}
                hosts = [h for h in hosts if "POWER" not in shown.get(h, "")]
            for host in [] if powered_down else hosts:  # powered down: the resume program starts them
                if not self.slurmd_running(host):
                    self.start_slurmd(host)
                    started.append(f"slurmd {host}")
            try:
                self._wait_nodes(client, hosts, wait, registered_only=recovering)
            except ClusterError as err:
                if not recovering:
                    raise
                log.warning("%s (the rest of the cluster runs)", err)
            if job_submit and daemon is not False:
                if not is_running(read_pid(self._pidfile("daemon")), "slurm_plugin daemon run"):
                    started.append("hetsched daemon")
                self.start_daemon(site_path, wait)
            if recovering and started:
                log.warning("cluster up: restarted %s", ", ".join(started))
            return state
        except Exception:
            if not recovering:  # nothing half-started is left behind (its ports would block the next up)
                self.down()
            else:  # a running cluster keeps what ran before this call; only what it started is stopped
                self._stop(started, state)
            raise

    def _stop(self, names: list[str], state: dict) -> None:
        """Stop the processes ``names`` (as :meth:`up` lists what it started) by their recorded pids."""
        for name in names:
            if name.startswith("slurmd "):
                self.stop_slurmd(name.split()[1])
            elif name == "hetsched daemon":
                self.stop_daemon()
            elif name == "slurmctld":
                stop_pid(state.get("slurmctld_pid") or 0, "slurmctld")

    def stop_daemon(self) -> None:
        """Stop the admission daemon :meth:`start_daemon` started (by its recorded pid), if it runs."""
        stop_pid(read_pid(self._pidfile("daemon")) or 0, "slurm_plugin daemon run")

    def start_daemon(self, site_path: Path, wait: float = 30.0) -> int:
        """Start the admission daemon the shim asks (``<root>/run/hetsched.sock``), unless it already runs."""
        from ..daemon.process import ask

        pidfile = self._pidfile("daemon")
        pid = read_pid(pidfile)
        if is_running(pid, "slurm_plugin daemon run"):
            return pid
        sock = self.root / "run" / "hetsched.sock"
        env = {**os.environ, "PYTHONPATH": child_pythonpath()}
        log_file = self.root / "log" / "hetsched-daemon.log"
        pid = spawn_detached([sys.executable, "-m", "slurm_plugin", "daemon", "run", "--socket", str(sock),
                              "--site", str(site_path), "--slurm-conf", str(self.conf), "--allow-user", "root",
                              "--refresh", "2"], log_file, env=env)
        pidfile.write_text(f"{pid}\n")
        started = time.monotonic()
        while not (reply := ask(sock, {"gres": "gres:gpu:1"})).get("set", {}).get("partition"):
            waited = time.monotonic() - started
            if waited > wait or not is_running(pid, "slurm_plugin daemon run"):
                said = f"its last reply: {reply}" if reply else "no reply"
                if ended := how_it_ended(pid):
                    said += f"; the daemon {ended}"
                elif waited <= wait:
                    said += f"; pid {pid} is gone or runs {cmdline(pid)!r}"
                raise ClusterError(f"the admission daemon did not route a GPU job after {waited:.1f} s ({said}); "
                                   f"{log_file} ends:\n{_stack_and_log(pid, log_file)}")
            time.sleep(0.2)
        return pid

    def _registration(self) -> Path:
        return REGISTRY / hashlib.sha1(str(self.root).encode()).hexdigest()[:16]

    def _register(self) -> None:
        REGISTRY.mkdir(parents=True, exist_ok=True)
        self._registration().write_text(f"{self.root}\n")

    def _others_running(self) -> bool:
        """Whether another registered local cluster's slurmctld still runs (it needs the shared munged)."""
        for entry in REGISTRY.glob("*") if REGISTRY.is_dir() else ():
            if entry.name == "munged.pid" or entry == self._registration():
                continue
            other = LocalCluster(entry.read_text().strip())
            if other._ctld_running(other.state()):
                return True
            entry.unlink(missing_ok=True)  # a cluster that died without `down`
        return False

    def _ctld_running(self, state: dict) -> bool:
        return is_running(state.get("slurmctld_pid"), "slurmctld")

    def _check_ports_free(self, site: Site, layout: LocalLayout, skip: list[str] = ()) -> None:
        """Raise if a port this cluster needs is taken (slurmctld's, and the slurmd ports of hosts not in
        ``skip``)."""
        import socket

        ports = [site.slurm.slurmctld_port,
                 *sorted({p for h, p in layout.slurmd_ports.items() if h not in skip})]  # shared when wrapped
        for port in ports:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    raise ClusterError(f"port {port} is in use (another Slurm?); pick other ports in the site's "
                                       "slurm.slurmctld_port / slurm.slurmd_port") from None

    def _wait_ctld(self, client: SlurmClient, wait: float) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not self._ctld_running(self.state()):
                raise ClusterError(f"slurmctld exited; see {self.root}/log/slurmctld.log")
            try:
                if client.ping():
                    return
            except SlurmError as err:  # a ping that timed out (a loaded host, a slurm.conf of 10,000 nodes): again
                log.info("slurmctld not answering yet: %s", err)
            time.sleep(0.3)
        raise ClusterError(f"slurmctld did not answer within {wait:.0f} s; see {self.root}/log/slurmctld.log")

    def _wait_nodes(self, client: SlurmClient, hosts: list[str], wait: float, registered_only: bool = False) -> None:
        """Wait until every node has registered (not DOWN/UNKNOWN/NOT_RESPONDING); with ``registered_only``
        (a running cluster's nodes) a node that an admin or the suite set DOWN with a reason is fine too."""
        deadline = time.monotonic() + wait
        unready = ("UNKNOWN", "NOT_RESPONDING") if registered_only else NODE_UNREADY
        bad = wait_nodes_ready(client, hosts, deadline, unready, powered_down_ok=True)
        if not bad:
            return
        raise ClusterError(f"nodes not up after {wait:.0f} s: {', '.join(bad)}; see {self.root}/log/slurmd-*.log")

    def status(self) -> list[ProcStatus]:
        state = self.state()
        out = [ProcStatus("slurmctld", state.get("slurmctld_pid"), self._ctld_running(state))]
        if state.get("job_submit"):
            pid = read_pid(self._pidfile("daemon"))
            out.append(ProcStatus("hetsched daemon", pid, is_running(pid, "slurm_plugin daemon run")))
        for host in state.get("slurmd_ports", {}):
            pid = read_pid(self._pidfile(f"slurmd-{host}"))
            out.append(ProcStatus(f"slurmd {host}", pid, is_running(pid, "slurmd")))
        munged = read_pid(REGISTRY / "munged.pid")
        if munged:
            out.append(ProcStatus("munged (shared)", munged, is_running(munged, "munged")))
        return out

    def _slurmstepds(self) -> list[int]:
        """slurmstepd processes of this cluster (they log to our slurmd log files)."""
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or "slurmstepd" not in (cmd := _cmd(proc)):
                continue
            try:
                fds = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
            except OSError:
                continue
            if any(f.startswith(str(self.root) + "/") for f in fds):
                pids.append(int(proc.name))
        return pids

    def down(self) -> list[str]:
        """Cancel the jobs that hold nodes, stop every slurmd, then slurmctld (and the shared munged if the suite
        started it and no other local cluster still runs), by recorded pid.

        Pending jobs are not cancelled one by one (a 100k queue took longer than scancel's timeout): the next
        ``up`` after a ``down`` is a cold start, which keeps none of them. Returns what was stopped. Leaves
        configs and logs in place for inspection.
        """
        state = self.state()
        stopped = []
        if self._ctld_running(state):
            client = self.client()
            try:
                ids = client.run("squeue", "-h", "-t", "R,CG,CF,S,ST", "-o", "%A", timeout=10).stdout.split()
                client.cancel(*map(int, ids))
                deadline = time.monotonic() + 15
                while ids and time.monotonic() < deadline and client.run(
                        "squeue", "-h", "-t", "R,CG", "-o", "%A", timeout=10).stdout.split():
                    time.sleep(0.3)
            except SlurmError as err:
                log.warning("could not cancel jobs before stopping: %s", err)
        daemon_pid = read_pid(self._pidfile("daemon"))
        if is_running(daemon_pid, "slurm_plugin daemon run"):
            stop_pid(daemon_pid, "slurm_plugin daemon run")
            stopped.append("hetsched daemon")
        self._pidfile("daemon").unlink(missing_ok=True)
        for host in state.get("slurmd_ports", {}):
            if self.slurmd_running(host):
                stopped.append(f"slurmd {host}")
            self.stop_slurmd(host)
        for pid in self._slurmstepds():
            stop_pid(pid, "slurmstepd", timeout=5)
            stopped.append(f"slurmstepd {pid}")
        if self._ctld_running(state):
            stopped.append("slurmctld")
        stop_pid(state.get("slurmctld_pid") or 0, "slurmctld")
        self._pidfile("slurmctld").unlink(missing_ok=True)
        self._registration().unlink(missing_ok=True)
        munged = read_pid(REGISTRY / "munged.pid")
        if munged and not self._others_running():
            if is_running(munged, "munged"):
                stopped.append("munged")
            stop_pid(munged, "munged")
            (REGISTRY / "munged.pid").unlink(missing_ok=True)
        if state:
            state.pop("slurmctld_pid", None)
            self._save_state(state)
        return stopped


def _cmd(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _stack_and_log(pid: int, log_file: Path, lines: int = 80) -> str:
    """The last ``lines`` of a daemon's log after asking it (SIGUSR1, if it still runs) to write where each of
    its threads is: what a start that timed out was waiting for."""
    if is_running(pid, "slurm_plugin daemon run"):
        os.kill(pid, signal.SIGUSR1)
        time.sleep(1.0)
    try:
        text = log_file.read_text(errors="replace")
    except OSError as err:
        return f"(cannot read it: {err})"
    return "\n".join(text.splitlines()[-lines:])
