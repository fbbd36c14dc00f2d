"""Write the tuned policy file: the chosen ranking, the packing switch when the packing sweep ran (:mod:`.packing`;
else packing is kept), every other section of the previous file kept as it was (packing, scaling unless the power
tuner chose one, reshape, steps, budget, ..., else the defaults), plus the ``twin:`` section (what the history was, the objective, the predicted held-back metrics,
the runner-up and the previous file).

The previous file is kept beside the new one as ``<stem>-<UTC time of its last change><suffix>`` and named in
``twin.previous`` (the guard's rollback target); both writes are atomic (:mod:`slurm_plugin.fsio`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

from ..policy import PolicyError, RankingSpec, policy_from_dict

# the sections `tune` writes; every other top-level section of the previous file is kept as it was (packing,
# scaling unless the power tuner chose one, reshape, steps, budget and any section added later)
SECTIONS_OWNED = ("ranking", "twin")


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def previous_sections(path: Path) -> dict:
    """Every section of the policy file at ``path`` but those tune owns (ranking, twin), in the file's order
    (checked), or {} when there is none."""
    if not path.exists():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise PolicyError(str(path), f"the previous policy file cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise PolicyError(str(path), "the previous policy file is not a mapping")
    kept = {k: v for k, v in data.items() if k not in SECTIONS_OWNED}
    policy_from_dict(kept, str(path))
    return kept


def ranking_section(spec: RankingSpec) -> dict:
    """The ranking as written: only the keys its choice reads."""
    d = dataclasses.asdict(spec)
    if spec.name != "weighted":
        for k in ("w_estimate", "w_size", "w_age"):
            d.pop(k, None)
    if spec.name != "dqn" or d.get("model") is None:
        d.pop("model", None)
    return d


def policy_document(ranking: RankingSpec, twin: dict, kept: dict) -> dict:
    """The file's content; the policy part is checked with the policy spec's own validation."""
    doc = {"ranking": ranking_section(ranking), **kept, "twin": twin}
    policy_from_dict(doc, "<tuned policy>")
    return doc


def keep_previous(path: Path) -> Path | None:
    """Copy the file at ``path`` (if any) to its dated name beside it; returns that name."""
    if not path.exists():
        return None
    from ..fsio import write_file_atomic

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(path.stat().st_mtime))
    target = path.with_name(f"{path.stem}-{stamp}{path.suffix}")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.stem}-{stamp}-{n}{path.suffix}"), n + 1
    write_file_atomic(target, path.read_bytes())
    return target


def write_policy(path: str | Path, ranking: RankingSpec, twin: dict, scaling=None,
                 packing: bool | None = None) -> Path:
    """Write the tuned policy to ``path`` atomically; the file there before is kept and named in
    ``twin.previous``. ``scaling`` (a ScalingSpec, e.g. the power tuner's choice) replaces the kept one;
    ``packing`` (the packing sweep's choice; None: not swept) sets ``packing.enabled`` (the previous file's
    other packing keys kept). Returns ``path``."""
    import yaml

    from ..fsio import write_file_atomic

    path = Path(path)
    kept = previous_sections(path)
    if scaling is not None:
        from .power import scaling_section

        kept["scaling"] = scaling_section(scaling)
    if packing is not None:
        kept["packing"] = {**kept.get("packing", {}), "enabled": bool(packing)}
    previous = keep_previous(path)
    twin = {**twin, "previous": str(previous.resolve()) if previous else None}
    doc = policy_document(ranking, twin, kept)
    head = "# written by `hetsched tune`: the ranking chosen by replaying the site's history (twin: how)\n"
    return write_file_atomic(path, head + yaml.safe_dump(doc, sort_keys=False))
