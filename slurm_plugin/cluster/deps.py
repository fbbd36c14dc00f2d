"""What the local cluster needs from Debian, and how to tell the admin what is missing."""

from __future__ import annotations

import glob
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Requirement:
    package: str
    why: str
    present: bool
    tests_only: bool = False  # needed by tests/benchmarks, not by a running cluster


def _lua_module(name: str) -> bool:
    return bool(glob.glob(f"/usr/share/lua/5.*/{name}*") or glob.glob(f"/usr/lib/*/lua/5.*/{name}*"))


def requirements() -> list[Requirement]:
    """Every Debian package the local cluster uses, with whether it is installed."""
    return [
        Requirement("slurmctld", "the controller daemon", bool(shutil.which("slurmctld"))),
        Requirement("slurmd", "one node daemon per simulated node", bool(shutil.which("slurmd"))),
        Requirement("slurm-client", "sbatch, squeue, sinfo, scontrol", bool(shutil.which("sbatch"))),
        Requirement("munge", "authentication between Slurm daemons", bool(shutil.which("munged"))),
        Requirement("lua-socket", "the job_submit shim's Unix socket", _lua_module("socket")),
        Requirement("lua-cjson", "the job_submit shim's JSON", bool(glob.glob("/usr/lib/*/lua/5.*/cjson.so"))),
        Requirement("lua-posix", "the job_submit shim's check of who serves its socket (stat)",
                    bool(glob.glob("/usr/lib/*/lua/5.1/posix*"))),
        Requirement("lua5.1", "a stand-alone Lua to test and benchmark the shim", bool(shutil.which("lua5.1")), True),
        Requirement("ipmitool", "the ipmi power backend (and its tests)", bool(shutil.which("ipmitool")), True),
        Requirement("openipmi", "ipmi_sim, the IPMI BMC emulator of the ipmi backend's tests",
                    bool(shutil.which("ipmi_sim")), True),
        Requirement("runc", "the OCI runtime of container jobs (oci.conf; crun is the other choice)",
                    bool(shutil.which("runc")), True),
        Requirement("umoci", "OCI image layouts -> bundles (the bundle cache, the test image)",
                    bool(shutil.which("umoci")), True),
        Requirement("busybox-static", "the small test image built without a registry",
                    shutil.which("busybox") is not None and glob.glob("/bin/busybox") != [], True),
    ]


def missing() -> list[Requirement]:
    return [r for r in requirements() if not r.present]


def install(packages: list[str]) -> None:
    """``apt-get install`` the given packages (runs ``apt-get update`` first)."""
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=True, env=env)
