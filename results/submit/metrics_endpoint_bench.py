"""How long the daemon's /metrics takes to answer with 2,000 nodes and 10,000 pending jobs in its snapshot
(issue 17 target: < 10 ms). The demo site scaled to 2,000 nodes; jobs of 4 classes from 200 owners.
First scrape after a snapshot refresh (computes the pool gauges) and the median of 50 later ones (memoized).

    PYTHONPATH=$PWD python3 results/submit/metrics_endpoint_bench.py
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request

import yaml

from slurm_plugin.daemon.metrics import AdmissionMetrics
from slurm_plugin.site import SITE_CONFIGS, Site
from slurm_plugin.snapshot import JobState, NodeState, Snapshot


def scaled_site(nodes: int = 2000) -> Site:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    groups = data["clusters"][0]["node_groups"]
    for g in groups:
        g["count"] = nodes // len(groups)
    groups[0]["count"] += nodes - sum(g["count"] for g in groups)
    return Site.model_validate(data)


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
    site = scaled_site()
    snap = snapshot(site)
    current = {"snap": snap}
    metrics = AdmissionMetrics(pool=lambda: (site, current["snap"]))
    url = metrics.serve("127.0.0.1:0")
    try:
        first = scrape_ms(url)
        later = [scrape_ms(url) for _ in range(50)]
        current["snap"] = snapshot(site)  # a refresh: the next scrape computes again
        first_again = scrape_ms(url)
    finally:
        metrics.close()
    return {"nodes": len(snap.nodes), "pending": len(snap.jobs), "first_scrape_ms": [round(first, 2),
            round(first_again, 2)], "later_scrape_ms_median": round(statistics.median(later), 2),
            "later_scrape_ms_max": round(max(later), 2)}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
