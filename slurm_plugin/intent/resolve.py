"""An :class:`~.grammar.Intent` checked against the site (and the cost plan, when given) and turned into sbatch
directives, or refused with the reason.

What becomes what:

* the verb -> the workload class whose name contains it (train -> ai-training), else the site's default class;
  written as ``--comment=class=NAME`` (admission reads it) plus ``costmax=AMOUNTCUR`` when a budget is given;
* ``on N GPUs`` -> ``--gpus=N`` (one node if a node has N of them: ``--nodes=1``); ``on N nodes`` ->
  ``--nodes=N``; ``on N cores`` -> ``--ntasks=1 --cpus-per-task=N``; accelerator types -> ``--constraint=a|b``
  (``any type``: every type of that kind the class can use; ``fastest``: the class's fastest type only;
  ``cheapest``: all, cheapest first - Slurm's node Weight is the cost, so it tries them in that order);
* ``render 500 frames`` -> ``--array=1-500``; ``finish by W`` -> ``--deadline``; ``start W`` -> ``--begin``;
  ``this weekend`` -> begin Saturday 00:00 (now if it is the weekend), deadline Monday 00:00; ``tonight`` ->
  19:00 .. 07:00; ``for D`` / ``D each`` -> ``--time`` (per array task);
* a budget bounds the estimate ``tasks x hours x rate`` (rate: the cheapest group the job can run on, its
  ``cost_per_hour`` times the share of a node the job takes); with no duration given, the time limit is the
  longest the budget pays for (refused under one minute).

Refusals (``IntentRefused``, with the reason): a deadline in the past or before begin + time limit; a type or
resource the site does not have for the class; an estimate over the budget; a cost plan that keeps every group
the job can use off for too much of the window (``plan.power`` of ``hetsched cost plan --output``).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..pack.classes import accel_type, per_node, speed_table
from .grammar import Intent, When

if TYPE_CHECKING:
    from ..site import NodeGroup, Site

HOUR = 3600.0
MIN_TIME_S = 60.0


class IntentRefused(ValueError):
    """The intent is well-formed but cannot be met; the message says why."""


@dataclass(frozen=True)
class Derived:
    """What an intent became: sbatch options in order, and the facts behind them."""

    options: tuple[str, ...]
    workload_class: str
    begin: dt.datetime | None
    deadline: dt.datetime | None
    time_limit_s: float | None
    tasks: int
    groups: tuple[str, ...]  # node groups the job can run on, cheapest first
    estimate: float | None  # cost estimate (currency) at the time limit
    budget: float | None
    currency: str
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        iso = lambda t: t.isoformat() if t else None  # noqa: E731
        return {"options": list(self.options), "class": self.workload_class, "begin": iso(self.begin),
                "deadline": iso(self.deadline), "time_limit_s": self.time_limit_s, "tasks": self.tasks,
                "groups": list(self.groups), "estimate": self.estimate, "budget": self.budget,
                "currency": self.currency, "notes": list(self.notes)}


def _at(day: dt.date, hhmm: str | None, tz: dt.tzinfo, default: str) -> dt.datetime:
    h, m = (int(x) for x in (hhmm or default).split(":"))
    return dt.datetime.combine(day, dt.time(h, m), tz)


def when_to_datetime(w: When, now: dt.datetime, default_time: str = "00:00") -> dt.datetime:
    """The next time ``w`` names after ``now`` (a weekday is this week's, or next week's once it has passed)."""
    tz = now.tzinfo
    today = now.date()
    if w.date:
        return _at(dt.date.fromisoformat(w.date), w.time, tz, default_time)
    if w.relative in ("today", None) and w.day is None:
        return _at(today, w.time, tz, default_time)
    if w.relative == "tomorrow":
        return _at(today + dt.timedelta(days=1), w.time, tz, default_time)
    if w.relative == "tonight":
        return _at(today, w.time, tz, "19:00")
    ahead = (w.day - today.weekday()) % 7
    when = _at(today + dt.timedelta(days=ahead), w.time, tz, default_time)
    if when <= now:
        when += dt.timedelta(days=7)
    if w.next_week and ahead != 0:
        when += dt.timedelta(days=7)
    return when


def _class(site: Site, verb: str | None) -> str:
    names = [wc.name for wc in site.policy.workload_classes]
    stem = {"fine-tune": "train", "finetune": "train", "serve": "infer", "analyze": "analy",
            "analyse": "analy", "simulate": "sim"}.get(verb or "", verb or "")
    for name in names:
        if stem and stem in name:
            return name
    return site.policy.default_class or (names[-1] if names else "batch")


def _candidates(site: Site, cls: str, intent: Intent) -> list[tuple[NodeGroup, float, str | None]]:
    """(group, speed, accelerator type) of every group the class can run on that has what the intent asks."""
    out = []
    for g in site.node_groups:
        speed = dict(speed_table(site, g)).get(cls, 1.0) if site.policy.workload_classes else 1.0
        if speed <= 0:
            continue
        acc = accel_type(g)
        kind = ("gpu" if g.gpu else g.accelerators[0].kind if g.accelerators else None)
        if intent.resource in ("gpu", "npu") and kind != intent.resource:
            continue
        if intent.types and acc not in intent.types:
            continue
        if (intent.types or intent.any_type) and acc is None:
            continue
        out.append((g, speed, acc))
    return out


def _share(g: NodeGroup, intent: Intent) -> tuple[float, int]:
    """(nodes of this group one task takes, fractional; nodes it spans)."""
    node = per_node(g)
    if intent.resource in ("gpu", "npu"):
        nodes = math.ceil(intent.amount / max(node.accels, 1))
        return (intent.amount / max(node.accels, 1)), nodes
    if intent.resource == "node":
        return float(intent.amount), intent.amount
    if intent.resource == "core":
        return min(1.0, intent.amount / max(node.cpus, 1)), 1
    return 1.0 / max(node.cpus, 1), 1  # one core


def _window(intent: Intent, now: dt.datetime) -> tuple[dt.datetime | None, dt.datetime | None]:
    begin = when_to_datetime(intent.start_at, now) if intent.start_at else None
    deadline = when_to_datetime(intent.finish_by, now, "23:59") if intent.finish_by else None
    if intent.window == "weekend":
        sat = when_to_datetime(When(day=5), now - dt.timedelta(days=2))  # this weekend, or now within it
        w_begin, w_end = sat, sat + dt.timedelta(days=2)
        if now.weekday() >= 5:
            w_begin, w_end = now, _at(now.date() + dt.timedelta(days=7 - now.weekday()), None, now.tzinfo, "00:00")
    elif intent.window == "week":
        w_begin = now
        w_end = _at(now.date() + dt.timedelta(days=7 - now.weekday()), None, now.tzinfo, "00:00")
    elif intent.window == "tonight":
        w_begin = max(now, _at(now.date(), None, now.tzinfo, "19:00"))
        w_end = _at(now.date() + dt.timedelta(days=1), None, now.tzinfo, "07:00")
    else:
        w_begin = w_end = None
    begin = begin or (w_begin if w_begin and w_begin > now else None)
    deadline = deadline or w_end
    return begin, deadline


def _plan_hours(plan: dict, group: str, nodes: int, start: dt.datetime, end: dt.datetime) -> int:
    """Hours between start and end in which the cost plan keeps at least ``nodes`` of ``group`` on
    (hours outside the plan count as on)."""
    p0 = dt.datetime.fromisoformat(plan["start"]).timestamp()
    step = float(plan.get("hour_s", HOUR))
    on = plan["power"].get(group)
    t, count = start.timestamp(), 0
    while t + step <= end.timestamp() + 1e-6:
        k = int((t - p0) // step)
        if on is None or k < 0 or k >= len(on) or on[k] >= nodes:
            count += 1
        t += step
    return count


def resolve(intent: Intent, site: Site, now: dt.datetime | None = None, plan: dict | None = None) -> Derived:
    """The directives of ``intent`` on ``site`` at ``now`` (aware; default: now, local time)."""
    if now is None:
        now = dt.datetime.now().astimezone()  # sbatch reads --begin/--deadline in local time
    cls = _class(site, intent.verb)
    notes = []
    cands = _candidates(site, cls, intent)
    if not cands:
        what = (" or ".join(intent.types) if intent.types else f"{intent.resource}s" if intent.resource else "nodes")
        raise IntentRefused(f"class {cls} has no node group with {what} on site {site.name}")
    if intent.resource in ("gpu", "npu"):
        cands = [c for c in cands if _share(c[0], intent)[1] <= c[0].count]
        if not cands:
            raise IntentRefused(f"no node group has {intent.amount} {intent.resource.upper()}s")
    tasks = intent.items or 1
    currency = next((c.tariff.currency for c in site.clusters if c.tariff), intent.currency or "EUR")
    if intent.currency and intent.currency != currency:
        raise IntentRefused(f"the budget is in {intent.currency} but the site's costs are in {currency}")
    # cost per task-hour of each candidate, cheapest per unit of work first
    rated = sorted(((g.cost_per_hour * _share(g, intent)[0] / speed, g, speed, acc) for g, speed, acc in cands),
                   key=lambda r: (r[0], r[1].name))
    if intent.goal == "fastest":
        top = max(speed for _, _, speed, _ in rated)
        rated = [r for r in rated if r[2] == top]
    groups = tuple(r[1].name for r in rated)
    begin, deadline = _window(intent, now)
    start = begin or now
    if deadline is not None and deadline <= now:
        raise IntentRefused(f"the deadline {deadline:%a %Y-%m-%d %H:%M} has passed")
    time_s = intent.duration_s
    rate = rated[0][0]  # per task-hour at speed 1
    estimate = None
    if intent.budget is not None:
        if time_s is None:
            time_s = math.floor(intent.budget / max(rate * tasks, 1e-12) * HOUR / 60) * 60
            if deadline is not None:
                time_s = min(time_s, (deadline - start).total_seconds())
            if time_s < MIN_TIME_S:
                raise IntentRefused(f"{intent.budget:g} {currency} pays for under a minute of {tasks} task(s) on "
                                    f"{rated[0][1].name} ({rate * tasks:.2f} {currency}/h)")
            notes.append(f"time limit {time_s / HOUR:.2f} h: what {intent.budget:g} {currency} pays for")
        estimate = round(rate * tasks * time_s / HOUR, 2)
        if estimate > intent.budget + 1e-9:
            raise IntentRefused(f"estimated {estimate:.2f} {currency} ({tasks} task(s) x {time_s / HOUR:.2f} h x "
                                f"{rate:.3f} {currency}/h on {rated[0][1].name}, the cheapest) is over the bound "
                                f"{intent.budget:g} {currency}")
    elif time_s is not None:
        estimate = round(rate * tasks * time_s / HOUR, 2)
    if deadline is not None and time_s is not None and start + dt.timedelta(seconds=time_s) > deadline:
        raise IntentRefused(f"cannot finish by {deadline:%a %Y-%m-%d %H:%M}: {time_s / HOUR:.2f} h from "
                            f"{start:%a %Y-%m-%d %H:%M} ends at "
                            f"{start + dt.timedelta(seconds=time_s):%a %Y-%m-%d %H:%M}")
    if deadline is not None and time_s is None:
        time_s = (deadline - start).total_seconds()
        notes.append("time limit: until the deadline")
    if plan is not None and deadline is not None and time_s is not None:
        need = math.ceil(time_s / HOUR)
        ok = [r[1].name for r in rated if _plan_hours(plan, r[1].name, _share(r[1], intent)[1], start, deadline)
              >= need]
        if not ok:
            raise IntentRefused(f"the cost plan keeps {', '.join(groups)} off for too much of "
                                f"{start:%a %H:%M} .. {deadline:%a %H:%M} to give {need} h")
        groups = tuple(g for g in groups if g in ok)
    return Derived(_options(intent, cls, rated, groups, begin, deadline, time_s, tasks, currency), cls, begin,
                   deadline, time_s, tasks, groups, estimate, intent.budget, currency, tuple(notes))


def _slurm_time(seconds: float) -> str:
    minutes = max(1, int(seconds // 60))
    d, rem = divmod(minutes, 1440)
    return f"{d}-{rem // 60:02d}:{rem % 60:02d}:00" if d else f"{rem // 60:02d}:{rem % 60:02d}:00"


def _options(intent, cls, rated, groups, begin, deadline, time_s, tasks, currency) -> tuple[str, ...]:
    opts = []
    comment = f"class={cls}"
    if intent.budget is not None:
        comment += f" costmax={intent.budget:g}{currency}"
    opts.append(f"--comment={comment}")
    if intent.resource in ("gpu", "npu"):
        first = next(r[1] for r in rated if r[1].name in groups)
        nodes = _share(first, intent)[1]
        if intent.resource == "gpu":
            opts.append(f"--gpus={intent.amount}")
        else:
            opts.append(f"--gres=npu:{math.ceil(intent.amount / nodes)}")
        opts.append(f"--nodes={nodes}")
    elif intent.resource == "node":
        opts.append(f"--nodes={intent.amount}")
    elif intent.resource == "core":
        opts += ["--ntasks=1", f"--cpus-per-task={intent.amount}"]
    types = list(dict.fromkeys(r[3] for r in rated if r[1].name in groups and r[3]))
    if types and (intent.types or intent.any_type or intent.goal == "fastest"):
        opts.append(f"--constraint={'|'.join(types)}")
    if tasks > 1:
        opts.append(f"--array=1-{tasks}")
    if begin is not None:
        opts.append(f"--begin={begin:%Y-%m-%dT%H:%M:%S}")
    if deadline is not None:
        opts.append(f"--deadline={deadline:%Y-%m-%dT%H:%M:%S}")
    if time_s is not None:
        opts.append(f"--time={_slurm_time(time_s)}")
    return tuple(opts)
