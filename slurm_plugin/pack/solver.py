"""The injected MILP solver interface and what a solver answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .model import PackingProblem
from .options import Options
from .rows import Rows

OPTIMAL, TIME_LIMIT, ERROR = "optimal", "time_limit", "error"
# HiGHS options every interface sets. Presolve is off: with HiGHS 1.16 and presolve on, the LP-rounded MIP start
# was valued lower "in the reduced space" (500 x 10: 16206.7 instead of 17136.5) and the solve then ran on to a
# worse incumbent or for 1.27 s instead of 0.025 s on 2,000 x 20 (results/pack/README.md has the figures).
HIGHS_OPTIONS: dict[str, object] = {"threads": 1, "presolve": "off"}


@dataclass(frozen=True)
class MilpAnswer:
    """A solver's raw answer. ``status``: ``optimal`` (within the asked gap), ``time_limit`` (incumbent at
    the limit), ``error`` (no usable solution; ``detail`` says why). ``x`` has one entry per option, ``y``
    one per pool; ``bound`` is the solver's proven upper bound on the objective."""

    status: str
    x: np.ndarray | None = None
    y: np.ndarray | None = None
    bound: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    detail: str = ""


class MilpSolver(Protocol):
    """Solves the packing MILP described by ``opts`` and ``rows`` (see :mod:`slurm_plugin.pack.rows`).

    ``warm`` is a feasible (x, y) to start from; ``time_limit_s`` and ``rel_gap`` are passed to the solver.
    ``cancel`` may be called from another thread to stop a running solve; it must be safe to call any time.
    ``relaxation`` returns the LP relaxation's optimum (x, y), or None if it has none to offer in time."""

    name: str

    def solve(self, problem: PackingProblem, opts: Options, rows: Rows, warm: tuple[np.ndarray, np.ndarray] | None,
              time_limit_s: float, rel_gap: float) -> MilpAnswer: ...

    def cancel(self) -> None: ...

    def relaxation(self, problem: PackingProblem, opts: Options, rows: Rows, time_limit_s: float
                   ) -> tuple[np.ndarray, np.ndarray] | None: ...
