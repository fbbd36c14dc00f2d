"""The only code that changes Slurm: applies a :class:`Decision` through scontrol, journaling each action.

Two facts of real Slurm (checked on 22.05.8) shape it:

- ``scontrol update jobid=4,99999,6 sitefactor=500`` applies 4 and 6, exits 1 and prints one line per bad id
  (``Invalid job id specified for job 99999``, ``Job has already finished for job 5``, ``4_1: Invalid job id
  specified``): :func:`failed_ids` reads those lines, so a batched action records which ids failed instead of
  failing whole.
- With slurmctld gone every ``scontrol update`` takes ~9 s to fail (``Unable to contact slurm controller
  (connect failure)``, or for jobs ``Unexpected message received for job N``), and 10 s when it hangs
  (``Socket timed out on send/recv operation``). A failure that says so stops the apply at once; after any other
  failure the applier asks ``scontrol ping`` (10 ms when nothing listens). The remaining actions are then
  reported as not attempted (:data:`NOT_ATTEMPTED`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import hostlist

from ..slurm import SlurmClient, SlurmError
from .actions import (TAG, Action, Decision, DrainNodes, MoveJob, PowerNodes, RequeueJobs, SetPartitionNodes,
                      SetSiteFactor, SwitchPolicy, job_ref)
from .journal import Journal

log = logging.getLogger(__name__)
MAX_IDS_PER_CALL = 500  # keeps one scontrol command line well under ARG_MAX with 10,000 pending jobs
NOT_ATTEMPTED = "not attempted: slurmctld unreachable"
PING_TIMEOUT_S = 15.0  # scontrol ping waits MessageTimeout (10 s by default) for a hung controller

# What scontrol prints when it cannot talk to slurmctld at all (22.05: nothing listens / it hangs); a timeout of
# our own is exit code 124 (see SlurmClient.run).
_NO_CONTROLLER = re.compile(r"Unable to contact slurm controller|Socket timed out on send/recv|Connection refused|"
                            r"Zero Bytes were transmitted or received")
# One line per bad id in a batched job update: "<text> for job <id>" or "<id>: <text>"; an array's record is
# named without its brackets ("99999_1-3: Invalid job id specified" for jobid=99999_[1-3], 22.05.8).
_ID = r"(?P<id>\d+(?:_\[?[\d,:-]+\]?|\+\d+)?)"
_ID_LINE = (re.compile(rf"^(?P<msg>.+?) for job {_ID}\s*$"), re.compile(rf"^{_ID}: (?P<msg>.+?)\s*$"))


@dataclass(frozen=True)
class Applied:
    """What became of one action: ``ok`` when all of it was applied; ``error`` says why not.

    ``failed_ids`` (job id -> Slurm's message) names the ids a batched job update could not change while the
    others were changed (``ok`` is then False and ``partial`` True); ``attempted`` is False for actions left out
    after slurmctld became unreachable."""

    action: Action
    ok: bool
    error: str = ""
    failed_ids: dict[int, str] = field(default_factory=dict)
    attempted: bool = True

    @property
    def partial(self) -> bool:
        return bool(self.failed_ids) and set(self.failed_ids) != set(job_ids(self.action))

    @property
    def status(self) -> str:
        """``ok``, ``partial``, ``failed`` or ``not-attempted`` (the CLI's STATUS column)."""
        if not self.attempted:
            return "not-attempted"
        return "ok" if self.ok else "partial" if self.partial else "failed"


class SlurmUnreachable(SlurmError):
    """slurmctld did not answer ``scontrol ping`` after a command failed."""


def log_fields(action: Action, status: str) -> dict:
    """Structured log fields of an action (cli/logs.py: JSON keys or journald's key=value): bounded text."""
    fields = {"action": action.kind, "cause": getattr(action.cause, "value", action.cause), "status": status,
              "reason": action.reason[:300]}
    nodes = getattr(action, "nodes", None)
    if nodes:
        fields["node"] = _compress(nodes)
    ids = job_ids(action)
    if ids:
        fields["job"] = ",".join(map(str, ids[:20])) + (f",... ({len(ids)})" if len(ids) > 20 else "")
    return fields


def job_ids(action: Action) -> tuple[int, ...]:
    if isinstance(action, SetSiteFactor):
        return tuple(action.job_ids)
    if isinstance(action, MoveJob):
        return (action.job_id,)
    if isinstance(action, RequeueJobs):
        return tuple(action.job_ids)
    return ()


def failed_ids(stderr: str, asked: Iterable[int] | dict[str, int]) -> dict[int, str] | None:
    """Job id -> message for every line of a batched ``scontrol update jobid=...`` that names one of ``asked``
    (ids, or what Slurm was given -> id: :func:`job_refs`); None if any line names no asked id (then the failure
    is not per id, e.g. a connection error)."""
    refs = {_bare(k): v for k, v in asked.items()} if isinstance(asked, dict) else {str(i): i for i in asked}
    out: dict[int, str] = {}
    for line in filter(None, (x.strip() for x in stderr.splitlines())):
        for pattern in _ID_LINE:
            m = pattern.match(line)
            if m and _bare(m["id"]) in refs:
                out[refs[_bare(m["id"])]] = m["msg"]
                break
        else:
            return None
    return out or None


def _bare(ref: str) -> str:
    return ref.replace("[", "").replace("]", "")


def job_refs(action: Action) -> dict[str, int]:
    """What the action's commands name each of its jobs by -> the job id."""
    if isinstance(action, (SetSiteFactor, MoveJob)):
        return {job_ref(action, j): j for j in job_ids(action)}
    return {str(j): j for j in job_ids(action)}


def _compress(nodes: Iterable[str]) -> str:
    return hostlist.collect_hostlist(list(nodes))


def _node_state(nodes: Iterable[str], state: str, reason: str | None) -> list[str]:
    """``scontrol update nodename=... state=...``; a reason is tagged so the suite knows it set it."""
    cmd = ["scontrol", "update", f"nodename={_compress(nodes)}", f"state={state}"]
    return cmd + [f"reason={TAG} {reason}"[:200]] if reason else cmd


def commands_for(action: Action) -> list[list[str]]:
    """The scontrol command lines that carry out ``action`` (pure; used by the applier and ``--dry-run``)."""
    if isinstance(action, SetSiteFactor):
        refs = [job_ref(action, j) for j in action.job_ids] if action.addresses else list(map(str, action.job_ids))
        return [["scontrol", "update", "jobid=" + ",".join(refs[i:i + MAX_IDS_PER_CALL]),
                 f"sitefactor={action.site_factor}"] for i in range(0, len(refs), MAX_IDS_PER_CALL)]
    if isinstance(action, MoveJob):
        cmd = ["scontrol", "update", f"jobid={job_ref(action, action.job_id)}"]
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
        if action.action == "REBOOT":
            return [["scontrol", "reboot", "ASAP", "nextstate=RESUME", f"reason={TAG} {action.reason}"[:200],
                     _compress(action.nodes)]]
        return [_node_state(action.nodes, action.action, action.reason if action.action == "DRAIN" else None)]
    if isinstance(action, RequeueJobs):
        ids = list(action.job_ids)
        return [["scontrol", "requeue", ",".join(map(str, ids[i:i + MAX_IDS_PER_CALL]))]
                for i in range(0, len(ids), MAX_IDS_PER_CALL)]
    if isinstance(action, SwitchPolicy):
        return []  # a file, not Slurm: see SlurmApplier._switch_policy
    raise TypeError(f"unknown action {action!r}")


def controller_lost(err: SlurmError) -> bool:
    """True if ``err`` says slurmctld could not be reached at all (no ping needed to know)."""
    return err.code == 124 or bool(_NO_CONTROLLER.search(err.stderr))


def slurmctld_reachable(client: SlurmClient) -> bool:
    """True if ``scontrol ping`` reports the controller UP (about 10 ms when nothing listens on its port,
    MessageTimeout when it hangs)."""
    try:
        return client.run("scontrol", "ping", check=False, timeout=PING_TIMEOUT_S).returncode == 0
    except SlurmError:
        return False


class SlurmApplier:
    """Applies decisions to the cluster behind ``client``; with ``dry_run`` only logs the commands."""

    def __init__(self, client: SlurmClient, journal: Journal | None = None, dry_run: bool = False):
        self.client, self.journal, self.dry_run = client, journal, dry_run

    def apply(self, decision: Decision, inputs: dict | None = None) -> list[Applied]:
        """Apply every action in order and return one :class:`Applied` per action.

        A failed action is logged and journaled and the rest still run, unless slurmctld stopped answering:
        then every remaining action is returned (and journaled) as not attempted. ``inputs`` (what the
        decision was made from: cycle, snapshot time, sources) is journaled with each action."""
        results: list[Applied] = []
        reachable = True
        for action in decision.actions:
            if self.dry_run:
                for cmd in commands_for(action) or [[action.kind, str(getattr(action, "path", ""))]]:
                    log.info("dry run: %s", " ".join(cmd))
                results.append(Applied(action, True))
                continue
            if reachable:
                result, reachable = self._apply_one(action)
                if not reachable:
                    log.error("slurmctld unreachable after %s failed: %d remaining action(s) not attempted",
                              action.kind, len(decision.actions) - len(results) - 1)
            else:
                result = Applied(action, False, NOT_ATTEMPTED, attempted=False)
            results.append(result)
            log.log(logging.INFO if result.ok else logging.WARNING, "%s %s: %s", action.kind, result.status,
                    action.reason, extra=log_fields(action, result.status))
            if self.journal:
                self.journal.record(action, result.ok, result.error, failed_ids=result.failed_ids, inputs=inputs)
        return results

    def _apply_one(self, action: Action) -> tuple[Applied, bool]:
        """Run ``action``'s commands; after a failure ask ``scontrol ping`` and stop if slurmctld is gone.
        Returns the result and whether slurmctld still answers."""
        if isinstance(action, SwitchPolicy):
            return self._switch_policy(action), True
        errors: list[str] = []
        failed: dict[int, str] = {}
        for cmd in commands_for(action):
            try:
                self.client.run(*cmd)
                continue
            except SlurmError as err:
                lost = controller_lost(err)
                per_id = failed_ids(err.stderr, job_refs(action)) if job_ids(action) and not lost else None
                if per_id is None:
                    errors.append(str(err))
                    log.warning("%s failed: %s", action.kind, err, extra=log_fields(action, "failed"))
                else:
                    failed.update(per_id)
                    log.warning("%s: %d job id(s) not changed: %s", action.kind, len(per_id),
                                "; ".join(f"{k}: {v}" for k, v in per_id.items()))
            if lost or not slurmctld_reachable(self.client):  # then per-id lines were the outage talking
                said = errors or [f"{k}: {v}" for k, v in failed.items()]
                return Applied(action, False, "; ".join(said + ["slurmctld unreachable"])), False
        if failed and not errors:
            errors.append(f"{len(failed)} of {len(job_ids(action))} job(s) not changed: "
                          + "; ".join(f"{k}: {v}" for k, v in sorted(failed.items())))
        return Applied(action, not errors, "; ".join(errors), failed), True

    @staticmethod
    def _switch_policy(action: SwitchPolicy) -> Applied:
        from .policy_file import switch_policy_file

        try:
            done = switch_policy_file(action.path, action.to, action.from_sha256, action.reason)
        except OSError as err:
            log.error("policy rollback of %s failed: %s", action.path, err)
            return Applied(action, False, f"{type(err).__name__}: {err}")
        log.warning("policy rollback: %s (%s)", done, action.reason)
        return Applied(action, True)
