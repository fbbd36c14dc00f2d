"""Slurm's ``--constraint`` grammar: one parser for admission, the ranker, the planner and the simulator.

Grammar (as Slurm 22.05's slurmctld accepts it; checked against ``sbatch --test-only`` on the local cluster,
see tests/system/test_constraint_live.py)::

    constraint := unit (op unit)* [op]        op: '&' or ',' (AND), '|' (OR); a trailing op is ignored
    unit       := name ['*' count] | '(' constraint ')' ['*' count] | '[' bracket ']'
    bracket    := matching OR:    option ('|' option)*           options carry no count
                | multiple counts: counted ('&' counted)*        every term carries a count
    name       := [^&|,()[]*"]+ (no whitespace) | '"' [^"]+ '"'   count := integer > 0

Operators have **no precedence**: slurmctld reads them left to right, so ``a|b&c`` is ``(a|b)&c`` (checked:
``x86_64|aarch64&apac`` does not match an ``x86_64,eu-west`` node). At most one ``[...]`` per constraint and
never nested or followed by a count. Quoted names are read without their quotes (22.05 itself refuses quotes;
later versions accept them). Nested parentheses are accepted (22.05 refuses them).

What a node's features satisfy (:meth:`Constraint.matches`, the question every caller asks: may this node
run the job, or part of it): counts say how many of the job's nodes need a term, and a node that serves that
term needs the term itself (``aarch64*2`` matches an aarch64 node; slurmctld may add other nodes to reach the
job's node count: ``-w x86n1 -C aarch64*2`` ran on armn[1-2],x86n1, but the nodes the job *needs* are aarch64); a matching OR ``[a|b]`` is an OR for one node (all of a job's
nodes then share one option, which a homogeneous node group always does); in a multiple-counts bracket
``[a*2&b*4]`` each node serves one of the terms, so a node matching any term matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from ..errors import PicklableError

MAX_LENGTH = 4096  # a constraint longer than this is refused before parsing
MAX_DEPTH = 32  # nested parentheses


class ConstraintError(PicklableError, ValueError):
    """A constraint that is not in Slurm's grammar; ``str()`` names the position and what was expected."""

    def __init__(self, expr: str, pos: int, message: str):
        self.expr, self.pos = expr, pos
        super().__init__(f"constraint {expr[:80]!r}: at character {pos + 1}: {message}")


@dataclass(frozen=True)
class Name:
    """One feature name, with the node count after it (``name*count``; None = no count)."""

    name: str
    count: int | None = None


@dataclass(frozen=True)
class Seq:
    """``first OP term OP term ...`` read left to right (``((first OP t1) OP t2) ...``): each of ``rest`` is
    (op, term) with op ``&`` (AND; ``,`` too) or ``|`` (OR). Kept flat so a long chain costs no recursion."""

    first: Node
    rest: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class Group:
    """A parenthesised constraint, kept so that its count (``(a&b)*4``) has a place."""

    inner: Node
    count: int | None = None


@dataclass(frozen=True)
class Bracket:
    """``[...]``: ``kind`` ``"or"`` (matching OR: all nodes share one option) or ``"counts"`` (each term on
    its own nodes, ``[a*2&b*4]``); ``terms`` in the order written."""

    kind: str
    terms: tuple[Node, ...]


Node = Name | Seq | Group | Bracket
_TOKEN = re.compile(r'\s*(?:(?P<op>[&|,])|(?P<open>[(\[])|(?P<close>[)\]])|(?P<star>\*)'
                    r'|"(?P<quoted>[^"]*)"|(?P<name>[^&|,()\[\]*"\s]+)|(?P<bad>\S))')


def _tokens(expr: str) -> list[tuple[str, str, int]]:
    out = []
    for m in _TOKEN.finditer(expr):
        kind = m.lastgroup
        if kind is None:  # only whitespace left
            break
        value, pos = m[kind], m.start()
        if kind == "bad":
            raise ConstraintError(expr, pos, f"unexpected character {value!r}")
        if kind == "quoted":
            if not value:
                raise ConstraintError(expr, m.start(), "empty quoted name")
            kind = "name"
        out.append((kind, value, pos + len(m[0]) - len(m[0].lstrip())))
    return out


