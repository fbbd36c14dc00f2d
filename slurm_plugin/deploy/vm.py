"""The VM form of sensitive work (issue 19 item 2): on node groups flagged ``kvm``, with ``deploy.vm`` set, a
sensitive job runs inside a QEMU guest that the Prolog starts and the Epilog stops (by pid).

How the job's command gets into the guest: admission gives the job ``--container=<run_dir>/bundle`` (a bundle
marked with ``vm.json``); slurmstepd hands the step's command (``process.args``, ``env``) to oci.conf's run
wrapper, which for this bundle runs ``hetsched deploy vm exec`` instead of the OCI runtime: it waits for the
guest's agent on the job's socket, sends the command with the files Slurm bind-mounts into the step (:func:`step_command`, :func:`guest_script`), writes the guest's output to
the step's stdout and exits with the guest command's status. The guest (:mod:`.initrd`) powers off after it.

Per job, under ``run_dir/<job id>/``: ``qemu.pid``, ``agent.sock`` (the guest's second serial port),
``console.log`` (its first). ``accel``: ``kvm`` (hardware virtualization), ``tcg`` (emulation, no KVM) or
``auto`` (``-accel kvm -accel tcg``: QEMU's own fallback when KVM cannot be opened; a host whose /dev/kvm opens
but runs no guest, as this project's nested test VM, must say ``tcg``).
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .initrd import EXIT, OUTPUT, READY

MARKER = "vm.json"


class VmError(RuntimeError):
    """The VM could not be started, reached or stopped (message says which job and why)."""


@dataclass(frozen=True)
class JobVm:
    """Where one job's VM keeps its files (``run_dir/<job id>``)."""

    run_dir: Path
    job_id: str

    @property
    def dir(self) -> Path:
        return self.run_dir / self.job_id

    @property
    def pidfile(self) -> Path:
        return self.dir / "qemu.pid"

    @property
    def socket(self) -> Path:
        return self.dir / "agent.sock"

    @property
    def console(self) -> Path:
        return self.dir / "console.log"


def vm_nodes(site) -> tuple[str, ...]:
    """Nodes where sensitive jobs run in a VM: node groups marked both ``sensitive`` and ``kvm`` (none when
    ``deploy.vm`` is not set)."""
    if site.deploy.vm is None:
        return ()
    return tuple(h for g in site.node_groups if g.sensitive and g.kvm for h in g.hostnames)


