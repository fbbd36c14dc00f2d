"""The shim's static tables for when no trusted daemon answers (``fallback.gres`` and ``sensitive`` in
hetsched-shim.json).

Slurm refuses a GPU/NPU job that names no partition when the default partition has no such GRES ("Requested
node configuration is not available"), so failing open would lose it. The table maps each GRES name, and each
``name:type``, to the UP partition holding the most node groups' nodes with it (ties: the larger share of
the partition's nodes, then site order), from the site file alone: no snapshot, so it never goes stale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site


def gres_fallback(site: Site) -> dict[str, str]:
    """``{"gpu": "gpu", "gpu:a100": "gpu", "npu": "npu", ...}`` for ``site`` (sorted by key)."""
    scores: dict[str, list[tuple[tuple[int, float, int], str]]] = {}
    for order, part in enumerate(site.partitions):
        if part.state != "UP":
            continue
        groups = [site.group(n) for n in part.node_groups]
        total = sum(g.count for g in groups) or 1
        held: dict[str, int] = {}
        for g in groups:
            for key in {k for name, gtype, _ in g.gres for k in (name, f"{name}:{gtype}" if gtype else name)}:
                held[key] = held.get(key, 0) + g.count
        for key, nodes in held.items():
            scores.setdefault(key, []).append(((nodes, nodes / total, -order), part.name))
    return {key: max(options)[1] for key, options in sorted(scores.items())}


def sensitive_fallback(site: Site) -> dict | None:
    """What the shim needs to keep isolation without the daemon (job_submit.lua, sensitive_without_daemon):
    ``{"classes": {name: form is "sensitive"}, "default_class": name or None, "partitions": [...]}``, the
    sensitive partitions in site order; None when the site has neither a sensitive class nor a sensitive
    partition (the shim then skips the check)."""
    classes = {c.name: c.form == "sensitive" for c in site.policy.workload_classes}
    partitions = list(site.sensitive_partitions())
    if not partitions and not any(classes.values()):
        return None
    return {"classes": classes, "default_class": site.policy.default_class, "partitions": partitions}
