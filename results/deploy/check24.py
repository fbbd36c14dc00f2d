"""Issue 19 checks on the Slurm 24.11 container cluster (trixie): admission of the deployment forms through the
real shim + daemon, and the steering cycle's wipe step through the container power backend.

    python3 results/deploy/check24.py ROOT   (ROOT: a container cluster up with the deploy-patched demo site;
    see README.md; prints one JSON document)"""
import json, sys, time
from pathlib import Path
from slurm_plugin.cluster.containers import ContainerCluster

root = Path(sys.argv[1])
c = ContainerCluster(root)
cl = c.client()
out = {"version": cl.run("sinfo", "-V").stdout.strip()}
def sb(*args):
    p = cl.run("sbatch", "--parsable", *args, check=False)
    return p.returncode, p.stdout.strip(), p.stderr.strip()
rc, job, err = sb("--hold", "--comment=class=secret", "-p", "batch", "--wrap", "true")
out["sensitive"] = {"rc": rc, "stderr": err, "partition": cl.show_job(job.split(";")[0])["Partition"] if rc == 0 else None}
out["secure_without_class"] = dict(zip(("rc", "out", "stderr"), sb("-p", "secure", "--wrap", "true")))
out["container_unknown_image"] = dict(zip(("rc", "out", "stderr"), sb("--hold", "--comment=class=boxed", "--wrap", "true")))
rc, job2, err2 = sb("--comment=class=secret", "--wrap", "hostname; sleep 2")
out["sensitive_run"] = {"rc": rc, "stderr": err2}
if rc == 0:
    j = job2.split(";")[0]
    t = time.monotonic()
    while time.monotonic() - t < 300:
        s = cl.show_job(j)
        if s["JobState"] in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            break
        time.sleep(2)
    out["sensitive_run"].update(state=s["JobState"], nodes=s.get("NodeList"), oversubscribe=s.get("OverSubscribe"),
                                partition=s.get("Partition"))
cl.run("scancel", "-u", "root", check=False)
# the wipe step of the suite container's cycle, on a node drained as the Epilog drains it
node = "x86n2"
cl.run("scontrol", "update", f"nodename={node}", "state=DRAIN", "reason=hetsched: deploy: wipe after sensitive job 999")
t0, seen, last = time.monotonic(), [], None
while time.monotonic() - t0 < 600:
    n = cl.show_node(node)
    now = (n.get("State"), n.get("Reason", ""))
    if now != last:
        seen.append([round(time.monotonic() - t0, 1), *now])
        last = now
    if len(seen) > 2 and "DRAIN" not in now[0] and "POWER" not in now[0]:
        break
    time.sleep(1)
out["wipe"] = seen
print(json.dumps(out, indent=1))
