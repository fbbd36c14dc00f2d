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
MAX_SITE_BYTES = 1 << 20  # the largest bundled site is 7 KB
MAX_YAML_NODES = 200_000  # values after YAML aliases are expanded (a few aliases can stand for billions)


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
    if _too_many_nodes(data):
        raise SiteError(source, [Problem((), f"more than {MAX_YAML_NODES:,} values once YAML aliases are "
                                             "expanded: not a site description")])
    try:
        site = Site.model_validate(data)
    except ValidationError as err:
        raise SiteError(source, _pydantic_problems(err)) from None
    problems = list(site_problems(site))
    if problems:
        raise SiteError(source, problems)
    return site


def _read_text(path: Path) -> str:
    """The file as UTF-8 text, at most :data:`MAX_SITE_BYTES`; a :class:`SiteError` for anything else."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SITE_BYTES + 1)
    except OSError as err:
        raise SiteError(source, [Problem((), f"cannot read site file: {err.strerror}")]) from None
    if len(raw) > MAX_SITE_BYTES:
        raise SiteError(source, [Problem((), f"larger than {MAX_SITE_BYTES:,} bytes: not a site file")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise SiteError(source, [Problem((), f"not UTF-8 text (byte {err.start} on line {line}): a binary "
                                             "file? expected a YAML site description")]) from None
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise SiteError(source, [Problem((), f"NUL byte on line {line}: a binary file? expected YAML text")])
    return text


def _too_many_nodes(data: object, budget: int = MAX_YAML_NODES) -> bool:
    """Whether ``data`` has more than ``budget`` values counting every alias use (stops at the budget)."""
    stack, seen = [data], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > budget:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def load_site(name_or_path: str | Path | None = None) -> Site:
    """Load and validate a site file (see :func:`resolve_site_path` for what may be named)."""
    path = resolve_site_path(name_or_path)
    source = str(path)
    text = _read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SiteError(source, [Problem((), f"not valid YAML: {where}{getattr(err, 'problem', err)}")]) from None
    if isinstance(data, dict) and data.get("speed_factors"):
        from .factors import apply_speed_factors

        data = apply_speed_factors(data, path)
    return parse_site(data, source)
