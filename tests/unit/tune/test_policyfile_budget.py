"""A tuned policy file keeps the previous file's cycle budget (an operations setting, not a tuned choice)."""

from slurm_plugin.tune.policyfile import previous_sections


def test_the_budget_section_survives_a_rewrite(tmp_path):
    old = tmp_path / "policy.yaml"
    old.write_text("ranking: {name: sjf}\nbudget: {cycle_s: 10, pack_s: 1}\nscaling: {name: always-on}\n")
    assert previous_sections(old) == {"budget": {"cycle_s": 10, "pack_s": 1}, "scaling": {"name": "always-on"}}
