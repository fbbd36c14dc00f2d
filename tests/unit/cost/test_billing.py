"""Cost in Slurm's accounting (conf/billing.py, cost/report.py, cost/usage.py, `hetsched cost report`): the rendered
TRESBillingWeights, the MAX_TRES billing arithmetic, per-node pricing and the sacct reader. Slurm itself billing
the same is checked on the container cluster (tests/containers/test_accounting_live.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cli.cost import REPORT_SACCT_FIELDS
from slurm_plugin.conf.billing import (BILLING_SCALE, billing, billing_weights_text, partition_weights,
                                       site_billing_weights)
from slurm_plugin.cost.report import JobUse, cost_report, job_cost
from slurm_plugin.cost.usage import SACCT_FIELDS, parse_alloc_tres, read_usage
from slurm_plugin.site import load_site
from slurm_plugin.workload import WorkloadError

SITE = load_site("demo")
X86, ARM = SITE.group("cpu-x86"), SITE.group("cpu-arm")  # 16 CPUs 64 GB 0.80/h x2; 64 CPUs 128 GB 0.55/h x3
GROUP_OF = {h: g for g in SITE.node_groups for h in g.hostnames}


def test_a_one_group_partition_prices_a_cpu_a_gb_and_a_device_at_the_node_cost():
    assert partition_weights(SITE, "x86") == pytest.approx({"CPU": 0.80 / 16 * BILLING_SCALE,
                                                            "Mem": 0.80 / 64 * BILLING_SCALE})
    gpu_groups = [SITE.group(n) for n in next(p for p in SITE.partitions if p.name == "gpu").node_groups]
    assert all(f"GRES/{g.gres[0][0]}" in partition_weights(SITE, "gpu") for g in gpu_groups)


def test_a_mixed_partition_gets_the_node_weighted_mean():
    weights = partition_weights(SITE, "batch")  # cpu-arm x3 and cpu-x86 x2
    assert weights["CPU"] == pytest.approx((3 * 0.55 / 64 + 2 * 0.80 / 16) / 5 * BILLING_SCALE)


def test_weights_text_is_what_slurm_conf_takes():
    assert billing_weights_text({"CPU": 50.0, "Mem": 12.5, "GRES/gpu": 4250.0}) == "CPU=50,Mem=12.5G,GRES/gpu=4250"
    assert set(site_billing_weights(SITE)) == {p.name for p in SITE.partitions}


def test_billing_is_the_largest_share_max_tres():
    w = {"CPU": 50.0, "Mem": 12.5, "GRES/gpu": 1000.0}
    assert billing(w, 4, 8, {}) == 200.0  # CPUs dominate
    assert billing(w, 1, 32, {}) == 400.0  # memory dominates
    assert billing(w, 1, 1, {"gpu": 1}) == 1000.0
    assert billing({}, 4, 8, {}) == 0.0


def test_each_node_is_priced_by_its_own_group():
    use = JobUse("1", "acct", "batch", "batch", (X86.hostnames[0], ARM.hostnames[0]), cpus=32.0, mem_gb=2.0,
                 gres={}, elapsed_s=1800)
    # 16 CPUs on each: the whole x86 node (0.80/h) and a quarter of the arm node (0.55/4), half an hour
    assert job_cost(SITE, use, GROUP_OF) == pytest.approx((0.80 + 0.55 / 4) / 2)


def test_report_groups_sorts_and_keeps_slurms_billing_apart():
    x86 = X86.hostnames[0]
    uses = [JobUse("1", "a", "x86", "web", (x86,), 16, 1, {}, 3600, billing=800.0),
            JobUse("2", "a", "x86", "batch", (x86,), 8, 1, {}, 3600, billing=None),
            JobUse("3", "b", "x86", "web", (x86,), 4, 1, {}, 3600)]
    rows = cost_report(SITE, uses, by=("account",))
    assert [(r.key, r.jobs) for r in rows] == [(("a",), 2), (("b",), 1)]
    assert rows[0].cost == pytest.approx(0.80 * 1.5) and rows[0].billed == pytest.approx(0.8)
    assert rows[1].billed is None and rows[1].node_hours == 1.0
    assert [r.key for r in cost_report(SITE, uses, by=("class", "account"))] == [("web", "a"), ("batch", "a"),
                                                                                 ("web", "b")]
    with pytest.raises(ValueError, match="cannot group by user"):
        cost_report(SITE, uses, by=("user",))


def test_alloc_tres_is_read_with_units_and_typed_gres_left_out():
    assert parse_alloc_tres("billing=125,cpu=4,gres/gpu=1,gres/gpu:a100=1,mem=8G,node=1") == (4.0, 8.0, {"gpu": 1.0},
                                                                                           125.0)
    assert parse_alloc_tres("cpu=1,mem=512M,node=1")[1] == 0.5
    with pytest.raises(ValueError, match="memory 'lots'"):
        parse_alloc_tres("cpu=1,mem=lots")


HEADER = "|".join(SACCT_FIELDS)


def _export(*rows: str) -> list[str]:
    return [HEADER, *rows]


def test_sacct_rows_become_uses_with_their_class():
    lines = _export("7|acct|x86||class=web|x86n[1-2]|billing=1600,cpu=32,mem=4G,node=2|600",
                    "7.batch|acct|x86|||x86n1|cpu=16|600",  # a step: skipped
                    "8|acct|x86|||None assigned||0",  # never ran: skipped
                    "9|acct|gpu|ai-training||a100n1|cpu=2,gres/gpu=1,mem=2G|60")
    uses = read_usage(lines, SITE, "x.psv")
    assert [(u.job_id, u.workload_class, u.nodes) for u in uses] == [("7", "web", ("x86n1", "x86n2")),
                                                                      ("9", "ai-training", ("a100n1",))]
    assert uses[0].billing == 1600.0 and uses[1].billing is None and uses[1].gres == {"gpu": 1.0}


@pytest.mark.parametrize("lines,where", [
    (["JobID|Account"], "x.psv:1: sacct header lacks Partition"),
    (_export("7|acct|x86"), "x.psv:2: 3 fields"),
    (_export("7|acct|x86|||x86n[1-|cpu=1|60"), "x.psv:2: job 7:"),
    (_export("7|acct|x86|||x86n1|cpu=1,mem=9Q|60"), "x.psv:2: job 7: memory '9Q'"),
])
def test_a_bad_export_names_file_and_line(lines, where):
    with pytest.raises(WorkloadError, match=where.replace("[", r"\[")):
        read_usage(lines, SITE, "x.psv")


def test_cli_report_from_an_export(tmp_path):
    export = tmp_path / "sacct.psv"
    export.write_text("\n".join(_export("7|acct|x86||class=web|x86n1|billing=800,cpu=16,mem=4G,node=1|3600",
                                        "9|acct|gpu|||a100n1|cpu=2,gres/gpu=1,mem=2G,node=1|3600")) + "\n")
    res = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "--sacct", str(export), "--by",
                                    "partition,class", "--json"])
    assert res.exit_code == 0, res.output
    rows = {(r["partition"], r["class"]): r for r in json.loads(res.stdout)}
    assert rows[("x86", "web")]["cost"] == pytest.approx(0.80) and rows[("x86", "web")]["billed"] == 0.8
    assert rows[("gpu", "batch")]["billed"] is None and rows[("gpu", "batch")]["cost"] > 0
    text = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "--sacct", str(export), "--by", "partition",
                                     "-p"])
    assert text.exit_code == 0 and text.output.splitlines()[0] == "PARTITION|JOBS|NODE_HOURS|COST|BILLED"
    bad = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "--sacct", str(export), "--by", "user"])
    assert bad.exit_code == 2 and "group by any of account, partition, class" in bad.output


def test_the_cli_documents_the_fields_the_reader_needs():
    assert REPORT_SACCT_FIELDS == SACCT_FIELDS
