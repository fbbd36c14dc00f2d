"""A pending array record too long to name: ``--array=1-99999:2`` (MaxArraySize raised) is one record of 50,000
stepped tasks, which ``scontrol update`` takes only as the task list without the step (~290 KB, over Linux's
128 KiB per argument). A cycle must band the other jobs and leave that record as it is, saying why; before, the
update's exec failed (E2BIG) and every cycle ended there ("Argument list too long: 'scontrol'")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
POLICY = "ranking: {name: sjf, age_floor: false}\npacking: {enabled: false}\nscaling: {name: always-on}\n" \
         "reshape: false\nsteps: [rank]\n"

big_arrays = cluster_fixture("long-array", Needs(slurm={"max_array_size": 100001, "max_job_count": 200000}))


def test_a_cycle_bands_the_other_jobs_and_leaves_the_record_it_cannot_name(big_arrays, tmp_path):
    client = big_arrays.client()
    blocker = client.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 300")
    jobs = [blocker]
    try:
        client.wait_job(blocker, until=("RUNNING",), timeout=60)
        array = client.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", "--array=1-99999:2",
                              wrap="true")
        plain = client.sbatch("-p", "riscv", "-n", "2", "--time=10", "--output=/dev/null", wrap="true")
        jobs += [array, plain]
        (tmp_path / "policy.yaml").write_text(POLICY)
        out = subprocess.run([sys.executable, "-m", "slurm_plugin", "cycle", "once", big_arrays.state()["site_path"],
                              "--policy-file", str(tmp_path / "policy.yaml"), "--state-dir", str(tmp_path / "state"),
                              "--json"], env={**os.environ, "SLURM_CONF": str(big_arrays.conf)},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)
        assert [(r["kind"], r["status"]) for r in rows] == [("site_factor", "ok")], rows
        assert f"not set on job(s) {array}: its pending array record's task list is" in out.stderr, out.stderr
        assert client.site_factors(plain)[plain] > 0
        records = client.run("squeue", "-h", "-j", str(array), "-o", "%i").stdout.split()
        assert records == [f"{array}_[1-99999:2]"], records  # still one record: nothing split it
    finally:
        client.cancel(*jobs)
