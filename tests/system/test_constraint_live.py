"""The constraint parser agrees with slurmctld (22.05 here):

- for expressions without counts or brackets, ``sbatch --test-only -w NODE -C EXPR`` is accepted exactly when
  :func:`constraint_matches` says NODE's features satisfy EXPR (precedence, ``,``, a trailing operator);
- the expressions the parser refuses are the ones slurmctld calls an "Invalid feature specification";
- jobs with counts and brackets run only on nodes the parser says match. ``--test-only -w`` cannot be the
  oracle there: a count says how many of the job's nodes need the feature, so slurmctld accepts any node as
  an extra one (``-w x86n1 -C aarch64*2`` ran on armn[1-2],x86n1).
"""

from __future__ import annotations

import hostlist
import pytest

from slurm_plugin.snapshot.constraint import ConstraintError, constraint_matches, parse_constraint

from .test_cluster import features

pytestmark = pytest.mark.system

NODES = {"x86n1": "batch", "armn1": "batch", "rvn1": "riscv", "npun1": "npu", "gh200n1": "gpu", "dpun1": "dpu"}
PLAIN = [
    "(aarch64|x86_64)&eu-west", "x86_64|aarch64&apac", "aarch64&apac|x86_64", "x86_64,eu-west", "aarch64&",
    "smartnic|ascend910b", "aarch64&(huawei|nvidia)", "x86_64|(aarch64&apac)", "nvidia&aarch64|riscv64",
]
# (sbatch arguments in partition batch: x86n1-2, armn1-3; the arch every allocated node must have)
PLACED = [
    (["--constraint=(aarch64|riscv64)&eu-west"], "aarch64"),
    (["--constraint=eu-west&[riscv64|x86_64]"], "x86_64"),
    (["--constraint=(aarch64&eu-west)*1"], "aarch64"),  # 22.05 only: 24.11 refuses a count on a group
    (["-N", "2", "--constraint=[aarch64*1&x86_64*1]"], None),
]
GROUP_COUNT = "(aarch64&eu-west)*1"
INVALID = ["[aarch64&eu-west]", "aarch64**2", "(aarch64", "&aarch64", "aarch64||x86_64", "[aarch64|x86_64]*2",
           "[aarch64][x86_64]", "aarch64*0", "[[aarch64]]"]


def submit_test_only(slurm, expr: str, node: str, partition: str) -> tuple[bool, str]:
    proc = slurm.run("sbatch", "--test-only", "-w", node, "-p", partition, f"--constraint={expr}", "--wrap",
                     "true", check=False)
    text = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0, text


def test_parser_and_slurmctld_agree_on_every_node(slurm):
    node_features = {n: features(slurm, n) for n in NODES}
    disagree = []
    for expr in PLAIN:
        for node, part in NODES.items():
            accepted, text = submit_test_only(slurm, expr, node, part)
            if accepted != constraint_matches(expr, node_features[node]):
                disagree.append(f"{expr} on {node} {sorted(node_features[node])}: slurm {accepted} ({text})")
    assert not disagree, "\n".join(disagree)


@pytest.mark.parametrize("expr", INVALID)
def test_what_the_parser_refuses_slurmctld_refuses(slurm, expr):
    with pytest.raises(ConstraintError):
        parse_constraint(expr)
    accepted, text = submit_test_only(slurm, expr, "armn1", "batch")
    assert not accepted and "Invalid feature specification" in text, text


def test_a_count_on_a_group_is_refused_from_24_11(slurm):
    """22.05 runs ``(a&b)*1`` (the parser follows it); 24.11 refuses it at submission ("Invalid feature
    specification", seen on Debian 13's 24.11.5), so no such job ever reaches the parser there."""
    accepted, text = submit_test_only(slurm, GROUP_COUNT, "armn1", "batch")
    if (slurm.version.major, slurm.version.minor) >= (24, 11):
        assert not accepted and "Invalid feature specification" in text, text
    else:
        assert accepted, text


def test_jobs_with_groups_counts_and_brackets_run_where_the_parser_says(cluster, slurm):
    out = cluster.root / "jobs"
    out.mkdir(exist_ok=True)
    new = (slurm.version.major, slurm.version.minor) >= (24, 11)
    placed = [(args, arch) for args, arch in PLACED if not (new and args[-1].endswith(GROUP_COUNT))]
    jobs = [(slurm.sbatch("-p", "batch", *args, f"--output={out}/constraint-%j.out", "--time=5", wrap="true"),
             args, arch) for args, arch in placed]
    for job_id, args, arch in jobs:
        job = slurm.wait_job(job_id, timeout=90)
        assert job["JobState"] == "COMPLETED", job
        expr = args[-1].split("=", 1)[1]
        nodes = hostlist.expand_hostlist(job["NodeList"])
        assert all(constraint_matches(expr, features(slurm, n)) for n in nodes), (expr, nodes)
        if arch:
            assert all(arch in features(slurm, n) for n in nodes), (expr, nodes)
        else:  # multiple counts: one node of each term
            assert {a for n in nodes for a in ("aarch64", "x86_64") if a in features(slurm, n)} == {"aarch64", "x86_64"}
