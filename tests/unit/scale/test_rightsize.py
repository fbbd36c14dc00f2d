"""Vertical right-sizing: usage readers and the pure suggestion function, on hand-computed cases and a real trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.admission.rightsize import lowered
from slurm_plugin.scale.rightsize import RightsizeParams, holdout, suggest, use_ratios
from slurm_plugin.workload import WorkloadError
from slurm_plugin.workload.usage import (UsageHistory, job_class, load_usage, parse_cpu_time,
                                         read_usage_sacct_parsable)

LANL = Path(__file__).resolve().parents[3].parent / "shared" / "workloads" / "swf" / "LANL-CM5-1994-4.1-cln.swf.gz"


def history(rows: list[tuple[str, float, float, float, float, float]]) -> UsageHistory:
    """rows: (class, requested CPUs, elapsed s, CPU time s, requested MB, used MB)."""
    names = tuple(dict.fromkeys(r[0] for r in rows))
    a = np.asarray([r[1:] for r in rows], float)
    return UsageHistory("test", np.arange(1, len(rows) + 1), np.asarray([names.index(r[0]) for r in rows]), names,
                        a[:, 0], np.zeros(len(rows), int), a[:, 1], a[:, 2], a[:, 3], a[:, 4])


def web_jobs(n: int = 40) -> list[tuple]:
    """``n`` jobs asking 8 CPUs / 8000 MB for 1000 s, using 1.0..2.0 CPUs evenly and 6000 MB."""
    return [("web", 8, 1000, 1000 * (1 + i / (n - 1)), 8000, 6000) for i in range(n)]


def test_hand_computed_class_is_lowered_with_margin():
    [s] = suggest(history(web_jobs()))
    # ratios 0.125 .. 0.25 evenly: p95 = 0.125 + 0.95 * 0.125 = 0.24375; x 1.2 = 0.2925
    assert s.cpus.action == "lower" and s.cpus.q == pytest.approx(0.24375)
    assert s.cpus.factor == pytest.approx(0.2925) and s.cpus.covered == 1.0
    assert lowered(8, s.factor("cpus")) == 3  # ceil(8 x 0.2925) = ceil(2.34)
    # memory: every job used 75 %: x 1.2 = 0.9 > 1 - 0.25: not worth it
    assert s.memory.action == "keep" and s.factor("memory") == 1.0 and "saves less than 25%" in s.memory.reason
    assert s.confidence == "low" and s.jobs == 40


@pytest.mark.parametrize("n, action, confidence", [(29, "too-few-jobs", "none"), (30, "lower", "low"),
                                                   (90, "lower", "medium"), (300, "lower", "high")])
def test_enough_jobs_before_any_suggestion(n, action, confidence):
    [s] = suggest(history(web_jobs(n)))
    assert (s.cpus.action, s.confidence) == (action, confidence)
    assert s.factor("cpus") == (1.0 if action != "lower" else s.cpus.factor)


def test_a_class_that_uses_what_it_asks_keeps_it_and_unknown_memory_is_not_guessed():
    rows = [("hpc", 4, 100, 4 * 100 * 0.9, np.nan, np.nan)] * 50
    [s] = suggest(history(rows))
    assert s.cpus.action == "keep" and s.cpus.q == pytest.approx(0.9)
    assert s.memory.action == "too-few-jobs" and s.memory.jobs == 0


def test_a_few_heavy_jobs_hold_the_factor_up():
    rows = [("mix", 10, 100, 100, 1000, 100)] * 90 + [("mix", 10, 100, 900, 1000, 950)] * 10
    [s] = suggest(history(rows), RightsizeParams(percentile=95, margin=0.1))
    assert s.cpus.action == "keep"  # p95 = 0.9: the heavy tenth decides, so nothing is cut
    [s] = suggest(history(rows), RightsizeParams(percentile=85, margin=0.1))
    assert s.cpus.factor == pytest.approx(0.11) and s.cpus.covered == pytest.approx(0.9)


def test_holdout_measures_on_later_jobs():
    rows = web_jobs(100) + [("web", 8, 1000, 1000 * 4, 8000, 6000)] * 20  # later jobs use 4 CPUs: half the ask
    checks = holdout(history(rows), train_share=100 / 120)
    assert checks["web/cpus"]["jobs"] == 20 and checks["web/cpus"]["fit"] == 0.0


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="percentile"):
        RightsizeParams(percentile=20)


SACCT = """JobID|State|Elapsed|TotalCPU|NCPUS|NNodes|ReqMem|MaxRSS|NTasks|Comment|WCKey|Account
10|COMPLETED|00:10:00|00:20:00|8|1|16G||||render|
10.batch|COMPLETED|00:10:00|00:20:00|8|1||2048K|1|||
10.0|COMPLETED|00:09:00|00:19:00|8|1||1500M|2|||
11|FAILED|00:10:00|00:01:00|8|1|16G|||class=web tier=gold||
12|COMPLETED|1-00:00:00|2-00:00:00.500|4|1|1000Mc|||class=web||acct
13|COMPLETED|00:00:30|00:00:10|1|1|1G||||| 
"""


def test_sacct_parsable_usage(tmp_path):
    p = tmp_path / "hist.txt"
    p.write_text(SACCT)
    h = read_usage_sacct_parsable(p)
    assert list(h.job_id) == [10, 12] and h.class_names == ("render", "web")
    assert h.skipped == {"not COMPLETED": 1, "ran under 60 s": 1}
    assert list(h.elapsed_s) == [600, 86400] and list(h.cpu_time_s) == [1200, 172800.5]
    assert h.req_mem_mb[0] == 16 * 1024 and h.req_mem_mb[1] == 4000  # 1000M per CPU x 4 CPUs
    assert h.used_mem_mb[0] == 3000 and np.isnan(h.used_mem_mb[1])  # largest step: 1500M x 2 tasks
    r = use_ratios(h)
    assert r["cpus"][0] == pytest.approx(1200 / (600 * 8))


def test_sacct_parsable_errors_say_where(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("JobID|State|Elapsed|NCPUS\n1|COMPLETED|00:10:00|2\n")
    with pytest.raises(WorkloadError, match=r"bad.txt:1: sacct -P header lacks TotalCPU"):
        load_usage(p)
    p.write_text(SACCT.replace("2-00:00:00.500", "soon"))
    with pytest.raises(WorkloadError, match=r"bad.txt:6: bad record"):
        load_usage(p)


@pytest.mark.parametrize("text, secs", [("01:02:03", 3723), ("02:03.250", 123.25), ("1-00:00:01", 86401),
                                        ("45", 45)])
def test_cpu_time_parsing(text, secs):
    assert parse_cpu_time(text) == secs


def test_job_class_follows_admission_sources():
    assert job_class("x class=web", "render", "acct") == "web"
    assert job_class(None, "class=render", "acct") == "render"
    assert job_class("", "", "acct") == "acct" and job_class(None, None, None) == "-"


@pytest.mark.skipif(not LANL.is_file(), reason=f"{LANL} not present (../shared/workloads)")
def test_real_trace_lanl_cm5():
    """LANL CM-5 (Parallel Workloads Archive) is the shared trace with CPU time and memory per job; KTH SP2's
    CPU-time field is -1 throughout, so it cannot be used for right-sizing."""
    h = load_usage(LANL)
    assert len(h) > 60_000 and h.skipped["unknown CPU time or size"] > 20_000
    by = {s.wclass: s for s in suggest(h)}
    assert by["development"].cpus.action == "keep" and by["development"].jobs > 40_000
    assert by["cm5ftp"].cpus.action == "lower" and 0.4 < by["cm5ftp"].cpus.factor < 0.75
    assert by["prod_special"].cpus.action == "too-few-jobs"
    for s in by.values():
        if s.cpus.action == "lower":
            assert s.cpus.covered >= 0.95  # the percentile plus margin keeps nearly every past job whole
    checks = holdout(h)
    assert checks and all(c["fit"] > 0.9 for c in checks.values())


def test_cli_json(tmp_path):
    p = tmp_path / "hist.txt"
    p.write_text(SACCT)
    result = CliRunner().invoke(main, ["scale", "rightsize", "--history", str(p), "--min-jobs", "1", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["jobs"] == 2 and {c["wclass"] for c in out["classes"]} == {"render", "web"}
    render = next(c for c in out["classes"] if c["wclass"] == "render")
    assert render["cpus"]["action"] == "lower" and render["cpus"]["factor"] == pytest.approx(0.3)
    bad = CliRunner().invoke(main, ["scale", "rightsize", "--history", str(p), "--percentile", "5"])
    assert bad.exit_code != 0 and "percentile" in bad.output


def _json_job(job_id: int, state, total_s: int, **extra) -> dict:
    return {"job_id": job_id, "state": state, "account": "acct", "time": {"elapsed": 600, "total": {
        "seconds": total_s, "microseconds": 500000}}, "required": {"CPUs": 8}, **extra}


def test_sacct_json_usage_both_layouts(tmp_path):
    """22.05 (openapi v0.0.38: plain numbers, comment/wckey objects, state.current a string) and 24.11
    (state.current a list, memory_per_node a {set, infinite, number} object)."""
    mem_step = {"tres": {"requested": {"max": [{"type": "cpu", "count": 1},
                                                {"type": "mem", "count": 3 * 2**30}]}}}
    doc = {"jobs": [
        _json_job(1, {"current": "COMPLETED"}, 1200, comment={"job": "class=web", "administrator": None},
                  wckey={"wckey": "", "flags": []}, steps=[mem_step], required={"CPUs": 8, "memory": 8192}),
        _json_job(2, {"current": ["COMPLETED"]}, 2400, wckey={"wckey": "class=render", "flags": []},
                  required={"CPUs": 8, "memory_per_node": {"set": True, "infinite": False, "number": 4096}}),
        _json_job(3, {"current": ["TIMEOUT"]}, 10),
    ]}
    p = tmp_path / "sacct.json"
    p.write_text(json.dumps(doc))
    h = load_usage(p)
    assert list(h.job_id) == [1, 2] and h.class_names == ("web", "render") and h.skipped == {"not COMPLETED": 1}
    assert list(h.cpu_time_s) == [1200.5, 2400.5] and list(h.req_mem_mb) == [8192, 4096]
    assert h.used_mem_mb[0] == 3072 and np.isnan(h.used_mem_mb[1])
    p.write_text(json.dumps({"jobs": [{"job_id": 1, "state": {"current": "COMPLETED"}}]}))
    with pytest.raises(WorkloadError, match=r"job #0 \(1\): bad or missing field 'time'"):
        load_usage(p)


def test_cli_takes_history_and_numbers_from_the_site(tmp_path):
    import yaml

    from slurm_plugin.site import SITE_CONFIGS

    hist = tmp_path / "hist.txt"
    hist.write_text(SACCT)
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["policy"]["rightsize"] = {"mode": "suggest", "history": str(hist), "min_jobs": 1, "margin": 0.5}
    site = tmp_path / "site.yaml"
    site.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["scale", "rightsize", "--site", str(site), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["params"]["margin"] == 0.5 and out["history"] == str(hist)
    render = next(c for c in out["classes"] if c["wclass"] == "render")
    assert render["cpus"]["factor"] == pytest.approx(0.375)  # 0.25 x 1.5
    none = CliRunner().invoke(main, ["scale", "rightsize"])
    assert none.exit_code != 0 and "no history" in none.output
