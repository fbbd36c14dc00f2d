"""Shared fixtures of the tuner's tests."""

import numpy as np
import pytest

JOBS = 150


@pytest.fixture(scope="session")
def swf(tmp_path_factory):
    """JOBS jobs on a 16-node machine, loaded enough that the rankings differ."""
    rng = np.random.default_rng(3)
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    t = 0
    for i in range(JOBS):
        t += int(rng.exponential(300))
        run = int(rng.lognormal(6, 1.5)) + 1
        n = int(rng.choice([1, 1, 2, 4, 8, 16]))
        lines.append(f"{i + 1} {t} -1 {run} {n} -1 -1 {n} {int(run * rng.uniform(1, 3))} -1 1 {i % 7} -1 -1 -1 -1 -1 -1")
    path = tmp_path_factory.mktemp("hist") / "small.swf"
    path.write_text("\n".join(lines) + "\n")
    return path
