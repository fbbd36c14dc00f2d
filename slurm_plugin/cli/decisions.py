"""``hetsched decisions``: the cycle's decisions from the journal, filtered by time, node, job, kind, cause and
outcome, through the journal's SQLite index (every action the applier ran, with its reason and the cycle's
inputs). Retention is the journal's: rotated at 64 MiB or 30 days, the newest 8 rotated files kept.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import typing
from pathlib import Path

import click
import hostlist

from ..decision.actions import Action
from ..decision.journal import DecisionFilter, Journal
from .common import EXIT_FAIL, emit_json, fail
from .output import json_option
from .why import journal_option, parse_job_ids, status_for

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
KINDS = tuple(cls.__dataclass_fields__["kind"].default for cls in typing.get_args(Action))


def parse_when(text: str, now: float, option: str) -> float:
    """``30m``, ``1h``, ``2d`` (that long before ``now``) or an ISO-8601 time (UTC unless it says) -> Unix time;
    click.BadParameter names the option and the forms it takes."""
    m = _AGO.match(text.strip().lower())
    if m:
        return now - float(m[1]) * _UNIT_S[m[2]]
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected a duration (30m, 1h, 2d, 1w) or an ISO-8601 time "
                                 "(2026-12-01T10:00:00Z)", param_hint=option) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def target(entry: dict) -> str:
    """What an entry acted on, short: a hostlist, job ids (count beyond 5), a partition or a policy file."""
    if isinstance(entry.get("nodes"), list) and entry["nodes"]:
        return hostlist.collect_hostlist([str(n) for n in entry["nodes"]])
    if isinstance(entry.get("job_ids"), list):
        ids = [str(i) for i in entry["job_ids"]]
        return ",".join(ids) if len(ids) <= 5 else f"{','.join(ids[:5])},... ({len(ids)} jobs)"
    for key in ("job_id", "partition", "to", "path"):
        if entry.get(key) is not None:
            return str(entry[key])
    return "-"


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@click.command()
@journal_option
@click.option("--since", help="Only decisions from then on: 30m, 1h, 2d, 1w ago or an ISO-8601 time.")
@click.option("--until", "until_", metavar="WHEN", help="Only decisions up to then (same forms as --since).")
@click.option("--node", help="Only decisions about this node.")
@click.option("--job", help="Only decisions about this job id.")
@click.option("--kind", type=click.Choice(KINDS), help="Only this kind of action.")
@click.option("--cause", help="Only this cause (BACKLOG, IDLE_GRACE, PACKING, POLICY_ROLLBACK ...).")
@click.option("--failed", is_flag=True, help="Only actions that were not applied in full.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True,
              help="At most this many, the newest.")
@json_option
def decisions(journal: Path, since: str | None, until_: str | None, node: str | None, job: str | None,
              kind: str | None, cause: str | None, failed: bool, limit: int, as_json: bool) -> None:
    """List the cycle's decisions (oldest first): time, outcome, kind, cause, target and reason; --json adds
    each one's full record with the inputs it was made from. Exit 1 when none matches."""
    now = time.time()
    job_id = None
    if job is not None:
        [spec] = parse_job_ids(job)[:1]
        if not spec.isdigit():
            raise click.BadParameter(f"{job!r}: the journal records whole job ids (123)", param_hint="--job")
        job_id = int(spec)
    where = DecisionFilter(since=parse_when(since, now, "--since") if since else None,
                           until=parse_when(until_, now, "--until") if until_ else None, job=job_id, node=node,
                           kind=kind, cause=cause.upper() if cause else None, failed=failed, limit=limit)
    found = Journal(journal).decisions(where)
    if as_json:
        emit_json(found)
    else:
        for e in found:
            status = status_for(e, job_id)
            click.echo(f"{_when(e['t'])}  {status if status == 'ok' else 'FAILED':<6} {e.get('kind', '?'):<11} "
                       f"{e.get('cause') or '-':<15} {target(e):<24} {e.get('reason', '')}"
                       + ("" if status == "ok" else f"  [{status}]"))
    if not found:
        fail(f"no decision in {journal} matches", EXIT_FAIL)
