"""Read a site file into a validated :class:`Site`, or raise one :class:`SiteError` naming every problem."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from ..data import data_dir
from .checks import site_problems
from .errors import Problem, SiteError
from .schema import Site

SITE_CONFIGS = data_dir("site_configs")
DEFAULT_SITE = "demo"


def resolve_site_path(name_or_path: str | Path | None) -> Path:
    """A path as given, or the name of a bundled example (``demo``, ``large``); ``None`` is the default site."""
    if name_or_path is None:
        name_or_path = DEFAULT_SITE
    path = Path(name_or_path)
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in str(name_or_path):
        return path
    return SITE_CONFIGS / f"{name_or_path}.yaml"


def _pydantic_problems(err: ValidationError) -> list[Problem]:
    problems = []
    errors = err.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "too_short" and any(o[: len(loc)] == loc and o != loc for o in locs):
            continue  # "0 items after validation" only echoes the errors of its items
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] not in ("value_error", "assertion_error") and "input" in e and not isinstance(
            e["input"], (dict, list)
        ):
            msg += f" (got {e['input']!r})"
        problems.append(Problem(loc, msg))
    return problems


def parse_site(data: object, source: str = "<site>") -> Site:
    """Validate already-parsed YAML/JSON data into a Site."""
    if not isinstance(data, dict):
        raise SiteError(source, [Problem((), f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        site = Site.model_validate(data)
    except ValidationError as err:
        raise SiteError(source, _pydantic_problems(err)) from None
    problems = list(site_problems(site))
    if problems:
        raise SiteError(source, problems)
    return site


def load_site(name_or_path: str | Path | None = None) -> Site:
    """Load and validate a site file (see :func:`resolve_site_path` for what may be named)."""
    path = resolve_site_path(name_or_path)
    source = str(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise SiteError(source, [Problem((), f"cannot read site file: {err.strerror}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SiteError(source, [Problem((), f"not valid YAML: {where}{getattr(err, 'problem', err)}")]) from None
    return parse_site(data, source)
