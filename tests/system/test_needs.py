"""The cluster fixtures' contract (conftest): ports are assigned, never reused within a test process, and a
test that needs accounting fails instead of passing as a skip. No cluster is started here."""

from __future__ import annotations

import socket

import pytest

from . import conftest
from .conftest import PORT_BASE, PORT_BLOCK, Needs, allocate_ports, start_cluster


def test_port_blocks_never_overlap():
    firsts = [allocate_ports(), allocate_ports(64), allocate_ports()]
    spans = [(firsts[0], firsts[0] + PORT_BLOCK), (firsts[1], firsts[1] + 64), (firsts[2], firsts[2] + PORT_BLOCK)]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert all(PORT_BASE <= first for first in firsts)


def test_a_block_held_by_another_process_is_passed_over():
    """CI once lost 39 tests to 'port 40084 is in use': an outgoing connection's ephemeral port inside the block."""
    nxt = PORT_BASE + conftest._ports_used
    with socket.socket() as held:
        held.bind(("127.0.0.1", nxt + 3))
        held.listen()
        first = allocate_ports(11)
    assert first >= nxt + PORT_BLOCK


def test_ports_run_out_with_a_clear_error(monkeypatch):
    monkeypatch.setattr(conftest, "_ports_used", conftest.PORT_SPAN - PORT_BLOCK)
    with pytest.raises(RuntimeError, match="test ports exhausted"):
        allocate_ports(PORT_BLOCK + 1)


def test_hand_picked_ports_are_refused():
    with pytest.raises(TypeError, match="ports are assigned"):
        start_cluster("handpicked", 300)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ports are assigned"):
        start_cluster("handpicked", port_offset=300)


def test_a_test_needing_accounting_fails_loudly():
    """The local cluster runs no slurmdbd: such a test must fail (a skip would be counted as a pass)."""
    assert conftest.accounting_missing()
    with pytest.raises(pytest.fail.Exception, match="needs Slurm accounting"):
        start_cluster("acct", Needs(accounting=True))
