"""The VM form of sensitive work on a real local cluster, with one real QEMU boot: the sensitive group is
flagged ``kvm`` and ``deploy.vm`` set (accel tcg: this host's /dev/kvm opens but runs no guest, see
results/deploy/README.md), admission routes a sensitive job there in the VM form and says so, the Prolog
starts QEMU (a Debian kernel + the agent initramfs built from busybox-static), the job's batch script runs in
the guest through oci.conf's wrapper with its output and exit status returned to Slurm, the Epilog stops the
VM by pid and the audit record names the form.

One TCG boot takes 17-40 s on this 2-core host (load 5-20), so this module is its own target: `make test-vm`
(HETSCHED_VM_TESTS=1; `make test` skips it). It needs qemu-system-x86 and a kernel (`make vm-deps`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from slurm_plugin.deploy import audit
from slurm_plugin.deploy.initrd import build_initrd
from slurm_plugin.deploy.site_patch import guest_kernel, patch_site_vm
from tests.system.conftest import Needs, cluster_fixture

ENABLED = os.environ.get("HETSCHED_VM_TESTS") == "1"
pytestmark = [pytest.mark.system,
              pytest.mark.skipif(not ENABLED, reason="one real QEMU boot (~40 s): `make test-vm` runs it")]


def _patch(data: dict, root: Path) -> None:
    kernel = guest_kernel()
    missing = [w for w, ok in (("qemu-system-x86_64 (Debian qemu-system-x86)", shutil.which("qemu-system-x86_64")),
                               ("a guest kernel (/boot/vmlinuz-* or `make vm-deps`)", kernel),
                               ("/bin/busybox (busybox-static)", Path("/bin/busybox").exists())) if not ok]
    if missing:  # enabled but not installed: fail saying what (a skip would read as a pass)
        pytest.fail("the VM test needs " + ", ".join(missing))
    initrd = build_initrd(Path(root) / "vm" / "initrd.gz")
    patch_site_vm(kernel, str(initrd))(data, root)


cluster = cluster_fixture("deploy-vm", Needs(job_submit=True, daemon=True, patch=_patch))

SCRIPT = """#!/bin/sh
echo "job=$SLURM_JOB_ID kernel=$(uname -r)"
grep -m1 'model name' /proc/cpuinfo
test -e /usr && echo host-fs || echo guest-fs
exit 7
"""


def test_sensitive_job_runs_in_a_vm_started_by_the_prolog(cluster):
    client = cluster.client()
    proc = client.run("sbatch", "--parsable", "--comment", "class=secret", "-o", f"{cluster.root}/out-%j.txt",
                      input=SCRIPT, check=False)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split(";")[0]
    assert "form sensitive in a VM" in proc.stderr and "accel tcg" in proc.stderr, proc.stderr
    vm_dir = cluster.root / "run" / "vm"
    assert client.show_job(job_id)["Container"] == f"{vm_dir}/bundle"
    job = client.wait_job(int(job_id), timeout=600)
    out = (cluster.root / f"out-{job_id}.txt").read_text()
    # the batch script ran in the guest: QEMU's emulated CPU, the initramfs's filesystem, the job's environment
    assert f"job={job_id} kernel=" in out and "QEMU" in out and "guest-fs" in out, out
    assert job["JobState"] == "FAILED" and job["ExitCode"] == "7:0", job  # the guest's status is the job's
    records = [r for r in audit.records(cluster.root / "audit.jsonl") if str(r["job_id"]) == job_id]
    assert [(r["event"], r["form"]) for r in records] == [("start", "vm"), ("end", "vm")], records
    start, end = records
    assert start["accel"] == "tcg" and start["node"] in ("x86n1", "x86n2") and end["vm"] in ("exited", "stopped")
    assert not Path(f"/proc/{start['vm_pid']}/cmdline").exists() or \
        str(vm_dir).encode() not in Path(f"/proc/{start['vm_pid']}/cmdline").read_bytes()  # QEMU is gone
    assert not (vm_dir / job_id).exists()  # the Epilog removed the job's VM files
    assert audit.verify(cluster.root / "audit.jsonl") == []
