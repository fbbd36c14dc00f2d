"""The fault signature library: what each vendor's error lines and tool fields mean and what to do about them.

The library is data (``signatures/*.yaml``, package data, one file per vendor family, each with a ``version``
and the source document of its entries). A file looks like::

    version: 1
    vendor: nvidia
    source: {name: NVIDIA Xid Catalog, url: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html}
    prefilter: "NVRM: Xid"          # a literal every line of this file's regex signatures contains (speed)
    defaults: {subsystem: gpu}      # keys every entry gets unless it sets them
    signatures:
      - id: nvidia-xid-79
        match: {regex: 'NVRM: Xid \\(PCI:[0-9a-fA-F:.]+\\): 79,'}
        fault_class: gpu_lost
        severity: critical          # info | warning | error | critical
        action: drain_reboot        # see ACTIONS
        example: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
        counterexample: "NVRM: Xid (PCI:0000:3b:00): 7, pid=1234, ..."

A matcher is either ``regex`` (searched in one kernel/journal/SEL text line) or ``json`` (conditions on the
fields of one JSON object: a tool's output per device, a Redfish resource or log entry), e.g.
``{json: [{field: remapped_rows.pending, op: eq, value: "Yes"}]}``. Classifying a line gives the first
signature that matches it; the validator (:mod:`.validate`) makes sure no example matches two signatures, so
the order never decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, compress, repeat
from importlib.resources import files
from operator import contains, eq, not_
from pathlib import Path
from typing import Any

import yaml

SEVERITIES = ("info", "warning", "error", "critical")
# What to do when a signature matches (a node's whole response is the strongest action over all its matches):
ACTIONS = (
    "ignore",        # informational: recorded, nothing done
    "count",         # counted per node; at `threshold` occurrences within its window the node is drained
    "requeue",       # requeue the jobs running on the node; the node stays in service
    "drain",         # no new jobs; running ones finish
    "drain_reboot",  # drain, requeue the running jobs, and reboot the node (through its power backend)
    "replace",       # drain, requeue, and mark the node for hardware replacement
)
ACTION_RANK = {a: i for i, a in enumerate(ACTIONS)}
OPS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "match", "bits")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{1,80}$")
_CLASS = re.compile(r"^[a-z][a-z0-9_]{1,60}$")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the check loads the library on every run
UNION_MIN_ROWS = 64  # fewer rows of one literal are tried regex by regex: compiling its alternation costs more
DEFAULT_THRESHOLD = (10, 86400)  # (count, window seconds) of a `count` action without its own threshold


class SignatureError(ValueError):
    """A signature file that does not load: names the file, the entry and the field."""


@dataclass(frozen=True)
class Condition:
    """One condition of a json matcher on the (dotted) ``field`` of a JSON object."""

    field: str
    op: str
    value: Any

    def holds(self, obj: Mapping[str, Any]) -> bool:
        got = lookup(obj, self.field)
        if got is _MISSING:
            return False
        try:
            if self.op == "eq":
                return _norm(got) == _norm(self.value)
            if self.op == "ne":
                return _norm(got) != _norm(self.value)
            if self.op == "in":
                return _norm(got) in {_norm(v) for v in self.value}
            if self.op == "match":
                return re.search(self.value, str(got)) is not None
            if self.op == "bits":
                return int(str(got), 0) & int(self.value) != 0
            num, ref = float(got), float(self.value)
        except (TypeError, ValueError):
            return False
        return {"gt": num > ref, "ge": num >= ref, "lt": num < ref, "le": num <= ref}[self.op]


_MISSING = object()


def _norm(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


def lookup(obj: Mapping[str, Any], dotted: str) -> Any:
    """``obj[dotted]`` if that key exists (nvidia-smi's field names contain dots), else the nested path."""
    if dotted in obj:
        return obj[dotted]
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


@dataclass(frozen=True)
class Signature:
    """One fault signature. ``source`` is the vendor document its format and meaning come from."""

    id: str
    vendor: str
    subsystem: str
    fault_class: str
    severity: str
    action: str
    source: str
    example: str
    counterexample: str
    regex: re.Pattern[str] | None = None
    conditions: tuple[Condition, ...] = ()
    prefilter: str = ""
    threshold: tuple[int, int] | None = None  # (count, window seconds) for action `count`
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)  # e.g. Xid resolution buckets
    file: str = ""

    @property
    def kind(self) -> str:
        return "regex" if self.regex is not None else "json"

    def matches_text(self, line: str) -> bool:
        return self.regex is not None and (not self.prefilter or self.prefilter in line) and \
            self.regex.search(line) is not None

    def matches_obj(self, obj: Mapping[str, Any]) -> bool:
        return bool(self.conditions) and all(c.holds(obj) for c in self.conditions)

    def matches(self, line: str) -> bool:
        """Whether this signature matches one input line (a JSON object line goes to json matchers)."""
        obj = parse_json_line(line)
        return self.matches_obj(obj) if obj is not None else self.matches_text(line)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "vendor": self.vendor, "subsystem": self.subsystem, "fault_class": self.fault_class,
                "severity": self.severity, "action": self.action, "source": self.source}


