"""`hetsched conf render` into a site's own config directory: fragments, Include lines, backups, --diff,
conflicts and the atomically switched set."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.conf.merge import BEGIN, END, _new_stamp, with_block
from slurm_plugin.site import SITE_CONFIGS

SITE_CONF = """# The site's own slurm.conf: accounting, priorities and names are the site's business.
ClusterName=prod
SlurmctldHost=ctl01
SlurmUser=slurm
AuthType=auth/munge
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=dbd01
JobCompType=jobcomp/filetxt
JobAcctGatherType=jobacct_gather/linux
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
"""


def _render(out: Path, *args: str, site: str = "demo"):
    return CliRunner().invoke(main, ["conf", "render", site, "-o", str(out), *args])


@pytest.fixture
def etc(tmp_path: Path) -> Path:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurm.conf").write_text(SITE_CONF)
    (etc / "gres.conf").write_text("NodeName=other1 Name=gpu File=/dev/nvidia0\n")
    return etc


def _tree(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text() if p.is_file() else "/")
            for p in sorted(d.rglob("*"))}


def test_site_settings_stay_and_the_suite_parts_are_included(etc: Path):
    result = _render(etc)
    assert result.exit_code == 0, result.output
    conf = (etc / "slurm.conf").read_text()
    assert conf.startswith(SITE_CONF), "the site's own lines changed"
    assert conf[len(SITE_CONF):] == "\n" + "\n".join([BEGIN] + [f"Include {etc}/hetsched/{n}.conf" for n in
                                                               ("nodes", "partitions", "power", "job_submit")]
                                                      + [END]) + "\n"
    assert (etc / "gres.conf").read_text().startswith("NodeName=other1 Name=gpu File=/dev/nvidia0\n")
    baks = sorted(p.name for p in etc.glob("*.bak"))
    assert len(baks) == 2 and (etc / baks[1]).read_text() == SITE_CONF, baks  # backed up before the change
    frag = etc / "hetsched"
    assert frag.is_symlink() and os.readlink(frag).startswith("hetsched.d/")
    nodes, power = (frag / "nodes.conf").read_text(), (frag / "power.conf").read_text()
    assert "GresTypes=gpu,npu,dpu" in nodes and "NodeName=armn[1-3] " in nodes
    assert "ClusterName" not in nodes + power and "Accounting" not in nodes + power
    for key, prog in (("ResumeProgram", "resume"), ("SuspendProgram", "suspend"),
                      ("ResumeFailProgram", "resume-fail")):
        assert f"{key}={etc}/hetsched/{prog}\n" in power
        mode = (frag / prog).stat().st_mode
        assert mode & stat.S_IXUSR and (frag / prog).read_text().startswith("#!/bin/sh\n")
    assert "JobSubmitPlugins=lua" in (frag / "job_submit.conf").read_text()
    assert os.readlink(etc / "job_submit.lua") == "hetsched/job_submit.lua" and (etc / "job_submit.lua").exists()
    assert '"socket": "/run/hetsched/hetsched.sock"' in (etc / "hetsched-shim.json").read_text()


def test_render_again_changes_nothing_and_a_site_change_switches_the_set(etc: Path, tmp_path: Path):
    old_umask = os.umask(0o077)  # root's umask must not hide the parts from SlurmUser
    try:
        assert _render(etc).exit_code == 0
    finally:
        os.umask(old_umask)
    assert all(p.stat().st_mode & 0o005 == 0o005 for p in [etc / "hetsched.d", (etc / "hetsched").resolve()])
    assert (etc / "hetsched" / "nodes.conf").stat().st_mode & 0o004
    before = _tree(etc)
    again = _render(etc)
    assert again.exit_code == 0 and "already up to date" in again.output
    assert _tree(etc) == before
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["slurm"]["resume_timeout"] = 123
    site = tmp_path / "site.yaml"
    site.write_text(yaml.safe_dump(data))
    old_target = os.readlink(etc / "hetsched")
    result = _render(etc, site=str(site))
    assert result.exit_code == 0 and "switched" in result.output, result.output
    assert os.readlink(etc / "hetsched") != old_target and (etc / old_target).is_dir()  # previous set kept
    assert "ResumeTimeout=123" in (etc / "hetsched" / "power.conf").read_text()
    assert f"--site {site}" in (etc / "hetsched" / "resume").read_text()
    assert (etc / "slurm.conf").read_text().startswith(SITE_CONF)


def test_the_health_check_program_is_in_the_set_and_reads_the_site(etc: Path, tmp_path: Path):
    """With a health check interval the set carries its HealthCheckProgram (`hetsched health check --site S
    --slurm-conf C`), and power.conf names it: the check reads each node's BMC through the site file."""
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["slurm"]["health_check_interval"] = 300
    site = tmp_path / "site.yaml"
    site.write_text(yaml.safe_dump(data))
    result = _render(etc, site=str(site))
    assert result.exit_code == 0, result.output
    power = (etc / "hetsched" / "power.conf").read_text()
    assert f"HealthCheckProgram={etc}/hetsched/healthcheck\n" in power and "HealthCheckInterval=300\n" in power
    prog = etc / "hetsched" / "healthcheck"
    assert prog.stat().st_mode & stat.S_IXUSR
    text = prog.read_text()
    assert " -m slurm_plugin health check " in text
    assert f"--site {site.resolve()} --slurm-conf {etc}/slurm.conf" in text
    # and every node's site facts, so that no run of the check loads the site (pydantic): valid for this file
    assert f"--site-facts {etc}/hetsched/site-facts.json" in text
    from slurm_plugin.health.site_facts import node_site

    facts = json.loads((etc / "hetsched" / "site-facts.json").read_text())
    assert facts["nodes"]["gh200n1"] == {"gpu": "h100", "bmc": None}
    assert node_site(str(site.resolve()), "gh200n1", tmp_path / "state", etc / "hetsched" / "site-facts.json") \
        .gpu == "h100" and not (tmp_path / "state").exists()  # read from the facts: nothing cached, nothing loaded
    assert _render(etc).exit_code == 0  # the demo site itself: no interval, no program
    assert "healthcheck" not in os.listdir(etc / "hetsched")
    assert "HealthCheckProgram" not in (etc / "hetsched" / "power.conf").read_text()


