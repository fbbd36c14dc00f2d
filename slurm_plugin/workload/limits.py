"""The bounds every workload reader applies, in one place: a bad trace fails with ``file:line: what`` instead of
an out-of-memory kill, a hang or a traceback.

Machine sizes are the site file's bounds (:mod:`slurm_plugin.site.schema`): a trace describes nothing a site
could not. Times are seconds; a timestamp may be epoch seconds (sacct) or an offset (SWF, Philly, OpenB).
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..site.bounds import MAX_CPUS_PER_NODE, MAX_DEVICES_PER_NODE, MAX_MEMORY_GB, MAX_NODES
from .errors import WorkloadError

MAX_TIME_S = 1e10  # a submit/start/end time (epoch seconds reach it in the year 2286)
MAX_DURATION_S = 10 * 365 * 86400.0  # a run time or time limit: ten years
MAX_PROCS = MAX_NODES * MAX_CPUS_PER_NODE  # processors of one job or machine
MAX_JOBS = 5_000_000  # records of one workload (a job costs ~100 bytes of arrays, more while reading)
MAX_LINE_CHARS = 1 << 16  # one line of a text trace
MAX_NUMBER_CHARS = 40  # digits of one number ("1" followed by 4,300 zeros is no run time)
MAX_JSON_BYTES = 512 << 20  # one sacct --json export (read whole; use sacct -P for more)

__all__ = ["MAX_CPUS_PER_NODE", "MAX_DEVICES_PER_NODE", "MAX_DURATION_S", "MAX_JOBS", "MAX_MEMORY_GB",
           "MAX_NODES", "MAX_PROCS", "MAX_TIME_S", "check", "number", "text_lines"]


def _check_gzip(path: Path) -> None:
    """Read a gzip file to its end once (its CRC is only checked there), so a corrupt one is named as such
    before a reader parses the part that decompressed."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise WorkloadError(str(path), f"corrupt gzip data: {err or type(err).__name__}") from None


def check(value: float, what: str, source: str, line: int | None, lo: float, hi: float) -> float:
    """``value`` if it is a finite number within ``lo .. hi``, else a :class:`WorkloadError` at ``line``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise WorkloadError(source, f"{what} is {value!r}: not a finite number", line)
    if not lo <= value <= hi:
        raise WorkloadError(source, f"{what} is {value:g}, must be within {lo:g} .. {hi:g}", line)
    return value


def number(text: str, what: str, source: str, line: int | None, lo: float, hi: float,
           integer: bool = False) -> float:
    """Parse ``text`` as a number (an integer when ``integer``) and :func:`check` it."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS:
        raise WorkloadError(source, f"{what} has {len(text)} characters: not a number this trace can mean", line)
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise WorkloadError(source, f"{what} is not {'an integer' if integer else 'a number'}: {text!r}",
                            line) from None
    return check(value, what, source, line, lo, hi)


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a text file, gunzipped when it ends in ``.gz``.

    Raises :class:`WorkloadError` naming the file and line for a missing file, a corrupt gzip stream, bytes
    that are not UTF-8 or a NUL (a binary file), a line over :data:`MAX_LINE_CHARS`, or more lines than a
    workload may have.
    """
    source = str(path)
    if not path.is_file():
        raise WorkloadError(source, "no such file")
    lineno = 0
    if path.suffix == ".gz":
        _check_gzip(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            while True:
                raw = fh.readline(MAX_LINE_CHARS + 1)
                if not raw:
                    return
                lineno += 1
                if len(raw) > MAX_LINE_CHARS and not raw.endswith(b"\n"):
                    raise WorkloadError(source, f"line longer than {MAX_LINE_CHARS:,} bytes: not a text trace",
                                        lineno)
                if lineno > MAX_JOBS + 10_000:
                    raise WorkloadError(source, f"more than {MAX_JOBS:,} records: split the trace", lineno)
                if b"\x00" in raw:
                    raise WorkloadError(source, "NUL byte: a binary file, not a text trace", lineno)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise WorkloadError(source, f"not UTF-8 text (byte {err.start + 1} of the line): a binary "
                                                "file?", lineno) from None
                yield lineno, text.rstrip("\r\n")
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise WorkloadError(source, f"corrupt gzip data after line {lineno}: {err or type(err).__name__}") \
            from None
    except OSError as err:
        raise WorkloadError(source, f"cannot read: {err.strerror or err}") from None


def read_text(path: Path, limit: int = MAX_JSON_BYTES) -> str:
    """The whole file as UTF-8 text, at most ``limit`` bytes (for formats read in one piece)."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as err:
        raise WorkloadError(source, f"cannot read: {err.strerror or err}") from None
    if len(raw) > limit:
        raise WorkloadError(source, f"larger than {limit:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise WorkloadError(source, "not UTF-8 text: a binary file?", line) from None


def parse_generator_spec(cls, kind: str, text: str, bounds: dict[str, tuple[float, float]]):
    """A generator spec dataclass ``cls`` from ``KIND:key=value,...`` (every key optional; each value converted to
    the type of the field's default and checked against ``bounds[key]``). ValueError names a bad or unknown item
    and lists the valid keys."""
    body = text.split(":", 1)[1] if ":" in text else ""
    kw = {}
    for item in filter(None, body.split(",")):
        key, sep, value = item.partition("=")
        if key not in cls.__dataclass_fields__ or not sep:
            raise ValueError(f"bad {kind} spec item {item!r} (keys: {', '.join(cls.__dataclass_fields__)})")
        typ = type(getattr(cls(), key))
        lo, hi = bounds[key]
        kw[key] = typ(number(value, f"{kind} {key}", text, None, lo, hi, integer=typ is int))
    return cls(**kw)
