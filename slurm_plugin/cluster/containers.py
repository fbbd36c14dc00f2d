"""The container test cluster: MariaDB, slurmdbd, slurmctld and one slurmd container per site node, from Debian's
packages (bookworm: Slurm 22.05, trixie: 24.11), driven by podman-compose from a generated Compose file.

Layout under ``root``: ``compose.yaml``, ``containers.conf`` (Podman's settings for this machine: runc,
cgroupfs, ulimits; passed as CONTAINERS_CONF), ``etc/`` (slurm.conf, gres.conf, slurmdbd.conf, munge.key,
entry.sh, the power programs, job_submit.lua and site.yaml; mounted read-only at /etc/slurm in every
container), ``data/<release>/db`` (MariaDB's data: accounting survives ``down``), ``data/<release>/ctld``
(slurmctld's state, with the power relay's ``power/`` inbox), ``data/<release>/suite`` (the cycle's state dir:
journal, cycle-state.json), ``run/`` (the daemon's socket, shared by the suite and ctl containers),
``log/<service>/`` and ``cluster.json`` (what runs, for ``status``/``down``).
Containers are named ``<prefix>-<service>`` with a prefix unique to ``root``, recorded by id at ``up`` and
stopped and removed by those ids; nothing is ever matched by a name pattern.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..conf import render_site, write_atomic
from ..daemon.process import ask
from ..data import child_pythonpath, data_dir, data_file, import_root
from ..site import load_site, resolve_site_path
from ..slurm import SlurmClient, SlurmError
from . import compose as cc
from . import images, power_relay
from .procs import RecordedState, is_running, spawn_detached, stop_pid, wait_nodes_ready

log = logging.getLogger(__name__)
CONTAINER_ROOT = Path("/var/lib/hetsched/containers")
HOST_MUNGE_KEY = Path("/etc/munge/munge.key")
# Podman as it runs on these machines (SLURM-NOTES): crun refuses the hybrid cgroup v1 mount, default ulimits
# are refused. One file for podman and podman-compose alike.
ENGINE_CONF = """[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""
FIRST_UID = 2001
# The suite's Python packages as the host installs them for the images (cluster/suite_deps.py), kept across builds
BUILD_CACHE = Path(os.environ.get("HETSCHED_BUILD_CACHE", "/var/cache/hetsched-build"))
RELAY = "slurm_plugin.cluster.power_relay"
# What Podman prints when two of its objects share a lock (its lock table was lost while its database was kept)
LOCK_MISMATCH = "podman system renumber"
# The suite container's cycle: every 30 s (power actions go through slurmctld's programs and the power relay)
DEFAULT_CYCLE_ARGS = "--interval 30"


class ContainerError(RuntimeError):
    """The container cluster could not be brought to the asked state; the message says why and what to do."""


def containers_dir() -> Path:
    return data_dir("containers")


class ContainerSlurmClient(SlurmClient):
    """Slurm's client commands run inside the ``ctl`` container (``podman exec``, as ``user`` if given): works
    whatever the host has installed, e.g. 22.05 clients on the host and a 24.11 cluster."""

    def __init__(self, container: str, engine_env: dict[str, str], user: str | None = None, timeout: float = 30.0):
        super().__init__("/etc/slurm/slurm.conf", timeout)
        self.container, self.engine_env, self.user = container, engine_env, user

    def _run_once(self, cmd, input, timeout, env):
        """``env`` as a host client's command would get it: the Slurm variables in it that differ from this
        client's own (e.g. SLURM_BITSTR_LEN) are set inside the container; podman itself always runs with the
        cluster's engine settings (CONTAINERS_CONF)."""
        who = ["--user", self.user] if self.user else []
        inside = [f"--env={k}={v}" for k, v in (env or {}).items()
                  if k.startswith("SLURM_") and k != "SLURM_CONF" and self.env.get(k) != v]
        return super()._run_once(["podman", "exec", "-i", *who, *inside, self.container, *cmd], input, timeout,
                                 self.engine_env)


class ContainerCluster(RecordedState):
    """One container cluster, identified by its ``root`` directory."""

    def __init__(self, root: str | Path = CONTAINER_ROOT):
        super().__init__(root)

    @property
    def engine_env(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.root / "containers.conf")}

    # --- podman -----------------------------------------------------------------------------------------
    def podman(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``podman args``; a lock mismatch is repaired once (``_renumber``) and the command run again."""
        proc = self._podman(args, timeout)
        if proc.returncode != 0 and LOCK_MISMATCH in proc.stderr:
            self._renumber(" ".join(args[:3]))
            proc = self._podman(args, timeout)
        if check and proc.returncode != 0:
            raise ContainerError(f"podman {' '.join(args[:3])} failed: {proc.stderr.strip()[-800:]}")
        return proc

    def _podman(self, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(["podman", *args], capture_output=True, text=True, env=self.engine_env, timeout=timeout)

    def _renumber(self, what: str) -> None:
        """``podman system renumber``, as Podman asks when two of its objects hold one lock: its lock table (shared
        memory, emptied by a reboot) no longer matches its database, which kept its containers: on a host whose
        /run is not a tmpfs (these VMs) Podman does not see the reboot. Every command on those objects fails until
        then. Podman's own remedy; it renumbers every container's lock, ours or not."""
        log.warning("podman %s: Podman's locks do not match its containers (a reboot it did not see); "
                    "running `podman system renumber`", what)
        proc = self._podman(("system", "renumber"), 300)
        if proc.returncode != 0:
            raise ContainerError(f"podman {what}: Podman's locks do not match its containers and `podman system "
                                 f"renumber` failed: {proc.stderr.strip()[-800:]}")

    def _compose(self, *args: str, timeout: float = 600) -> None:
        """``podman-compose args`` for this root's project; a lock mismatch is repaired once, as in ``podman``."""
        state = self.state()
        argv = [*compose_command(), "-p", state["prefix"], "-f", str(self.root / "compose.yaml"), *args]
        for attempt in (1, 2):
            with open(self.root / "log" / "compose.log", "a+") as out:
                start = out.tell()
                out.write(f"$ {' '.join(argv)}\n")
                out.flush()
                proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=self.engine_env, timeout=timeout)
                out.seek(start)
                mismatch = LOCK_MISMATCH in out.read()
            if proc.returncode == 0:
                return
            if attempt == 1 and mismatch:
                self._renumber(f"compose {args[0]}")
                continue
            raise ContainerError(f"`podman-compose {' '.join(args)}` failed (exit {proc.returncode}); "
                                 f"see {self.root}/log/compose.log")

    def container_states(self) -> dict[str, tuple[str, str]]:
        """Recorded service -> (container id, podman's state: running, exited, ..., 'missing', or 'stale': running
        by Podman's records while its conmon is gone, as after a host reboot Podman did not see)."""
        ids = self.state().get("containers", {})
        if not ids:
            return {}
        proc = self.podman("inspect", "--format", "{{.Id}} {{.State.Status}} {{.State.ConmonPid}}", *ids.values(),
                           check=False)
        status = {}
        for line in proc.stdout.splitlines():
            if len(fields := line.split()) == 3:
                cid, st, conmon = fields
                status[cid] = "stale" if st == "running" and not is_running(int(conmon), "conmon") else st
        return {svc: (cid, status.get(cid, "missing")) for svc, cid in ids.items()}

    def _taken_subnets(self, own: str) -> list[str]:
        names = [n for n in self.podman("network", "ls", "--format", "{{.Name}}").stdout.split() if n != own]
        if not names:
            return []
        nets = json.loads(self.podman("network", "inspect", *names).stdout or "[]")
        return [s["subnet"] for n in nets for s in n.get("subnets") or []]

    def image_current(self, release: str) -> bool:
        """Whether ``release``'s image exists, built from this very recipe (its label)."""
        have = self.podman("image", "inspect", "--format", f'{{{{index .Labels "{images.LABEL}"}}}}',
                           images.image_name(release), check=False)
        return have.returncode == 0 and have.stdout.strip() == images.recipe(release)

    def ensure_images(self, releases: list[str], report: images.Report | None = None) -> list[str]:
        """Build the image of every release in ``releases`` that is missing or from another recipe, side by side
        (:func:`.images.build`; ``report`` is told each step's time). Returns the releases it built."""
        todo = [r for r in releases if not self.image_current(r)]
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            jobs = [pool.submit(images.build, r, BUILD_CACHE, self.root / "log", self.engine_env, report)
                    for r in todo]
            for job in jobs:
                try:
                    job.result()
                except images.ClusterImageError as e:
                    raise ContainerError(str(e)) from e
        return todo

    # --- the cluster ------------------------------------------------------------------------------------
    def plan(self) -> cc.Plan:
        state = self.state()
        if not state:
            raise ContainerError(f"no container cluster at {self.root} (run `hetsched cluster up --containers`)")
        return cc.Plan(self.root, state["prefix"], state["release"], state["subnet"], state["addrs"],
                       state.get("shared_net", ""))

    @property
    def socket(self) -> Path:
        """The admission daemon's socket as the host sees it (``/run/hetsched/hetsched.sock`` inside)."""
        return self.root / "run" / "hetsched.sock"

    def metrics_url(self) -> str:
        """The suite daemon's Prometheus endpoint (on the cluster's bridge, reachable from the host)."""
        return f"http://{self.plan().addrs[cc.SUITE]}:{cc.METRICS_PORT}/metrics"

    def client(self, user: str | None = None) -> ContainerSlurmClient:
        """Slurm commands inside the ctl container (as ``user``)."""
        return ContainerSlurmClient(self.plan().container("ctl"), self.engine_env, user)

    def host_client(self) -> SlurmClient | None:
        """A client on the host with the cluster's slurm.conf, if the host's Slurm can talk to it (same version,
        a munged with the same key); None otherwise (use :meth:`client`)."""
        host = SlurmClient(str(self.conf), timeout=10)
        try:
            if str(host.version)[:5] != self.state().get("slurm_version", "")[:5]:
                return None
            return host if host.run("sinfo", "-h", "-o", "%P", check=False).returncode == 0 else None
        except SlurmError:
            return None

    def _write_files(self, site, site_path: Path, p: cc.Plan, users: dict[str, int], cycle_args: str = "") -> bool:
        """Render and write every file; returns whether slurm.conf or gres.conf changed."""
        etc = self.root / "etc"
        suite_dirs = ("run", p.data("suite"), f"log/{cc.SUITE}") if p.suite else ()
        for sub in ("etc", p.data("db"), p.data("ctld"), "log/dbd", "log/ctl", *(f"log/{h}" for h in p.nodes),
                    *suite_dirs):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        files = render_site(site, cc.layout(p))
        if p.suite:  # what slurmctld loads (job_submit.lua) and the site the daemon and the cycle read
            files.update({"job_submit.lua": data_file("job_submit", "job_submit.lua").read_text(),
                          "site.yaml": site_path.read_text()})
        changed = any(not (etc / n).exists() or (etc / n).read_text() != t for n, t in files.items())
        write_atomic(etc, files)
        dbd_conf = etc / "slurmdbd.conf"
        password = next((line.split("=", 1)[1] for line in dbd_conf.read_text().splitlines()
                         if line.startswith("StoragePass=")), None) if dbd_conf.exists() else None
        write_atomic(etc, {"slurmdbd.conf": cc.slurmdbd_conf(p, password or cc.new_password())}, mode=0o600)
        if not (etc / "munge.key").exists():  # the host's key, so the host's clients are trusted too
            key = HOST_MUNGE_KEY.read_bytes() if HOST_MUNGE_KEY.exists() else os.urandom(1024)
            write_atomic(etc, {"munge.key": key}, mode=0o400)
        write_atomic(etc, {"entry.sh": (containers_dir() / "entry.sh").read_text(),
                           **{f"hetsched-{a}": power_relay.PROGRAM.format(action=a) for a in power_relay.ACTIONS}},
                     mode=0o755)
        doc = cc.compose(site, p, users, containers_dir(), code_volumes(), cycle_args)
        write_atomic(self.root, {"containers.conf": ENGINE_CONF, "compose.yaml": cc.compose_text(doc)})
        return changed

    def write(self, site_name: str | None = None, release: str = "bookworm", users: list[str] = (),
              suite: bool = True, cycle_args: str = "") -> dict:
        """Only write the configs and ``compose.yaml`` (for ``docker compose``; starts nothing, asks no engine:
        the subnet is the one this root always picks). Returns the recorded state."""
        site_path = resolve_site_path(site_name)
        site = load_site(site_path)
        p = cc.plan(site, self.root, release, [], suite=suite)
        self._write_files(site, site_path, p, {u: FIRST_UID + i for i, u in enumerate(dict.fromkeys(users))},
                          cycle_args)
        state = {"root": str(self.root), "site_path": str(site_path.resolve()), "site_name": site.name,
                 "prefix": p.prefix, "release": release, "subnet": p.subnet, "addrs": p.addrs, "users": list(users),
                 "slurm_version": cc.RELEASES[release]}
        self._save_state(state)
        return state

    def up(self, site_name: str | None = None, release: str = "bookworm", users: list[str] = (),
           wait: float = 120.0, suite: bool = True, cycle_args: str = DEFAULT_CYCLE_ARGS,
           member_of: str | Path | None = None, report: images.Report | None = None) -> dict:
        """Build what is missing (images), write the configs and compose file, and start every container;
        harmless when already up (a changed config is applied with ``scontrol reconfigure``).

        ``suite``: the suite's container runs the admission daemon (slurmctld loads job_submit.lua, which asks
        it) and ``hetsched cycle run`` with ``cycle_args``; ``up`` waits until the daemon routes a GPU job.

        ``users`` get accounts in every container (uids from 2001, in the order given). Returns the recorded
        state; raises :class:`ContainerError` with a remedy when a tool is missing or Slurm does not come up.

        ``member_of``: the root of a running container cluster whose network, MariaDB and slurmdbd this one
        uses (no db/dbd of its own): both clusters then share one accounting database, as a Slurm federation
        needs (:func:`slurm_plugin.conf.accounting.federate`).

        ``report(phase, seconds)`` is told the wall time of each phase as it ends: the image builds' steps
        (``suite deps``, ``rootfs``, ``import`` per release) and ``images``, ``containers started``,
        ``slurmctld answers``, ``nodes ready``, ``admission daemon``; ``state["phases"]`` keeps them.
        """
        phases: dict[str, float] = {}

        def done(name: str, seconds: float) -> None:
            phases[name] = round(seconds, 1)
            if report:
                report(name, seconds)

        for tool in ("podman", "runc"):
            if not shutil.which(tool):
                raise ContainerError(f"{tool} is not installed (apt-get install podman runc debootstrap)")
        compose_command()
        site_path = resolve_site_path(site_name)
        site = load_site(site_path)
        state = self.state()
        running = {s for s, (_, st) in self.container_states().items() if st == "running"}
        if "ctl" in running and state.get("site_name") != site.name:
            raise ContainerError(f"{self.root} already runs site '{state.get('site_name')}': "
                                 "run `hetsched cluster down --containers` first")
        if "ctl" in running and state.get("release") != release:
            raise ContainerError(f"{self.root} runs {state.get('release')}, not {release}: "
                                 "run `hetsched cluster down --containers` first")
        prefix = cc.prefix_for(self.root)
        (self.root / "log").mkdir(parents=True, exist_ok=True)
        write_atomic(self.root, {"containers.conf": ENGINE_CONF})
        own_net = self.podman("network", "exists", f"{prefix}-net", check=False).returncode == 0
        if "ctl" in running and state.get("suite", False) != suite:
            raise ContainerError(f"{self.root} runs {'with' if state.get('suite') else 'without'} the suite's "
                                 "container: run `hetsched cluster down --containers` first")
        host = None
        if member_of is not None:
            host = ContainerCluster(member_of)
            if host.container_states().get("ctl", ("", ""))[1] != "running":
                raise ContainerError(f"no running container cluster at {member_of} "
                                     "(bring it up first: its accounting is shared)")
        p = cc.plan(site, self.root, release, [] if host else self._taken_subnets(f"{prefix}-net"),
                    subnet=state.get("subnet") if own_net else None, suite=suite,
                    member_of=host.plan() if host else None)
        all_users = {u: FIRST_UID + i for i, u in enumerate(dict.fromkeys([*state.get("users", []), *users]))}
        changed = self._write_files(site, site_path, p, all_users, cycle_args)
        state = {**state, "root": str(self.root), "site_path": str(site_path.resolve()), "site_name": site.name,
                 "prefix": p.prefix, "release": release, "subnet": p.subnet, "addrs": p.addrs,
                 "users": list(all_users), "slurm_version": cc.RELEASES[release], "suite": suite,
                 "cycle_args": cycle_args, "shared_net": p.shared_net}
        self._save_state(state)
        t0 = time.monotonic()
        built = self.ensure_images(p.images, done)
        done(f"images ({'built: ' + ', '.join(built) if built else 'cached'})", time.monotonic() - t0)
        state["image_build_s"] = round(time.monotonic() - t0, 1) if built else 0
        state["phases"] = phases
        if "ctl" in running:
            if changed:
                log.warning("config changed while running: `scontrol reconfigure` (node changes need down/up)")
                self.client().run("scontrol", "reconfigure", check=False)
            self._start_relay(state)
            return state
        try:
            t0 = time.monotonic()
            self._remove_leftovers(p)
            self._compose("up", "-d")
            ids = self.podman("inspect", "--format", "{{.Id}}", *(p.container(s) for s in p.services)).stdout.split()
            state["containers"] = dict(zip(p.services, ids))
            self._save_state(state)
            done("containers started", time.monotonic() - t0)
            client = self.client()
            self._wait(client, p.nodes, wait, done)
            if p.suite:
                t0 = time.monotonic()
                self._wait_daemon(wait, gpu="gpu" in site.gres_types)
                done("admission daemon", time.monotonic() - t0)
            state["slurm_version"] = str(client.version)
            self._start_relay(state)
            self._save_state(state)
            return state
        except Exception:
            self.down()
            raise

    def _start_relay(self, state: dict) -> None:
        """Start the host's power relay (slurmctld's power programs -> ``hetsched power --backend container``)
        unless it runs; its pid goes into ``state``."""
        if is_running(state.get("relay_pid"), RELAY):
            return
        env = {**self.engine_env, "PYTHONPATH": child_pythonpath()}
        inbox = self.root / self.plan().data("ctld") / "power"
        state["relay_pid"] = spawn_detached([sys.executable, "-m", RELAY, str(self.root), state["site_path"], str(inbox)],
                                            self.root / "log" / "power-relay.log", env=env)
        self._save_state(state)

    def power_node(self, host: str, on: bool) -> str:
        """Start (boot) or stop (shut down) ``host``'s container by its recorded id; idempotent, except that a
        node Slurm is booting (POWERING_UP) whose container already runs is restarted: its slurmd, started
        before the request, would never count as booted (e.g. after a boot Slurm gave up on at ResumeTimeout,
        which leaves the container running and the node "powered down"), and the node would fail every resume.

        A ``stale`` container (Podman records it running, its conmon is gone: a host crash or a reboot Podman did
        not see) is off; Podman can neither start nor stop it (``start`` does nothing and exits 0, ``stop`` leaves
        it "stopping"), so powering it on raises :class:`ContainerError` (the resume fails and ``hetsched power``
        sets the node DOWN with the reason) instead of reporting a boot that never happens; ``cluster up``
        recreates it."""
        cid, status = self.container_states().get(host, ("", "missing"))
        if status == "missing":
            raise ContainerError(f"{host}: no recorded container (run `hetsched cluster up --containers`)")
        if status == "stale":
            if not on:
                return f"already off (container {cid[:12]} is stale: its conmon is gone)"
            raise ContainerError(f"{host}: container {cid[:12]} is stale (Podman records it running but its conmon "
                                 "is gone: the host crashed or rebooted) and cannot be started; run `hetsched "
                                 "cluster up --containers`, which recreates it")
        if on and status == "running" and self._booting(host):
            self.podman("restart", "-t", "10", cid, timeout=60)
            return f"container {cid[:12]} restarted (it ran while Slurm booted the node)"
        if (status == "running") == on:
            return f"already {'on' if on else 'off'}"
        self.podman(*(("start", cid) if on else ("stop", "-t", "10", cid)), timeout=60)
        return f"container {cid[:12]} {'started' if on else 'stopped'}"

    def _booting(self, host: str) -> bool:
        """Whether slurmctld has ``host`` POWERING_UP (False when it cannot be asked)."""
        try:
            return "POWERING_UP" in self.client().show_node(host).get("State", "")
        except SlurmError:
            return False

    def _remove_leftovers(self, p: cc.Plan) -> None:
        """Remove this cluster's containers that exist but are not running (after a crash or a host reboot),
        by the exact names only this root uses."""
        self._remove([p.container(svc) for svc in p.services])

    def _remove(self, refs: list[str], check: bool = True) -> None:
        """``podman rm -f`` those of ``refs`` (names or ids) that exist, a second time for what the first left:
        a container Podman still counts as running after a crash (its conmon died with it) fails its first
        removal, which records it stopped. Only existing ones are named: Podman 4.3 given one missing container
        removes none of the others and exits 0."""
        for attempt in (1, 2, 3):
            found = set(self.podman("container", "inspect", "--format", "{{.Name}} {{.Id}}", *refs,
                                    check=False).stdout.split())
            left = [r for r in refs if r in found]
            if not left:
                return
            if attempt == 3:
                break
            proc = self.podman("rm", "-f", *left, check=False)
            if proc.returncode != 0:
                log.info("removing %s: %s", ", ".join(left), proc.stderr.strip()[-300:])
        if check:
            raise ContainerError(f"podman rm -f left {', '.join(left)}: {proc.stderr.strip()[-800:]}")
        log.warning("podman rm -f left %s", ", ".join(left))

    def _wait(self, client: SlurmClient, hosts: list[str], wait: float, done: images.Report) -> None:
        t0 = time.monotonic()
        deadline = t0 + wait
        while not _answers(client):
            if time.monotonic() > deadline:
                raise ContainerError(f"slurmctld did not answer within {wait:.0f} s; see {self.root}/log/ctl/ "
                                     f"and `podman logs {self.plan().container('ctl')}`")
            time.sleep(0.5)
        done("slurmctld answers", time.monotonic() - t0)
        t0 = time.monotonic()
        # powering down counts as up: the suite's cycle may suspend nodes at once, idle past the suspend time by
        # slurmctld's state kept from the last run
        bad = wait_nodes_ready(client, hosts, deadline, powered_down_ok=True)
        if not bad:
            done("nodes ready", time.monotonic() - t0)
            return
        raise ContainerError(f"nodes not up after {wait:.0f} s: {', '.join(bad)}; see {self.root}/log/<node>/")

    def _wait_daemon(self, wait: float, gpu: bool = True) -> None:
        """Until the suite's daemon answers on its socket: by routing a GPU job (as the shim would ask it: its
        first snapshot is in) where the site has GPUs, else with any valid answer."""
        deadline = time.monotonic() + wait
        job, what = ({"gres": "gres:gpu:1"}, "route a GPU job") if gpu else ({}, "answer")
        while True:
            reply = ask(self.socket, job)
            if reply.get("set", {}).get("partition") if gpu else reply.get("ok"):
                return
            if time.monotonic() > deadline:
                raise ContainerError(f"the admission daemon did not {what} within {wait:.0f} s (its last "
                                     f"reply: {reply or 'none'}); see {self.root}/log/{cc.SUITE}/daemon.log")
            time.sleep(0.5)

    def status(self) -> list[dict]:
        """One row per recorded container: service, container name, short id, podman's state."""
        state = self.state()
        if not state:
            return []
        p = self.plan()
        relay = state.get("relay_pid")
        return [{"name": svc, "container": p.container(svc), "id": cid[:12], "state": st}
                for svc, (cid, st) in self.container_states().items()] + [
            {"name": "power relay", "container": "power relay", "id": str(relay or ""),
             "state": "running" if is_running(relay, RELAY) else "stopped"}]

    def down(self) -> list[str]:
        """Cancel jobs, then stop and remove every recorded container (by id), the pod podman-compose made for
        them and the cluster's network. Keeps configs, logs and the accounting database (the next ``up`` reuses
        them)."""
        states = self.container_states()
        stopped: list[str] = []
        relay = self.state().get("relay_pid")
        if is_running(relay, RELAY):
            stop_pid(relay, RELAY)
            stopped.append("power relay")
        if states.get("ctl", ("", ""))[1] == "running":
            try:
                client = self.client()
                client.cancel(*map(int, client.run("squeue", "-h", "-o", "%A", timeout=15).stdout.split()))
            except SlurmError as err:
                log.warning("could not cancel jobs before stopping: %s", err)
        ids = [cid for cid, st in states.values() if st != "missing"]
        if ids:
            self.podman("stop", "-t", "10", *ids, check=False, timeout=120)
            self._remove(ids, check=False)
            stopped += [svc for svc, (_, st) in states.items() if st == "running"]
        state = self.state()
        pod = f"pod_{state['prefix']}" if state.get("prefix") else None  # podman-compose's pod for the project
        if pod and self.podman("pod", "exists", pod, check=False).returncode == 0:
            self.podman("pod", "rm", "-f", pod, check=False)  # an empty pod kept would hold a Podman lock
        if state.get("prefix") and not state.get("shared_net"):  # a member leaves the shared network alone
            net = f"{state['prefix']}-net"
            if self.podman("network", "exists", net, check=False).returncode == 0:
                self.podman("network", "rm", net, check=False)
        if state:
            state.pop("containers", None)
            state.pop("relay_pid", None)
            self._save_state(state)
        return stopped


