"""Small SWF histories for the tuner's tests: a 16-node machine, lognormal run times, sizes 1-16 nodes."""

from pathlib import Path

import numpy as np


def small_swf(path: Path, jobs: int, mean_gap_s: float, seed: int = 3) -> Path:
    """Write ``jobs`` jobs arriving every ``mean_gap_s`` on average (exponential gaps) to ``path``."""
    rng = np.random.default_rng(seed)
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    t = 0
    for i in range(jobs):
        t += int(rng.exponential(mean_gap_s))
        run = int(rng.lognormal(6, 1.5)) + 1
        n = int(rng.choice([1, 1, 2, 4, 8, 16]))
        lines.append(f"{i + 1} {t} -1 {run} {n} -1 -1 {n} {int(run * rng.uniform(1, 3))} -1 1 {i % 7} -1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path
