"""The nodes' free room laid out in node Weight order, for the simulator's fit checks.

A request lists its option groups by (cost per hour, group), the order the rendered node Weight gives them
(:meth:`~slurm_plugin.sim.cluster.ClusterState._resolve`), and its candidate nodes come group by group in that
order, each group's nodes ascending. Here every node sits at its place in that order, so the candidates of such
a request are one slice of the arrays (minus the groups it does not list), read without gathering node indices:
one comparison per resource and a boolean selection. The arrays are copies of the cluster's, kept up to date by
it (:meth:`update`, :meth:`update_one`) at every change of a node's load or power state.
"""

from __future__ import annotations

import numpy as np

from .power import ON, SHUTTING


class WeightOrder:
    """Per node in Weight order (``nodes[k]`` is the node at place k): ``fit`` its free cores, -1 while it
    shuts down (never a candidate); ``mem`` its free memory; ``on`` whether it is on."""

    def __init__(self, cluster, costs: list[float]):
        order = sorted(range(len(costs)), key=lambda g: (costs[g], g))
        self.rank = [0] * len(costs)  # group -> its place in ``order``
        for k, g in enumerate(order):
            self.rank[g] = k
        self.nodes = np.concatenate([np.arange(cluster.start[g], cluster.end[g]) for g in order]) if order \
            else np.empty(0, dtype=np.int64)
        self.place = np.empty(len(self.nodes), dtype=np.int64)
        self.place[self.nodes] = np.arange(len(self.nodes))
        self._place = self.place.tolist()
        sizes = [int(cluster.end[g] - cluster.start[g]) for g in order]
        lo = np.cumsum([0] + sizes)
        self.lo = [0] * len(costs)
        self.hi = [0] * len(costs)
        for k, g in enumerate(order):
            self.lo[g], self.hi[g] = int(lo[k]), int(lo[k + 1])
        self.fit = cluster.cap_c[self.nodes].copy()
        self.mem = cluster.cap_m[self.nodes].copy()
        self.on = np.ones(len(self.nodes), dtype=bool)
        self._spans: dict[tuple[int, ...], tuple | None] = {}
        self._kept_src: np.ndarray | None = None  # the last read-only ``exclude`` of :meth:`fitting`
        self._kept = np.empty(0, dtype=bool)  # its complement, in Weight order
        self.update(cluster, np.arange(len(self.nodes)))

    def update(self, cluster, nodes: np.ndarray) -> None:
        """Copy the room and power state of ``nodes`` from the cluster."""
        k = self.place[nodes]
        st = cluster.state[nodes]
        self.fit[k] = np.where(st == SHUTTING, -1, cluster.free_c[nodes])
        self.mem[k] = cluster.free_m[nodes]
        self.on[k] = st == ON

    def update_one(self, cluster, i: int) -> None:
        """:meth:`update` of the one node ``i`` after its load changed (its power state did not)."""
        k = self._place[i]
        self.fit[k] = -1 if cluster.state[i] == SHUTTING else cluster.free_c[i]
        self.mem[k] = cluster.free_m[i]

    def span(self, groups: tuple[int, ...]) -> tuple | None:
        """(lo, hi, mask or None): the places of ``groups``' nodes are those of ``mask`` (None: all) in
        ``lo:hi``; None if ``groups`` are not in Weight order (their candidates then come in another order)."""
        if groups not in self._spans:
            ranks = [self.rank[g] for g in groups]
            if ranks != sorted(ranks) or len(set(ranks)) != len(ranks):
                self._spans[groups] = None
            else:
                lo, hi = self.lo[groups[0]], self.hi[groups[-1]]
                mask = None
                if sum(self.hi[g] - self.lo[g] for g in groups) != hi - lo:
                    mask = np.zeros(hi - lo, dtype=bool)
                    for g in groups:
                        mask[self.lo[g] - lo:self.hi[g] - lo] = True
                self._spans[groups] = (lo, hi, mask)
        return self._spans[groups]

    def fitting(self, span: tuple, cores: int, mem: float, exclude: np.ndarray | None) -> np.ndarray:
        """Per place of ``span``: whether the node there can take ``cores`` and ``mem`` now (and is not in the
        node mask ``exclude``)."""
        lo, hi, mask = span
        ok = self.fit[lo:hi] >= cores
        if mem > 0:
            ok &= self.mem[lo:hi] >= mem
        if mask is not None:
            ok &= mask
        if exclude is not None:
            if exclude.flags.writeable:
                ok &= ~exclude[self.nodes[lo:hi]]
            else:  # a read-only mask (a reservation's) cannot change: its complement in Weight order is kept
                if exclude is not self._kept_src:
                    self._kept_src, self._kept = exclude, ~exclude[self.nodes]
                ok &= self._kept[lo:hi]
        return ok

    def first(self, span: tuple, ok: np.ndarray) -> np.ndarray | None:
        """The first node of ``ok`` (from :meth:`fitting`) that is on, else the first at all, as a one-node
        array; None if there is none."""
        lo = span[0]
        if not len(ok):
            return None
        on = ok & self.on[lo:span[1]]
        k = int(on.argmax())
        if on[k]:
            return self.nodes[lo + k:lo + k + 1]
        k = int(ok.argmax())
        return self.nodes[lo + k:lo + k + 1] if ok[k] else None
