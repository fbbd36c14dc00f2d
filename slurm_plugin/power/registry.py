"""Where power backends are registered by name."""

from __future__ import annotations

from collections.abc import Callable

from .base import PowerBackend


def _local(**kw) -> PowerBackend:
    from .local import LocalPower

    if not kw.get("cluster"):
        raise ValueError("the local backend needs --cluster (the local cluster's root directory)")
    return LocalPower(kw["cluster"])


BACKENDS: dict[str, Callable[..., PowerBackend]] = {"local": _local}


def make_backend(name: str, **kwargs) -> PowerBackend:
    if name not in BACKENDS:
        raise ValueError(f"unknown power backend '{name}' (known: {', '.join(sorted(BACKENDS))})")
    return BACKENDS[name](**kwargs)
