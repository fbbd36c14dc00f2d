"""The only code that changes Slurm: applies a :class:`Decision` through scontrol, journaling each action."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import hostlist

from ..slurm import SlurmClient, SlurmError
from .actions import TAG, Action, Decision, DrainNodes, MoveJob, PowerNodes, SetPartitionNodes, SetSiteFactor
from .journal import Journal

log = logging.getLogger(__name__)
MAX_IDS_PER_CALL = 500  # keeps one scontrol command line well under ARG_MAX with 10,000 pending jobs


@dataclass(frozen=True)
class Applied:
    action: Action
    ok: bool
    error: str = ""


def _compress(nodes: Iterable[str]) -> str:
    return hostlist.collect_hostlist(list(nodes))


def _node_state(nodes: Iterable[str], state: str, reason: str | None) -> list[str]:
    """``scontrol update nodename=... state=...``; a reason is tagged so the suite knows it set it."""
    cmd = ["scontrol", "update", f"nodename={_compress(nodes)}", f"state={state}"]
    return cmd + [f"reason={TAG} {reason}"[:200]] if reason else cmd


def commands_for(action: Action) -> list[list[str]]:
    """The scontrol command lines that carry out ``action`` (pure; used by the applier and ``--dry-run``)."""
    if isinstance(action, SetSiteFactor):
        ids = list(action.job_ids)
        return [["scontrol", "update", "jobid=" + ",".join(map(str, ids[i:i + MAX_IDS_PER_CALL])),
                 f"sitefactor={action.site_factor}"] for i in range(0, len(ids), MAX_IDS_PER_CALL)]
    if isinstance(action, MoveJob):
        cmd = ["scontrol", "update", f"jobid={action.job_id}"]
        if action.partition:
            cmd.append(f"partition={action.partition}")
        if action.features is not None:
            cmd.append(f"features={action.features}")
        return [cmd]
    if isinstance(action, PowerNodes):
        return [_node_state(action.nodes, action.action, None if action.action == "POWER_UP" else action.reason)]
    if isinstance(action, SetPartitionNodes):
        return [["scontrol", "update", f"partitionname={action.partition}", f"nodes={_compress(action.nodes)}"]]
    if isinstance(action, DrainNodes):
        return [_node_state(action.nodes, action.action, action.reason if action.action == "DRAIN" else None)]
    raise TypeError(f"unknown action {action!r}")


class SlurmApplier:
    """Applies decisions to the cluster behind ``client``; with ``dry_run`` only logs the commands."""

    def __init__(self, client: SlurmClient, journal: Journal | None = None, dry_run: bool = False):
        self.client, self.journal, self.dry_run = client, journal, dry_run

    def apply(self, decision: Decision) -> list[Applied]:
        """Apply every action in order; a failed action is logged and journaled, and the rest still run."""
        results = []
        for action in decision.actions:
            error = ""
            for cmd in commands_for(action):
                if self.dry_run:
                    log.info("dry run: %s", " ".join(cmd))
                    continue
                try:
                    self.client.run(*cmd)
                except SlurmError as err:
                    error = str(err)
                    log.warning("%s failed: %s", action.kind, err)
            results.append(Applied(action, not error, error))
            if self.journal and not self.dry_run:
                self.journal.record(action, not error, error)
        return results
