"""A batch script's ``#HETSCHED intent ...`` line at admission: the job_desc fields it sets, or the refusal.

The shim sends the line's text (``job.intent``) only when the script has one; the daemon resolves it here
(:func:`~.resolve.resolve` at the daemon's local time, the time sbatch reads ``--begin``/``--deadline`` in) and
admission applies what it derives as job_desc fields: ``features`` (the accelerator alternatives),
``comment`` (the class, cost bound and deadline as tags, unless the user wrote a comment), ``time_limit``
(minutes, unless the script set one; with a deadline, never past it) and ``begin_time`` (epoch seconds).
Slurm 22.05's job_submit/lua does not set a job's deadline (tried: the job showed Deadline=N/A), so the deadline
binds through the time limit and is kept in the comment; GPU counts and arrays are not changed here: the script
says them with #SBATCH lines (``hetsched submit --intent`` passes all of them to sbatch).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING

from .grammar import IntentSyntaxError, parse_intent
from .resolve import IntentRefused, resolve

if TYPE_CHECKING:
    from ..site import Site


def intent_fields(req, site: Site, now: dt.datetime | None = None) -> tuple[dict, str] | str:
    """(job_desc changes, reason) for the intent line of ``req`` (an admission JobRequest: its ``intent``,
    ``features``, ``comment``, ``time_limit``), or the refusal message."""
    try:
        derived = resolve(parse_intent(req.intent or ""), site, now or dt.datetime.now().astimezone())
    except (IntentSyntaxError, IntentRefused) as err:
        return f"#HETSCHED intent: {err}".replace("\n", " ")
    changes: dict[str, str | int] = {}
    for opt in derived.options:
        key, _, value = opt.partition("=")
        if key == "--constraint" and not req.features:
            changes["features"] = value
        elif key == "--comment" and not req.comment:
            changes["comment"] = value + (f" deadline={derived.deadline:%Y-%m-%dT%H:%M}" if derived.deadline else "")
    if derived.time_limit_s is not None and req.time_limit is None:
        changes["time_limit"] = max(1, math.floor(derived.time_limit_s / 60))
    if derived.begin is not None:
        changes["begin_time"] = int(derived.begin.timestamp())
    cost = f", estimate {derived.estimate:g} {derived.currency}" if derived.estimate is not None else ""
    return changes, f"intent: class {derived.workload_class} on {', '.join(derived.groups[:4])}{cost}"
