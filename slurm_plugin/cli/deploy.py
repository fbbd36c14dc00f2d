"""``hetsched deploy``: container images and the bundle cache, oci.conf, sensitive jobs' node programs and
the power cycle after them (issue 19; slurm_plugin/deploy)."""

from __future__ import annotations

import contextlib
import json
import os

import click

from .common import emit_json, fail, resolve_site


@click.group()
def deploy() -> None:
    """Containers (images, bundle cache, oci.conf), isolated sensitive work (audit, power cycle)."""


def _site(site: str | None):
    from ..site import load_site

    return load_site(resolve_site(site))


_SITE = click.option("--site", default=None, help="Site file or bundled site name (default: the demo site).")


@deploy.group()
def image() -> None:
    """The image store: OCI layouts, one directory per image name."""


@image.command("build")
@click.option("--store", required=True, type=click.Path(file_okay=False), help="The image store directory.")
@click.option("--ref", default="busybox:latest", show_default=True, help="name[:tag] of the image.")
def image_build(store: str, ref: str) -> None:
    """Build a busybox image (Debian's busybox-static) into the store with umoci; no registry needed."""
    from ..deploy.build import build_busybox
    from ..deploy.images import ImageError

    try:
        im = build_busybox(store, ref)
    except ImageError as err:
        fail(str(err))
    click.echo(f"{im.ref} {im.digest} {im.size} bytes in {im.layout}")


@image.command("ls")
@click.option("--store", required=True, type=click.Path(file_okay=False))
def image_ls(store: str) -> None:
    """List the store's images: ref, digest, compressed size."""
    from ..deploy.images import images

    for im in images(store):
        click.echo(f"{im.ref}\t{im.digest}\t{im.size}")


@deploy.group()
def cache() -> None:
    """The content-addressed image-to-bundle cache on the nodes."""


def _cache(site: str | None):
    from ..deploy.cache import BundleCache

    s = _site(site)
    return s, BundleCache(s.deploy.bundle_cache, s.deploy.cache_max_mb << 20)


@cache.command("ensure")
@_SITE
@click.argument("ref")
def cache_ensure(site: str | None, ref: str) -> None:
    """Unpack image REF into this node's cache now (pre-warm), print its bundle directory."""
    from ..deploy.cache import CacheError
    from ..deploy.images import ImageError, resolve

    s, c = _cache(site)
    if not s.deploy.image_store:
        fail(f"site {s.name}: deploy.image_store is not set (containers are off)")
    try:
        click.echo(c.ensure(resolve(s.deploy.image_store, ref)))
    except (ImageError, CacheError) as err:
        fail(str(err))


@cache.command("unpack")
@click.argument("bundle", type=click.Path(file_okay=False))
def cache_unpack(bundle: str) -> None:
    """Unpack the rootfs of a prepared bundle directory (what the OCI run wrapper calls on a cold start)."""
    from pathlib import Path

    from ..deploy.cache import BundleCache, CacheError
    from ..deploy.images import ImageError

    path = Path(bundle)
    try:
        BundleCache(path.parent).unpack(path)
    except (ImageError, CacheError, OSError) as err:
        fail(f"{bundle}: {err}")


@cache.command("ls")
@_SITE
@click.option("--json", "as_json", is_flag=True)
def cache_ls(site: str | None, as_json: bool) -> None:
    """Entries of the cache: prepared, unpacked, bytes used of the bound."""
    _, c = _cache(site)
    v = c.view()
    doc = {"root": v.root, "prepared": sorted(v.prepared), "unpacked": sorted(v.unpacked),
           "used_bytes": v.used_bytes, "max_bytes": v.max_bytes}
    if as_json:
        emit_json(doc)
    else:
        click.echo(f"{v.root}: {len(v.unpacked)} unpacked, {len(v.prepared)} prepared, "
                   f"{v.used_bytes >> 20} of {v.max_bytes >> 20} MB")


@cache.command("prune")
@_SITE
@click.option("--max-age", type=float, default=None, help="Seconds unused (default: deploy.cache_max_age_s).")
def cache_prune(site: str | None, max_age: float | None) -> None:
    """Remove entries unused for longer than the age bound (rename aside, then delete)."""
    s, c = _cache(site)
    for name in c.prune(s.deploy.cache_max_age_s if max_age is None else max_age):
        click.echo(f"removed {name}")


