"""Shared fixtures of the tuner's tests."""

import pytest

from .histories import small_swf

JOBS = 150


@pytest.fixture(scope="session")
def swf(tmp_path_factory):
    """JOBS jobs on a 16-node machine, loaded enough that the rankings differ."""
    return small_swf(tmp_path_factory.mktemp("hist") / "small.swf", JOBS, 300)
