"""Choose among scored candidates: pure, on small tables.

Each candidate comes with its objective on each rolling-origin validation block (``blocks``; the objective
is their mean, i.e. the expected objective on a future block of the same length, since the blocks hold equal
job counts) and its max wait in each block (``block_max_wait``). Rules, in order:

1. the constraint, per block: a block binds when at least one candidate keeps its max wait within the bound
   there; a candidate over the bound in a binding block is out (a block where no ranking keeps the promise
   rules nobody out; when no candidate is left, none is ruled out and the choice says so);
   **the bound's price** (``bound_price``, session 22): when the best objective within the bound is more than
   ``bound_price`` times the best objective of all, the bound is dropped and the choice says what keeping it
   would have cost. Why: on overloaded histories only a few candidates (the age-floor variants, multifactor) keep
   the bound on the tuning part, at many times the others' bounded slowdown, and held back they broke it anyway
   in 12 of 16 cells (``results/tune/unseen-session19``); a promise no ranking keeps is not bought at any price.
   ``None`` keeps the bound at any price (the rule before session 22);
2. the best objective among the rest;
3. a tie: a candidate is tied with the best when it is within noise (its paired per-block difference from the
   best at most ``z`` standard errors; blocks, so both see the same jobs) and the best's lead is not both
   practically relevant and consistent: either the candidate is practically equal (objective within ``rel_tol``
   of the best's) or the best is ahead of it in no more than half of the blocks (session 10: a lead carried by
   one busy block while the candidate is ahead or equal in the others is the selection noise a future window
   reverses; KTH-SP2 with backfill: the chosen DQN+floor led SJF+floor by 9 % on the mean, from one block of
   four, 0.8 standard errors, and lost held back). Not the one-standard-error rule alone:
   the fixed rankings have no fitted parameters and the weighted family is fitted on other jobs, so every
   validation figure is an equally noisy, unbiased estimate and a simpler candidate is no safer a bet;
   the first evaluation (Lublin-1, backfill on) with the SE rule alone chose F1 (validation 32.9) over the
   fitted member (24.1), which then lost on the held-back part (35.4 vs 20.3);
4. a tie is broken by evidence first, then by keeping what runs (:func:`choose`'s ``stressed`` and
   ``incumbent``; rule 4 written before any result it produced):
   a. **at raised load**: the tied candidates replayed on the tuning part with its arrivals compressed until
      the validation part's offered load reaches :data:`STRESS_LOAD` (``tune/stress.py``), judged by rules
      1-3 on the same blocks; a single winner there wins. Why: candidates the site's own load cannot tell
      apart (a quiet history: nobody waits, every ranking scores the same) differ only when jobs queue, and
      a site's load is not fixed; among candidates equal at today's load, the one best when the machine is
      busy is at least as good at any load the history showed and better when contention comes. A candidate
      chosen so is never worse than the others on the validation blocks (it is tied there);
   b. **the incumbent** (the ranking the site runs now: the policy file being replaced, else the shipped
      default) when it is still among the tied: no switch without evidence;
   c. else the simplest (lowest complexity; then the better objective).
   "Tied" is rule 3's band at each stage; a history whose
   validation part is already at :data:`STRESS_LOAD` or above has no raised-load replay (stage a is skipped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

STRESS_LOAD = 0.9  # the offered load (bottleneck resource) of the raised-load tie-break replay (rule 4a)
BOUND_PRICE: float | None = 1.5  # rule 1's price limit by default (None: the bound at any price)


class Scored(Protocol):
    """What the bound looks at: an :class:`Entry` or a :class:`slurm_plugin.tune.score.Score`."""

    objective: float
    max_wait_s: float


@dataclass(frozen=True)
class Entry:
    """One candidate's validation result."""

    label: str
    complexity: float
    objective: float
    max_wait_s: float
    blocks: tuple[float, ...] = ()
    block_max_wait: tuple[float, ...] = ()  # per block; empty: max_wait_s is the only block


@dataclass(frozen=True)
class Choice:
    winner: str
    runner_up: str | None
    best: str  # the best objective among the feasible (may differ from the winner when tied)
    feasible: tuple[str, ...]
    tied: tuple[str, ...]
    bound_s: float | None
    constrained: bool  # False when no candidate met the bound, or keeping it cost over the price: it was dropped
    why: str
    decided_by: str = "validation"  # validation | raised load | incumbent | simplest (rule 4's stages)
    stress_tied: tuple[str, ...] = ()  # the candidates still tied at raised load (rule 4a; empty: not replayed)
    bound_cost: float | None = None  # best objective within the bound / best of all (None: no candidate over it)
    priced_out: bool = False  # the bound was dropped because bound_cost exceeded the price (rule 1)