def parse_json_line(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None if it is not one (text lines go to regex signatures)."""
    s = line.strip()
    if not s.startswith("{"):
        return None
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


# ---------------------------------------------------------------------------------------------- loading

_ENTRY_KEYS = {"id", "subsystem", "match", "fault_class", "severity", "action", "example", "counterexample",
               "threshold", "description", "source", "extra", "prefilter"}
_FILE_KEYS = {"version", "vendor", "source", "prefilter", "defaults", "signatures", "notes"}


def _err(where: str, msg: str) -> SignatureError:
    return SignatureError(f"{where}: {msg}")


def _source_text(src: Any, where: str) -> str:
    if isinstance(src, str) and src.strip():
        return src.strip()
    if isinstance(src, Mapping) and src.get("name"):
        return f"{src['name']} ({src['url']})" if src.get("url") else str(src["name"])
    raise _err(where, "source: needs a document name (and url)")


def _conditions(raw: Any, where: str) -> tuple[Condition, ...]:
    if not isinstance(raw, list) or not raw:
        raise _err(where, "match.json: a non-empty list of {field, op, value}")
    out = []
    for i, c in enumerate(raw):
        w = f"{where}: match.json[{i}]"
        if not isinstance(c, Mapping) or set(c) - {"field", "op", "value"} or "field" not in c:
            raise _err(w, "needs exactly field, op (default eq), value")
        op = c.get("op", "eq")
        if op not in OPS:
            raise _err(w, f"op: {op!r} (valid: {', '.join(OPS)})")
        if op == "match":
            try:
                re.compile(str(c.get("value")))
            except re.error as exc:
                raise _err(w, f"value: bad regex: {exc}") from None
        out.append(Condition(str(c["field"]), op, c.get("value")))
    return tuple(out)


def _entry(raw: Any, i: int, meta: Mapping[str, Any], fname: str) -> Signature:
    where = f"{fname}: signatures[{i}]"
    if not isinstance(raw, Mapping):
        raise _err(where, "must be a mapping")
    entry = {**meta.get("defaults", {}), **raw}
    if isinstance(raw.get("id"), str):
        where = f"{fname}: signatures[{i}] ({raw['id']})"
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise _err(where, f"unknown field(s) {', '.join(sorted(unknown))} (valid: {', '.join(sorted(_ENTRY_KEYS))})")
    for key in ("id", "subsystem", "match", "fault_class", "severity", "action", "example", "counterexample"):
        if key not in entry:
            raise _err(where, f"{key}: missing")
    if not _ID.match(str(entry["id"])):
        raise _err(where, f"id: {entry['id']!r} is not 2-81 lower-case letters, digits, '.', '_' or '-'")
    if not _CLASS.match(str(entry["fault_class"])):
        raise _err(where, f"fault_class: {entry['fault_class']!r} is not snake_case")
    if entry["severity"] not in SEVERITIES:
        raise _err(where, f"severity: {entry['severity']!r} (valid: {', '.join(SEVERITIES)})")
    if entry["action"] not in ACTIONS:
        raise _err(where, f"action: {entry['action']!r} (valid: {', '.join(ACTIONS)})")
    match = entry["match"]
    if not isinstance(match, Mapping) or len(match) != 1 or next(iter(match)) not in ("regex", "json"):
        raise _err(where, "match: exactly one of regex: PATTERN or json: [conditions]")
    regex, conditions = None, ()
    if "regex" in match:
        try:
            regex = re.compile(str(match["regex"]))
        except re.error as exc:
            raise _err(where, f"match.regex: {exc}") from None
    else:
        conditions = _conditions(match["json"], where)
    threshold = None
    if "threshold" in entry:
        t = entry["threshold"]
        if entry["action"] != "count" or not isinstance(t, Mapping) or set(t) != {"count", "window_s"} \
                or int(t["count"]) < 1 or int(t["window_s"]) < 1:
            raise _err(where, "threshold: {count: N >= 1, window_s: S >= 1}, only with action count")
        threshold = (int(t["count"]), int(t["window_s"]))
    elif entry["action"] == "count":
        threshold = DEFAULT_THRESHOLD
    for key in ("example", "counterexample"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise _err(where, f"{key}: a non-empty line")
    return Signature(
        id=str(entry["id"]), vendor=str(meta["vendor"]), subsystem=str(entry["subsystem"]),
        fault_class=str(entry["fault_class"]), severity=entry["severity"], action=entry["action"],
        source=_source_text(entry.get("source", meta.get("source")), where),
        example=entry["example"], counterexample=entry["counterexample"], regex=regex, conditions=conditions,
        prefilter=str(entry.get("prefilter", meta.get("prefilter", ""))) if regex is not None else "",
        threshold=threshold, description=str(entry.get("description", "")), extra=dict(entry.get("extra", {})),
        file=fname)


def load_file(path: Path) -> tuple[Signature, ...]:
    """The signatures of one file; raises :class:`SignatureError` naming file, entry and field."""
    fname = path.name
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise _err(fname, f"not valid YAML: {exc}") from None
    if not isinstance(doc, Mapping):
        raise _err(fname, "must be a mapping with version, vendor, source, signatures")
    unknown = set(doc) - _FILE_KEYS
    if unknown:
        raise _err(fname, f"unknown key(s) {', '.join(sorted(unknown))} (valid: {', '.join(sorted(_FILE_KEYS))})")
    if doc.get("version") != 1:
        raise _err(fname, f"version: {doc.get('version')!r} (this code reads version 1)")
    if not doc.get("vendor") or not isinstance(doc.get("signatures"), list):
        raise _err(fname, "needs vendor and a list of signatures")
    return tuple(_entry(raw, i, doc, fname) for i, raw in enumerate(doc["signatures"]))


def signature_dir() -> Path:
    """Where the shipped signature files are (package data)."""
    return Path(str(files(__package__) / "signatures"))


def load_library(directory: Path | None = None) -> Library:
    """Every ``*.yaml`` file of ``directory`` (default: the shipped library), in file-name order."""
    if directory is None:
        return _shipped()
    paths = sorted(Path(directory).glob("*.yaml"))
    if not paths:
        raise SignatureError(f"{directory}: no *.yaml signature files")
    return Library(tuple(s for p in paths for s in load_file(p)))


@lru_cache(maxsize=1)
def _shipped() -> Library:
    return load_library(signature_dir())


class Library:
    """The loaded signatures, indexed by prefilter literal for classifying many lines fast.

    Classifying a text line gives the same signature as trying every regex signature in library order (the
    validator's :meth:`matching` does exactly that). Two filters make most lines cheap: the prefilter literals
    a line contains are found by one scan (a trie of the literals) and, for literals starting with a lower-case
    letter, one substring search each (in log text nearly every character is a lower-case letter, so a trie of
    those would branch at nearly every character: twice the cost); a line without any reaches no regex. And one
    alternation of each literal's regexes rejects, in one search, a line that none of them matches (the benign
    lines of a driver that has signatures)."""

    def __init__(self, signatures: Iterable[Signature]):
        self.signatures = tuple(signatures)
        self.by_id = {s.id: s for s in self.signatures}
        self._json = [s for s in self.signatures if s.kind == "json"]
        self._order = {s.id: i for i, s in enumerate(self.signatures)}
        # prefilter literal -> its regex signatures (library order); a line is tried only against the signatures
        # whose literal it contains
        self._by_prefilter: dict[str, list[Signature]] = {}
        for s in self.signatures:
            if s.kind == "regex":
                self._by_prefilter.setdefault(s.prefilter, []).append(s)
        self._always = self._by_prefilter.pop("", [])
        self._solo = [p for p in self._by_prefilter if p[:1].islower()]  # each found by a substring search
        self._literals = _literal_scanner([p for p in self._by_prefilter if p not in self._solo])
        self._any: dict[str, re.Pattern[str]] = {}  # literal -> its regexes' alternation (:meth:`_union`)
        self._need: dict[str, str] = {}  # signature id -> the text every match of its regex contains

    def __len__(self) -> int:
        return len(self.signatures)

    def classify(self, line: str) -> Signature | None:
        """The signature ``line`` matches (the first in library order), or None."""
        obj = parse_json_line(line)
        if obj is not None:
            return next((s for s in self._json if s.matches_obj(obj)), None)
        present = self._present(line, (f for f in self._literals[0].findall(line) if f != "\n"))
        present.update(p for p in self._solo if p in line)
        return self._first(line, present)

    def classify_all(self, lines: Sequence[str]) -> list[tuple[int, Signature]]:
        """(index, signature) of every line of ``lines`` that a signature matches, in order: the same as
        :meth:`classify` on each line, with the Python work per literal, not per line. One scan of the joined
        text finds the literals of every line; each literal's regexes are then searched over all its lines at
        once (:meth:`_first_of`, in C: ``map``), and a line with several literals gets the first of their
        answers in library order. A line without a literal that is not a JSON object costs no Python at all."""
        scanner, within, overlapping = self._literals
        if self._always:
            return [(i, sig) for i, line in enumerate(lines) if (sig := self.classify(line)) is not None]
        text = "\n".join(lines)
        found = scanner.findall(text)  # each literal the scan finds, and each line end
        ends = list(map(eq, found, repeat("\n")))
        if sum(ends) != len(lines) - 1:  # a line holding a newline
            return [(i, sig) for i, line in enumerate(lines) if (sig := self.classify(line)) is not None]
        out: dict[int, Signature] = {}
        json_rows = set()
        for i in compress(range(len(lines)), map(contains, lines, repeat("{"))):
            obj = parse_json_line(lines[i])
            if obj is not None:
                json_rows.add(i)
                if (sig := self.classify_obj(obj)) is not None:
                    out[i] = sig
        is_lit = list(map(not_, ends))
        lits, rows = list(compress(found, is_lit)), list(compress(accumulate(map(int, ends)), is_lit))
        by_found = {lit: set(compress(rows, map(eq, lits, repeat(lit)))) for lit in set(lits)}  # -> its rows
        rows_of: dict[str, set[int]] = {}  # literal -> every row that contains it (``p in line``)
        for lit, rows in by_found.items():
            for p in within[lit]:
                rows_of.setdefault(p, set()).update(rows)
        for lit, rows in by_found.items():
            for q in overlapping[lit]:
                known = rows_of.setdefault(q, set())
                maybe = list(rows - known)
                known.update(compress(maybe, map(contains, map(lines.__getitem__, maybe), repeat(q))))
        for p in self._solo:
            if p in text:
                rows_of[p] = set(compress(range(len(lines)), map(contains, lines, repeat(p))))
        order = self._order
        for p, rows in rows_of.items():
            for i, sig in self._first_of(lines, sorted(rows - json_rows), p).items():
                old = out.get(i)
                if old is None or order[sig.id] < order[old.id]:
                    out[i] = sig
        return sorted(out.items())

    def _first_of(self, lines: Sequence[str], rows: list[int], p: str) -> dict[int, Signature]:
        """row -> the first signature of literal ``p`` (library order) that matches ``lines[row]``, for the
        ``rows`` (which contain ``p``) that one matches. Each regex is searched at once over the undecided rows
        that contain the plain text every match of it contains (:func:`_needed`, a fast substring test); when
        some regex of ``p`` has no such text and the rows are many, ``p``'s alternation first drops those none of
        its regexes matches."""
        sigs = self._by_prefilter[p]
        needs = [self._needed(s) for s in sigs]
        texts = [lines[i] for i in rows]
        if len(rows) > UNION_MIN_ROWS and len(sigs) > 1 and not all(needs):
            hit = list(map(self._union(p).search, texts))
            rows, texts = list(compress(rows, hit)), list(compress(texts, hit))
        out: dict[int, Signature] = {}
        for sig, need in zip(sigs, needs):
            if not rows:
                break
            cand = list(compress(range(len(texts)), map(contains, texts, repeat(need)))) if need else \
                range(len(texts))
            hit = list(compress(cand, map(sig.regex.search, map(texts.__getitem__, cand))))  # type: ignore[union-attr]
            if hit:
                out.update(dict.fromkeys(map(rows.__getitem__, hit), sig))
                keep = [True] * len(rows)
                for j in hit:
                    keep[j] = False
                rows, texts = list(compress(rows, keep)), list(compress(texts, keep))
        return out

    def _needed(self, sig: Signature) -> str:
        need = self._need.get(sig.id)
        if need is None:
            need = self._need[sig.id] = _needed(sig.regex)  # type: ignore[arg-type]
        return need

    def _union(self, p: str) -> re.Pattern[str]:
        """The alternation of literal ``p``'s regexes, compiled when first needed."""
        pat = self._any.get(p)
        if pat is None:
            pat = self._any[p] = _union(self._by_prefilter[p])
        return pat

    def _first(self, line: str, present: set[str] | frozenset[str]) -> Signature | None:
        """The first signature in library order among those of the literals ``present`` that matches."""
        if len(present) == 1 and not self._always:
            (p,) = present
            if self._union(p).search(line) is None:
                return None
            return next((s for s in self._by_prefilter[p] if s.regex.search(line)), None)
        groups = [self._by_prefilter[p] for p in present if self._union(p).search(line)]
        if self._always:
            groups.append(self._always)
        if not groups:
            return None
        candidates = groups[0] if len(groups) == 1 else sorted((s for g in groups for s in g),
                                                                   key=lambda s: self._order[s.id])
        return next((s for s in candidates if s.regex.search(line)), None)

    def _present(self, line: str, literals: Iterable[str]) -> set[str]:
        """The prefilter literals ``line`` contains (exactly those ``p in line`` holds for), from the ones the
        scanner found in it (the longest at each place it matched, not overlapping)."""
        _, within, overlapping = self._literals
        found: set[str] = set()
        for lit in literals:
            found |= within[lit]
            found.update(q for q in overlapping[lit] if q in line)
        return found

    def classify_obj(self, obj: Mapping[str, Any]) -> Signature | None:
        """The json signature a tool's or BMC's record matches, or None."""
        return next((s for s in self._json if s.matches_obj(obj)), None)

    def matching(self, line: str) -> list[Signature]:
        """Every signature that matches ``line`` (the validator's overlap check)."""
        return [s for s in self.signatures if s.matches(line)]


def _literal_scanner(literals: list[str]) -> tuple[re.Pattern[str], dict[str, frozenset[str]],
                                                  dict[str, tuple[str, ...]]]:
    """A pattern finding the longest literal at the leftmost position, then the next after it (a trie of the
    literals, so each position costs one branch per character, not one try per literal) and each newline; with,
    per literal L, the literals inside L and those that may start inside L and end past it (checked with
    ``in``): together exactly the literals of a line. (The newline is one more word of the trie: an alternative
    beside it would halve the scan's speed.)"""
    within = {p: frozenset(q for q in literals if q in p) for p in literals}
    prefixes = {q: {q[:j] for j in range(1, len(q) + 1)} for q in literals}
    overlapping = {p: tuple(q for q in literals if q not in within[p] and
                            not prefixes[q].isdisjoint(p[i:] for i in range(1, len(p)))) for p in literals}
    return re.compile(_trie([*literals, "\n"])), within, overlapping


def _trie(words: list[str]) -> str:
    """A regex matching exactly ``words``, longest first, written as a trie (shared prefixes once)."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and "" not in node else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(root)


def _needed(pattern: re.Pattern[str]) -> str:
    """The longest run of plain characters at the top level of ``pattern`` (outside any group, branch or
    repeat), which every match contains; '' when there is none or the pattern ignores case."""
    try:
        from re import _constants, _parser  # the engine's own parser (3.11+)

        items = _parser.parse(pattern.pattern, pattern.flags)
        if (pattern.flags | items.state.flags) & re.IGNORECASE:
            return ""
        best, run = "", ""
        for op, arg in items:
            run = run + chr(arg) if op is _constants.LITERAL else ""
            best = max(best, run, key=len)
        return best
    except Exception:  # noqa: BLE001 - another Python's internals: no shortcut, same answers
        return ""


def _union(sigs: list[Signature]) -> re.Pattern[str]:
    """One alternation of ``sigs``' regexes: it matches a line iff at least one of them does."""
    return re.compile("|".join(f"(?:{s.regex.pattern})" for s in sigs))  # type: ignore[union-attr]
