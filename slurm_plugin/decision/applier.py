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

With an apply budget (``apply(..., budget_s=S)``; the cycle gives it 90 % of what its read and steps left of the
policy's ``budget.cycle_s``, at most ``budget.apply_s``: ``cycle/steps.CycleBudget``) the actions go most urgent
first (:func:`by_urgency`: node, partition and policy actions, which are never deferred; then job moves; then
SiteFactors, highest value first; jobs deferred by the last cycle first within each), and job updates are sent
in commands sized to the time left (:class:`_Pace`). Once the budget is spent, the job updates not yet sent are
deferred: reported with ``deferred_ids`` (status ``deferred``), journaled, and decided again by the next cycle,
which sends them first. A command once started is finished, so an apply can exceed its budget by part of one
command.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import hostlist

from ..slurm import SlurmClient, SlurmError
from ..snapshot.arrays import task_ids, task_ranges
from .actions import (TAG, Action, Decision, DrainNodes, MoveJob, PowerNodes, RequeueJobs, SetPartitionNodes,
                      SetSiteFactor, SwitchPolicy, job_ref, job_refs_in_order)
from .journal import Journal

log = logging.getLogger(__name__)
# One id list per scontrol call, bounded by its length: Linux refuses an argument over MAX_ARG_STRLEN (131,072
# bytes), and each scontrol parses slurm.conf first (0.3 CPU s at 2,240 node lines, 1.1 s at 10,002), so
# 10,000 ids (~70 KB) go in one call rather than 20 of 500. slurmctld still gets one RPC per id.
MAX_ID_LIST_CHARS = 100_000
NOT_ATTEMPTED = "not attempted: slurmctld unreachable"
DEFERRED_MARK = "deferred to the next cycle"
DEFERRED = DEFERRED_MARK + ": apply budget of {budget:g} s spent"
FIRST_CHUNK_REFS = 200  # job references in the first budgeted command, before one command's cost is known
PACE_MARGIN = 0.8  # a budgeted command is sized for this share of the time left (its cost varies)
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
    others were changed (``ok`` is then False and ``partial`` True); ``deferred_ids`` the ids not sent because
    the apply budget was spent (the next cycle sends them); ``attempted`` is False for actions left out
    after slurmctld became unreachable."""

    action: Action
    ok: bool
    error: str = ""
    failed_ids: dict[int, str] = field(default_factory=dict)
    attempted: bool = True
    deferred_ids: tuple[int, ...] = ()

    @property
    def partial(self) -> bool:
        missed = set(self.failed_ids) | set(self.deferred_ids)
        return bool(missed) and missed != set(job_ids(self.action))

    @property
    def deferred(self) -> bool:
        """True if every job of the action was deferred (none sent)."""
        return bool(self.deferred_ids) and set(self.deferred_ids) == set(job_ids(self.action))

    @property
    def refused(self) -> bool:
        """True if Slurm refused some of it or it failed; an update the budget deferred is neither."""
        if self.ok or not self.attempted:
            return False
        return bool(self.failed_ids) or not self.deferred_ids or DEFERRED_MARK not in self.error

    @property
    def status(self) -> str:
        """``ok``, ``partial``, ``deferred``, ``failed`` or ``not-attempted`` (the CLI's STATUS column)."""
        if not self.attempted:
            return "not-attempted"
        if self.deferred:
            return "deferred"
        return "ok" if self.ok else "partial" if self.partial else "failed"


def deferrable(action: Action) -> bool:
    """Job moves and SiteFactors wait for the next cycle when the apply budget is spent; node, partition and
    policy actions never do (a handful of commands; the power planner's memory counts on them)."""
    return isinstance(action, (SetSiteFactor, MoveJob))


def by_urgency(actions: Iterable[Action], carried: Iterable[int] = ()) -> tuple[Action, ...]:
    """``actions`` in the order a budgeted apply sends them: node, partition and policy actions first (in their
    order), then job moves (packing's, for jobs that could start soonest), then SiteFactors, highest value first.
    Within moves and within one SiteFactor value, the ``carried`` jobs (deferred by the last cycle) go first: a
    SiteFactor action naming some of them is split in two, the carried part first. Stable otherwise."""
    carried = frozenset(carried)
    keyed: list[tuple[tuple, int, Action]] = []
    for i, action in enumerate(actions):
        if isinstance(action, MoveJob):
            keyed.append(((1, action.job_id not in carried, 0), i, action))
        elif isinstance(action, SetSiteFactor):
            old = tuple(j for j in action.job_ids if j in carried)
            parts = [(old, True), (tuple(j for j in action.job_ids if j not in carried), False)] if old else \
                [(action.job_ids, False)]
            for ids, was_carried in parts:
                if not ids:
                    continue
                part = action if len(ids) == len(action.job_ids) else replace(
                    action, job_ids=ids, addresses=tuple((j, r) for j, r in action.addresses if j in set(ids)),
                    reason=action.reason + ("; carried from the last cycle (apply budget)" if was_carried else ""))
                keyed.append(((2, not was_carried, -action.site_factor), i, part))
        else:
            keyed.append(((0, False, 0), i, action))
    return tuple(a for _, _, a in sorted(keyed, key=lambda k: (k[0], k[1])))


def split_refs(id_list: str) -> list[str]:
    """``123,124_[1-3,7],5`` -> ``["123", "124_[1-3,7]", "5"]``: the commas between references, not within
    an array's brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(id_list):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(id_list[start:i])
            start = i + 1
    if id_list:
        out.append(id_list[start:])
    return out


def ids_named(refs: Iterable[str], asked: dict[str, int]) -> list[int]:
    """The job ids the references (as :func:`array_grouped` wrote them) name, by ``asked`` (ref -> id)."""
    bare = {_bare(k): v for k, v in asked.items()}
    out: list[int] = []
    for ref in refs:
        out += _named(_bare(ref), bare) or []
    return out


class _Pace:
    """The apply budget's clock: how many job references the next command may carry so it ends in the time
    left (the last command's seconds per reference, aiming at :data:`PACE_MARGIN` of what is left), and whether
    the budget is spent (not even the quickest command so far would fit). The first job command of an apply
    always goes (a budget smaller than one command still moves the queue)."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic):
        self.budget_s, self.clock = budget_s, clock
        self.start = clock()
        self.per_ref: float | None = None
        self.fastest: float | None = None
        self.sent = 0

    def left(self) -> float:
        return self.budget_s - (self.clock() - self.start)

    def spent(self) -> bool:
        return self.sent > 0 and self.left() <= (self.fastest or 0.0)

    def refs_next(self) -> int:
        if self.per_ref is None or self.per_ref <= 0:  # nothing known yet (one action's refs at most)
            return FIRST_CHUNK_REFS
        return max(1, int(PACE_MARGIN * self.left() / self.per_ref))

    def took(self, refs: int, seconds: float) -> None:
        self.sent += 1
        self.per_ref = seconds / max(refs, 1)
        self.fastest = seconds if self.fastest is None else min(self.fastest, seconds)


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
    is not per id, e.g. a connection error). A line naming tasks of an array (``123_4,6: Job has already
    finished`` for ``jobid=123_[3-6]``) names each task's job; ``123_3,5: No error`` (22.05 lists the tasks an
    array update changed beside those it could not) is no failure."""
    refs = {_bare(k): v for k, v in asked.items()} if isinstance(asked, dict) else {str(i): i for i in asked}
    out: dict[int, str] = {}
    for line in filter(None, (x.strip() for x in stderr.splitlines())):
        for pattern in _ID_LINE:
            m = pattern.match(line)
            ids = _named(_bare(m["id"]), refs) if m else None
            if ids:
                if m["msg"] != "No error":
                    out.update(dict.fromkeys(ids, m["msg"]))
                break
        else:
            return None
    return out or None


def _named(ref: str, refs: dict[str, int]) -> list[int] | None:
    """The asked jobs ``ref`` (bare: ``123``, ``123_4-100``, ``123_4,6``) names: itself if asked, else each of
    its array tasks if every one was asked as ``123_T``; None otherwise."""
    if ref in refs:
        return [refs[ref]]
    m = _TASKS.match(ref)
    if not m:
        return None
    try:
        tasks = [f"{m[1]}_{t}" for t in task_ids(m[2])]
    except ValueError:
        return None
    return [refs[t] for t in tasks] if tasks and all(t in refs for t in tasks) else None


_TASKS = re.compile(r"^(\d+)_([\d,:-]+)$")
_ONE_TASK = re.compile(r"^(\d+)_(\d+)$")
MAX_TASKS_PER_REF = 5000  # one array's tasks per reference: ~35 KB at most, well within MAX_ID_LIST_CHARS


def array_grouped(refs: list[str]) -> list[str]:
    """``refs`` with the single tasks of one array (``123_4``, ``123_6``, ``123_7``) named together
    (``123_[4,6-7]``, at most :data:`MAX_TASKS_PER_REF` each), where the array's first task was; other refs
    unchanged, in order. slurmctld updates all tasks of one such reference in one RPC (REQUEST_UPDATE_JOB
    takes an array's task list), where a list of ids is one RPC per id."""
    tasks: dict[str, list[int]] = {}
    order: list[tuple[str, str]] = []  # ("ref", r) or ("array", id)
    for ref in refs:
        m = _ONE_TASK.match(ref)
        if m is None:
            order.append(("ref", ref))
            continue
        if m[1] not in tasks:
            tasks[m[1]] = []
            order.append(("array", m[1]))
        tasks[m[1]].append(int(m[2]))
    out = []
    for kind, value in order:
        if kind == "ref":
            out.append(value)
            continue
        ids = sorted(set(tasks[value]))
        for i in range(0, len(ids), MAX_TASKS_PER_REF):
            chunk = ids[i:i + MAX_TASKS_PER_REF]
            out.append(f"{value}_{chunk[0]}" if len(chunk) == 1 else f"{value}_[{task_ranges(chunk)}]")
    return out


def _bare(ref: str) -> str:
    return ref.replace("[", "").replace("]", "")


def job_refs(action: Action) -> dict[str, int]:
    """What the action's commands name each of its jobs by -> the job id."""
    if isinstance(action, (SetSiteFactor, MoveJob)):
        return {ref: j for j, ref in job_refs_in_order(action)}
    return {str(j): j for j in job_ids(action)}


def _compress(nodes: Iterable[str]) -> str:
    return hostlist.collect_hostlist(list(nodes))


def _node_state(nodes: Iterable[str], state: str, reason: str | None) -> list[str]:
    """``scontrol update nodename=... state=...``; a reason is tagged so the suite knows it set it."""
    cmd = ["scontrol", "update", f"nodename={_compress(nodes)}", f"state={state}"]
    return cmd + [f"reason={TAG} {reason}"[:200]] if reason else cmd


def id_lists(refs: list[str], limit: int = MAX_ID_LIST_CHARS) -> list[str]:
    """``refs`` joined by commas into as few lists as keep each within ``limit`` characters, in order."""
    out: list[str] = []
    start, size = 0, 0
    for i, ref in enumerate(refs):
        if i > start and size + 1 + len(ref) > limit:
            out.append(",".join(refs[start:i]))
            start, size = i, 0
        size += len(ref) + (1 if i > start else 0)
    if refs:
        out.append(",".join(refs[start:]))
    return out


def move_commands(moves: list[MoveJob]) -> list[list[str]]:
    """One ``scontrol update jobid=a,b,... partition=P features=F`` per id list for ``moves`` to one
    destination (the first move's partition and features: the caller groups them, :func:`move_groups`)."""
    return [["scontrol", "update", "jobid=" + ids, *move_tail(moves[0])]
            for ids in id_lists(array_grouped([job_ref(m, m.job_id) for m in moves]))]


def move_tail(move: MoveJob) -> list[str]:
    """What ``scontrol update jobid=...`` is told to change for ``move``."""
    return ([f"partition={move.partition}"] if move.partition else []) + \
        ([f"features={move.features}"] if move.features is not None else [])


def move_groups(moves: list[MoveJob]) -> list[list[MoveJob]]:
    """``moves`` grouped by destination (partition, features) in the order each first appears; a job named
    again starts a later group, so its last move is still applied last."""
    groups: list[tuple[tuple, list[MoveJob], set[int]]] = []
    for m in moves:
        key = (m.partition, m.features)
        later = [i for i, (_, g, ids) in enumerate(groups) if m.job_id in ids]
        target = next((g for i, (k, g, ids) in enumerate(groups) if k == key and (not later or i > later[-1])), None)
        if target is None:
            groups.append((key, [m], {m.job_id}))
        else:
            target.append(m)
            next(ids for _, g, ids in groups if g is target).add(m.job_id)
    return [g for _, g, _ in groups]


def batch_key(action: Action) -> tuple | None:
    """Consecutive actions with the same key are applied together (None: alone). Moves batch among
    themselves (per destination, :func:`move_groups`); power actions when Slurm is told the same but the nodes
    (POWER_UP sends no reason; the others only with the same reason)."""
    if isinstance(action, MoveJob):
        return ("move",)
    if isinstance(action, PowerNodes):
        return ("power", action.action, "" if action.action == "POWER_UP" else action.reason)
    return None


def merged_power(run: list[PowerNodes]) -> PowerNodes:
    """One action for the nodes of ``run`` (one :func:`batch_key`), in order, each once."""
    nodes = tuple(dict.fromkeys(n for a in run for n in a.nodes))
    return PowerNodes(nodes, run[0].action, run[0].reason, run[0].cause)


def run_commands(run: list[Action]) -> list[list[str]]:
    """The commands that carry out ``run`` (consecutive actions of one :func:`batch_key`, or one action)."""
    if isinstance(run[0], MoveJob):
        return [c for g in move_groups(run) for c in move_commands(g)]
    if len(run) > 1:
        return commands_for(merged_power(run))
    return commands_for(run[0])


def commands_for(action: Action) -> list[list[str]]:
    """The scontrol command lines that carry out ``action`` (pure; used by the applier and ``--dry-run``)."""
    if isinstance(action, SetSiteFactor):
        refs = [ref for _, ref in job_refs_in_order(action)]
        return [["scontrol", "update", "jobid=" + ids, f"sitefactor={action.site_factor}"]
                for ids in id_lists(array_grouped(refs))]
    if isinstance(action, MoveJob):
        return move_commands([action])
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
        return [["scontrol", "requeue", ids] for ids in id_lists(list(map(str, action.job_ids)))]
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

    def __init__(self, client: SlurmClient, journal: Journal | None = None, dry_run: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.client, self.journal, self.dry_run, self.clock = client, journal, dry_run, clock
        self._pace: _Pace | None = None
        self._budget_s = 0.0

    def apply(self, decision: Decision, inputs: dict | None = None, budget_s: float | None = None,
              carried: Iterable[int] = ()) -> list[Applied]:
        """Apply every action in order and return one :class:`Applied` per action.

        A failed action is logged and journaled and the rest still run, unless slurmctld stopped answering:
        then every remaining action is returned (and journaled) as not attempted. ``inputs`` (what the
        decision was made from: cycle, snapshot time, sources) is journaled with each action. Consecutive job
        moves go to Slurm as one ``scontrol update jobid=a,b,...`` per destination (:func:`move_groups`), and
        consecutive power actions that tell Slurm the same (:func:`batch_key`) as one hostlist; each action is
        still reported and journaled on its own.

        With ``budget_s`` the actions are applied :func:`by_urgency` (``carried``: the jobs the last cycle
        deferred) and the job updates left when the budget is spent are deferred (module docstring); the
        results are then in that order, one per (possibly split) action."""
        results: list[Applied] = []
        reachable = True
        actions = decision.actions
        self._pace = None
        if budget_s is not None and not self.dry_run:
            actions = by_urgency(actions, carried)
            self._pace = _Pace(budget_s, self.clock)
            self._budget_s = budget_s
        i = 0
        while i < len(actions):
            end = i + 1
            key = batch_key(actions[i])
            while key is not None and end < len(actions) and batch_key(actions[end]) == key:
                end += 1
            run = list(actions[i:end])
            i = end
            if self.dry_run:
                for cmd in run_commands(run) or [[run[0].kind, str(getattr(run[0], "path", ""))]]:
                    log.info("dry run: %s", " ".join(cmd))
                done = [Applied(a, True) for a in run]
            elif reachable:
                done, reachable = self._apply_moves(run) if isinstance(run[0], MoveJob) else \
                    self._apply_power(run) if len(run) > 1 else self._apply_one(run[0])
                if not reachable:
                    log.error("slurmctld unreachable after %s failed: %d remaining action(s) not attempted",
                              run[-1].kind, len(actions) - i)
            else:
                done = [Applied(a, False, NOT_ATTEMPTED, attempted=False) for a in run]
            for result in done:
                results.append(result)
                action = result.action
                log.log(logging.INFO if result.ok else logging.WARNING, "%s %s: %s", action.kind, result.status,
                        action.reason, extra=log_fields(action, result.status))
                if self.journal:
                    self.journal.record(action, result.ok, result.error, failed_ids=result.failed_ids,
                                        inputs=inputs, deferred_ids=result.deferred_ids)
        deferred = sum(len(r.deferred_ids) for r in results)
        if deferred:
            log.warning("apply budget of %g s spent: %d job update(s) deferred to the next cycle", budget_s, deferred)
        return results

    def _apply_one(self, action: Action) -> tuple[list[Applied], bool]:
        """Run ``action``'s commands: ``([its result], whether slurmctld still answers)``."""
        if isinstance(action, SwitchPolicy):
            return [self._switch_policy(action)], True
        if self._pace is not None and isinstance(action, SetSiteFactor):
            refs = job_refs(action)
            errors, failed, deferred, reachable = self._run_paced(
                array_grouped(list(refs)), [f"sitefactor={action.site_factor}"], refs, action)
        else:
            errors, failed, reachable = self._run(commands_for(action),
                                                  job_refs(action) if job_ids(action) else None, action)
            deferred = []
        if failed and not errors:
            errors.append(f"{len(failed)} of {len(job_ids(action))} job(s) not changed: "
                          + "; ".join(f"{k}: {v}" for k, v in sorted(failed.items())))
        if deferred and not errors:
            errors.append(self._deferred_text(len(deferred), len(job_ids(action))))
        return [Applied(action, not errors, "; ".join(errors), failed, deferred_ids=tuple(deferred))], reachable

    def _deferred_text(self, deferred: int, of: int) -> str:
        return f"{deferred} of {of} job(s) " + DEFERRED.format(budget=self._budget_s)

    def _run_paced(self, refs: list[str], tail: list[str], asked: dict[str, int],
                   action: Action) -> tuple[list[str], dict[int, str], list[int], bool]:
        """``scontrol update jobid=<refs> <tail>`` in commands sized by the apply budget's pace (each also within
        :data:`MAX_ID_LIST_CHARS`); the refs left when the budget is spent are not sent. Returns (errors, job id
        -> Slurm's refusal, deferred job ids, reachable)."""
        pace = self._pace
        errors: list[str] = []
        failed: dict[int, str] = {}
        i = 0
        while i < len(refs):
            if pace.spent():
                return errors, failed, ids_named(refs[i:], asked), True
            chunk = refs[i:i + pace.refs_next()]
            ids = id_lists(chunk)[0]
            n = len(split_refs(ids))
            t0 = pace.clock()
            errs, fails, reachable = self._run([["scontrol", "update", "jobid=" + ids, *tail]], asked, action)
            pace.took(n, pace.clock() - t0)
            errors += errs
            failed.update(fails)
            if not reachable:
                return errors, {}, [], False
            i += n
        return errors, failed, [], True

    def _apply_power(self, run: list[PowerNodes]) -> tuple[list[Applied], bool]:
        """Consecutive power actions of one :func:`batch_key` as one command; if Slurm refuses it, each action
        again on its own, so a bad node fails only its action."""
        errors, _, reachable = self._run(commands_for(merged_power(run)), None, run[0])
        if not errors:
            return [Applied(a, True) for a in run], True
        if not reachable:
            return [Applied(a, False, "; ".join(errors)) for a in run], False
        done: list[Applied] = []
        for a in run:
            if not reachable:
                done.append(Applied(a, False, NOT_ATTEMPTED, attempted=False))
                continue
            [result], reachable = self._apply_one(a)
            done.append(result)
        return done, reachable

    def _apply_moves(self, moves: list[MoveJob]) -> tuple[list[Applied], bool]:
        """Consecutive moves, one command (per id list) per destination: a result per move in ``moves``' order
        (a move that Slurm refused by id fails alone; any other failure fails its whole group), and whether
        slurmctld still answers (the moves after it was lost: not attempted)."""
        done: dict[int, Applied] = {}
        reachable = True
        for group in move_groups(moves):
            if not reachable:
                done.update({id(m): Applied(m, False, NOT_ATTEMPTED, attempted=False) for m in group})
                continue
            refs = {job_ref(m, m.job_id): m.job_id for m in group}
            if self._pace is not None:
                errors, failed, deferred, reachable = self._run_paced(array_grouped(list(refs)),
                                                                      move_tail(group[0]), refs, group[0])
            else:
                errors, failed, reachable = self._run(move_commands(group), refs, group[0])
                deferred = []
            later = set(deferred)
            for m in group:
                if m.job_id in later:
                    done[id(m)] = Applied(m, False, self._deferred_text(1, 1), deferred_ids=(m.job_id,))
                    continue
                error = "; ".join(errors) or (f"{m.job_id}: {failed[m.job_id]}" if m.job_id in failed else "")
                done[id(m)] = Applied(m, not error, error, {m.job_id: failed[m.job_id]} if m.job_id in failed else {})
        return [done[id(m)] for m in moves], reachable

    def _run(self, commands: list[list[str]], refs: dict[str, int] | None,
             action: Action) -> tuple[list[str], dict[int, str], bool]:
        """Run ``commands``; after a failure ask ``scontrol ping`` and stop if slurmctld is gone. ``refs`` (what
        the commands name each job by -> its id) lets a batched job update's per-id refusals be told apart
        from a failure of the whole command. Returns (errors, job id -> Slurm's refusal, reachable)."""
        errors: list[str] = []
        failed: dict[int, str] = {}
        for cmd in commands:
            try:
                self.client.run(*cmd)
                continue
            except SlurmError as err:
                lost = controller_lost(err)
                per_id = failed_ids(err.stderr, refs) if refs and not lost else None
                if per_id is None:
                    errors.append(str(err))
                    log.warning("%s failed: %s", action.kind, err, extra=log_fields(action, "failed"))
                else:
                    failed.update(per_id)
                    log.warning("%s: %d job id(s) not changed: %s", action.kind, len(per_id),
                                "; ".join(f"{k}: {v}" for k, v in per_id.items()))
            if lost or not slurmctld_reachable(self.client):  # then per-id lines were the outage talking
                said = errors or [f"{k}: {v}" for k, v in failed.items()]
                return said + ["slurmctld unreachable"], {}, False
        return errors, failed, True

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