def within_noise(candidate: Sequence[float], best: Sequence[float], z: float = 1.0) -> bool:
    """True when ``candidate`` is not worse than ``best`` by more than ``z`` standard errors of the paired
    block differences (no blocks: only an equal mean ties)."""
    import numpy as np  # here: `hetsched tune --help` reads BOUND_PRICE without numpy

    a, b = np.asarray(candidate, float), np.asarray(best, float)
    if len(a) != len(b) or len(a) < 2:
        return bool(len(a) == len(b) and len(a) and a.mean() <= b.mean())
    d = a - b
    se = d.std(ddof=1) / math.sqrt(len(d))
    return bool(d.mean() <= z * se + 1e-12 * max(1.0, abs(b.mean())))


def _waits(e: Entry) -> tuple[float, ...]:
    return e.block_max_wait or (e.max_wait_s,)


def _feasible(entries: Sequence[Entry], bound_s: float | None) -> tuple[list[Entry], int]:
    """The candidates within the bound in every binding block (rule 1), and how many blocks bind."""
    if bound_s is None:
        return list(entries), 0
    n = {len(_waits(e)) for e in entries}
    if len(n) != 1:
        raise ValueError(f"candidates have different block counts ({sorted(n)})")
    binding = [k for k in range(n.pop()) if any(_waits(e)[k] <= bound_s for e in entries)]
    return [e for e in entries if all(_waits(e)[k] <= bound_s for k in binding)], len(binding)


def leads_consistently(best: Sequence[float], other: Sequence[float]) -> bool:
    """True when ``best`` has the lower objective in a strict majority of the paired blocks (no blocks, or
    different counts: True, i.e. the mean alone decides)."""
    if len(best) != len(other) or len(best) < 2:
        return True
    return 2 * sum(a < b for a, b in zip(best, other)) > len(best)


def _small(e: Entry, best: Entry, rel_tol: float) -> bool:
    return e.objective <= best.objective * (1 + rel_tol) + 1e-12


def _tied(e: Entry, best: Entry, z: float, rel_tol: float, consistency: bool) -> bool:
    """Rule 3: within noise of the best, and the best's lead is not both practically relevant (over
    ``rel_tol``) and, with ``consistency``, consistent (ahead in a strict majority of the blocks)."""
    if e is best:
        return True
    if not within_noise(e.blocks, best.blocks, z):
        return False
    return _small(e, best, rel_tol) or (consistency and not leads_consistently(best.blocks, e.blocks))


def bound_cost(entries: Sequence[Scored], feasible: Sequence[Scored]) -> float:
    """What keeping the bound costs: the best objective within it over the best of all (1: it costs nothing)."""
    kept, free = min(e.objective for e in feasible), min(e.objective for e in entries)
    return kept / free if free > 0 else (1.0 if kept <= free else math.inf)


def within_bound(scores: Mapping[str, Scored], bound_s: float | None, price: float | None = BOUND_PRICE) -> list[str]:
    """Rule 1 on one part (the weighted family's fit, a halving rung): the labels (in ``scores``' order) whose max
    wait is within ``bound_s``; every label when there is no bound, when none is within it, or when keeping it
    costs more than ``price`` (:func:`bound_cost`)."""
    ok = [lab for lab, sc in scores.items() if bound_s is None or sc.max_wait_s <= bound_s]
    if not ok or (price is not None and len(ok) < len(scores)
                  and bound_cost(list(scores.values()), [scores[lab] for lab in ok]) > price):
        return list(scores)
    return ok


def _rank(entries: Sequence[Entry], bound_s: float | None, z: float, rel_tol: float, consistency: bool = True,
          price: float | None = None):
    """Rules 1-3: (feasible, best, tied, constrained, binding blocks, bound cost, priced out)."""
    feasible, binding = _feasible(entries, bound_s)
    constrained = bound_s is not None and binding > 0 and bool(feasible)
    cost = bound_cost(entries, feasible) if constrained and len(feasible) < len(entries) else None
    priced_out = cost is not None and price is not None and cost > price
    if not constrained or priced_out:
        feasible, constrained = list(entries), False
    best = min(feasible, key=lambda e: (e.objective, e.complexity))
    tied = [e for e in feasible if _tied(e, best, z, rel_tol, consistency)]
    return feasible, best, tied, constrained, binding, cost, priced_out


def _simplest(tied: Sequence[Entry]) -> Entry:
    return min(tied, key=lambda e: (e.complexity, e.objective))