def test_diff_shows_the_changes_and_writes_nothing(etc: Path):
    before = _tree(etc)
    result = _render(etc, "--diff")
    assert result.exit_code == 0, result.output
    assert _tree(etc) == before
    assert "--- a/slurm.conf\n+++ b/slurm.conf\n" in result.output
    assert f"+Include {etc}/hetsched/power.conf\n" in result.output
    assert "--- /dev/null\n+++ b/hetsched/nodes.conf\n" in result.output
    assert _render(etc).exit_code == 0
    assert _render(etc, "--diff").output == f"no changes in {etc}\n"


def test_a_setting_the_suite_owns_is_a_conflict_and_nothing_is_written(etc: Path):
    (etc / "slurm.conf").write_text(SITE_CONF + "ResumeProgram=/opt/site/resume\nNodeName=armn2 CPUs=4\n"
                                    "JobSubmitPlugins=lua\n")
    before = _tree(etc)
    result = _render(etc)
    assert result.exit_code == 2
    assert f"{etc}/slurm.conf:13: ResumeProgram is set here and in the suite's power.conf" in result.output
    assert f"{etc}/slurm.conf:14: NodeName armn2 is also defined in the suite's nodes.conf" in result.output
    assert "JobSubmitPlugins is set here and in the suite's job_submit.conf: remove it from slurm.conf, the " \
           "suite owns it (or render with --no-job-submit)" in result.output
    assert _tree(etc) == before


def test_the_sites_own_job_submit_script_is_not_replaced(etc: Path):
    (etc / "job_submit.lua").write_text("-- the site's own\n")
    result = _render(etc)
    assert result.exit_code == 2 and "is the site's own job_submit script" in result.output
    result = _render(etc, "--no-job-submit")
    assert result.exit_code == 0, result.output
    assert (etc / "job_submit.lua").read_text() == "-- the site's own\n"
    assert "JobSubmitPlugins" not in (etc / "hetsched" / "job_submit.conf").read_text().replace("# job_submit", "")


def test_with_block_replaces_only_its_own_block():
    block = f"{BEGIN}\nInclude /a\n{END}\n"
    text = with_block("A=1\n", block)
    assert text == f"A=1\n\n{block}"
    assert with_block(text + "B=2\n", f"{BEGIN}\nInclude /b\n{END}\n") == f"A=1\n\n{BEGIN}\nInclude /b\n{END}\nB=2\n"


def test_a_whole_file_render_of_an_earlier_version_is_replaced_after_a_backup(tmp_path: Path):
    """Before the merge mode, `conf render` wrote whole files; those are the suite's, not the site's."""
    from slurm_plugin.conf import DeployPaths, render_site, write_atomic
    from slurm_plugin.site import load_site

    old = render_site(load_site("demo"), DeployPaths())
    write_atomic(tmp_path, old)
    result = _render(tmp_path)
    assert result.exit_code == 0, result.output
    conf = (tmp_path / "slurm.conf").read_text()
    assert "It is the site's own" in conf and "NodeName=" not in conf and f"Include {tmp_path}/hetsched" in conf
    baks = {p.name.split(".hetsched-")[0]: p.read_text() for p in tmp_path.glob("*.bak")}
    assert baks == old  # slurm.conf, gres.conf and hetsched-shim.json kept as they were
    assert os.readlink(tmp_path / "hetsched-shim.json") == "hetsched/hetsched-shim.json"
    assert _render(tmp_path).output.strip().endswith("already up to date")  # and now it is the site's own


