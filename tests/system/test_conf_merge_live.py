"""A site's own slurm.conf (its own cluster name, accounting and priority settings) with the suite's parts merged
in by `hetsched conf render`, run by a real slurmctld and slurmd; and the production power path on it: Slurm runs
the rendered ResumeProgram, whose Redfish BMC does not answer, and the node goes DOWN with the backend's error;
for a node whose BMC (sushy-tools' emulator) powers it on but which never registers, Slurm runs the rendered
ResumeFailProgram after ResumeTimeout."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.system.conftest import TEST_ROOT, allocate_ports

from slurm_plugin.cli import main
from slurm_plugin.cluster.local import LocalCluster, daemon_path
from slurm_plugin.cluster.procs import spawn_detached, stop_pid
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.power.redfish import BmcTarget, RedfishPower
from slurm_plugin.slurm import SlurmClient

pytestmark = pytest.mark.system
CTLD_PORT = allocate_ports()  # this module's own block: slurmctld and one slurmd


def _site_conf(root: Path) -> str:
    return f"""# The site's own slurm.conf: name, daemons, accounting and priorities are the site's.
ClusterName=sitecl
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={CTLD_PORT}
SlurmdPort={CTLD_PORT + 1}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=300
# accounting: completed jobs to a file, usage gathered from /proc
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.log
JobAcctGatherType=jobacct_gather/linux
PriorityType=priority/multifactor
PriorityWeightFairshare=0
PriorityWeightAge=777
"""


SITE = {
    "name": "merged",
    "slurm": {"suspend_time": -1, "resume_timeout": 20, "suspend_timeout": 5},
    "clusters": [{"name": "c", "node_groups": [
        {"name": "plain", "prefix": "mrgn", "count": 1, "cpu": {"arch": "x86_64", "cores": 2}, "memory_gb": 1,
         "node_addr": "127.0.0.1"},  # a one-host test: the node's name does not resolve
        # these two never run a slurmd (one host: mrgn1's slurmd on the shared port answers pings for them, which
        # does not change what is tested: Slurm's power-save calls and the reasons they leave)
        {"name": "bmcfail", "prefix": "bmcf", "count": 1, "cpu": {"arch": "x86_64", "cores": 2}, "memory_gb": 1,
         "node_addr": "127.0.0.1",
         "bmc": {"protocol": "redfish", "address": "http://127.0.0.1:9"}},  # nothing listens on port 9
        {"name": "rfgood", "prefix": "rfg", "count": 1, "cpu": {"arch": "x86_64", "cores": 2}, "memory_gb": 1,
         "node_addr": "127.0.0.1", "bmc": {"protocol": "redfish", "address": "URL"}}]}],
    "partitions": [{"name": "all", "node_groups": ["plain", "bmcfail", "rfgood"], "default": True}],
}


@pytest.fixture(scope="module")
def merged() -> Iterator[tuple[Path, SlurmClient, str]]:
    root = TEST_ROOT / "conf-merge"
    shared = LocalCluster(root)  # only for the shared munged: started (and later stopped) like `cluster up` does
    shared.down()
    for sub in ("etc", "state", "spool", "log", "run"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    etc = root / "etc"
    for old in etc.iterdir():
        if old.is_symlink() or old.is_file():
            old.unlink()
    (etc / "slurm.conf").write_text(_site_conf(root))
    sushy_pid, url = start_sushy(root / "sushy", ["rfg1"])
    site = root / "site.yaml"
    site.write_text(yaml.safe_dump(SITE).replace("address: URL", f"address: {url}"))
    result = CliRunner().invoke(main, ["conf", "render", str(site), "-o", str(etc), "--no-job-submit",
                                       "--power-log", str(root / "log" / "power.log")])
    assert result.exit_code == 0, result.output
    started = shared._ensure_munge()
    if started:
        from slurm_plugin.cluster.local import REGISTRY

        (REGISTRY / "munged.pid").write_text(f"{started}\n")
    shared._register()
    conf = str(etc / "slurm.conf")
    pids = [spawn_detached([daemon_path("slurmctld"), "-D", "-c", "-f", conf], root / "log" / "slurmctld.out")]
    client = SlurmClient(conf)
    try:
        deadline = time.monotonic() + 60
        while not client.ping():
            assert time.monotonic() < deadline, (root / "log" / "slurmctld.out").read_text()[-2000:]
            time.sleep(0.3)
        pids.append(spawn_detached([daemon_path("slurmd"), "-D", "-f", conf, "-N", "mrgn1"],
                                   root / "log" / "slurmd.out"))
        yield root, client, url
    finally:
        for pid, name in zip(reversed(pids), ("slurmd", "slurmctld")[-len(pids):]):
            stop_pid(pid, name)
        stop_pid(sushy_pid, "sushy-emulator")
        shared.down()


def test_slurmctld_runs_the_sites_settings_with_the_suites_parts(merged):
    root, client, _ = merged
    config = client.run("scontrol", "show", "config").stdout
    settings = {k.strip(): v.strip() for k, _, v in (ln.partition("=") for ln in config.splitlines()) if _}
    assert settings["ClusterName"] == "sitecl" and settings["JobCompType"] == "jobcomp/filetxt"
    assert settings["JobAcctGatherType"] == "jobacct_gather/linux" and settings["PriorityWeightAge"] == "777"
    assert settings["ResumeFailProgram"] == f"{root}/etc/hetsched/resume-fail"
    assert settings["ResumeProgram"] == f"{root}/etc/hetsched/resume" and settings["ResumeTimeout"] == "20 sec"
    job = client.sbatch("-p", "all", "-w", "mrgn1", "-n", "1", "--time=2", "--output=/dev/null", wrap="true")
    done = client.wait_job(job, timeout=90, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"))
    assert done["JobState"] == "COMPLETED", done
    deadline = time.monotonic() + 20  # the site's own jobcomp/filetxt records it
    while f"JobId={job} " not in ((root / "log" / "jobcomp.log").read_text()
                                  if (root / "log" / "jobcomp.log").exists() else ""):
        assert time.monotonic() < deadline, "no job completion record: the site's accounting setting was lost"
        time.sleep(0.5)


def test_a_failed_resume_puts_the_node_down_with_the_backend_error(merged):
    """Slurm powers bmcf1 down (its SuspendProgram fails too: no BMC), then a job for it makes Slurm run the
    rendered ResumeProgram, which picks Redfish from the site file, fails, and sets the node DOWN."""
    root, client, _ = merged
    job = _power_down_then_ask(client, "bmcf1")
    node = _wait_reason(client, root, "bmcf1", "resume failed (redfish): ", 60)
    assert "DOWN" in node["State"], node
    assert "GET http://127.0.0.1:9/redfish/v1/Systems: [Errno 111] Connection refused" in node["Reason"], node
    log = (root / "log" / "power.log").read_text()
    assert "resume node=bmcf1 backend=redfish duration=" in log and "result=failed" in log, log
    client.cancel(job)


def _power_down_then_ask(client: SlurmClient, node: str) -> int:
    """Slurm powers ``node`` down (SuspendProgram), then a job for it makes Slurm run ResumeProgram."""
    client.run("scontrol", "update", f"nodename={node}", "state=POWER_DOWN_FORCE", check=False)
    deadline = time.monotonic() + 60
    while "POWERED_DOWN" not in client.show_node(node).get("State", ""):
        assert time.monotonic() < deadline, client.show_node(node)
        time.sleep(0.5)
    return client.sbatch("-p", "all", "-w", node, "-n", "1", "--time=2", "--output=/dev/null", wrap="true")


def _wait_reason(client: SlurmClient, root: Path, node: str, prefix: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while not (info := client.show_node(node)).get("Reason", "").startswith(prefix):
        assert time.monotonic() < deadline, (info, (root / "log" / "power.log").read_text())
        time.sleep(0.5)
    return info


def test_a_node_that_never_registers_goes_through_resume_fail(merged):
    """The BMC accepts the power-on (sushy-tools turns rfg1 On) but no slurmd ever registers: after ResumeTimeout
    Slurm runs the rendered ResumeFailProgram, which logs it and names the backend in the DOWN reason."""
    root, client, url = merged
    job = _power_down_then_ask(client, "rfg1")
    node = _wait_reason(client, root, "rfg1", "resume failed (redfish): ResumeTimeout reached", 90)
    assert "DOWN" in node["State"], node
    log = (root / "log" / "power.log").read_text()
    assert "resume node=rfg1 backend=redfish" in log and 'detail="On accepted"' in log, log
    assert "resume-fail node=rfg1 backend=redfish" in log, log
    assert RedfishPower({"rfg1": BmcTarget(url, "rfg1", None, True)}).power_state("rfg1") in ("On", "Off")
    client.cancel(job)