def vm_partitions(site, enclave: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the sensitive partitions ``enclave`` whose node groups are all flagged ``kvm`` (none when
    ``deploy.vm`` is not set): their jobs run in a VM."""
    if site.deploy.vm is None:
        return ()
    return tuple(p.name for p in site.partitions if p.name in enclave and all(site.group(g).kvm for g in p.node_groups))


def accel_args(accel: str) -> list[str]:
    """QEMU's accelerator arguments for the setting ``accel`` (auto: KVM, else QEMU falls back to TCG)."""
    if accel == "auto":
        return ["-accel", "kvm", "-accel", "tcg"]
    if accel in ("kvm", "tcg"):
        return ["-accel", accel]
    raise ValueError(f"deploy.vm.accel {accel!r}: expected auto, kvm or tcg")


def qemu_argv(vm, job: JobVm) -> list[str]:
    """The QEMU command line that starts the guest of ``job`` with the settings ``vm`` (pure): direct kernel
    boot, no disk, no network, console to ``console.log``, the agent's serial port on ``agent.sock``,
    daemonized with its pid in ``qemu.pid``; the guest's power-off ends QEMU (``-no-reboot``)."""
    append = " ".join(filter(None, ["console=ttyS0 quiet panic=-1", vm.append]))
    return [vm.qemu, *accel_args(vm.accel), "-M", vm.machine, "-m", str(vm.memory_mb), "-smp", str(vm.cpus),
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", vm.kernel, "-initrd", vm.initrd, "-append", append,
            "-chardev", f"file,id=con,path={job.console}", "-serial", "chardev:con",
            "-chardev", f"socket,id=agent,path={job.socket},server=on,wait=off", "-serial", "chardev:agent",
            "-daemonize", "-pidfile", str(job.pidfile), "-name", f"hetsched-job-{job.job_id}"]


def bundle_files(vm_config: str) -> dict[str, str]:
    """The VM bundle (``--container`` of VM-form jobs): a minimal runtime spec for slurmstepd to rewrite per
    step, and the ``vm.json`` marker the run wrapper looks for (naming the node's VM config)."""
    from .cache import runtime_spec

    return {"config.json": json.dumps(runtime_spec({}), indent=1) + "\n",
            MARKER: json.dumps({"vm_config": vm_config}) + "\n"}


def write_bundle(run_dir: str | Path, vm_config: str) -> Path:
    """Write the VM bundle under ``run_dir/bundle`` (idempotent; atomic per file); returns its directory."""
    from ..fsio import write_atomic

    bundle = Path(run_dir) / "bundle"
    (bundle / "rootfs").mkdir(parents=True, exist_ok=True)
    files = bundle_files(vm_config)
    if any(not (bundle / n).exists() or (bundle / n).read_text() != t for n, t in files.items()):
        write_atomic(bundle, files)
    return bundle


def guest_script(args: list[str], env: list[str] | dict[str, str], files: dict[str, str]) -> str:
    """The sh script the guest runs for a step (pure): the step's ``SLURM_*`` environment, ``PATH=/bin``, the
    ``files`` (guest path -> text: what Slurm bind-mounts into the step, its startup and batch scripts) written
    at their paths (executable), then the command ``args`` as given (run by the guest's busybox)."""
    pairs = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env if "=" in e)
    lines = ["export PATH=/bin:/sbin HOME=/tmp"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in pairs if k.startswith("SLURM_") and k.isidentifier()]
    for path, text in sorted(files.items()):
        delim = f"HETSCHED_{uuid.uuid4().hex}"
        q = shlex.quote(path)
        lines += [f"mkdir -p {shlex.quote(str(Path(path).parent))}", f"cat > {q} <<'{delim}'", text.rstrip("\n"),
                  delim, f"chmod 755 {q}"]
    lines.append(" ".join(map(shlex.quote, args)))
    return "\n".join(lines) + "\n"


MAX_FILE = 1 << 20


def step_command(bundle: str | Path) -> tuple[list[str], list[str], dict[str, str]]:
    """``(args, env, files)`` of the step whose per-step bundle (slurmstepd's copy) is ``bundle``: its
    config.json's process, and what it bind-mounts read-only (a file, or a directory's files; each up to
    1 MB), by its path in the guest: Slurm 22.05 mounts the batch script at ``/tmp/slurm/startup`` (its
    writable mounts, the job's output files, are the step's stdout and stderr here)."""
    spec = json.loads((Path(bundle) / "config.json").read_text())
    proc = spec.get("process") or {}
    files = {}
    for mount in spec.get("mounts") or []:
        options = mount.get("options") or []
        source, dest = Path(mount.get("source") or "-"), (mount.get("destination") or "").rstrip("/")
        if not (("bind" in options or "rbind" in options) and "ro" in options and dest.startswith("/")):
            continue
        found = [(dest, source)] if source.is_file() else \
            [(f"{dest}/{f.name}", f) for f in sorted(source.iterdir()) if f.is_file()] if source.is_dir() else []
        for path, f in found:
            if f.stat().st_size <= MAX_FILE:
                files[path] = f.read_text(errors="replace")
    return list(proc.get("args") or []), list(proc.get("env") or []), files


def job_of(container_id: str) -> str:
    """The job id in oci.conf's container id ``%n.%u.%j.%s.%t`` (node.user.job.step.task)."""
    parts = container_id.split(".")
    if len(parts) < 5 or not parts[-3].isdigit():
        raise VmError(f"container id {container_id!r}: expected node.user.job.step.task")
    return parts[-3]


