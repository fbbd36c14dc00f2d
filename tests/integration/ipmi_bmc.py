"""Real IPMI BMCs for tests: OpenIPMI's ``ipmi_sim`` (lanserv), one per node, on a free loopback UDP port.

How the emulator gets its power state: ``chassis_control "PROG ARGS"`` in lan.conf makes ipmi_sim run
``PROG ARGS get power`` (answer ``power:0|1``) and ``PROG ARGS set power 0|1`` (``set shutdown 1`` for a soft
off). When PROG fails - e.g. the sample config's relative ``./ipmi_sim_chassiscontrol``, which Debian's
openipmi package does not ship - ipmi_sim answers completion code 0xff, shown by ipmitool as "Unspecified
error". Here PROG is :data:`CHASSIS`: it keeps the state in ``<node>.power`` and, when ``<node>.on`` /
``<node>.off`` executables exist, runs them first (a system test makes them start/stop the node's slurmd), so
"power" means what it means on real hardware. ipmi_sim 2.0.33 has no SHA-256 (cipher suite 17, ipmitool's
default): sites that use it set ``cipher_suite: 3``.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from slurm_plugin.cluster.procs import spawn_detached

USER, PASSWORD = "admin", "s3cret-pw"
HAVE_IPMI = bool(shutil.which("ipmi_sim") and shutil.which("ipmitool"))
SKIP_REASON = "needs ipmi_sim and ipmitool: apt-get install openipmi ipmitool (make deps installs them)"

CHASSIS = """#!/bin/sh
# ipmi_sim chassis_control: $1 = node prefix (state in $1.power, hooks $1.on / $1.off), $2 = get|set, then
# parameters (and values for set). Output and exit status are what ipmi_sim reads.
node=$1; op=$2; shift 2
power() {
  hook="$node.$1"
  if [ -x "$hook" ]; then "$hook" >> "$node.hook.log" 2>&1 || { echo "hook $hook failed"; exit 1; }; fi
  [ "$1" = on ] && echo 1 > "$node.power" || echo 0 > "$node.power"
}
case $op in
  get) for p in "$@"; do
         case $p in
           power) echo "power:$(cat "$node.power" 2>/dev/null || echo 0)" ;;
           boot) echo "boot:default" ;;
           *) echo "unsupported parameter $p"; exit 1 ;;
         esac
       done ;;
  set) while [ $# -gt 1 ]; do
         case $1 in
           power) [ "$2" = 1 ] && power on || power off ;;
           shutdown) [ "$2" = 1 ] && power off ;;
         esac
         shift 2
       done ;;
  *) exit 1 ;;
esac
"""


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_bmc(tmp: Path, node: str, powered: bool = False) -> tuple[int, int]:
    """Start one ipmi_sim BMC for ``node`` with files under ``tmp``; returns (pid, UDP port). Stop it by pid."""
    chassis = tmp / "chassis.sh"
    if not chassis.exists():
        chassis.write_text(CHASSIS)
        chassis.chmod(0o755)
    port = free_udp_port()
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
  chassis_control "{chassis} {tmp / node}"
  user 2 true "{USER}" "{PASSWORD}" admin 10 none md2 md5 straight
""")
    (tmp / f"{node}.emu").write_text("mc_setbmc 0x20\n"
                                     "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
                                     "sel_enable 0x20 1000 0x0a\n"  # a System Event Log (the health check reads it)
                                     "mc_enable 0x20\n")
    (tmp / f"{node}.power").write_text("1\n" if powered else "0\n")
    (tmp / f"{node}.state").mkdir(exist_ok=True)
    pid = spawn_detached(["ipmi_sim", "-n", "-c", str(tmp / f"{node}.lan.conf"), "-f", str(tmp / f"{node}.emu"),
                          "-s", str(tmp / f"{node}.state")], tmp / f"{node}.log")
    return pid, port


def bmc_group(name: str, prefix: str, index: int, port: int, creds: Path) -> dict:
    """A one-node site node group ``<prefix><index>`` whose BMC is the ipmi_sim on ``port``."""
    return {"name": name, "prefix": prefix, "start": index, "count": 1, "cpu": {"arch": "x86_64", "cores": 8},
            "memory_gb": 16, "bmc": {"protocol": "ipmi", "address": f"127.0.0.1:{port}",
                                     "credentials_file": str(creds), "cipher_suite": 3}}


def write_creds(path: Path) -> Path:
    path.write_text(f"{USER}:{PASSWORD}\n")
    path.chmod(0o600)
    return path


def add_sel_events(port: int, events: list[str], work: Path) -> None:
    """Log ``events`` in the BMC's SEL the way the BMC logs a sensor event (IPMI Add SEL Entry, through
    ``ipmitool sel add``): each is 7 bytes as ``ipmitool event file`` takes them, e.g. a memory correctable ECC
    ``0x04 0x0c 0x53 0x6f 0x00 0xff 0xff`` (EvM rev, sensor type, sensor number, event type, 3 data bytes)."""
    import os
    import subprocess

    path = work / "sel-events.txt"
    path.write_text("\n".join(events) + "\n")
    subprocess.run(["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", str(port), "-U", USER, "-E", "-C", "3",
                    "sel", "add", str(path)], env={**os.environ, "IPMI_PASSWORD": PASSWORD}, check=True,
                   capture_output=True, timeout=60)
