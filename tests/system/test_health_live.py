"""Health checks on the real local cluster: slurmd runs the rendered HealthCheckProgram (`hetsched health check`)
on every node; an injected Xid 79 line drains that node with a reason naming Xid 79, requeues its job and has
Slurm reboot it through the rendered RebootProgram (it comes back by itself); a
correctable AER below its threshold changes nothing; a drained powered-down node is not powered up by the planner."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.site import load_site

from tests.integration.ipmi_bmc import HAVE_IPMI, add_sel_events, bmc_group, start_bmc, write_creds
from tests.integration.ipmi_bmc import SKIP_REASON as IPMI_SKIP

from .conftest import cluster_fixture

pytestmark = pytest.mark.system

hcluster = cluster_fixture("health", health_check_interval=10, suspend_timeout=10)
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the bus."
AER_CE = "pcieport 0000:40:01.1: AER: Correctable error message received from 0000:41:00.0"


def inject(cluster, node: str, *lines: str) -> None:
    stamp = time.strftime("%b %d %H:%M:%S")
    with open(Path(cluster.root) / "log" / f"kern-{node}.log", "a") as f:
        for line in lines:
            f.write(f"{stamp} {node} kernel: {line}\n")


def memory(cluster, node: str) -> dict:
    path = Path(cluster.root) / "health" / f"{node}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def until(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def test_slurm_runs_the_rendered_health_check_on_every_node(hcluster):
    out_file = Path(hcluster.root) / "log" / "health.out"  # (appended to over a reused root's earlier clusters)
    start = out_file.stat().st_size if out_file.exists() else 0
    conf = Path(hcluster.conf).read_text()
    assert f"HealthCheckProgram={hcluster.root}/bin/healthcheck" in conf and "HealthCheckInterval=10" in conf
    # slurmd ran it: each node's cursor file exists (nothing to read yet, nothing done)
    until(lambda: all(memory(hcluster, n) != {} or (Path(hcluster.root) / "health" / f"{n}.json").exists()
                      for n in ("x86n1", "a100n1")), 90, "the first health checks")
    node = hcluster.client().show_node("x86n1")
    assert "DRAIN" not in node["State"]
    # the rendered program passes the site file (each node's BMC), and slurmd's runs of it succeeded
    program = (Path(hcluster.root) / "bin" / "healthcheck").read_text()
    assert f"--site {hcluster.state()['site_path']}" in program, program
    def runs() -> str:
        with open(out_file) as f:
            f.seek(start)
            text = f.read()
        return text if text.count(" new line(s), ") >= 4 else ""

    out = until(runs, 120, "four runs of the program by slurmd")
    assert "Traceback" not in out and "Error:" not in out and "Usage:" not in out, out[-2000:]


def test_xid_79_drains_the_node_naming_it_requeues_its_job_and_reboots_it(hcluster):
    """Xid 79's action is drain_reboot: the check requeues the job and has Slurm reboot the node (`scontrol reboot
    ASAP nextstate=RESUME`); slurmd runs the rendered RebootProgram, which restarts that node's slurmd as a fresh
    boot; the node registers with a later boot time and Slurm puts it back in service by itself."""
    client = hcluster.client()
    conf = Path(hcluster.conf).read_text()
    assert f"RebootProgram={hcluster.root}/bin/reboot" in conf
    boot_before = client.show_node("a100n1")["BootTime"]
    job = client.sbatch("-w", "a100n1", "-p", "gpu", "--gres=gpu:a100:1", "--time=10", "--requeue",
                        "--output=/dev/null", wrap="sleep 600")
    client.wait_job(job, until=("RUNNING",), timeout=90)
    inject(hcluster, "a100n1", XID79)
    seen: set[str] = set()

    def rebooting():
        n = client.show_node("a100n1")
        seen.update(n["State"].split("+"))
        return "REBOOT" in n["State"] and n

    node = until(rebooting, 90, "the reboot request")
    assert node["Reason"].startswith("hetsched: health Xid 79: gpu_lost (drain_reboot)"), node["Reason"]
    requeued = until(lambda: (j := client.show_job(job)) and int(j.get("Restarts", "0")) >= 1 and j, 60, "the requeue")
    # (COMPLETING: the requeued run's teardown while the node reboots)
    assert requeued["JobState"] in ("PENDING", "REQUEUED", "CONFIGURING", "RUNNING", "COMPLETING"), \
        requeued["JobState"]
    client.run("scancel", str(job))  # (pinned to a100n1, it would run there again once the node is back)

    def back():
        n = client.show_node("a100n1")
        seen.update(n["State"].split("+"))
        return not any(w in n["State"] for w in ("REBOOT", "DRAIN", "DOWN")) and n["BootTime"] != boot_before and n

    node = until(back, 120, "a100n1 back from its reboot")
    assert any(w.startswith("REBOOT") for w in seen), seen
    if (client.version.major, client.version.minor) < (24, 11):
        assert not node.get("Reason"), node.get("Reason")
    else:  # 24.11 keeps the reboot's reason on a node back in service (seen on 24.11.5); it is still ours
        assert (node.get("Reason") or "hetsched: health Xid 79").startswith("hetsched: health Xid 79"), node["Reason"]
    assert "a100n1: rebooted" in (Path(hcluster.root) / "log" / "reboot.log").read_text()


def test_correctable_aer_below_threshold_changes_nothing(hcluster):
    client = hcluster.client()
    before = len(memory(hcluster, "x86n2").get("counts", {}).get("pcie-aer-corrected-received", []))  # a reused root
    inject(hcluster, "x86n2", AER_CE, AER_CE, AER_CE)
    def counted() -> int:
        return len(memory(hcluster, "x86n2").get("counts", {}).get("pcie-aer-corrected-received", []))

    until(lambda: counted() > before, 90, "the AER lines to be counted")
    assert counted() == before + 3 < 100
    node = client.show_node("x86n2")
    assert "DRAIN" not in node["State"] and not node.get("Reason")


def test_healthy_node_check_takes_no_action(hcluster):
    result = CliRunner().invoke(main, ["health", "check", "--node", "x86n1", "--json", "--state-dir",
                                       str(Path(hcluster.root) / "health"), "--log",
                                       str(Path(hcluster.root) / "log" / "kern-{node}.log"),
                                       "--slurm-conf", str(hcluster.conf)])
    assert result.exit_code == 0, result.output
    res = json.loads(result.output)
    assert res["actions"] == [] and res["skipped"] is None and "nvidia-smi" in res["tools_absent"]


def test_benchmark_jobs_record_factors_and_a_slow_node_is_drained(hcluster, tmp_path):
    """One benchmark job per ARM node through Slurm; then one node's result is made 50 % slower (an injected slow
    measurement, as the Xid line is an injected fault) and `analyze --drain` drains it naming the metric."""
    client, site = hcluster.client(), hcluster.state()["site_path"]
    env = {"SLURM_CONF": str(hcluster.conf)}
    res = CliRunner().invoke(main, ["hw", "bench", "submit", "--site", site, "--dir", str(tmp_path), "-p", "arm",
                                    "armn[1-3]"], env=env)
    assert res.exit_code == 0, res.output
    jobs = [int(line.rsplit(" ", 1)[1]) for line in res.output.splitlines()]
    for job in jobs:
        assert client.wait_job(job, timeout=180)["JobState"] == "COMPLETED"
    results = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    assert set(results) == {"armn1", "armn2", "armn3"} and {int(r["job"]) for r in results.values()} == set(jobs)
    slow = results["armn3"] | {"gemm_gflops": min(r["gemm_gflops"] for r in results.values()) * 0.5}
    (tmp_path / "armn3.json").write_text(json.dumps(slow))
    overlay = tmp_path.parent / f"{tmp_path.name}-factors.yaml"
    res = CliRunner().invoke(main, ["hw", "bench", "analyze", "--site", site, str(tmp_path), "--drain", "--json",
                                    "--factors", str(overlay)], env=env)
    out = json.loads(res.output)
    # the measured factors feed the site model: the overlay names the jobs, the site loader reads it
    doc = yaml.safe_load(overlay.read_text())
    assert set(doc["provenance"]["jobs"]) == set(jobs) and set(doc["groups"]) == {"cpu-arm"}
    measured = tmp_path.parent / f"{tmp_path.name}-site.yaml"
    measured.write_text(yaml.safe_dump({**yaml.safe_load(Path(site).read_text()), "speed_factors": str(overlay)}))
    assert load_site(measured).group("cpu-arm").speed_factor == doc["groups"]["cpu-arm"]
    assert "armn3" in out["drains"] and all(s == "ok" for s in out["applied"]), res.output
    node = client.show_node("armn3")
    assert "DRAIN" in node["State"] and node["Reason"].startswith("hetsched: bench: degraded, gemm_gflops")
    for n in out["drains"]:  # (load on this shared host can make another ARM node slow too)
        client.run("scontrol", "update", f"nodename={n}", "state=RESUME")


def test_drained_powered_down_node_is_not_powered_up_by_the_planner(hcluster, tmp_path):
    client = hcluster.client()
    client.run("scontrol", "update", "nodename=armn[1-3]", "state=POWER_DOWN", "reason=health test")
    until(lambda: all("POWERED_DOWN" in client.show_node(n)["State"] and "POWERING" not in client.show_node(n)["State"]
                      for n in ("armn1", "armn2", "armn3")), 120, "armn[1-3] powered down")
    client.run("scontrol", "update", "nodename=armn1", "state=DRAIN", "reason=hetsched: health Xid 79: gpu_lost")
    # the health check leaves a powered-down node alone
    res = CliRunner().invoke(main, ["health", "check", "--node", "armn1", "--json", "--state-dir", str(tmp_path),
                                    "--slurm-conf", str(hcluster.conf)])
    assert res.exit_code == 0 and json.loads(res.output)["skipped"].startswith("node is powered_down"), res.output
    try:  # a warm pool of 3 ARM nodes: the planner powers up what it may, never the drained armn1
        result = CliRunner().invoke(main, ["scale", "plan", hcluster.state()["site_path"], "--json", "--wait-price",
                                           "0", "--warm", "3", "--no-arch", "--state", str(tmp_path / "mem.json")],
                                    env={"SLURM_CONF": str(hcluster.conf)})
        assert result.exit_code == 0, result.output
        ups = " ".join(" ".join(c) for a in json.loads(result.output) for c in a["commands"] if "POWER_UP" in " ".join(c))
        assert "nodename=armn[2-3]" in ups, ups
        assert "armn1" not in ups and "armn[1" not in ups, ups
    finally:
        client.run("scontrol", "update", "nodename=armn1", "state=RESUME")


@pytest.mark.skipif(not HAVE_IPMI, reason=IPMI_SKIP)
def test_check_reads_the_nodes_bmc_sel_through_the_cli(hcluster, tmp_path):
    """`health check --site` on a real node whose group names an IPMI BMC (ipmi_sim): an uncorrectable ECC event
    the BMC logged is found through `ipmitool sel elist` and, with --dry-run, the node would be drained naming it."""
    pid, port = start_bmc(tmp_path, "x86n1", powered=True)
    try:
        data = yaml.safe_load(Path(hcluster.state()["site_path"]).read_text())
        creds = write_creds(tmp_path / "creds")
        for g in data["clusters"][0]["node_groups"]:
            if g["name"] == "cpu-x86":
                g["bmc"] = bmc_group("x", "x86n", 1, port, creds)["bmc"]
        site = tmp_path / "site.yaml"
        site.write_text(yaml.safe_dump(data))
        add_sel_events(port, ["0x04 0x0c 0x53 0x6f 0x01 0xff 0xff"], tmp_path)  # Memory: Uncorrectable ECC
        res = CliRunner().invoke(main, ["health", "check", "--node", "x86n1", "--json", "--dry-run", "--no-tools",
                                        "--state-dir", str(tmp_path / "state"), "--site", str(site),
                                        "--bmc-timeout", "20", "--slurm-conf", str(hcluster.conf)])
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        assert out["bmc"] == {"protocol": "ipmi", "sel_entries": 1, "records": 0, "log_entries": 0, "error": ""}, out
        (drain,) = out["actions"]
        assert drain["status"] == "ok" and "memory_uncorrected (replace) [ipmi-sel-memory-uncorrectable-ecc]" \
            in " ".join(drain["commands"][0]), drain
        assert "DRAIN" not in hcluster.client().show_node("x86n1")["State"]  # (dry run)
    finally:
        assert stop_pid(pid, "ipmi_sim")
