"""``hetsched why``: why a job or a node is where it is - Slurm's view plus every reasoned action the suite took.

Job ids as Slurm writes them: ``123``, an array task ``123_4``, array tasks ``123_[1-3,7]`` (each task in turn)
and a heterogeneous job component ``123+1``. Slurm's live view comes from ``scontrol show job``; a job Slurm no
longer remembers (finished longer than MinJobAge ago) comes from ``sacct`` when accounting is on, and in any
case from the suite's journal, which keeps every decision about it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import click
import hostlist

from ..decision import Journal
from ..decision.applier import controller_lost, slurmctld_reachable
from ..slurm import SlurmClient, SlurmError
from .actions import slurm_failure
from .common import EXIT_FAIL, emit_json, fail, handle_errors
from .output import json_option

DEFAULT_JOURNAL = "/var/lib/hetsched/journal.jsonl"
journal_option = click.option("--journal", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_JOURNAL,
                              show_default=True, envvar="HETSCHED_JOURNAL", help="The daemon's action journal.")
JOB_KEYS = ("JobId", "ArrayJobId", "ArrayTaskId", "HetJobId", "HetJobOffset", "JobState", "Reason", "Partition",
            "Features", "Priority", "NodeList", "Comment")
NODE_KEYS = ("State", "Reason", "Partitions", "AvailableFeatures", "Gres", "CPUAlloc")
MAX_TASKS = 1000  # an array range expands to at most this many tasks
_JOB_ID = re.compile(r"^(?P<job>\d+)(?:_(?P<task>\d+|\[[\d,\-]+\])|\+(?P<het>\d+))?$")


def parse_job_ids(text: str) -> list[str]:
    """The job ids ``text`` names, in Slurm's notation (``123``, ``123_4``, ``123+1``; ``123_[1-3]`` expanded).

    Raises click.BadParameter for anything else (``4242_3`` is never read as 42423)."""
    m = _JOB_ID.match(text.strip())
    if not m:
        raise click.BadParameter(f"{text!r} is not a job id (123, 123_4, 123_[1-3] or 123+1)", param_hint="JOB_ID")
    task = m["task"]
    if task and task.startswith("["):
        try:
            tasks = hostlist.expand_hostlist(f"t{task}")
        except hostlist.BadHostlist as err:
            raise click.BadParameter(f"bad array range {task}: {err}", param_hint="JOB_ID") from None
        if len(tasks) > MAX_TASKS:
            raise click.BadParameter(f"{text} names {len(tasks)} tasks (at most {MAX_TASKS})", param_hint="JOB_ID")
        return [f"{m['job']}_{int(t[1:])}" for t in tasks]
    return [text.strip()]


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_for(entry: dict, job_id: int | None) -> str:
    """``ok``, ``DEFERRED ...`` (the apply budget left it for the next cycle) or ``FAILED (why)`` for this job: a
    batched update that failed or was deferred only for other ids was ok here."""
    deferred = entry.get("deferred_ids") if isinstance(entry.get("deferred_ids"), list) else []
    failed = entry.get("failed_ids") if isinstance(entry.get("failed_ids"), dict) else {}
    if deferred and (job_id is None or job_id in deferred):
        return "DEFERRED to the next cycle (apply budget spent)"
    if job_id is not None and (failed or deferred):
        return f"FAILED ({failed[str(job_id)]})" if str(job_id) in failed else "ok"
    return "ok" if entry.get("ok") else f"FAILED ({entry.get('error')})"


def _show(view: dict, keys: tuple[str, ...], entries: list[dict], job_id: int | None = None) -> None:
    for k in keys:
        if view.get(k):
            click.echo(f"{k:>16}: {view[k]}")
    click.echo(f"{'decisions':>16}: {len(entries) or 'none by hetsched'}")
    for e in entries:
        when = _when(e["t"]) if isinstance(e.get("t"), (int, float)) else "?"
        cause = f" ({e['cause']})" if e.get("cause") else ""
        click.echo(f"  {when} {e.get('kind', '?')}{cause}: {e.get('reason', '')} [{status_for(e, job_id)}]")


def _state_option(what: str, name: str, text: str):
    """``--<what>-state``: a state file of the cycle (default in /var/lib/hetsched, ``$HETSCHED_<WHAT>_STATE``)."""
    return click.option(f"--{what}-state", type=click.Path(dir_okay=False, path_type=Path),
                        default=f"/var/lib/hetsched/{name}", show_default=True,
                        envvar=f"HETSCHED_{what.upper()}_STATE", help=text)


@click.group()
def why() -> None:
    """Explain where a job or node is and which of the suite's decisions put it there."""


