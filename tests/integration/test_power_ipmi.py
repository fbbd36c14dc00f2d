"""The IPMI power backend against real IPMI BMCs: OpenIPMI's ``ipmi_sim`` (lanserv) on loopback, one per node
(see :mod:`tests.integration.ipmi_bmc`), driven through ``hetsched power resume|suspend`` and ipmitool's
lanplus (RMCP+) sessions."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.power.base import BmcConfigError
from slurm_plugin.power.ipmi import IpmiPower, IpmiTarget, parse_address, targets_from_site
from slurm_plugin.site import SITE_CONFIGS, load_site

from .ipmi_bmc import HAVE_IPMI, PASSWORD, SKIP_REASON, USER, bmc_group, free_udp_port, start_bmc, write_creds

from .power_env import power_logs  # noqa: F401  (fixture)

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not HAVE_IPMI, reason=SKIP_REASON),
              pytest.mark.usefixtures("power_logs")]
NODES = ["ipmin1", "ipmin2"]


@pytest.fixture(scope="module")
def bmcs(tmp_path_factory) -> dict[str, int]:
    """A running ipmi_sim per node: node -> UDP port. Stopped by pid at the end."""
    tmp = tmp_path_factory.mktemp("ipmi")
    started = {node: start_bmc(tmp, node) for node in NODES}
    ports = {node: port for node, (_, port) in started.items()}
    try:
        be = IpmiPower({n: IpmiTarget("127.0.0.1", p, USER, PASSWORD, 3) for n, p in ports.items()}, timeout=1)
        deadline = time.monotonic() + 20
        for node in NODES:
            while True:
                try:
                    assert be.power_state(node) == "off"
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise AssertionError((tmp / f"{node}.log").read_text()) from None
                    time.sleep(0.3)
        yield ports
    finally:
        for pid, _ in started.values():
            assert stop_pid(pid, "ipmi_sim")


@pytest.fixture(scope="module")
def site_file(bmcs, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    creds = write_creds(tmp / "bmc.cred")
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["clusters"][0]["node_groups"] += [bmc_group(f"ipmi-{i}", "ipmin", i, bmcs[node], creds)
                                           for i, node in enumerate(NODES, 1)]
    path = tmp / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _cli(*args: str):
    return CliRunner().invoke(main, ["power", *args])


def test_cli_resume_and_suspend_a_hostlist_idempotently(site_file):
    be = IpmiPower(targets_from_site(load_site(site_file)))
    result = _cli("resume", "--backend", "ipmi", "--site", str(site_file), "ipmin[1-2]")
    assert result.exit_code == 0, result.output
    assert "resume ipmin1: ok" in result.output and "resume ipmin2: ok" in result.output
    assert [be.power_state(n) for n in NODES] == ["on", "on"]
    again = _cli("resume", "--backend", "ipmi", "--site", str(site_file), "ipmin1")  # Slurm asked twice
    assert again.exit_code == 0, again.output
    assert be.power_state("ipmin1") == "on"
    result = _cli("suspend", "--backend", "ipmi", "--site", str(site_file), "ipmin1")
    assert result.exit_code == 0, result.output
    assert [be.power_state(n) for n in NODES] == ["off", "on"]
    assert be.suspend(["ipmin1", "ipmin2"]).done == ["ipmin1", "ipmin2"]  # one already off: still done
    assert [be.power_state(n) for n in NODES] == ["off", "off"]


def test_password_is_not_on_the_command_line(site_file, monkeypatch):
    """What ps would show: capture ipmitool's argv through a wrapper that records it, then runs ipmitool."""
    seen = []
    real = subprocess.run

    def recording(argv, **kw):
        seen.append((list(argv), kw.get("env", {}).get("IPMI_PASSWORD")))
        return real(argv, **kw)

    monkeypatch.setattr(subprocess, "run", recording)
    be = IpmiPower(targets_from_site(load_site(site_file)))
    assert be.power_state("ipmin2") in ("on", "off")
    argv, env_pw = seen[-1]
    assert PASSWORD not in " ".join(argv) and "-E" in argv and env_pw == PASSWORD


