"""`hetsched why` and the applier's per-id results against the real Slurm: array tasks (``A_2``, ``A_[1-3]``)
and het-job components (``H+1``) are looked up as Slurm writes them; a job Slurm does not know is answered from
the journal (garbage lines skipped); one bad id in a batched ``scontrol update jobid=a,b,c`` fails only itself."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.decision import Decision, Journal, MoveJob, SetSiteFactor, SlurmApplier

pytestmark = pytest.mark.system
LATER = "--begin=now+1hour"  # pending for the whole test, with a computed priority


def why(cluster, *args: str):
    return CliRunner(env={"SLURM_CONF": str(cluster.conf)}).invoke(main, ["why", "job", *args])


def test_why_on_array_tasks_and_het_components(cluster, slurm, tmp_path):
    array = slurm.sbatch("-p", "batch", "--array=1-3", LATER, "--output=/dev/null", wrap="true")
    het = slurm.run("sbatch", "--parsable", "-p", "batch", LATER, "--output=/dev/null", "--wrap", "true", ":",
                    "-p", "batch", "--wrap", "true").stdout.strip()
    try:
        slurm.run("scontrol", "update", f"jobid={array}_2", "nice=0")  # task 2 gets its own job record
        raw = int(slurm.show_job(f"{array}_2")["JobId"])
        assert raw != array
        journal = Journal(tmp_path / "j.jsonl")
        [res] = SlurmApplier(slurm, journal).apply(Decision((SetSiteFactor((raw,), 700, "band 5 of 8"),)))
        assert res.ok, res.error
        out = why(cluster, f"{array}_2", "--json", "--journal", str(journal.path))
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        assert doc["job_id"] == raw and doc["slurm"]["ArrayJobId"] == str(array)
        assert doc["slurm"]["ArrayTaskId"] == "2" and [e["reason"] for e in doc["decisions"]] == ["band 5 of 8"]
        tasks = json.loads(why(cluster, f"{array}_[1-3]", "--json", "--journal", str(journal.path)).stdout)
        assert [t["slurm"]["ArrayTaskId"] for t in tasks] == ["1", "2", "3"]
        assert [len(t["decisions"]) for t in tasks] == [0, 1, 0]
        comp = json.loads(why(cluster, f"{het}+1", "--json", "--journal", str(journal.path)).stdout)
        assert comp["slurm"]["HetJobId"] == het and comp["slurm"]["HetJobOffset"] == "1"
        text = why(cluster, f"{array}_2", "--journal", str(journal.path)).output
        assert "ArrayTaskId: 2" in text and "band 5 of 8 [ok]" in text
    finally:
        slurm.cancel(array, int(het))


def test_a_job_slurm_forgot_is_answered_from_a_corrupt_journal(cluster, tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.record(MoveJob(987654, "arm", "aarch64", "pack: arm is free"), ok=True, now=1.0)
    with open(journal.path, "ab") as fh:
        fh.write(b"\x00\xff\xfe{{{ not json\n")
    out = why(cluster, "987654", "--journal", str(journal.path))
    assert out.exit_code == 0, out.output
    assert "source: journal (Slurm no longer knows it: " in out.output and "pack: arm is free [ok]" in out.output
    missing = why(cluster, "987655", "--journal", str(journal.path))
    assert missing.exit_code == 1 and "no record of job 987655" in missing.output
    assert missing.exception is None or isinstance(missing.exception, SystemExit)


def test_one_bad_id_in_a_batched_update_fails_only_itself(cluster, slurm, tmp_path):
    a, gone, c = (slurm.sbatch("-p", "batch", LATER, "--output=/dev/null", wrap="true") for _ in range(3))
    slurm.cancel(gone)
    try:
        base = {j: int(slurm.show_job(j)["Priority"]) for j in (a, c)}
        journal = Journal(tmp_path / "j.jsonl")
        [res] = SlurmApplier(slurm, journal).apply(Decision((SetSiteFactor((a, gone, 99999999, c), 900, "b7"),)))
        assert res.status == "partial" and not res.ok
        assert res.failed_ids == {gone: "Job has already finished", 99999999: "Invalid job id specified"}
        assert all(int(slurm.show_job(j)["Priority"]) >= base[j] + 900 for j in (a, c))  # Slurm applied the rest
        assert "b7 [ok]" in why(cluster, str(a), "--journal", str(journal.path)).output
        assert "b7 [FAILED (Job has already finished)]" in why(cluster, str(gone), "--journal",
                                                               str(journal.path)).output
    finally:
        slurm.cancel(a, c)
