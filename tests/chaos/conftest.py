"""Chaos and abuse tests (issue: hardening): each replays one attack or injected fault and asserts the suite's
answer (no lost job, no refused job, no escalation, no duplicate action, no unrecoverable node).

Tests that need a real cluster declare it with ``Needs`` and ``start_cluster``/``cluster_fixture`` from the
system tests' conftest (``module_cluster`` is the same as ``cluster_fixture``): ports are assigned per cluster,
so chaos modules never collide with each other or with the system tests.
"""

from tests.system.conftest import TEST_ROOT, Needs, cluster_fixture, module_cluster, start_cluster  # noqa: F401
