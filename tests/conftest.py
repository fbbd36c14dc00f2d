"""Shared test configuration: where the repository and the shared workloads are."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO.parent / "shared" / "workloads"

# The container cluster's tests (tests/containers) are not collected by `make test` (not skipped either, so no
# skipped test hides in its count): `make test-containers` sets HETSCHED_CONTAINER_TESTS=1 and runs them.
collect_ignore = [] if os.environ.get("HETSCHED_CONTAINER_TESTS") == "1" else ["containers"]


@pytest.fixture(scope="session")
def workloads() -> Path:
    """The public traces in ../shared/workloads; tests that need them skip (with the reason) if absent."""
    if not WORKLOADS.is_dir():
        pytest.skip(f"shared workloads not found at {WORKLOADS}")
    return WORKLOADS