@deploy.command("oci-conf")
@_SITE
@click.option("--slurm-version", default=None, help="X.Y (default: the installed slurmd's).")
@click.option("--wrapper", default="/usr/lib/hetsched/oci-run", show_default=True)
@click.option("--state-dir", default="/run/hetsched/oci", show_default=True)
def oci_conf(site: str | None, slurm_version: str | None, wrapper: str, state_dir: str) -> None:
    """Print oci.conf for the site's runtime and the Slurm version (22.05 or 23.02+ syntax)."""
    from ..deploy.oci import render_oci_conf
    from ..deploy.oci import slurm_version as installed

    version = tuple(int(x) for x in slurm_version.split(".")[:2]) if slurm_version else installed()
    try:
        click.echo(render_oci_conf(_site(site), wrapper, state_dir, version), nl=False)
    except ValueError as err:
        fail(str(err))


def _node_event(event: str, audit_log: str, **more: object) -> dict:
    from ..deploy import audit

    env = os.environ
    return audit.append(audit_log, event, job_id=env.get("SLURM_JOB_ID", ""), user=env.get("SLURM_JOB_USER", ""),
                        uid=env.get("SLURM_JOB_UID", ""), name=env.get("SLURM_JOB_NAME", ""),
                        partition=env.get("SLURM_JOB_PARTITION", ""), node=env.get("SLURMD_NODENAME", ""), **more)


_NODE = [click.option("--audit-log", required=True, type=click.Path(dir_okay=False)),
         click.option("--slurm-conf", default=None, type=click.Path(dir_okay=False)),
         click.option("--vm-config", default=None, type=click.Path(dir_okay=False),
                      help="vm.json of the rendered set: on its nodes the job runs in a QEMU VM.")]


def _node_opts(fn):
    for opt in reversed(_NODE):
        fn = opt(fn)
    return fn


def _job_vm(vm_config: str | None):
    """``(settings, JobVm)`` when this node runs its sensitive jobs in a VM, else None."""
    from pathlib import Path

    from ..deploy.vm import JobVm, VmError, load_config

    if not vm_config:
        return None
    try:
        settings, nodes = load_config(vm_config)
    except VmError as err:
        fail(str(err))
    if os.environ.get("SLURMD_NODENAME", "") not in nodes:
        return None
    return settings, JobVm(Path(settings.run_dir), os.environ.get("SLURM_JOB_ID", "0"))


@deploy.command()
@_node_opts
def prolog(audit_log: str, slurm_conf: str | None, vm_config: str | None) -> None:
    """Slurm's Prolog for a sensitive job: the audit record's start line (who, what, where, when, the form);
    on a node of a kvm group (--vm-config), first start the job's VM (QEMU, by pid; exit 1 if it does not)."""
    from ..deploy.vm import VmError, start, stop, write_bundle

    vm = _job_vm(vm_config)
    if vm is None:
        _node_event("start", audit_log, form="exclusive")
        return
    settings, job = vm
    try:
        write_bundle(settings.run_dir, vm_config)
        uid = os.environ.get("SLURM_JOB_UID", "")
        pid = start(settings, job, uid=int(uid) if uid.isdigit() else None)
    except (VmError, OSError) as err:
        fail(f"job {job.job_id}: the VM did not start: {err}")
    try:
        _node_event("start", audit_log, form="vm", accel=settings.accel, vm_pid=pid)
    except OSError:
        stop(job)  # no audit record, no job: Slurm drains the node and requeues it
        raise


@deploy.command()
@_node_opts
def epilog(audit_log: str, slurm_conf: str | None, vm_config: str | None) -> None:
    """Slurm's Epilog for a sensitive job: stop its VM by pid (if it ran in one), the audit record's end line,
    then drain the node for its power cycle (before Slurm releases it, so no other job lands there first)."""
    import shutil

    from ..deploy.vm import stop
    from ..deploy.wipe import drain_reason
    from ..slurm import SlurmClient

    vm = _job_vm(vm_config)
    if vm is None:
        rec = _node_event("end", audit_log, form="exclusive")
    else:
        _, job = vm
        rec = _node_event("end", audit_log, form="vm", vm=stop(job))
        shutil.rmtree(job.dir, ignore_errors=True)
    client = SlurmClient(conf=slurm_conf) if slurm_conf else SlurmClient()
    client.run("scontrol", "update", f"nodename={rec['node']}", "state=DRAIN",
               f"reason={drain_reason(rec['job_id'])}")