def _sacct(client: SlurmClient, spec: str) -> dict[str, str]:
    """The job's accounting record (empty without accounting or if sacct does not know it)."""
    fields = ("JobIDRaw", "JobID", "State", "Partition", "NodeList", "Reason", "Constraints")
    try:
        out = client.run("sacct", "-X", "-n", "-P", "-j", spec, "-o", ",".join(fields), check=False).stdout
    except SlurmError:
        return {}
    for line in out.splitlines():
        values = line.split("|")
        if len(values) == len(fields):
            rec = dict(zip(fields, values))
            return {"JobId": rec["JobIDRaw"], "JobState": rec["State"], "Partition": rec["Partition"],
                    "NodeList": rec["NodeList"], "Reason": rec["Reason"], "Features": rec["Constraints"]}
    return {}


def explain_job(client: SlurmClient, journal: Journal, spec: str) -> dict:
    """What is known about job ``spec``: ``source`` (slurm, sacct or journal), Slurm's fields and the journal's
    decisions about its raw id (``job_id``)."""
    source, view, said = "slurm", {}, ""
    try:
        view = client.show_job(spec)  # type: ignore[arg-type]  (scontrol takes Slurm's id notation)
    except SlurmError as err:
        if controller_lost(err) or not slurmctld_reachable(client):
            raise  # not "Slurm no longer knows it": Slurm did not answer at all
        said = err.stderr
    if not view:
        source, view = "sacct", _sacct(client, spec)
    if not view:
        source = "journal"
    raw = view.get("JobId", spec if spec.isdigit() else "")
    job_id = int(raw) if str(raw).isdigit() else None
    entries = journal.about_job(job_id) if job_id is not None else []
    from ..dag.submit import place_of, state_dir

    array = view.get("ArrayJobId")
    graph = place_of(int(array) if str(array).isdigit() else job_id, state_dir())
    return {"job": spec, "job_id": job_id, "source": source, "slurm": {k: view.get(k) for k in JOB_KEYS},
            "slurm_said": said if source != "slurm" else "", "decisions": entries, "graph": graph}


@why.command("job")
@click.argument("job_spec", metavar="JOB_ID")
@journal_option
@json_option
@handle_errors(SlurmError)
def job_cmd(job_spec: str, journal: Path, as_json: bool) -> None:
    """Why job JOB_ID (123, 123_4, 123_[1-3], 123+1) has its partition, features, priority and nodes.

    Exit 1 if neither Slurm, accounting nor the journal knows the job, 4 if slurmctld did not answer."""
    client, jr = SlurmClient(), Journal(journal)
    try:
        found = [explain_job(client, jr, spec) for spec in parse_job_ids(job_spec)]
    except SlurmError as err:
        slurm_failure(err, client)
    if as_json:
        emit_json(found[0] if len(found) == 1 and "[" not in job_spec else found)
    else:
        for i, info in enumerate(found):
            if len(found) > 1:
                click.echo(("\n" if i else "") + f"job {info['job']}:")
            if info["source"] != "slurm":
                click.echo(f"{'source':>16}: {info['source']} (Slurm no longer knows it: {info['slurm_said'] or '-'})")
            _show(info["slurm"], JOB_KEYS, info["decisions"], info["job_id"])
            if info["graph"]:
                from ..dag.submit import describe_place

                click.echo(f"{'graph':>16}: {describe_place(info['graph'])}")
    unknown = [i["job"] for i in found if i["source"] == "journal" and not i["decisions"]]
    if unknown:
        fail(f"no record of job {', '.join(unknown)} in Slurm, accounting or the journal {journal}", EXIT_FAIL)