def _deploy_site_file(tmp_path: Path, **deploy) -> Path:
    """The demo site with deploy settings (image store, a sensitive group and its exclusive partition)."""
    from slurm_plugin.deploy.site_patch import patch_site

    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    patch_site(data, tmp_path / "deploy")
    data["deploy"].update(deploy)
    path = tmp_path / "site-deploy.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_site_that_deploys_gets_prolog_epilog_and_oci_conf(etc: Path, tmp_path: Path):
    """Issue 19: a real site's render carries the deployment (before, only the local test cluster got it):
    Prolog/Epilog in an included deploy.conf, the programs in the set, oci.conf linked beside slurm.conf; the
    generated Prolog really writes the audit record of a sensitive job and fails closed when it cannot."""
    import subprocess

    site = _deploy_site_file(tmp_path)
    result = _render(etc, "--slurm-version", "24.11", site=str(site))
    assert result.exit_code == 0, result.output
    assert f"Include {etc}/hetsched/deploy.conf\n{END}" in (etc / "slurm.conf").read_text()
    frag = etc / "hetsched"
    deploy = (frag / "deploy.conf").read_text()
    assert f"Prolog={etc}/hetsched/prolog\nEpilog={etc}/hetsched/epilog\n" in deploy
    for prog in ("prolog", "epilog", "oci-run"):
        assert (frag / prog).stat().st_mode & stat.S_IXUSR and (frag / prog).read_text().startswith("#!/bin/sh\n")
    assert os.readlink(etc / "oci.conf") == "hetsched/oci.conf"
    oci = (etc / "oci.conf").read_text()
    assert f'RunTimeRun="{etc}/hetsched/oci-run %b' in oci and "CreateEnvFile=disabled" in oci  # 24.11's syntax
    env = {**os.environ, "SLURM_JOB_PARTITION": "secure", "SLURM_JOB_ID": "41", "SLURM_JOB_USER": "alice",
           "SLURM_JOB_UID": "1001", "SLURMD_NODENAME": "x86n1", "SLURM_JOB_NAME": "train"}
    prolog = subprocess.run([str(frag / "prolog")], env=env, capture_output=True, text=True, timeout=60)
    assert prolog.returncode == 0, prolog.stderr
    audit = (tmp_path / "deploy" / "audit.jsonl").read_text()
    assert '"event": "start"' in audit and '"job_id": "41"' in audit and '"node": "x86n1"' in audit
    other = subprocess.run([str(frag / "prolog")], env={**env, "SLURM_JOB_PARTITION": "batch"}, timeout=60)
    assert other.returncode == 0 and audit == (tmp_path / "deploy" / "audit.jsonl").read_text()  # not audited
    # fail closed: an audit log that cannot be written makes the Prolog fail (Slurm drains and requeues)
    broken = _deploy_site_file(tmp_path, audit_log=f"{site}/audit.jsonl")  # under a file: cannot be created
    assert _render(etc, "--slurm-version", "24.11", site=str(broken)).exit_code == 0
    failed = subprocess.run([str(frag / "prolog")], env=env, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1, "a sensitive job ran without its audit record"
    # the site without deployment again: deploy.conf's Include and the oci.conf link go
    assert _render(etc).exit_code == 0
    assert "deploy.conf" not in (etc / "slurm.conf").read_text() and not (etc / "oci.conf").exists()
    assert not (etc / "oci.conf").is_symlink()


def test_a_sites_own_prolog_or_oci_conf_is_a_conflict(etc: Path, tmp_path: Path):
    site = _deploy_site_file(tmp_path)
    (etc / "slurm.conf").write_text(SITE_CONF + "Prolog=/opt/site/prolog\n")
    (etc / "oci.conf").write_text("RunTimeRun=/opt/site/run %b\n")
    before = _tree(etc)
    result = _render(etc, "--slurm-version", "22.05", site=str(site))
    assert result.exit_code == 2
    assert f"{etc}/slurm.conf:13: Prolog is set here and in the suite's deploy.conf" in result.output
    assert f"{etc}/oci.conf is the site's own oci.conf" in result.output
    assert _tree(etc) == before
    assert _render(etc, "--slurm-version", "22", site=str(site)).exit_code == 2  # not X.Y


def test_a_new_set_is_named_after_every_set_already_there(tmp_path):
    """A render's set must sort after the sets before it (a set named after the current one is taken for a
    crashed render's orphan and removed). The name came from two clock readings, the second and the nanoseconds
    within it. A render whose readings straddled a second (…:24.999 and …:25.0001) was named …T…24-000100000,
    before a set made at …:24.5; in a CI rehearsal (tests/chaos/test_power.py item 14) that render's cleanup
    then removed the earlier set as an orphan. One reading now, moved past the newest name if the clock went
    back."""
    sets = tmp_path / "hetsched.d"
    sets.mkdir()
    t = 1_800_000_000 * 10**9 + 500_000_000
    first = _new_stamp(sets, t)
    (sets / first).mkdir()
    later = _new_stamp(sets, t + 10**9 // 2 + 100_000)  # the next second, 0.1 ms into it
    assert later > first and later.endswith("-000100000")
    (sets / later).mkdir()
    back = _new_stamp(sets, t - 5 * 10**9)  # the clock went back five seconds
    assert back > later
    (sets / back).mkdir()
    assert _new_stamp(sets, t - 5 * 10**9) > back
