"""The VM form's pure parts (slurm_plugin/deploy/vm.py, initrd.py): the form admission chooses on kvm groups,
QEMU's command line, the accelerator, the script the guest runs, the rendered node programs, the initramfs.
The real boot is tests/system/test_deploy_vm.py (`make test-vm`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from slurm_plugin.admission.request import JobRequest
from slurm_plugin.deploy.form import DeployView, choose_form
from slurm_plugin.deploy.initrd import build_initrd
from slurm_plugin.deploy.programs import deploy_files
from slurm_plugin.deploy.site_patch import patch_site, patch_site_vm
from slurm_plugin.deploy.vm import (JobVm, VmError, accel_args, guest_script, job_of, load_config, qemu_argv,
                                    step_command, stop, vm_nodes)
from slurm_plugin.conf.render import LocalLayout
from slurm_plugin.site import SITE_CONFIGS, Site


def _site(tmp_path, vm: bool, **vm_keys) -> Site:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    if vm:
        patch_site_vm("/k/vmlinuz", "/k/initrd.gz")(data, tmp_path)
        data["deploy"]["vm"].update(vm_keys)
    else:
        patch_site(data, tmp_path)
    return Site.model_validate(data)


def _secret(site):
    return next(c for c in site.policy.workload_classes if c.name == "secret")


def test_sensitive_class_on_kvm_groups_runs_in_a_vm_and_says_so(tmp_path):
    site = _site(tmp_path, vm=True)
    choice = choose_form(JobRequest(comment="class=secret"), _secret(site), site, DeployView())
    assert not choice.refuse
    assert choice.changes == {"partition": "secure", "container": f"{tmp_path.resolve()}/run/vm/bundle"}
    assert "form sensitive in a VM" in choice.reason and "accel tcg" in choice.reason
    assert vm_nodes(site) == ("x86n1", "x86n2")


def test_without_vm_settings_or_kvm_flag_the_sensitive_job_runs_on_the_node(tmp_path):
    site = _site(tmp_path, vm=False)
    choice = choose_form(JobRequest(comment="class=secret"), _secret(site), site, DeployView())
    assert choice.changes == {"partition": "secure"} and "VM" not in choice.reason
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    patch_site_vm("/k/vmlinuz", "/k/initrd.gz")(data, tmp_path)
    for cluster in data["clusters"]:
        for group in cluster["node_groups"]:
            group["kvm"] = False
    unflagged = Site.model_validate(data)
    assert choose_form(JobRequest(), _secret(unflagged), unflagged, DeployView()).changes == {"partition": "secure"}
    assert vm_nodes(unflagged) == ()


@pytest.mark.parametrize("accel, expected", [("kvm", ["-accel", "kvm"]), ("tcg", ["-accel", "tcg"]),
                                             ("auto", ["-accel", "kvm", "-accel", "tcg"])])
def test_accelerator(accel, expected):
    assert accel_args(accel) == expected


def test_unknown_accelerator_is_refused(tmp_path):
    with pytest.raises(ValueError, match="accel 'xen'"):
        accel_args("xen")
    with pytest.raises(Exception, match="accel"):
        _site(tmp_path, vm=True, accel="xen")


def test_qemu_command_line(tmp_path):
    vm = _site(tmp_path, vm=True, memory_mb=512, append="mitigations=off").deploy.vm
    job = JobVm(Path("/run/vm"), "42")
    argv = qemu_argv(vm, job)
    assert argv[:3] == ["qemu-system-x86_64", "-accel", "tcg"]
    assert argv[argv.index("-m") + 1] == "512" and argv[argv.index("-kernel") + 1] == "/k/vmlinuz"
    assert argv[argv.index("-append") + 1] == "console=ttyS0 quiet panic=-1 mitigations=off"
    assert "socket,id=agent,path=/run/vm/42/agent.sock,server=on,wait=off" in argv
    assert argv[argv.index("-pidfile") + 1] == "/run/vm/42/qemu.pid" and "-daemonize" in argv and "-no-reboot" in argv


def test_guest_script_carries_the_step_files_and_slurm_environment():
    script = guest_script(["/tmp/slurm/startup", "a b"], ["SLURM_JOB_ID=7", "PATH=/usr/bin", "X=1",
                                                           "SLURM_JOB_NAME=it's"],
                          {"/tmp/slurm/startup": "#!/bin/sh\nexec /tmp/slurm/slurm_script\n",
                           "/tmp/slurm/slurm_script": "#!/bin/sh\necho hi\n"})
    lines = script.splitlines()
    assert "export SLURM_JOB_ID=7" in lines and "export SLURM_JOB_NAME='it'\"'\"'s'" in lines
    assert not any(line.startswith("export X=") or "PATH=/usr/bin" in line for line in lines)
    assert "echo hi" in lines and "chmod 755 /tmp/slurm/startup" in lines
    assert lines[-1] == "/tmp/slurm/startup 'a b'"
    assert guest_script(["hostname"], {}, {}).splitlines()[-1] == "hostname"


def test_step_command_reads_the_per_step_bundle_and_its_read_only_mounts(tmp_path):
    spool = tmp_path / "job7"
    spool.mkdir()
    (spool / "slurm_script").write_text("#!/bin/sh\necho x\n")
    (spool / "big").write_bytes(b"x" * ((1 << 20) + 1))
    (tmp_path / "out.txt").write_text("earlier output")
    (tmp_path / "config.json").write_text(json.dumps({  # as slurmstepd 22.05 writes it
        "process": {"args": ["/tmp/slurm/startup"], "env": ["A=1"]},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                   {"options": ["bind"], "destination": "/tmp/slurm/stdout", "type": "none",
                    "source": str(tmp_path / "out.txt")},
                   {"options": ["bind", "ro"], "destination": "/tmp/slurm/startup", "type": "none",
                    "source": str(spool / "slurm_script")},
                   {"options": ["rbind", "ro"], "destination": "/data/", "source": str(spool)}]}))
    assert step_command(tmp_path) == (["/tmp/slurm/startup"], ["A=1"],
                                      {"/tmp/slurm/startup": "#!/bin/sh\necho x\n",
                                       "/data/slurm_script": "#!/bin/sh\necho x\n"})


def test_job_id_from_the_container_id():
    assert job_of("x86n1.0.1234.4294967291.0") == "1234"
    with pytest.raises(VmError, match="node.user.job.step.task"):
        job_of("nonsense")


def test_rendered_programs_start_the_vm_and_route_the_step(tmp_path):
    site = _site(tmp_path, vm=True)
    layout = LocalLayout.under(tmp_path, site)
    etc, programs = deploy_files(site, layout, f"{tmp_path}/etc/slurm.conf", f"{tmp_path}/log", version=(22, 5))
    assert json.loads(etc["vm.json"])["nodes"] == ["x86n1", "x86n2"]
    assert f"--vm-config {tmp_path}/etc/vm.json" in programs["prolog"]
    assert "deploy vm exec --vm-config" in programs["oci-run"] and "vm.json" in programs["oci-run"]
    (tmp_path / "vm.json").write_text(etc["vm.json"])
    settings, nodes = load_config(tmp_path / "vm.json")
    assert settings.accel == "tcg" and nodes == ("x86n1", "x86n2")
    (tmp_path / "bad.json").write_text(json.dumps({"vm": {"kernel": "rel", "initrd": "/i"}}))
    with pytest.raises(VmError, match=r"bad.json: vm.kernel"):
        load_config(tmp_path / "bad.json")


def test_stop_leaves_a_pid_that_is_not_the_jobs_qemu_alone(tmp_path):
    job = JobVm(tmp_path, "9")
    assert stop(job) == "no vm"
    job.dir.mkdir()
    assert stop(job) == "exited"  # QEMU removed its pid file
    job.pidfile.write_text("1\n")  # pid 1 is not this job's QEMU: never signalled
    assert stop(job) == "exited"


def test_initrd_holds_busybox_and_the_agent(tmp_path):
    fake = tmp_path / "busybox"
    fake.write_bytes(b"\x7fELF-not-really")
    data = gzip.decompress(build_initrd(tmp_path / "i.gz", fake).read_bytes())
    assert data.startswith(b"070701") and b"TRAILER!!!" in data
    for name in (b"bin/busybox\0", b"init\0", b"dev/console\0"):
        assert name in data
    assert b"HETSCHED-VM-READY" in data and b"\x7fELF-not-really" in data
    with pytest.raises(FileNotFoundError, match="busybox-static"):
        build_initrd(tmp_path / "j.gz", tmp_path / "nope")
