"""How ``cycle once``, ``scale plan`` and ``scale apply`` show a decision: one table row (or JSON object) per
action, the exit code its results mean, and the exit for a Slurm failure before any action."""

from __future__ import annotations

from typing import NoReturn

import hostlist

from ..decision import Decision, SetPartitionNodes
from ..decision.applier import Applied, commands_for, controller_lost, job_ids, slurmctld_reachable
from ..slurm import SlurmClient, SlurmError
from .common import EXIT_FAIL, EXIT_OK, EXIT_UNREACHABLE, fail
from .output import emit_table, table_options

FIELDS = ("status", "kind", "cause", "target", "reason", "error", "failed_ids", "deferred_ids", "commands")
DEFAULT_FIELDS = ("status", "kind", "target", "reason", "error")
action_table_options = table_options(FIELDS, DEFAULT_FIELDS)


def target(action) -> str:
    """What an action changes, in Slurm's own notation: hostlists, job ids, ``partition x = nodes``."""
    if isinstance(action, SetPartitionNodes):
        return f"partition {action.partition} = {hostlist.collect_hostlist(list(action.nodes))}"
    if action.kind == "policy":
        return f"policy {action.path} -> {action.to or 'defaults'}"
    if getattr(action, "nodes", None):
        return f"{action.action} {hostlist.collect_hostlist(list(action.nodes))}"
    ids = job_ids(action)
    what = f"job {ids[0]}" if len(ids) == 1 else f"{len(ids)} jobs"
    if hasattr(action, "site_factor"):
        return f"{what} sitefactor={action.site_factor}"
    return f"{what} -> {action.partition or '-'} {action.features or ''}".rstrip()


def rows(decision: Decision, results: list[Applied] | None) -> list[dict]:
    """One row per action; ``results`` None means planned only (status ``planned``)."""
    out = []
    # a budgeted apply reports its actions most urgent first (and may split one): its results carry them
    pairs = [(r.action, r) for r in results] if results is not None else [(a, None) for a in decision.actions]
    for action, r in pairs:
        out.append({"status": r.status if r else "planned", "kind": action.kind,
                    "cause": action.cause.value if action.cause else "", "target": target(action),
                    "reason": action.reason, "error": r.error if r else "",
                    "failed_ids": {str(k): v for k, v in r.failed_ids.items()} if r else {},
                    "deferred_ids": list(r.deferred_ids) if r else [],
                    "commands": commands_for(action)})
    return out


def show(decision: Decision, results: list[Applied] | None, fields: list[str], noheader: bool, parsable: bool,
         as_json: bool) -> None:
    emit_table(rows(decision, results), fields, noheader, parsable, as_json)


def exit_code(results: list[Applied]) -> int:
    """4 if slurmctld stopped answering (some actions not attempted), 1 if any action failed (in part), else 0
    (job updates the apply budget deferred to the next cycle are no failure)."""
    if any(not r.attempted for r in results):
        return EXIT_UNREACHABLE
    return EXIT_FAIL if any(r.refused for r in results) else EXIT_OK


def slurm_failure(err: SlurmError, client: SlurmClient) -> NoReturn:
    """Exit 4 if ``err`` says slurmctld cannot be reached or it does not answer a ping, else 1; with Slurm's
    message."""
    if controller_lost(err) or not slurmctld_reachable(client):
        fail(f"slurmctld unreachable: {err}", EXIT_UNREACHABLE)
    fail(str(err), EXIT_FAIL)
