"""Actions the cycle takes on a node whose every boot fails (issue 11 item 2, before/after figure): a real local
cluster (ResumeTimeout 15 s), rvn1's slurmd port held so it never registers, a job waiting for it, the cycle's
power step every 10 s for 240 s. Prints the actions on rvn1 and the cycles that powered it both up and down.

    HETSCHED_TEST_PORT_BASE=... HETSCHED_TEST_ROOT=... python3 -m tests.soak.stuck_node NAME  # ports: the base's next free block
"""
import json
import socket
import sys
import tempfile
import time
from collections import Counter

from slurm_plugin.cycle import CycleConfig, CycleRunner
from slurm_plugin.scale.planner import ScaleConfig
from slurm_plugin.site import load_site
from tests.system.conftest import Needs, start_cluster

c = start_cluster(sys.argv[1], Needs(slurm={"resume_timeout": 15, "suspend_timeout": 5}))
client = c.client()
site = load_site(c.state()["site_path"])
client.scontrol_update("nodename", "rvn1", state="POWER_DOWN")
while client.show_node("rvn1")["State"] != "IDLE+POWERED_DOWN":
    time.sleep(0.5)
b = socket.socket()
b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
b.bind(("127.0.0.1", c.state()["slurmd_ports"]["rvn1"]))
b.listen()
job = client.sbatch("-p", "riscv", "--time=2", "--output=/dev/null", wrap="true")
runner = CycleRunner(site, client, CycleConfig(pack=False, reshape=False, scale=ScaleConfig(idle_grace_s=3600)),
                     tempfile.mkdtemp())
per_cycle, start = [], time.monotonic()
while time.monotonic() - start < 240:
    t0 = time.monotonic()
    decision, _ = runner.run_once()
    per_cycle.append(Counter(a.action for a in decision.actions if "rvn1" in getattr(a, "nodes", ())))
    time.sleep(max(0, 10 - (time.monotonic() - t0)))
total = sum(per_cycle, Counter())
print(json.dumps({"cycles": len(per_cycle), "actions_on_rvn1": dict(total),
                  "cycles_with_up_and_down": sum(1 for x in per_cycle
                                                 if x["POWER_UP"] and (x["POWER_DOWN_FORCE"] or x["POWER_DOWN"])),
                  "final": client.show_node("rvn1")["State"] + " / " + client.show_node("rvn1").get("Reason", "")}))
client.cancel(job)
b.close()
c.down()
