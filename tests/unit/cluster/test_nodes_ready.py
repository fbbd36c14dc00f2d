"""wait_nodes_ready (cluster/procs.py): which node states count as up when a cluster comes up."""

from __future__ import annotations

import time

from slurm_plugin.cluster.procs import wait_nodes_ready


class _Nodes:
    """Stands in for a SlurmClient's ``show_nodes`` (the node states as ``scontrol show nodes`` gives them)."""

    def __init__(self, states: dict[str, str]):
        self.states = states

    def show_nodes(self):
        return [{"NodeName": n, "State": s} for n, s in self.states.items()]


def test_power_saving_counts_as_up_only_when_asked():
    nodes = _Nodes({"n1": "IDLE", "n2": "IDLE+POWERING_DOWN", "n3": "IDLE+POWERED_DOWN", "n4": "DOWN+NOT_RESPONDING"})
    soon = time.monotonic() + 0.2
    assert wait_nodes_ready(nodes, ["n1", "n2", "n3", "n4"], soon, powered_down_ok=True) == ["n4"]
    assert wait_nodes_ready(nodes, ["n1", "n2", "n3"], time.monotonic() + 0.2) == ["n2", "n3"]
    assert wait_nodes_ready(nodes, ["n1", "n2", "n3"], time.monotonic() + 5, powered_down_ok=True) == []
    nodes.states["n2"] = "IDLE+POWERING_DOWN+NOT_RESPONDING"
    assert wait_nodes_ready(nodes, ["n2"], time.monotonic() + 0.2, powered_down_ok=True) == ["n2"]