class _Parser:
    def __init__(self, expr: str):
        self.expr = expr
        self.toks = _tokens(expr)
        self.i = 0
        self.brackets = 0
        self.depth = 0

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", len(self.expr))

    def take(self) -> tuple[str, str, int]:
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, message: str) -> ConstraintError:
        return ConstraintError(self.expr, self.peek()[2], message)

    def count(self) -> int | None:
        if self.peek()[0] != "star":
            return None
        self.take()
        kind, value, _ = self.peek()
        if kind != "name" or not value.isdigit() or int(value) <= 0:
            raise self.fail("a count after '*' must be an integer greater than 0")
        self.take()
        return int(value)

    def sequence(self, closer: str | None) -> Node:
        """unit (op unit)* [op], up to ``closer`` (``)``/``]``) or the end."""
        first, rest = self.unit(), []
        while self.peek()[0] == "op":
            op = "|" if self.take()[1] == "|" else "&"
            kind, value, _ = self.peek()
            if kind == "end" or (kind == "close" and value == closer):
                break  # Slurm ignores a trailing operator
            rest.append((op, self.unit()))
        return Seq(first, tuple(rest)) if rest else first

    def unit(self) -> Node:
        kind, value, _ = self.peek()
        if kind == "name":
            self.take()
            return Name(value, self.count())
        if kind == "open" and value == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.fail(f"more than {MAX_DEPTH} nested parentheses")
            self.take()
            inner = self.sequence(")")
            self.depth -= 1
            self.close(")")
            return Group(inner, self.count())
        if kind == "open" and value == "[":
            return self.bracket()
        what = "the end" if kind == "end" else repr(value)
        raise self.fail(f"expected a feature name, '(' or '[', found {what}")

    def close(self, closer: str) -> None:
        kind, value, _ = self.peek()
        if kind != "close" or value != closer:
            raise self.fail(f"expected {closer!r}, found {'the end' if kind == 'end' else repr(value)}")
        self.take()

    def bracket(self) -> Node:
        if self.brackets:
            raise self.fail("only one [...] per constraint, never nested")
        self.brackets += 1
        self.take()
        terms, ops = [self.unit()], []
        while self.peek()[0] == "op":
            ops.append("|" if self.take()[1] == "|" else "&")
            terms.append(self.unit())
        self.close("]")
        if self.peek()[0] == "star":
            raise self.fail("a [...] takes no count")
        if len(set(ops)) > 1:
            raise self.fail("a [...] is either a matching OR (a|b) or multiple counts (a*2&b*4), not both")
        kind = "counts" if ops and ops[0] == "&" else "or"
        counted = [_count_of(t) is not None for t in terms]
        if kind == "counts" and not all(counted):
            raise self.fail("in [a*2&b*4] every term needs a count")
        if kind == "or" and len(terms) > 1 and any(counted):
            raise self.fail("the options of a matching OR [a|b] take no count")
        return Bracket(kind, tuple(terms))


def _count_of(node: Node) -> int | None:
    return node.count if isinstance(node, (Name, Group)) else None


def _holds(node: Node, has: Callable[[str], bool]) -> bool:
    if isinstance(node, Name):
        return has(node.name)
    if isinstance(node, Group):
        return _holds(node.inner, has)
    if isinstance(node, Bracket):
        return any(_holds(t, has) for t in node.terms)
    value = _holds(node.first, has)
    for op, term in node.rest:
        if op == "&":
            value = value and _holds(term, has)
        else:
            value = value or _holds(term, has)
    return value


def _names(node: Node) -> Iterable[str]:
    if isinstance(node, Name):
        yield node.name
    elif isinstance(node, Group):
        yield from _names(node.inner)
    elif isinstance(node, Bracket):
        for t in node.terms:
            yield from _names(t)
    else:
        yield from _names(node.first)
        for _, term in node.rest:
            yield from _names(term)