def test_errors_name_the_node_and_the_bmc(site_file, bmcs, tmp_path):
    good = targets_from_site(load_site(site_file))
    res = IpmiPower(good).resume(["x86n1"])
    assert res.failed == {"x86n1": "no IPMI BMC configured for this node (site: node_groups[].bmc with protocol ipmi)"}
    wrong_pw = {"ipmin1": IpmiTarget("127.0.0.1", bmcs["ipmin1"], USER, "wrong", 3)}
    why = IpmiPower(wrong_pw, timeout=1, retries=0).resume(["ipmin1"]).failed["ipmin1"]
    assert why.startswith(f"ipmin1: BMC 127.0.0.1:{bmcs['ipmin1']}: ipmitool chassis power status: exit 1"), why
    silent = {"ipmin9": IpmiTarget("127.0.0.1", free_udp_port(), USER, PASSWORD, 3)}  # nobody listens
    t0 = time.monotonic()
    why = IpmiPower(silent, timeout=1, retries=0).suspend(["ipmin9"]).failed["ipmin9"]
    assert "ipmin9: BMC 127.0.0.1" in why and time.monotonic() - t0 < 15, why


def test_bad_bmc_settings_fail_only_their_nodes(site_file, tmp_path):
    data = yaml.safe_load(site_file.read_text())
    data["clusters"][0]["node_groups"][-1]["bmc"].pop("credentials_file")
    bad = tmp_path / "nocred.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = _cli("resume", "--no-mark-down", "--site", str(bad), "ipmin[1-2]")
    assert result.exit_code == 1, result.output
    assert "resume ipmin1: ok (ipmi" in result.output
    assert "resume ipmin2: FAILED (ipmi): node group ipmi-2: an IPMI bmc needs credentials_file" in result.output
    with pytest.raises(BmcConfigError, match="not host"):
        parse_address("h:x")
    assert parse_address("[::1]:9001") == ("::1", 9001) and parse_address("n1-bmc") == ("n1-bmc", 623)


def test_backend_comes_from_the_site_and_each_call_is_logged(site_file, power_logs):
    """No --backend: the node groups' bmc sections say ipmi; one line per node in the file and in syslog."""
    result = _cli("resume", "--site", str(site_file), "ipmin[1-2]")
    assert result.exit_code == 0, result.output
    lines = power_logs.file_lines()
    for node in NODES:
        line = next(ln for ln in lines if f"node={node} " in ln)
        assert " resume " in line and "backend=ipmi" in line and "result=ok" in line
        assert float(line.split("duration=")[1].split("s ")[0]) > 0
    syslog = power_logs.syslog_lines()
    assert len(syslog) == 2 and all(m.startswith("<30>") and "hetsched-power[" in m for m in syslog), syslog


@pytest.mark.parametrize("mode, ok", [(0o640, True), (0o600, True), (0o644, False), (0o660, False),
                                      (0o602, False)])
def test_credentials_file_mode(site_file, tmp_path, mode, ok):
    """root:slurm 0640 is the documented mode; anything others may read or write is refused, naming the fix."""
    data = yaml.safe_load(site_file.read_text())
    cred = write_creds(tmp_path / "bmc.cred")
    cred.chmod(mode)
    for g in data["clusters"][0]["node_groups"][-2:]:
        g["bmc"]["credentials_file"] = str(cred)
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    result = _cli("resume", "--no-mark-down", "--site", str(path), "ipmin1")
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1 and f"BMC credentials file {cred} is" in result.output, result.output
        assert "chown root:slurm" in result.output and "chmod 0640" in result.output


def test_one_broken_bmc_among_good_ones(site_file, bmcs, tmp_path):
    """A BMC refusing the password and one that never answers, beside the good ones: each fails alone."""
    data = yaml.safe_load(site_file.read_text())
    groups = data["clusters"][0]["node_groups"]
    creds = Path(groups[-1]["bmc"]["credentials_file"])
    wrong = write_creds(tmp_path / "wrong.cred")
    wrong.write_text(f"{USER}:not-the-password\n")
    groups.append(bmc_group("ipmi-3", "ipmin", 3, bmcs["ipmin1"], wrong))
    groups.append(bmc_group("ipmi-4", "ipmin", 4, free_udp_port(), creds))
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    result = _cli("resume", "--no-mark-down", "--site", str(path), "ipmin[1-4]")
    assert result.exit_code == 1, result.output
    assert "resume ipmin1: ok (ipmi" in result.output and "resume ipmin2: ok (ipmi" in result.output
    assert "resume ipmin3: FAILED (ipmi): ipmin3: BMC 127.0.0.1:" in result.output
    assert "resume ipmin4: FAILED (ipmi): ipmin4: BMC 127.0.0.1:" in result.output
