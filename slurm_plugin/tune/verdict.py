"""The evaluation's verdict on one backfill mode (issue 13's ranking target), pure, on the evaluation JSON's
``ranking`` rows of that mode.

The fair comparison: the tuner keeps a max-wait bound, so its choice is judged against the best *fixed*
candidate (family ``fixed``: the heuristics, multifactor and the shipped DQN, each with and without the age
floor) among those that keep the same bound on the held-back part (held-back max wait <= bound). The best fixed
candidate regardless of the bound (the comparator in hindsight) is always reported beside it. When no fixed
candidate keeps the bound held back, when there is no bound, or when the choice itself is over the bound held
back (it paid nothing for the bound there, so it is owed no easier comparator), the choice is judged against
that unconstrained best and the verdict says so plainly. Verdicts are strict: any difference in average bounded
slowdown counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

WITHIN = "within the bound"  # RankingVerdict.basis values
NONE_WITHIN = "no fixed heuristic meets the bound"
NO_BOUND = "no bound"
CHOICE_OVER = "the choice is over the bound"
_REL = 1e-9  # relative difference below which two averages are equal (float noise only)


@dataclass(frozen=True)
class HeldBack:
    """One row's figures on the held-back part."""

    policy: str
    avg_bsld: float
    max_wait_s: float


@dataclass(frozen=True)
class RankingVerdict:
    backfill: bool
    bound_s: float | None
    tuned: HeldBack
    comparator: HeldBack  # what the verdict is against (see ``basis``)
    unconstrained: HeldBack  # the best fixed candidate held back, bound or not
    basis: str  # WITHIN | NONE_WITHIN | NO_BOUND | CHOICE_OVER
    within: int  # fixed candidates that keep the bound held back
    fixed: int  # fixed candidates scored held back
    verdict: str  # better | tie | WORSE

    @property
    def gain_pct(self) -> float:
        """The choice against the comparator, in % of the comparator's avg bsld (negative: better)."""
        return 100.0 * (self.tuned.avg_bsld / self.comparator.avg_bsld - 1.0)

    @property
    def tuned_within_bound(self) -> bool | None:
        return None if self.bound_s is None else self.tuned.max_wait_s <= self.bound_s

    def text(self) -> str:
        """One plain sentence: the verdict, what it is against, and the unconstrained best."""
        t, c, u = self.tuned, self.comparator, self.unconstrained
        head = f"{self.verdict}: {t.policy} {t.avg_bsld:.2f} vs {c.policy} {c.avg_bsld:.2f} ({self.gain_pct:+.1f} %)"
        if self.basis == WITHIN:
            why = (f"the best of the {self.within} of {self.fixed} fixed heuristics that keep the max-wait bound "
                   f"{self.bound_s:.0f} s held back")
        elif self.basis == NONE_WITHIN:
            why = (f"no fixed heuristic meets the max-wait bound {self.bound_s:.0f} s held back (the least max wait "
                   f"is over it): judged against the best fixed one regardless of the bound")
        elif self.basis == CHOICE_OVER:
            why = (f"the tuned choice is over the max-wait bound {self.bound_s:.0f} s held back ({self.within} of "
                   f"{self.fixed} fixed heuristics keep it): judged against the best fixed one regardless of the bound")
        else:
            why = "no max-wait bound: judged against the best fixed heuristic"
        out = f"{head}; {why}"
        if self.basis == WITHIN and u == c:
            out += "; it is also the best fixed regardless of the bound"
        elif self.basis == WITHIN:
            out += (f"; the best fixed regardless of the bound: {u.policy} {u.avg_bsld:.2f} "
                    f"(max wait {u.max_wait_s:.0f} s; tuned vs it {100.0 * (t.avg_bsld / u.avg_bsld - 1.0):+.1f} %)")
        if self.tuned_within_bound is False and self.basis != CHOICE_OVER:
            out += f"; the tuned choice itself is over the bound held back (max wait {t.max_wait_s:.0f} s)"
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(gain_pct=self.gain_pct, tuned_within_bound=self.tuned_within_bound, text=self.text())
        return d


def _side(row: dict) -> HeldBack:
    return HeldBack(str(row["policy"]), float(row["avg_bsld"]), float(row["max_wait_s"]))


def judge(rows: Sequence[dict], bound_s: float | None) -> RankingVerdict:
    """The verdict on one backfill mode's rows (each with ``policy``, ``avg_bsld``, ``max_wait_s``, ``chosen``,
    ``family``, ``backfill``). Raises ValueError when the rows lack a chosen row or any fixed row."""
    chosen = [r for r in rows if r.get("chosen")]
    fixed = [r for r in rows if r.get("family") == "fixed"]
    if len(chosen) != 1 or not fixed:
        raise ValueError(f"judge: need exactly one chosen row and at least one fixed row "
                         f"(got {len(chosen)} chosen, {len(fixed)} fixed)")
    best = lambda rs: min(rs, key=lambda r: (r["avg_bsld"], r["max_wait_s"]))  # noqa: E731
    unconstrained = best(fixed)
    within = [r for r in fixed if bound_s is not None and r["max_wait_s"] <= bound_s]
    over = bound_s is not None and chosen[0]["max_wait_s"] > bound_s
    comparator = best(within) if within and not over else unconstrained
    basis = NO_BOUND if bound_s is None else NONE_WITHIN if not within else CHOICE_OVER if over else WITHIN
    t, c = chosen[0]["avg_bsld"], comparator["avg_bsld"]
    verdict = "better" if t < c * (1 - _REL) else "tie" if t <= c * (1 + _REL) else "WORSE"
    return RankingVerdict(bool(chosen[0].get("backfill", True)), bound_s, _side(chosen[0]), _side(comparator),
                   _side(unconstrained), basis, len(within), len(fixed), verdict)


def judge_evaluation(doc: dict) -> dict[str, RankingVerdict]:
    """Per backfill mode present (``"on"``/``"off"``), the verdict on an evaluation JSON
    (``hetsched tune --evaluate``); a mode without a fixed candidate (``--candidates`` left them out) has none."""
    out = {}
    for bf in (True, False):
        rows = [r for r in doc["ranking"] if r["backfill"] == bf]
        if any(r.get("family") == "fixed" for r in rows):
            out["on" if bf else "off"] = judge(rows, doc.get("max_wait_bound_s"))
    return out
