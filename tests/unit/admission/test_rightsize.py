"""Right-sizing in admission (site policy.rightsize apply mode): which jobs are lowered, by how much, and how
the owner's intent is kept. The suggestion comes from a hand-computed history (web keeps 29.25 % of CPUs)."""

from __future__ import annotations

import pytest

from slurm_plugin.admission import AdmissionOptions, JobRequest, admit
from slurm_plugin.tags import comment_tags
from slurm_plugin.admission.rightsize import rightsize_request
from slurm_plugin.scale.rightsize import RightsizeParams, apply_table, suggest
from slurm_plugin.site import load_site

from ..scale.test_rightsize import history, web_jobs
from .builders import demo

SITE = load_site("demo")
# web: CPU factor 0.2925 (see tests/unit/scale); memory: 40 jobs using 25 % of the request -> 0.3
WEB = suggest(history([(c, cpus, el, cpu, 8000, 2000) for c, cpus, el, cpu, _, _ in web_jobs()]))[0]
TABLE = {"web": WEB}
ON = AdmissionOptions(rightsize=TABLE)

# (id, request, expected job_desc changes ({} = none), a word the reason must contain (or None: no rightsize step))
CASES = [
    ("lowers-cpus-per-task-and-derived-counts",
     JobRequest(cpus_per_task=8, num_tasks=2, min_cpus=16, pn_min_cpus=8, comment="class=web"),
     {"cpus_per_task": 3, "min_cpus": 6, "pn_min_cpus": 3}, "--cpus-per-task 8 -> 3"),
    ("tasks-per-node-scale-pn-min-cpus",
     JobRequest(cpus_per_task=8, num_tasks=4, ntasks_per_node=2, min_cpus=32, pn_min_cpus=16, comment="class=web"),
     {"cpus_per_task": 3, "min_cpus": 12, "pn_min_cpus": 6}, "8 -> 3"),
    ("memory-per-node-lowered",
     JobRequest(mem_per_node_mb=8000, comment="class=web"), {"min_mem_per_node": 2400}, "--mem 8000M -> 2400M"),
    ("memory-per-cpu-follows-fewer-cpus",  # 1000 MB x 8 CPUs x 0.3 = 2400 MB over 3 CPUs = 800 MB each
     JobRequest(cpus_per_task=8, min_cpus=8, pn_min_cpus=8, mem_per_cpu_mb=1000, comment="class=web"),
     {"cpus_per_task": 3, "min_cpus": 3, "pn_min_cpus": 3, "min_mem_per_cpu": 800}, "--mem-per-cpu 1000M -> 800M"),
    ("pinned-by-comment", JobRequest(cpus_per_task=8, comment="class=web rightsize=no"), {}, "kept as asked"),
    ("pinned-by-mincpus", JobRequest(cpus_per_task=8, min_cpus=8, pn_min_cpus=32, comment="class=web"), {},
     "--mincpus pins"),
    ("nothing-asked-nothing-lowered", JobRequest(comment="class=web"), {}, None),
    ("one-cpu-stays", JobRequest(cpus_per_task=1, comment="class=web"), {}, None),
    ("other-class-untouched", JobRequest(cpus_per_task=8, comment="class=video-render"), {}, None),
    ("modification-untouched", JobRequest(op="modify", job_id=7, cpus_per_task=8, comment="class=web"), {}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rightsize_in_admission(case):
    _, req, expected, word = case
    d = admit(req, demo(), SITE, ON)
    assert d.action == "accept"
    got = {k: v for k, v in d.changes.items() if k not in ("comment", "site_factor", "partition", "features")}
    assert got == expected, d
    if word is None:
        assert "rightsize" not in d.kinds
    else:
        assert "rightsize" in d.kinds and word in d.reason, d.reason
    if expected:  # hetsched why job shows the comment: the change is tagged there, the user's words kept
        assert comment_tags(d.changes["comment"])["rightsize"].startswith(("cpt:", "mem"))
        assert d.changes["comment"].startswith(req.comment)


def test_off_by_default():
    d = admit(JobRequest(cpus_per_task=8, comment="class=web"), demo(), SITE)
    assert "cpus_per_task" not in d.changes and "rightsize" not in d.kinds


def test_never_below_the_historys_percentile():
    """Whatever the request, the job keeps at least p95 use x (1 + margin) of it (rounded up to whole CPUs)."""
    q = WEB.cpus.q
    for cpt in range(2, 65):
        changes, _, _ = rightsize_request(JobRequest(cpus_per_task=cpt), "web", TABLE)
        new = changes.get("cpus_per_task", cpt)
        assert cpt * q * 1.2 <= new <= cpt


def test_lowered_job_is_routed_as_it_will_run():
    """8 x 8 CPUs fits no x86 node (16 CPUs) free, 8 x 3 does: routing sees the right-sized request."""
    req = JobRequest(cpus_per_task=8, num_tasks=1, min_cpus=8, pn_min_cpus=8, comment="class=web",
                     features="x86_64|aarch64")
    d = admit(req, demo(), SITE, ON)
    assert d.changes["cpus_per_task"] == 3 and "rightsize" in d.kinds and "arch" in d.kinds


def test_site_apply_table(tmp_path):
    import yaml

    from slurm_plugin.site import SITE_CONFIGS

    hist = tmp_path / "hist.txt"
    rows = ["JobID|State|Elapsed|TotalCPU|NCPUS|NNodes|Comment"]
    rows += [f"{i}|COMPLETED|00:10:00|00:{10 + i % 10:02d}:00|8|1|class=web" for i in range(1, 41)]
    rows += [f"{i}|COMPLETED|00:10:00|01:20:00|8|1|class=batch" for i in range(41, 81)]
    hist.write_text("\n".join(rows) + "\n")
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    # a relative history is read beside the site file, whatever the daemon's working directory
    data["policy"]["rightsize"] = {"mode": "apply", "history": "hist.txt", "classes": ["web", "batch"]}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    table = apply_table(load_site(path), path.parent)
    assert list(table) == ["web"]  # batch used all 8 CPUs: nothing to lower
    assert table["web"].cpus.action == "lower" and table["web"].factor("cpus") < 0.3
    data["policy"]["rightsize"] = {"mode": "apply"}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="needs 'history'"):
        load_site(path)
    data["policy"]["rightsize"] = {"mode": "apply", "history": str(hist), "classes": ["webb"]}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="unknown workload class 'webb'"):
        load_site(path)
    assert RightsizeParams().percentile == 95
