"""Crash-safe files the suite owns: atomic replace with directory fsync, and one-writer locks.

Every file the suite writes (configs, state, journals, models) goes through :func:`write_atomic`: each new
file is written to a temporary name in its directory, fsynced, renamed over the old one, and the directory
is fsynced so the rename itself survives a crash. A reader sees the old file or the new one, never half.

:func:`exclusive_lock` makes a process the only writer of some state (``hetsched cycle``, ``scale apply``):
a second one fails at once with :class:`LockHeld`, naming the pid that holds the lock.

:func:`read_yaml_file` reads a bounded YAML/JSON input file (policy, capacity plan) with errors naming file and line;
:func:`yaml_line` finds the line of a field in such a file (for errors found after parsing).

:func:`load_state` reads a JSON state file through a validating parser; a bad file is moved aside (kept, with a
timestamp suffix) and the caller starts from fresh state instead of failing every time it starts.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from .errors import PicklableError

T = TypeVar("T")


class YamlFileError(PicklableError, ValueError):
    """A YAML/JSON input file that cannot be read: ``where`` (the path, or ``path:line``) and what is wrong."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


def read_yaml_file(path: str | Path, max_bytes: int, what: str) -> object:
    """The parsed content of the YAML (or JSON) file at ``path``; raises :class:`YamlFileError` for a file
    larger than ``max_bytes`` ("not ``what``"), one that cannot be read, or one that does not parse (with its
    line)."""
    import yaml

    p = Path(path)
    try:
        if p.stat().st_size > max_bytes:
            raise YamlFileError(str(p), f"larger than {max_bytes} bytes: not {what}")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise YamlFileError(str(p), f"cannot read: {err}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise YamlFileError(where, f"not YAML/JSON: {getattr(err, 'problem', None) or err}") from None


def yaml_node_line(root, loc: tuple) -> int | None:
    """The 1-based line of the node at field path ``loc`` (mapping keys, sequence indexes) in the composed YAML
    tree ``root`` (``yaml.compose``): the deepest part of the path that exists."""
    import yaml

    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            nxt = None
        if nxt is None:
            break
        node, line = nxt, nxt.start_mark.line + 1
    return line


def yaml_line(path: str | Path, loc: tuple) -> int | None:
    """The line of field path ``loc`` in the YAML/JSON file at ``path`` (one :func:`read_yaml_file` accepted),
    or None when the file cannot be read again."""
    import yaml

    try:
        return yaml_node_line(yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader), loc)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


class LockHeld(PicklableError, RuntimeError):
    """Another process holds the lock; ``holder`` is its pid when it could be read."""

    def __init__(self, path: Path, holder: int | None):
        self.path, self.holder = path, holder
        who = f"process {holder}" if holder else "another process"
        super().__init__(f"{path} is locked by {who}: only one writer may run at a time")


def fsync_dir(directory: str | Path) -> None:
    """fsync a directory so renames and creations in it are durable (no-op where unsupported)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as err:  # some filesystems refuse fsync on directories
        if err.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_atomic(directory: str | Path, files: Mapping[str, str | bytes], mode: int = 0o644) -> list[Path]:
    """Write each of ``files`` (name -> text or bytes) into ``directory``, all or nothing per file.

    Every file is fully written and fsynced under a temporary name before any rename, so an error while
    writing leaves the directory as it was (temporary files removed); then each is renamed into place and
    the directory is fsynced. Returns the final paths in the order given.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, data in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            staged.append((tmp, directory / name))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
        for tmp, final in staged:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(directory)
    return [final for _, final in staged]


def write_file_atomic(path: str | Path, data: str | bytes, mode: int = 0o644) -> Path:
    """:func:`write_atomic` for one file given by its path."""
    path = Path(path)
    return write_atomic(path.parent, {path.name: data}, mode)[0]


@contextlib.contextmanager
def exclusive_lock(path: str | Path) -> Iterator[Path]:
    """Hold an exclusive, non-blocking ``flock`` on ``path`` (created, pid written) for the block.

    Raises :class:`LockHeld` at once if another process holds it. The lock dies with the process, so a
    crash never leaves a stale lock behind (the file may stay; that is harmless).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = int(os.pread(fd, 32, 0).decode().strip() or 0) or None
            except (ValueError, OSError):
                holder = None
            raise LockHeld(path, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)


def move_aside(path: str | Path, now: float | None = None) -> Path:
    """Rename a bad state file to ``<name>.bad-<UTC time>`` beside it (kept for a post-mortem); returns the
    new path."""
    import time

    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    target = path.with_name(f"{path.name}.bad-{stamp}")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.name}.bad-{stamp}-{n}"), n + 1
    os.replace(path, target)
    fsync_dir(path.parent)
    return target


def state_fields(data: object, cls) -> dict:
    """``data`` if it is a JSON object whose keys are all fields of the dataclass ``cls``; TypeError/ValueError
    otherwise (for the ``parse`` of :func:`load_state`)."""
    import dataclasses

    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}")
    return data


def load_state(path: str | Path, parse: Callable[[object], T], fresh: Callable[[], T], what: str) -> T:
    """``parse(json)`` of the state file at ``path``, or ``fresh()`` if it is missing; a file that is not
    JSON or that ``parse`` rejects (any ValueError, TypeError or KeyError) is moved aside with
    :func:`move_aside` and a warning naming both paths, and ``fresh()`` is returned."""
    import json
    import logging

    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return fresh()
    try:
        return parse(json.loads(raw))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
        moved = move_aside(path)
        logging.getLogger(__name__).warning("%s %s is unusable (%s: %s): moved aside to %s, starting fresh",
                                            what, path, type(err).__name__, err, moved)
        return fresh()
