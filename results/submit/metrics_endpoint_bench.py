"""How long the daemon's /metrics takes to answer with 2,000 nodes and 10,000 pending jobs in its snapshot
(issue 17 target: < 10 ms). The demo site scaled to 2,000 nodes; jobs of 4 classes from 200 owners.
First scrape after a snapshot refresh and the median of 50 later ones. As in the daemon, the snapshot is built
and its pool summary computed in a worker process (daemon/pool.prepare_pool) and pickled back, so the scrape
only formats numbers; ``worker_prepare_ms`` is what the worker spent on the summary, ``unprepared_first_ms``
a first scrape of a snapshot nobody prepared (the cost before this was moved to the worker).

    PYTHONPATH=$PWD python3 results/submit/metrics_endpoint_bench.py
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

from slurm_plugin.daemon.metrics import AdmissionMetrics
from slurm_plugin.daemon.pool import prepare_pool
from slurm_plugin.site import SITE_CONFIGS, Site, load_site
from slurm_plugin.snapshot import JobState, NodeState, Snapshot


def scaled_site_file(where: Path, nodes: int = 2000) -> Path:
    """The demo site with ``nodes`` nodes spread over its groups, written to ``where``/site.yaml."""
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    groups = data["clusters"][0]["node_groups"]
    for g in groups:
        g["count"] = nodes // len(groups)
    groups[0]["count"] += nodes - sum(g["count"] for g in groups)
    path = where / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def scaled_site(nodes: int = 2000) -> Site:
    return load_site(scaled_site_file(Path(tempfile.mkdtemp()), nodes))


def prepared(site_path: str) -> tuple[Snapshot, float]:
    """In the worker: a snapshot and its pool summary (and the summary's CPU seconds)."""
    snap = snapshot(load_site(site_path))
    started = time.process_time()
    prepare_pool(site_path, snap)
    return snap, time.process_time() - started


def snapshot(site: Site, pending: int = 10000) -> Snapshot:
    hosts = [h for g in site.node_groups for h in g.hostnames]
    nodes = tuple(NodeState(h, "IDLE", flags=("powered_down",) if i % 3 == 0 else (), cpus=64)
                  for i, h in enumerate(hosts))
    classes = ("web", "batch", "hpc", "ml")
    now = time.time()
    jobs = tuple(JobState(i, "PENDING", comment=f"class={classes[i % 4]}", user_id=i % 200, submit_time=now - i)
                 for i in range(pending))
    return Snapshot(nodes=nodes, jobs=jobs, taken_at=now)


def scrape_ms(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=10) as reply:
        reply.read()
    return (time.perf_counter() - started) * 1000


def main() -> dict:
    site_path = str(scaled_site_file(Path(tempfile.mkdtemp())))
    site = load_site(site_path)
    worker = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    snap, prep_s = worker.submit(prepared, site_path).result()
    current = {"snap": snap}
    metrics = AdmissionMetrics(pool=lambda: (site, current["snap"]))
    url = metrics.serve("127.0.0.1:0")
    try:
        first = scrape_ms(url)
        later = [scrape_ms(url) for _ in range(50)]
        current["snap"], prep2_s = worker.submit(prepared, site_path).result()  # a refresh
        first_again = scrape_ms(url)
        current["snap"] = snapshot(site)  # nobody prepared it: the scrape computes the summary itself
        unprepared = scrape_ms(url)
    finally:
        metrics.close()
        worker.shutdown()
    return {"nodes": len(snap.nodes), "pending": len(snap.jobs), "first_scrape_ms": [round(first, 2),
            round(first_again, 2)], "later_scrape_ms_median": round(statistics.median(later), 2),
            "later_scrape_ms_max": round(max(later), 2), "unprepared_first_ms": round(unprepared, 2),
            "worker_prepare_ms": [round(prep_s * 1000, 1), round(prep2_s * 1000, 1)]}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))  # the spawned worker imports this file as a module
    print(json.dumps(main(), indent=1))
