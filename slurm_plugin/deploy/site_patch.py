"""The deployment parts the system tests and ``hetsched bench deploy`` add to a site file's data (the demo
site): image store, bundle cache and audit log under the cluster's root; node group ``cpu-x86`` marked
sensitive with the exclusive partition ``secure`` over it; classes ``boxed`` (container, busybox), ``secret``
(sensitive) and ``burst`` (function, busybox), granted to ``users`` (default root)."""

from __future__ import annotations

from pathlib import Path

SENSITIVE_GROUP = "cpu-x86"
SECURE = "secure"
CLASSES = ({"name": "boxed", "form": "container", "image": "busybox"},
           {"name": "secret", "form": "sensitive"},
           {"name": "burst", "form": "function", "image": "busybox"})


def patch_site(data: dict, root: Path, users: tuple[str, ...] = ("root",)) -> None:
    """Edit the site file ``data`` in place (see the module docstring)."""
    root = Path(root).resolve()
    data["deploy"] = {"image_store": f"{root}/store", "bundle_cache": f"{root}/bundles",
                      "audit_log": f"{root}/audit.jsonl", "fn_idle_timeout_s": 10}
    for cluster in data["clusters"]:
        for group in cluster["node_groups"]:
            if group["name"] == SENSITIVE_GROUP:
                group["sensitive"] = True
    data["partitions"].append({"name": SECURE, "node_groups": [SENSITIVE_GROUP], "exclusive": True})
    policy = data.setdefault("policy", {})
    policy["workload_classes"] = [*policy.get("workload_classes", []), *CLASSES]
    policy["grants"] = [*policy.get("grants", []), {"users": list(users), "classes": [c["name"] for c in CLASSES]}]


def wipe_cycle_argv(python: str, site_file: Path, state_dir: Path) -> list[str]:
    """The steering cycle as the tests and the benchmark run it beside their jobs: every second, with its wipe
    step (always first) and rank off; no packing, reshaping or power planning (they would move and power
    down the measured jobs' nodes). Run it with ``SLURM_CONF`` set to the cluster's."""
    return [python, "-m", "slurm_plugin", "cycle", "run", str(site_file), "--state-dir", str(state_dir),
            "--no-pack", "--no-reshape", "--no-power", "--interval", "1", "--metrics-listen", "off"]


VM_DIR = "/var/lib/hetsched/vm"  # `make vm-deps` puts a Debian kernel here (vmlinuz) when /boot has none


def guest_kernel() -> str | None:
    """A kernel for the VM form's test guest: ``$HETSCHED_VM_KERNEL``, else the newest ``/boot/vmlinuz-*``
    readable here, else ``$HETSCHED_VM_DIR/vmlinuz`` (default ``VM_DIR``; `make vm-deps`); None when none."""
    import os

    if os.environ.get("HETSCHED_VM_KERNEL"):
        return os.environ["HETSCHED_VM_KERNEL"]
    found = sorted(p for p in Path("/boot").glob("vmlinuz-*") if os.access(p, os.R_OK))
    if found:
        return str(found[-1])
    fallback = Path(os.environ.get("HETSCHED_VM_DIR") or VM_DIR) / "vmlinuz"
    return str(fallback) if fallback.is_file() else None


def patch_site_vm(kernel: str, initrd: str, accel: str = "tcg"):
    """A patch like :func:`patch_site` that also flags the sensitive group ``kvm`` and sets ``deploy.vm``
    (``accel`` tcg by default: this project's test hosts have a /dev/kvm that runs no guest, see
    results/deploy/README.md); the VMs' files under the cluster's root."""

    def patch(data: dict, root: Path) -> None:
        patch_site(data, root)
        for cluster in data["clusters"]:
            for group in cluster["node_groups"]:
                if group["name"] == SENSITIVE_GROUP:
                    group["kvm"] = True
        data["deploy"]["vm"] = {"kernel": kernel, "initrd": initrd, "accel": accel,
                                "run_dir": f"{Path(root).resolve()}/run/vm", "boot_timeout_s": 600}

    return patch
