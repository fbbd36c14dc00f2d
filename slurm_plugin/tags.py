"""The suite's job comment tags: ``key=value`` words in a job's comment (``--comment="class=web tier=silver"``)
and admission's own annotation ``hetsched:class=web,tier=silver``. Bottom layer: admission writes them, the
cycle, the live ranker and the workload readers read them."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[\s,;]+")
TAG_PREFIX = "hetsched:"


def comment_tags(comment: str | None) -> dict[str, str]:
    """``key=value`` words of a job comment, keys lower case, first one wins; the suite's own annotation
    prefix is read away, so ``--comment="class=web tier=silver"`` and admission's
    ``hetsched:class=web,tier=silver,flex=aarch64|x86_64`` read alike."""
    out: dict[str, str] = {}
    for word in _TOKEN.split(comment or ""):
        key, eq, value = word.partition("=")
        key = key.lower().removeprefix(TAG_PREFIX)
        if eq and key and value:
            out.setdefault(key, value)
    return out


def format_tags(**tags: str) -> str:
    """The annotation admission writes: ``format_tags(class_="web", tier="-")`` -> ``hetsched:class=web,tier=-``
    (a trailing ``_`` is dropped from a key, for Python keywords); :func:`comment_tags` reads it back."""
    return TAG_PREFIX + ",".join(f"{k.removesuffix('_')}={v}" for k, v in tags.items())
