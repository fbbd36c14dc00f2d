"""A version of the code a computation depends on, for keys of caches that outlive a process (the power sweep's
``--cache``): a digest of the source of every module of this package that the computation's entry modules
import, transitively, so a cache written by other code is never read back.

The imports are found statically (``ast``; nothing is imported): every ``import`` / ``from ... import``
statement anywhere in a module (module level or inside a function), relative or absolute, that names a module
of the package, plus the packages' ``__init__`` files, which run on import. Over-inclusive on purpose (an
import that a run never reaches still counts): a needless cache miss costs a replay, a stale hit a wrong figure.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # slurm_plugin/


def _file(package_dir: Path, name: str) -> Path | None:
    """The source file of module ``name`` (dotted, starting with the package's name), None if not in it."""
    rel = Path(*name.split(".")[1:])
    for path in (package_dir / rel / "__init__.py", package_dir / rel.with_suffix(".py") if rel.parts else None):
        if path is not None and path.is_file():
            return path
    return None


def _imports(tree: ast.AST, name: str, is_package: bool) -> Iterable[str]:
    """Every module name an import statement in ``tree`` (the module ``name``) may load."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            mod = ".".join(base + (node.module.split(".") if node.module else []))
            yield mod
            yield from (f"{mod}.{a.name}" for a in node.names if a.name != "*")  # ``from pkg import module``


def source_files(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Module name -> source file for ``roots`` (dotted module names under ``package_dir``'s package) and
    everything of the package they import, transitively, with every parent package."""
    pkg = package_dir.name
    found: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found or not (name == pkg or name.startswith(pkg + ".")):
            continue
        path = _file(package_dir, name)
        if path is None:  # ``from pkg.mod import a_function``: not a module
            continue
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]
        todo += _imports(ast.parse(path.read_bytes(), str(path)), name, path.name == "__init__.py")
    return found


def source_digest(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 (hex) over the names and bytes of :func:`source_files`."""
    h = hashlib.sha256()
    for name, path in sorted(source_files(roots, package_dir).items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def code_version(roots: tuple[str, ...]) -> str:
    """:func:`source_digest` of this package for ``roots``, computed once per process."""
    return source_digest(roots)