@deploy.group("vm")
def vm_group() -> None:
    """Sensitive jobs in QEMU VMs on node groups flagged kvm: the guest's initramfs, the step's run."""


@vm_group.command("initrd")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The initramfs to write.")
@click.option("--busybox", default="/bin/busybox", show_default=True, type=click.Path(dir_okay=False),
              help="A static busybox (Debian package busybox-static).")
def vm_initrd(output: str, busybox: str) -> None:
    """Write the guest's initramfs: static busybox and the job agent as /init (deploy.vm.initrd)."""
    from ..deploy.initrd import build_initrd

    try:
        click.echo(build_initrd(output, busybox))
    except OSError as err:
        fail(str(err))


@vm_group.command("exec")
@click.option("--vm-config", required=True, type=click.Path(dir_okay=False))
@click.argument("bundle", type=click.Path(file_okay=False))
@click.argument("container_id")
def vm_exec(vm_config: str, bundle: str, container_id: str) -> None:
    """Run the step of Slurm's per-step BUNDLE in the job's VM (what oci-run does for a VM bundle): its output
    to stdout, its exit status as ours."""
    import sys
    from pathlib import Path

    from ..deploy.vm import JobVm, VmError, guest_script, job_of, load_config, run, step_command

    try:
        settings, _ = load_config(vm_config)
        job = JobVm(Path(settings.run_dir), job_of(container_id))
        args, env, files = step_command(bundle)
        status, _ = run(job, guest_script(args, env, files), sys.stdout.buffer, settings.boot_timeout_s)
    except (VmError, OSError, ValueError) as err:
        fail(str(err))
    raise SystemExit(status)


@deploy.command()
@_SITE
@click.option("--slurm-conf", default=None, type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the scontrol commands, change nothing.")
@click.option("--state-dir", default="/var/lib/hetsched", show_default=True, type=click.Path(file_okay=False),
              help="The steering cycle's state directory: the sequence's memory (wipe.json), journal and lock.")
def wipe(site: str | None, slurm_conf: str | None, dry_run: bool, state_dir: str) -> None:
    """Take the next step of the power cycle of nodes that ran sensitive work, once, by hand.

    The steering cycle (`hetsched cycle run`) does this first in every cycle; this runs that step alone, on the
    cycle's memory and under its lock (exit 3 while a cycle loop holds it). Exit 1 if an action failed."""
    from pathlib import Path

    from ..cycle.decide import CycleConfig
    from ..cycle.runner import CycleRunner
    from ..decision.applier import commands_for
    from ..slurm import SlurmClient
    from .common import one_writer

    client = SlurmClient(conf=slurm_conf) if slurm_conf else SlurmClient()
    config = CycleConfig(pack=False, reshape=False, power=False, steps=())
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext() if dry_run else one_writer(Path(state_dir)):
        decision, results = CycleRunner(_site(site), client, config, Path(state_dir), dry_run=dry_run).run_once()
    for action, result in zip(decision.actions, results):
        status = "planned" if dry_run else result.status
        error = f": {result.error}" if result.error else ""
        click.echo(f"{action.nodes[0]}: {action.action} ({action.reason}) {status}{error}")
        if dry_run:
            for cmd in commands_for(action):
                click.echo("  " + " ".join(cmd))
    if not decision.actions:
        click.echo("no node is in the power cycle after sensitive work")
    raise SystemExit(0 if dry_run or all(r.ok for r in results) else 1)


@deploy.command("audit")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
def audit_cmd(path: str, as_json: bool) -> None:
    """Verify the audit log's chain and print its records (exit 1 if a line was edited or removed)."""
    from ..deploy import audit

    problems = audit.verify(path)
    if as_json:
        emit_json({"records": audit.records(path), "problems": problems})
    else:
        for rec in audit.records(path):
            click.echo(json.dumps(rec, sort_keys=True))
        for p in problems:
            click.echo(p, err=True)
    if problems:
        raise SystemExit(1)