@why.command("node")
@click.argument("node")
@journal_option
@json_option
@_state_option("scale", "scale-memory.json", "The planner's memory (the node's power history).")
@handle_errors(SlurmError)
def node_cmd(node: str, journal: Path, as_json: bool, scale_state: Path) -> None:
    """Why NODE is up, down, drained or in its partitions (the journal alone if Slurm does not know it).

    Exit 4 if slurmctld did not answer."""
    client = SlurmClient()
    try:
        view = client.show_node(node)
    except SlurmError as err:
        if controller_lost(err) or not slurmctld_reachable(client):
            slurm_failure(err, client)
        view = {}
        click.echo(f"hetsched: Slurm does not know node {node}: {err.stderr}", err=True)
    entries = Journal(journal).about_node(node)
    if as_json:
        emit_json({"slurm": {k: view.get(k) for k in NODE_KEYS}, "decisions": entries})
    else:
        _show(view, NODE_KEYS, entries)
        from ..scale.memory_store import describe_power

        for i, line in enumerate(describe_power(scale_state, node)):
            click.echo(f"{'power':>16}: {line}" if i == 0 else line)
    if not view and not entries:
        fail(f"no record of node {node} in Slurm or the journal {journal}", EXIT_FAIL)


def _tuned_ranking(path: str | None) -> tuple[str | None, str | None]:
    """The ranking the policy file at ``path`` names and why ``hetsched tune`` chose it (its ``twin.why``); what
    cannot be read (gone, changed into something invalid) gives None, said on stderr."""
    if not path:
        return None, None
    from ..policy import PolicyError, load_policy
    from ..tune.candidates import label

    try:
        spec = load_policy(path)
    except (OSError, PolicyError) as err:
        click.echo(f"hetsched: {path}: {err}", err=True)
        return None, None
    return label(spec.ranking), spec.twin.why if spec.twin else None


@why.command("policy")
@journal_option
@json_option
@_state_option("guard", "guard-state.json", "The live guard's memory (beside the journal).")
def policy_cmd(journal: Path, as_json: bool, guard_state: Path) -> None:
    """Which policy file the cycle runs, how it does against its twin's prediction, and every rollback by the
    live guard (README 'Live guard'). Exit 1 if the guard has never run and never rolled back."""
    import json

    from ..cycle.guard_memory import memory_from_json

    memory = None
    try:
        memory = memory_from_json(json.loads(guard_state.read_bytes()))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, TypeError, KeyError) as err:  # read only: the cycle moves a bad file aside
        click.echo(f"hetsched: {guard_state} unreadable: {err}", err=True)
    last = memory.last if memory else {}
    entries = [e for e in Journal(journal).entries() if e.get("kind") == "policy"]
    ranking, chosen = _tuned_ranking(last.get("path"))
    if as_json:
        emit_json({"policy": last.get("path"), "sha256": memory.policy_sha256 if memory else None,
                   "since": memory.since if memory else None, "ranking": ranking, "chosen_because": chosen,
                   "last": last, "decisions": entries})
    else:
        if last:
            click.echo(f"{'policy':>16}: {last.get('path')} (sha256 {memory.policy_sha256[:12]}, "
                       f"running since {_when(memory.since)})")
            if ranking:
                click.echo(f"{'ranking':>16}: {ranking}" + (f" (tune: {chosen})" if chosen else ""))
            click.echo(f"{'guard':>16}: {last.get('verdict')} (at {_when(last['t'])})")
        _show({}, (), entries)
    if not last and not entries:
        fail(f"the live guard has no record in {guard_state} or the journal {journal}", EXIT_FAIL)
