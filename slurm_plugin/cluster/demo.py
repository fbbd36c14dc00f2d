"""The demo's job mix: plain sbatch jobs with standard directives, submitted to the local cluster."""

from __future__ import annotations

from dataclasses import dataclass

import hostlist

from ..slurm import SlurmClient, SlurmError

# (what the user asks for, sbatch arguments)
DEMO_JOBS: list[tuple[str, list[str]]] = [
    ("any CPU node (default partition)", ["-n", "4"]),
    ("ARM only", ["--constraint=aarch64"]),
    ("x86 only", ["--constraint=x86_64"]),
    ("two ARM nodes", ["-N", "2", "--constraint=aarch64"]),
    ("RISC-V", ["-p", "riscv"]),
    ("one A100", ["-p", "gpu", "--gres=gpu:a100:1"]),
    ("two H100", ["-p", "gpu", "--gres=gpu:h100:2"]),
    ("any GPU on ARM", ["-p", "gpu", "--gres=gpu:1", "--constraint=aarch64"]),
    ("four Ascend NPUs", ["-p", "npu", "--gres=npu:ascend910b:4"]),
    ("a BlueField DPU", ["-p", "dpu", "--gres=dpu:bluefield3:1"]),
]
# Jobs that only run well with the job_submit shim and the admission daemon (cluster up --job-submit).
ADMISSION_JOBS: list[tuple[str, list[str]]] = [
    ("any GPU, no partition (daemon maps it)", ["--gres=gpu:1"]),
    ("any NPU, no partition", ["--gres=npu:1"]),
    ("ARM or x86, wherever there is room", ["--constraint=aarch64|x86_64", "-n", "8"]),
    ("a portable web job", ["--comment=class=web"]),
    ("AI training on an A100 (gold tier)", ["--comment=class=ai-training", "--gres=gpu:a100:1"]),
]


@dataclass
class DemoRow:
    what: str
    args: str
    job_id: int | None
    state: str
    partition: str
    nodes: str
    features: str


def run_demo(client: SlurmClient, seconds: int = 3, timeout: float = 120.0,
             admission: bool = False) -> list[DemoRow]:
    """Submit every demo job (and the admission ones when the shim runs), wait for all of them, and return
    where each ran (or why it did not)."""
    submitted: list[tuple[str, list[str], int | None, str]] = []
    for what, args in DEMO_JOBS + (ADMISSION_JOBS if admission else []):
        try:
            job_id = client.sbatch(*args, "--time=5", "--output=/dev/null", "-J", "demo", wrap=f"sleep {seconds}")
            submitted.append((what, args, job_id, ""))
        except SlurmError as err:
            submitted.append((what, args, None, err.stderr.splitlines()[-1] if err.stderr else str(err)))
    rows = []
    node_features = {n["NodeName"]: n.get("AvailableFeatures", "") for n in client.show_nodes()}
    for what, args, job_id, error in submitted:
        if job_id is None:
            rows.append(DemoRow(what, " ".join(args), None, "REJECTED", "-", "-", error))
            continue
        try:
            job = client.wait_job(job_id, timeout=timeout)
        except TimeoutError as err:
            rows.append(DemoRow(what, " ".join(args), job_id, "TIMEOUT", "-", "-", str(err)))
            continue
        nodes = job.get("NodeList", "-")
        first = hostlist.expand_hostlist(nodes)[0] if nodes not in ("", "-", "(null)") else ""
        feats = node_features.get(first, "")
        rows.append(DemoRow(what, " ".join(args), job_id, job["JobState"], job.get("Partition", ""), nodes, feats))
    return rows
