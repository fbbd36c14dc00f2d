"""A tuned policy file keeps every section of the previous file that tune does not own (ranking, twin)."""

import yaml

from slurm_plugin.policy import RankingSpec, load_policy
from slurm_plugin.tune.policyfile import previous_sections, write_policy

OLD = """ranking: {name: sjf}
packing: {time_cap_s: 0.5}
scaling: {name: always-on}
reshape: false
steps: [rank, pack, power]
budget: {cycle_s: 10, pack_s: 1}
"""


def test_previous_sections_keeps_steps_and_every_unowned_section(tmp_path):
    old = tmp_path / "policy.yaml"
    old.write_text(OLD)
    kept = previous_sections(old)
    assert kept == {"packing": {"time_cap_s": 0.5}, "scaling": {"name": "always-on"}, "reshape": False,
                    "steps": ["rank", "pack", "power"], "budget": {"cycle_s": 10, "pack_s": 1}}


def test_a_rewritten_policy_file_keeps_steps(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(OLD)
    before = load_policy(path)
    write_policy(path, RankingSpec(name="fcfs"), {"objective": "avg_wait_s", "predicted": {"avg_wait_s": 60.0}})
    doc = yaml.safe_load(path.read_text())
    assert doc["steps"] == ["rank", "pack", "power"]
    assert doc["reshape"] is False and doc["budget"] == {"cycle_s": 10, "pack_s": 1}
    assert doc["ranking"]["name"] == "fcfs"
    after = load_policy(path)
    assert after.steps == before.steps == ("rank", "pack", "power")
    assert after.budget == before.budget and after.packing == before.packing
