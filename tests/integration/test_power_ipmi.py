"""The IPMI power backend against real IPMI BMCs: OpenIPMI's ``ipmi_sim`` (lanserv) on loopback, one per node,
driven through ``hetsched power resume|suspend`` and ipmitool's lanplus (RMCP+) sessions.

How the emulator gets its power state: ``chassis_control "PROG ARGS"`` in lan.conf makes ipmi_sim run
``PROG ARGS get power`` (answer ``power:0|1``) and ``PROG ARGS set power 0|1`` (``set shutdown 1`` for a
soft off). When PROG fails - e.g. the sample config's relative ``./ipmi_sim_chassiscontrol``, which Debian's
openipmi package does not ship - ipmi_sim answers completion code 0xff, shown by ipmitool as "Unspecified
error". Here PROG is a small script keeping the state in a file, so the test can also read it directly.
ipmi_sim 2.0.33 has no SHA-256 (cipher suite 17, ipmitool's default): the site sets ``cipher_suite: 3``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import spawn_detached, stop_pid
from slurm_plugin.power.base import BmcConfigError
from slurm_plugin.power.ipmi import IpmiPower, IpmiTarget, parse_address, targets_from_site
from slurm_plugin.site import SITE_CONFIGS, load_site

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (shutil.which("ipmi_sim") and shutil.which("ipmitool")),
                                 reason="needs ipmi_sim and ipmitool: apt-get install openipmi ipmitool "
                                        "(make deps installs them)")]
NODES = ["ipmin1", "ipmin2"]
USER, PASSWORD = "admin", "s3cret-pw"

CHASSIS = """#!/bin/sh
# ipmi_sim chassis_control: $1 = state file, $2 = get|set, then parameters (and values for set)
state=$1; op=$2; shift 2
case $op in
  get) for p in "$@"; do
         case $p in
           power) echo "power:$(cat "$state" 2>/dev/null || echo 0)" ;;
           boot) echo "boot:default" ;;
           *) echo "unsupported parameter $p"; exit 1 ;;
         esac
       done ;;
  set) while [ $# -gt 1 ]; do
         case $1 in
           power) echo "$2" > "$state" ;;
           shutdown) [ "$2" = 1 ] && echo 0 > "$state" ;;
         esac
         shift 2
       done ;;
  *) exit 1 ;;
esac
"""


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_bmc(tmp: Path, node: str) -> tuple[int, int]:
    """One ipmi_sim BMC for ``node`` (power off); returns (pid, UDP port)."""
    port = _free_udp_port()
    (tmp / f"{node}.lan.conf").write_text(f"""name "{node}"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {port}
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "{tmp / 'chassis.sh'} {tmp / (node + '.power')}"
  user 2 true "{USER}" "{PASSWORD}" admin 10 none md2 md5 straight
""")
    (tmp / f"{node}.emu").write_text("mc_setbmc 0x20\n"
                                     "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
                                     "mc_enable 0x20\n")
    (tmp / f"{node}.power").write_text("0\n")
    (tmp / f"{node}.state").mkdir()
    pid = spawn_detached(["ipmi_sim", "-n", "-c", str(tmp / f"{node}.lan.conf"), "-f", str(tmp / f"{node}.emu"),
                          "-s", str(tmp / f"{node}.state")], tmp / f"{node}.log")
    return pid, port


@pytest.fixture(scope="module")
def bmcs(tmp_path_factory) -> dict[str, int]:
    """A running ipmi_sim per node: node -> UDP port. Stopped by pid at the end."""
    tmp = tmp_path_factory.mktemp("ipmi")
    (tmp / "chassis.sh").write_text(CHASSIS)
    (tmp / "chassis.sh").chmod(0o755)
    started = {node: _start_bmc(tmp, node) for node in NODES}
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
    creds = tmp / "bmc.cred"
    creds.write_text(f"{USER}:{PASSWORD}\n")
    creds.chmod(0o600)
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    for i, node in enumerate(NODES, 1):
        data["clusters"][0]["node_groups"].append({
            "name": f"ipmi-{i}", "prefix": "ipmin", "start": i, "count": 1, "cpu": {"arch": "x86_64", "cores": 8},
            "memory_gb": 16, "bmc": {"protocol": "ipmi", "address": f"127.0.0.1:{bmcs[node]}",
                                     "credentials_file": str(creds), "cipher_suite": 3}})
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
    silent = {"ipmin9": IpmiTarget("127.0.0.1", _free_udp_port(), USER, PASSWORD, 3)}  # nobody listens
    t0 = time.monotonic()
    why = IpmiPower(silent, timeout=1, retries=0).suspend(["ipmin9"]).failed["ipmin9"]
    assert "ipmin9: BMC 127.0.0.1" in why and time.monotonic() - t0 < 15, why


def test_bad_bmc_settings_are_refused_clearly(site_file, tmp_path):
    data = yaml.safe_load(site_file.read_text())
    data["clusters"][0]["node_groups"][-1]["bmc"].pop("credentials_file")
    bad = tmp_path / "nocred.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = _cli("resume", "--backend", "ipmi", "--site", str(bad), "ipmin2")
    assert result.exit_code == 2 and "node group ipmi-2: an IPMI bmc needs credentials_file" in result.output
    with pytest.raises(BmcConfigError, match="not host"):
        parse_address("h:x")
    assert parse_address("[::1]:9001") == ("::1", 9001) and parse_address("n1-bmc") == ("n1-bmc", 623)
