"""The SiteFactor the cycle set last on each pending job, kept between cycles (``site-factors.json`` in the
cycle's state directory), so a cycle sends slurmctld only the SiteFactors that change
(:func:`~slurm_plugin.cycle.decide.unchanged_site_factors_dropped`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..decision import SetSiteFactor
from ..decision.applier import Applied
from ..fsio import load_state, write_file_atomic


def _parse(doc: object) -> dict[int, int]:
    if not isinstance(doc, dict):
        raise ValueError("not an object of job id -> SiteFactor")
    return {int(k): int(v) for k, v in doc.items()}


def load_site_factors(path: Path) -> dict[int, int]:
    """Job id -> SiteFactor; empty when the file is missing (a damaged one is moved aside, see ``load_state``)."""
    return load_state(path, _parse, dict, "SiteFactor memory")


def save_site_factors(path: Path, site_factors: Mapping[int, int], loaded: Mapping[int, int] | None = None) -> bool:
    """Write ``site_factors`` (atomically) unless they equal ``loaded``, what this cycle read: a cycle that
    changed no SiteFactor (the usual case on a large, steady queue) rewrites nothing. True if written."""
    if loaded is not None and dict(site_factors) == dict(loaded):
        return False
    write_file_atomic(path, json.dumps({str(k): v for k, v in sorted(site_factors.items())}) + "\n")
    return True


def applied_site_factors(remembered: Mapping[int, int], results: Iterable[Applied]) -> dict[int, int]:
    """``remembered`` without the jobs whose SiteFactor update Slurm did not take this cycle, or the apply budget
    deferred (they are sent again next cycle)."""
    failed = {j for r in results if isinstance(r.action, SetSiteFactor) and not r.ok
              for j in ((*r.failed_ids, *r.deferred_ids) if r.failed_ids or r.deferred_ids else r.action.job_ids)}
    return {j: v for j, v in remembered.items() if j not in failed}


def load_deferred(path: Path) -> set[int]:
    """The jobs whose update the last cycle's apply budget deferred (``deferred-jobs.json``): this cycle sends
    theirs first (:func:`~slurm_plugin.decision.applier.by_urgency`); empty when the file is missing."""
    return set(load_state(path, _parse_ids, list, "deferred jobs"))


def _parse_ids(doc: object) -> list[int]:
    if not isinstance(doc, list):
        raise ValueError("not a list of job ids")
    return [int(j) for j in doc]


def save_deferred(path: Path, jobs: Iterable[int]) -> None:
    """Write the jobs this cycle deferred (atomically; an empty list when none were)."""
    write_file_atomic(path, json.dumps(sorted(set(jobs))) + "\n")
