"""Shared test configuration: where the repository and the shared workloads are."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO.parent / "shared" / "workloads"


@pytest.fixture(scope="session")
def workloads() -> Path:
    """The public traces in ../shared/workloads; tests that need them skip (with the reason) if absent."""
    if not WORKLOADS.is_dir():
        pytest.skip(f"shared workloads not found at {WORKLOADS}")
    return WORKLOADS
