"""Layers that only point down (STYLE 16, issue 20 item 5).

Every ``slurm_plugin`` module is parsed (``ast``, nothing imported) and each import of another ``slurm_plugin``
module is checked against :data:`LAYERS`: a module may import its own layer or a lower one, never a higher one.
Four kinds of import are found and named in the messages: ``top`` (module level), ``function`` (inside a
def/class body), ``type-checking`` (inside ``if TYPE_CHECKING:``) and ``string`` (``importlib.import_module(
"slurm_plugin...")``). All four must point down; import cycles (between subpackages, and between modules at
run time) fail too.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[2] / "slurm_plugin"

# Lowest first. A unit is a subpackage or module path under slurm_plugin; a module belongs to the longest unit
# that prefixes it. Within one layer any import is allowed as long as it makes no cycle.
LAYERS: list[tuple[str, tuple[str, ...], str]] = [
    ("bottom", ("", "_lazy", "errors", "fsio", "gcpause", "data", "site", "slurm", "snapshot", "tags", "cluster.procs", "metrics"),
     "plain data and I/O every layer may use: the package root (version only), picklable errors, atomic files, the garbage-collector pause, "
     "package data, the site model, the Slurm client, snapshots, the job comment-tag format, process start/stop helpers, "
     "the Prometheus exposition (metrics.py)"),
    ("policies", ("admission", "rank", "pack", "scale", "power", "conf", "workload", "decision", "policy", "dag", "deploy",
                  "sla", "health", "hw", "intent"),
     "pure decisions and their inputs: admission, ranking, packing, scaling, power backends, conf rendering, "
     "workload readers, the Decision/actions/applier, the PolicySpec (data the sim and the cycle are "
     "both built from), the SLA report's rows and the intent parser (admission reads a script's intent line)"),
    ("sim", ("sim",), "the simulator, its policies' adapters (sim.scaling, sim.packing) and the policy builder"),
    ("evaluation", ("training", "tune", "evaluation", "dag.sim", "dag.simrematch", "cost"),
     "what runs the simulator to learn or compare policies (the DQN's training and evaluation, the twin), the "
     "cost plan/Pareto front and scenario comparisons"),
    ("cycle", ("cycle",), "the live steering cycle: snapshot -> decide -> applier"),
    ("services", ("daemon", "cluster", "deploy.fn"),
     "long-running processes: the admission daemon, the local test cluster, the function gateway and pilots"),
    ("cli", ("cli", "__main__"), "the hetsched command: may use everything"),
]

# (importing unit or module, imported unit or module): why this upward import is allowed. Keep it short.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("power.local", "cluster.local"): "the 'local' power backend starts/stops the local test cluster's slurmd; "
                                      "imported inside a function, only when that backend is chosen",
    ("power.container", "cluster.containers"): "the 'container' power backend starts/stops the container "
                                               "cluster's node containers; imported inside a function likewise",
}

# Module-level import cycles that are allowed (a lazy import on purpose), with the reason.
CYCLE_EXCEPTIONS: dict[frozenset[str], str] = {
    frozenset({"decision.journal", "decision.journal_index"}):
        "the journal opens its optional sqlite index lazily; the index reads the journal's entries",
}


@dataclass(frozen=True)
class Import:
    src: str  # module path under slurm_plugin, "" for the root
    dst: str
    kind: str  # top | function | type-checking | string
    where: str  # file:line


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _strip(name: str) -> str | None:
    if name == "slurm_plugin":
        return ""
    return name.removeprefix("slurm_plugin.") if name.startswith("slurm_plugin.") else None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_pkg: bool, modules: set[str], where: str) -> None:
        self.module, self.modules, self.where = module, modules, where
        self.pkg = module.split(".") if is_pkg else module.split(".")[:-1]
        self.kind = ["top"]
        self.found: list[Import] = []

    def _add(self, dst: str, node: ast.AST, kind: str | None = None) -> None:
        self.found.append(Import(self.module, dst, kind or self.kind[-1], f"{self.where}:{node.lineno}"))

    def _nested(self, node: ast.AST, kind: str) -> None:
        self.kind.append(kind if self.kind[-1] != "type-checking" else "type-checking")
        self.generic_visit(node)
        self.kind.pop()

    def visit_FunctionDef(self, node) -> None:
        self._nested(node, "function")

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.kind.append("type-checking")
            for child in node.body:
                self.visit(child)
            self.kind.pop()
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if (name := _strip(alias.name)) is not None:
                self._add(name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.pkg[: len(self.pkg) - (node.level - 1)] + ([node.module] if node.module else [])
            target = ".".join(p for p in base if p)
        elif (target := _strip(node.module or "")) is None:
            return
        for alias in node.names:  # "from .x import y" imports module x.y when there is one
            sub = f"{target}.{alias.name}" if target else alias.name
            self._add(sub if sub in self.modules else target, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and (dst := _strip(node.args[0].value)) is not None:
            self._add(dst, node, "string")
        self.generic_visit(node)


@functools.cache
def _collect() -> tuple[set[str], list[Import]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(f) for f in files}
    imports: list[Import] = []
    for f in files:
        collector = _Collector(_module_name(f), f.name == "__init__.py", modules,
                               str(f.relative_to(PACKAGE.parent)))
        collector.visit(ast.parse(f.read_text(), str(f)))
        imports += [i for i in collector.found if i.dst != i.src]
    return modules, imports


def _unit(module: str) -> str:
    """The longest unit of LAYERS that is ``module`` or a parent of it."""
    best = None
    for _, units, _ in LAYERS:
        for u in units:
            if (module == u or module.startswith(u + ".") or u == "") and (best is None or len(u) > len(best)):
                best = u
    assert best is not None
    return best


def _layer(unit: str) -> int:
    return next(i for i, (_, units, _) in enumerate(LAYERS) if unit in units)


def test_every_subpackage_is_placed() -> None:
    """A new subpackage must be added to LAYERS (otherwise it would silently count as the package root)."""
    tops = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"}
    placed = {u.split(".")[0] for _, units, _ in LAYERS for u in units}
    missing = sorted(t.removesuffix(".py") for t in tops if t.removesuffix(".py") not in placed | {"__init__"})
    assert not missing, f"slurm_plugin/{missing} are in no layer: add them to LAYERS in {__file__}"


def test_imports_point_down() -> None:
    _, imports = _collect()
    names = [n for n, _, _ in LAYERS]
    broken = []
    for i in imports:
        su, du = _unit(i.src), _unit(i.dst)
        if _layer(du) <= _layer(su) or (su, du) in EXCEPTIONS or (i.src, i.dst) in EXCEPTIONS:
            continue
        broken.append(
            f"{i.where}: slurm_plugin.{i.src or '(root)'} ({names[_layer(su)]}) imports slurm_plugin.{i.dst} "
            f"({names[_layer(du)]}) [{i.kind} import]: layer '{names[_layer(su)]}' may not import the higher "
            f"layer '{names[_layer(du)]}'. Fix: move what is shared down (into {i.src.split('.')[0] or 'the root'}"
            f" or a bottom module), move the importing code up, or pass the value in; only if neither fits add "
            f"('{su}', '{du}') to EXCEPTIONS in tests/unit/test_layers.py with the reason")
    assert not broken, "upward imports:\n" + "\n".join(broken)


def test_exceptions_are_still_needed() -> None:
    """An exception nobody needs any more is removed (the table stays the truth)."""
    _, imports = _collect()
    used = {(_unit(i.src), _unit(i.dst)) for i in imports} | {(i.src, i.dst) for i in imports}
    stale = [pair for pair in EXCEPTIONS if pair not in used]
    assert not stale, f"EXCEPTIONS no longer needed, remove them: {stale}"


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def _cycle_messages(edges: dict[tuple[str, str], Import], what: str, fix: str, allowed=frozenset()) -> list[str]:
    """One message per cycle of ``edges`` (node pair -> the first import making it), naming every import in it."""
    msgs = []
    for cycle in _cycles(nx.DiGraph(list(edges))):
        if frozenset(cycle) in allowed:
            continue
        inside = [e for (a, b), e in edges.items() if a in cycle and b in cycle]
        msgs.append(f"{what} {cycle} import each other: "
                    + "; ".join(f"{e.where} {e.src} -> {e.dst} [{e.kind}]" for e in inside) + f". Fix: {fix}")
    return msgs


def test_no_cycles_between_subpackages() -> None:
    """Units of LAYERS (subpackages, and modules placed on their own) form no cycle, TYPE_CHECKING included."""
    edges: dict[tuple[str, str], Import] = {}
    for i in _collect()[1]:
        su, du = _unit(i.src), _unit(i.dst)
        if su != du and (su, du) not in EXCEPTIONS and (i.src, i.dst) not in EXCEPTIONS:
            edges.setdefault((su, du), i)
    msgs = _cycle_messages(edges, "subpackages",
                           "move the shared part into the lower one (or a bottom module) so only one points at the other")
    assert not msgs, "\n".join(msgs)


def test_no_module_cycles() -> None:
    """No two modules import each other at run time (TYPE_CHECKING-only imports are free), one-way lazy imports
    and import strings included: ``sim.hooks`` <-> ``sim.packing`` was such a cycle."""
    edges: dict[tuple[str, str], Import] = {}
    for i in _collect()[1]:
        if i.kind != "type-checking":
            edges.setdefault((i.src, i.dst), i)
    msgs = _cycle_messages(edges, "modules", "move what both need into a third module below them", CYCLE_EXCEPTIONS)
    assert not msgs, "\n".join(msgs)


def test_cycle_exceptions_are_still_needed() -> None:
    _, imports = _collect()
    graph = nx.DiGraph([(i.src, i.dst) for i in imports if i.kind != "type-checking"])
    live = {frozenset(c) for c in _cycles(graph)}
    stale = [sorted(c) for c in CYCLE_EXCEPTIONS if c not in live]
    assert not stale, f"CYCLE_EXCEPTIONS no longer needed, remove them: {stale}"


def test_the_collector_sees_every_kind() -> None:
    """The parser itself: each kind of import is found and classified (else the checks above prove nothing)."""
    src = ("from .a import b\nimport slurm_plugin.c\nimport importlib\nfrom typing import TYPE_CHECKING\n"
           "if TYPE_CHECKING:\n    from ..d import e\n"
           "def f():\n    from ..g import h\n    return importlib.import_module('slurm_plugin.i')\n")
    c = _Collector("x.y", False, {"x.a.b"}, "x/y.py")
    c.visit(ast.parse(src))
    assert {(i.dst, i.kind) for i in c.found} == {
        ("x.a.b", "top"), ("c", "top"), ("d", "type-checking"), ("g", "function"), ("i", "string")}


def test_one_name_per_concept() -> None:
    """No two top-level classes of the package share a name (admission's answer and the cycle's Decision did)."""
    seen: dict[str, list[str]] = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(f"{f.relative_to(PACKAGE.parent)}:{node.lineno}")
    clashes = {name: places for name, places in seen.items() if len(places) > 1}
    assert not clashes, f"one class name, several concepts (rename one so the name says which): {clashes}"