def choose(entries: Sequence[Entry], bound_s: float | None = None, z: float = 1.0, rel_tol: float = 0.01, *,
           stressed: Sequence[Entry] | None = None, stress_factor: float | None = None,
           incumbent: str | None = None, consistency: bool = True, bound_price: float | None = BOUND_PRICE) -> Choice:
    """The winner among ``entries`` (non-empty; labels unique) by the module's rules. ``stressed``: the tied
    candidates' entries at raised load (rule 4a; labels of ``entries``, the same blocks; arrivals compressed
    ``stress_factor`` times, for the reason); ``incumbent``: the label of the ranking the site runs now (4b);
    ``consistency``: rule 3's consistency clause (False: the session-9 rule, tied only within ``rel_tol``);
    ``bound_price``: rule 1's price limit (at raised load too; None: the bound at any price)."""
    if not entries:
        raise ValueError("no candidate to choose from")
    if bound_price is not None and not bound_price >= 1.0:
        raise ValueError(f"bound_price must be >= 1 (the bound's cost is a ratio of objectives), got {bound_price}")
    feasible, best, tied, constrained, binding, cost, priced_out = _rank(entries, bound_s, z, rel_tol, consistency,
                                                                         bound_price)
    winner, decided_by, stress_tied, how = best, "validation", (), "the best objective"
    if len(tied) > 1:
        pool = tied
        by_label = {e.label: e for e in tied}
        at_load = [e for e in (stressed or ()) if e.label in by_label]
        if len(at_load) > 1:
            s_feasible, s_best, s_tied, *_ = _rank(at_load, bound_s, z, rel_tol, consistency, bound_price)
            stress_tied = tuple(e.label for e in s_tied)
            pool = [by_label[e.label] for e in s_tied]
            load = f"arrivals compressed {stress_factor:.3g}x" if stress_factor else "raised load"
            if len(s_tied) == 1:
                winner, decided_by = by_label[s_best.label], "raised load"
                ahead = ("it is ahead of the others" if len(s_feasible) == len(at_load) else
                         f"it is ahead of the {len(s_feasible) - 1} other(s) within the max-wait bound there "
                         f"({len(at_load) - len(s_feasible)} over it)")
                how = (f"{len(tied)} candidates tied on validation; at raised load ({load}: objective "
                       f"{s_best.objective:.4g}) {ahead}")
        if decided_by == "validation":
            names = ", ".join(e.label for e in pool)
            still = f"still tied at raised load ({names})" if stress_tied else f"tied ({names})"
            if incumbent is not None and incumbent in {e.label for e in pool}:
                winner, decided_by = by_label[incumbent], "incumbent"
                how = f"{still}: the incumbent is kept (no switch without evidence)"
            else:
                winner, decided_by = _simplest(pool), "simplest"
                how = f"{still}: the simplest"
    rest = sorted((e for e in feasible if e is not winner), key=lambda e: (e.objective, e.complexity))
    runner = rest[0] if rest else None
    why = [f"objective {winner.objective:.4g}", how]
    if winner is not best and decided_by != "raised load":
        close = f"within {rel_tol:.0%}" if _small(winner, best, rel_tol) else "behind it in at most half of the blocks"
        why.append(f"{close} and {z:g} standard error of the paired block differences of the best ({best.label}, "
                   f"{best.objective:.4g})")
    if priced_out:
        free = min(entries, key=lambda e: (e.objective, e.complexity))
        why.append(f"keeping the max-wait bound ({bound_s:.0f} s) would cost {cost:.3g}x the best objective "
                   f"({free.label}), over the price limit {bound_price:g}x: bound dropped (--bound-price)")
    elif bound_s is not None:
        why.append(f"max wait within the bound {bound_s:.0f} s in the {binding} block(s) where some candidate kept it"
                   if constrained and binding else
                   f"no candidate met the max-wait bound ({bound_s:.0f} s): bound dropped")
        out = len(entries) - len(feasible)
        if constrained and out:
            why.append(f"{out} candidate(s) over the bound")
            free = min(entries, key=lambda e: (e.objective, e.complexity))
            if free.objective < winner.objective:  # what keeping the bound costs on validation, said plainly
                why.append(f"the bound's price: without it {free.label} leads ({free.objective:.4g}, "
                           f"{winner.objective / max(free.objective, 1e-12):.3g}x better; --no-bound)")
    return Choice(winner.label, runner.label if runner else None, best.label, tuple(e.label for e in feasible),
                  tuple(e.label for e in tied), bound_s, constrained, "; ".join(why), decided_by, stress_tied, cost,
                  priced_out)