def _or_terms(node: Node) -> list[Node] | None:
    """The options of an OR written without counts (``a|b|c``, ``(a|b)``, ``[a|b]``), else None."""
    if isinstance(node, Group) and node.count is None:
        return _or_terms(node.inner)
    if isinstance(node, Bracket) and node.kind == "or":
        return list(node.terms)
    if isinstance(node, Seq) and all(op == "|" for op, _ in node.rest):
        out: list[Node] = []
        for term in (node.first, *(t for _, t in node.rest)):
            out += _or_terms(term) or [term]
        return out
    return None


@dataclass(frozen=True)
class Constraint:
    """A parsed ``--constraint``; ``root`` is None for an empty one (which every node satisfies)."""

    text: str
    root: Node | None

    def matches(self, features: Iterable[str]) -> bool:
        """May a node with ``features`` run this job (or its share of it)? See the module docstring."""
        if self.root is None:
            return True
        have = features if isinstance(features, (set, frozenset)) else set(features)
        return _holds(self.root, have.__contains__)

    def holds(self, has: Callable[[str], bool]) -> bool:
        """:meth:`matches` with a predicate for "the node has this feature"."""
        return self.root is None or _holds(self.root, has)

    @property
    def names(self) -> frozenset[str]:
        """Every feature name the constraint mentions."""
        return frozenset(_names(self.root)) if self.root is not None else frozenset()

    def allowed(self, values: Iterable[str]) -> frozenset[str]:
        """Which of ``values`` (mutually exclusive features, e.g. the CPU arches) a node may carry and still
        match, when it may carry any feature outside ``values``.

        >>> sorted(parse_constraint("(aarch64|x86_64)&eu-west").allowed(["aarch64", "x86_64", "riscv64"]))
        ['aarch64', 'x86_64']
        """
        values = frozenset(values)
        return frozenset(v for v in values if self.holds(lambda f, v=v: f == v or f not in values))

    @property
    def bracketed(self) -> bool:
        """True when the whole constraint is one ``[...]``."""
        return isinstance(self.root, Bracket)

    def alternatives(self) -> tuple[str, ...] | None:
        """The names of a constraint that is only a choice of single features (``a|b``, ``(a|b)``,
        ``[a|b]``, or one ``a``), in the order written; None for anything else (an AND, a count)."""
        if isinstance(self.root, Name) and self.root.count is None:
            return (self.root.name,)
        terms = _or_terms(self.root) if self.root is not None else None
        if not terms or not all(isinstance(t, Name) and t.count is None for t in terms):
            return None
        return tuple(dict.fromkeys(t.name for t in terms))  # type: ignore[union-attr]


@lru_cache(maxsize=8192)
def parse_constraint(expr: str | None) -> Constraint:
    """Parse ``expr`` (None or blank = no constraint); raise :class:`ConstraintError` if it is not valid.

    >>> parse_constraint("x86_64|aarch64&apac").matches(["x86_64", "eu-west"])  # (x86_64|aarch64)&apac
    False
    """
    text = (expr or "").strip()
    if len(text) > MAX_LENGTH:
        raise ConstraintError(text, MAX_LENGTH, f"longer than {MAX_LENGTH} characters")
    if not text:
        return Constraint("", None)
    parser = _Parser(text)
    root = parser.sequence(None)
    if parser.peek()[0] != "end":
        raise parser.fail(f"unexpected {parser.peek()[1]!r}")
    return Constraint(text, root)


def try_parse(expr: str | None) -> Constraint | None:
    """:func:`parse_constraint`, or None when ``expr`` is not valid (Slurm would have refused the job)."""
    try:
        return parse_constraint(expr)
    except ConstraintError:
        return None


def constraint_matches(expr: str | None, features: Iterable[str]) -> bool:
    """True if a node with ``features`` satisfies ``expr`` (see :meth:`Constraint.matches`). An empty
    constraint matches every node; one Slurm would refuse matches none.

    >>> constraint_matches("(aarch64|x86_64)&eu-west", ["aarch64"])
    False
    >>> constraint_matches("aarch64*2", ["aarch64"])
    True
    """
    parsed = try_parse(expr)
    return parsed is not None and parsed.matches(features)
