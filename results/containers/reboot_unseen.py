"""A host reboot Podman does not see, on the container test cluster, by hand (not a test: it empties Podman's
lock table for every container on the host, ours or not; run it only where nothing else uses Podman).

Brings ``$HETSCHED_TEST_ROOT/containers`` (default /var/lib/hetsched/test/containers) up as the container tests
do, then does what a reboot does on these VMs (/run on disk): SIGKILL every container's conmon and init and the
power relay, remove /dev/shm/libpod_lock; then ``up`` again, runs a job, and takes the cluster down. Prints each
state and the seconds ``up`` took to come back. Usage: python3 results/containers/reboot_unseen.py
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from slurm_plugin.cluster.containers import ContainerCluster  # noqa: E402
from tests.containers.conftest import TEST_ROOT, bring_up, crash  # noqa: E402


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    c = ContainerCluster(TEST_ROOT / "containers")
    if not (c.root / "site.yaml").exists():
        sys.exit(f"{c.root}/site.yaml is missing: run the container tests once (make test-containers)")
    bring_up(c)
    states = lambda: {s: st for s, (_, st) in c.container_states().items()}  # noqa: E731
    print("up:", states())
    crash(c)
    Path("/dev/shm/libpod_lock").unlink()
    print("after the 'reboot':", states())
    t0 = time.monotonic()
    bring_up(c)
    print(f"up again in {time.monotonic() - t0:.1f} s:", states())
    job = c.client().sbatch("-p", "x86", "-D", "/tmp", "-o", "/dev/null", wrap="hostname")
    print("job", job, c.client().wait_job(job, 120)["JobState"])
    c.down()


if __name__ == "__main__":
    main()
