"""Does a node's feature list satisfy a job's ``--constraint``? One reading for every reader of the snapshot."""

from __future__ import annotations

import re
from collections.abc import Iterable

_BRACKETS = re.compile(r"[\[\]() ]")


def constraint_matches(expr: str | None, features: Iterable[str]) -> bool:
    """True if ``features`` satisfy ``expr`` in the common forms: ``a&b`` (and; ``,`` too), ``a|b`` (or),
    ``[a|b]`` (brackets and parentheses are read as grouping of a plain or). An empty constraint matches.

    >>> constraint_matches("aarch64|x86_64", ["x86_64", "eu-west"])
    True
    >>> constraint_matches("x86_64&smartnic", ["x86_64"])
    False
    """
    if not expr:
        return True
    have = set(features)
    alternatives = _BRACKETS.sub("", expr).split("|")
    return any(all(t in have for t in re.split(r"[&,]", alt) if t) for alt in alternatives)