def _answers(client: SlurmClient) -> bool:
    """Whether slurmctld answers a ping; a ``podman exec`` that timed out (a loaded host) is "not yet"."""
    try:
        return client.ping()
    except SlurmError:
        return False


def code_volumes() -> list[str]:
    """Volume lines mounting this package read-only at /opt/hetsched in the suite's container: the whole
    checkout when it runs from one (its data folders are symlinks to the top level), else the package."""
    root = import_root()
    if (root / "pyproject.toml").exists():
        return [f"{root}:/opt/hetsched:ro"]
    return [f"{root / 'slurm_plugin'}:/opt/hetsched/slurm_plugin:ro"]


def compose_command() -> list[str]:
    """podman-compose (>= 1.1: Debian 12's 1.0.3 mis-reads per-service network addresses): this Python's
    module if installed (the ``containers`` extra), else the one on PATH."""
    if importlib.util.find_spec("podman_compose"):
        return [sys.executable, "-m", "podman_compose"]
    found = shutil.which("podman-compose")
    if found:
        out = subprocess.run([found, "version"], capture_output=True, text=True).stdout
        if "version 1.0" not in out:
            return [found]
    raise ContainerError("podman-compose >= 1.1 is needed: pip install 'podman-compose>=1.1' "
                         "(or this package's `containers` extra)")
