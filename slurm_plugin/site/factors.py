"""The measured speed-factor overlay of a site: ``speed_factors: FILE`` in the site file names a file written by
``hetsched hw bench analyze --factors FILE`` (benchmarks run as Slurm jobs); the loader sets each node group's
``speed_factor`` from it, so the packing, the simulator and the cost model use measured speeds.

The file (YAML or JSON)::

    version: 1
    generated_at: "2026-12-01T16:30:00Z"
    provenance: {results: /shared/bench/2026-12-01, jobs: [101, 102], metrics: [gemm_gflops, triad_gbs], ...}
    groups: {cpu-arm: 0.93, cpu-x86: 1.0}          # node group -> factor (> 0, <= 10)
    nodes: {armn1: {gemm_gflops: 1.01, ...}, ...}  # per node, for the record (not used by the model)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem, SiteError


def read_overlay(path: Path) -> dict[str, Any]:
    """The overlay at ``path``, checked: version 1, ``groups`` a mapping of names to factors in (0, 10]."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SiteError(source, [Problem((), f"cannot read the speed-factor overlay: {err.strerror}")]) from None
    try:
        doc = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise SiteError(source, [Problem((), f"not valid YAML/JSON: {err}")]) from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("groups"), dict):
        raise SiteError(source, [Problem((), "a speed-factor overlay needs version: 1 and groups: {group: factor}")])
    problems = [Problem(("groups", str(g)), f"factor {f!r} is not a number in (0, 10]")
                for g, f in doc["groups"].items()
                if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 10]
    if problems:
        raise SiteError(source, problems)
    return doc


def apply_speed_factors(data: dict[str, Any], site_path: Path) -> dict[str, Any]:
    """``data`` (a parsed site file naming ``speed_factors``) with each overlay group's ``speed_factor`` set;
    a group the site does not have is an error naming the overlay and the group. Pure but for reading it."""
    overlay_path = Path(str(data["speed_factors"]))
    if not overlay_path.is_absolute():
        overlay_path = Path(site_path).resolve().parent / overlay_path
    doc = read_overlay(overlay_path)
    factors = {str(g): float(f) for g, f in doc["groups"].items()}
    clusters = data.get("clusters")
    known = {g.get("name") for c in clusters or [] if isinstance(c, dict) for g in c.get("node_groups") or []
             if isinstance(g, dict)}
    unknown = sorted(set(factors) - known)
    if unknown:
        raise SiteError(str(overlay_path), [Problem(("groups", g), f"no node group '{g}' in {site_path}")
                                            for g in unknown])
    out = dict(data)
    out["clusters"] = [{**c, "node_groups": [{**g, "speed_factor": factors[g["name"]]} if isinstance(g, dict)
                                             and g.get("name") in factors else g for g in c.get("node_groups") or []]}
                       if isinstance(c, dict) else c for c in clusters]
    return out
