"""Right-sizing applied for real: sbatch -> slurmctld -> job_submit.lua -> daemon (site policy.rightsize apply)
-> slurmctld's job record. The history is a sacct -P export written here (there is no slurmdbd on the local
cluster, so live sacct is not available): 40 finished ``web`` jobs that asked for 8 CPUs and used 1 to 2,
so web keeps 29.25 % of its CPUs (p95 x 1.2) and ``-c 8`` becomes ``-c 3``, and used 2000 of 8000 MB, so it
keeps 30 % of its memory; batch used all the CPUs it asked."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from click.testing import CliRunner
from tests.system.conftest import Needs, start_cluster
from tests.system.test_submit_support import SubmitEnv

from slurm_plugin.cli import main
from slurm_plugin.daemon.process import DaemonProcess

pytestmark = pytest.mark.system


class Env(SubmitEnv):
    """A SubmitEnv on its own cluster whose site has right-sizing in apply mode."""

    def __init__(self):  # noqa: super().__init__ would start the shared "submit" cluster
        self.cluster = start_cluster("rightsize", Needs(job_submit=True))
        self.root = self.cluster.root
        self.slurm = self.cluster.client()
        hist = self.root / "history.sacct"
        rows = ["JobID|State|Elapsed|TotalCPU|NCPUS|NNodes|ReqMem|MaxRSS|NTasks|Comment"]
        rows += [line for i in range(40) for line in _sacct_rows(i)]
        rows += [f"{100 + i}|COMPLETED|00:10:00|01:20:00|8|1|8000M|||class=batch" for i in range(40)]
        hist.write_text("\n".join(rows) + "\n")
        site = yaml.safe_load((self.root / "site.yaml").read_text())
        site["policy"]["rightsize"] = {"mode": "apply", "history": str(hist), "classes": ["web", "batch"]}
        (self.root / "site.yaml").write_text(yaml.safe_dump(site, sort_keys=False))
        self.daemon = DaemonProcess(self.root)
        self.ctld_log = self.root / "log" / "slurmctld.log"


def _sacct_rows(i: int) -> list[str]:
    """Job i of 40 used 1 + i/39 CPUs of 8 for 600 s (TotalCPU = 600 x (1 + i/39) s) and 2000 of 8000 MB."""
    secs = 600 * (1 + i / 39)
    used = f"{int(secs // 60):02d}:{secs % 60:06.3f}"
    return [f"{i + 1}|COMPLETED|00:10:00|{used}|8|1|8000M|||class=web",
            f"{i + 1}.batch|COMPLETED|00:10:00|{used}|8|1||2000M|1|"]


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    e = Env()
    try:
        e.daemon.start()
        yield e
    finally:
        e.cancel_all()
        e.daemon.stop()
        e.cluster.down()


def test_cpus_per_task_lowered_and_tagged(env):
    sub = env.sbatch("-c", "8", "--comment=class=web")
    assert sub.code == 0, sub.stderr
    job = env.job(sub.job_id)
    assert job["NumCPUs"] == "3" and job["CPUs/Task"] == "3", job
    assert "hetsched:rightsize=cpt:8>3" in job["Comment"] and job["Comment"].startswith("class=web"), (job, sub.stderr)
    assert "right-sized for class web from 40 past jobs" in sub.stderr  # slurm.log_user
    why = CliRunner().invoke(main, ["why", "job", str(sub.job_id), "--json", "--journal",
                                    str(env.root / "journal.jsonl")], env={"SLURM_CONF": str(env.slurm.conf)})
    assert why.exit_code == 0, why.output
    assert "rightsize=cpt:8>3" in json.loads(why.output)["slurm"]["Comment"]


def test_tasks_and_memory_per_cpu_follow(env):
    sub = env.sbatch("-c", "8", "-n", "2", "--mem-per-cpu=1000", "--comment=class=web")
    assert sub.code == 0, sub.stderr
    job = env.job(sub.job_id)
    assert (job["NumCPUs"], job["CPUs/Task"], job["NumTasks"]) == ("6", "3", "2"), job
    # the job's memory falls by the memory share only: 1000 MB x 8 CPUs x 0.3 over 3 CPUs -> 800 MB per CPU
    assert job["MinMemoryCPU"] in ("800M", "800"), job


def test_memory_per_node_lowered(env):
    sub = env.sbatch("--mem=8000", "--comment=class=web")
    assert sub.code == 0, sub.stderr
    job = env.job(sub.job_id)
    assert job["MinMemoryNode"] in ("2400M", "2400"), job
    assert "rightsize=mem:8000>2400" in job["Comment"]


def test_pinned_and_other_classes_untouched(env):
    pinned = env.sbatch("-c", "8", "--comment=class=web rightsize=no")
    batch = env.sbatch("-c", "8", "--comment=class=batch")
    for sub in (pinned, batch):
        assert sub.code == 0, sub.stderr
        job = env.job(sub.job_id)
        assert (job["NumCPUs"], job["CPUs/Task"]) == ("8", "8"), job
        assert "rightsize=cpt" not in job["Comment"]
    assert "kept as asked" in pinned.stderr


def test_right_sized_job_runs_on_what_it_was_given(env):
    out = env.slurm.run("sbatch", "--parsable", "-c", "8", "--comment=class=web", "-o", "/dev/null", "--wrap", "true")
    job_id = int(out.stdout.strip())
    env.slurm.wait_job(job_id, timeout=60, until=("COMPLETED",))
    job = env.job(job_id)
    assert job["JobState"] == "COMPLETED" and job["NumCPUs"] == "3", job