def start(vm, job: JobVm, uid: int | None = None, timeout: float = 60.0) -> int:
    """Start the guest of ``job`` (QEMU daemonizes once its devices are up; the boot goes on in the background,
    :func:`run` waits for it); the agent socket is handed to ``uid`` (the job's user). Returns QEMU's pid."""
    job.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in (job.pidfile, job.socket):
        stale.unlink(missing_ok=True)
    try:
        proc = subprocess.run(qemu_argv(vm, job), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise VmError(f"job {job.job_id}: {vm.qemu} did not start: {err}") from err
    if proc.returncode != 0:
        raise VmError(f"job {job.job_id}: {vm.qemu} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    pid = int(job.pidfile.read_text().strip())
    if uid is not None:
        os.chown(job.dir, uid, -1)
        os.chown(job.socket, uid, -1)
    return pid


def _connect(job: JobVm, deadline: float) -> socket.socket:
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(job.socket))
            return s
        except OSError as err:
            s.close()
            if time.monotonic() > deadline:
                raise VmError(f"job {job.job_id}: no guest agent at {job.socket} ({err})") from err
            time.sleep(0.2)


def _lines(sock: socket.socket):
    """The lines (bytes, with their newline) read from ``sock``; ``b""`` for every second without data (a
    file object over a socket is unusable after one timeout); ends when the peer closes."""
    sock.settimeout(1.0)
    buf = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            yield b""
            continue
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            yield line + b"\n"


def run(job: JobVm, script: str, out, boot_timeout: float) -> tuple[int, float]:
    """Send ``script`` to the guest of ``job`` once its agent is ready (within ``boot_timeout`` s), write its
    output to the binary stream ``out``; returns ``(exit status, guest uptime at ready)``. The command runs as
    long as it runs: Slurm ends the step at its time limit."""
    deadline = time.monotonic() + boot_timeout
    with _connect(job, deadline) as s:
        lines = _lines(s)
        uptime = None
        for line in lines:
            if line.startswith(READY.encode()):
                uptime = float(line.split()[1])
                break
            if time.monotonic() > deadline:
                raise VmError(f"job {job.job_id}: the guest was not ready within {boot_timeout:.0f} s "
                              f"(console: {job.console})")
        if uptime is None:
            raise VmError(f"job {job.job_id}: the guest closed its agent port before it was ready")
        s.sendall(b"GO\n" + base64.encodebytes(script.encode()) + b".\n")
        for line in lines:
            if line.startswith(OUTPUT.encode()):
                break
        for line in lines:
            if line.startswith(EXIT.encode()):
                return int(line.split()[1]), uptime
            if line.strip() and not line.startswith(READY.encode()):
                out.write(base64.b64decode(line))
                out.flush()
    raise VmError(f"job {job.job_id}: the guest's agent port closed before the command's exit status")


def _is_job_qemu(pid: int, job: JobVm) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(job.pidfile).encode() in cmdline


def stop(job: JobVm, grace: float = 10.0) -> str:
    """Stop the guest of ``job`` by the pid QEMU wrote (checked to be this job's QEMU: a reused pid is left
    alone): SIGTERM, SIGKILL after ``grace`` s. Returns what happened: ``no vm`` (none was started), ``exited``
    (the guest had powered off: QEMU is gone), ``stopped`` or ``killed``."""
    if not job.dir.is_dir():
        return "no vm"
    try:
        pid = int(job.pidfile.read_text().strip())
    except (OSError, ValueError):
        return "exited"  # QEMU removes its pid file when it exits
    if not _is_job_qemu(pid, job):
        return "exited"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _is_job_qemu(pid, job):
            return "stopped"
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return "killed"


def config_text(site) -> str | None:
    """``vm.json`` of a rendered set (the VM settings and the nodes that use them; the Prolog, Epilog and run
    wrapper read it), or None when no node runs sensitive jobs in a VM."""
    nodes = vm_nodes(site)
    if not nodes:
        return None
    return json.dumps({"vm": site.deploy.vm.model_dump(), "nodes": list(nodes)}, indent=1, sort_keys=True) + "\n"


def load_config(path: str | Path):
    """``(VmSettings, nodes)`` from a ``vm.json`` (:func:`config_text`); raises :class:`VmError` naming the file
    and the field on bad content."""
    from pydantic import ValidationError

    from ..site.schema import VmSettings

    try:
        doc = json.loads(Path(path).read_text())
        return VmSettings.model_validate(doc["vm"]), tuple(doc.get("nodes") or ())
    except (OSError, ValueError, KeyError, TypeError) as err:
        if isinstance(err, ValidationError):
            where = "; ".join(f"vm.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            raise VmError(f"{path}: {where}") from err
        raise VmError(f"{path}: not a VM config ({err})") from err
