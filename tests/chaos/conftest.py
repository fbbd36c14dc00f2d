"""Chaos and abuse tests (issue: hardening): each replays one attack or injected fault and asserts the suite's
answer (no lost job, no refused job, no escalation, no duplicate action, no unrecoverable node).

Tests that need a real cluster use ``start_cluster``/``module_cluster`` from the system tests' conftest without
a ``port_offset``: ports are then assigned per cluster, so chaos modules never collide with each other.
"""

from tests.system.conftest import TEST_ROOT, module_cluster, start_cluster  # noqa: F401  (re-exported)
