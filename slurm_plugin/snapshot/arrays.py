"""Job array task expressions as Slurm writes them (``ArrayTaskId=0-99:2,120%5``): counted, and written back from
task ids."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def task_range(expr: str) -> str:
    """``expr`` without the throttle (``%N``)."""
    return expr.partition("%")[0].strip()


def _spans(expr: str) -> Iterator[tuple[int, int, int]]:
    """(first, last, step) of each part of ``expr``; raises ValueError naming the expression when it is not one."""
    for part in filter(None, task_range(expr).split(",")):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        try:
            lo, hi, by = int(first), int(last or first), int(step or 1)
        except ValueError:
            raise ValueError(f"not a job array task expression: {expr!r}") from None
        if hi < lo or by < 1:
            raise ValueError(f"not a job array task expression: {expr!r}")
        yield lo, hi, by


def task_count(expr: str) -> int:
    """How many task ids ``expr`` names (``4-100`` 97, ``1,3,5-7`` 5, ``0-9:2`` 5, ``0-99%5`` 100); raises
    ValueError naming the expression when it is not one."""
    return sum((hi - lo) // by + 1 for lo, hi, by in _spans(expr))


def task_ids(expr: str) -> list[int]:
    """The task ids ``expr`` names, in its order (``1-3,5,10-20:5`` -> 1, 2, 3, 5, 10, 15, 20); raises
    ValueError naming the expression when it is not one."""
    return [t for lo, hi, by in _spans(expr) for t in range(lo, hi + 1, by)]


def task_ranges(ids: Iterable[int]) -> str:
    """The task ids as ``scontrol update jobid=A_[...]`` reads them: sorted, runs of consecutive ids as ranges,
    never a step (``[1, 2, 3, 5]`` -> ``1-3,5``; ``[1, 3, 5, 20]`` -> ``1,3,5,20``).

    slurmctld reads the brackets with ``bitfmt2int`` (src/common/bitstring.c), which takes a step (``1-79:2``)
    only as the whole expression and then leaves out its last task, and refuses one beside other parts
    (``1-79:2,100``: "Invalid job id specified", seen on 22.05.8), although squeue writes them that way."""
    out: list[str] = []
    ordered = sorted(set(ids))
    if not ordered:
        return ""
    start = prev = ordered[0]
    for t in ordered[1:] + [None]:
        if t is not None and t == prev + 1:
            prev = t
            continue
        out.append(f"{start}-{prev}" if prev > start else str(start))
        if t is not None:
            start = prev = t
    return ",".join(out)


def task_expr(ids: Iterable[int]) -> str:
    """The task ids as Slurm writes them: consecutive runs and runs of one step of three or more collapsed
    (``[3, 4, 5, 9]`` -> ``3-5,9``; ``[0, 9, 12, 15, 18]`` -> ``0,9-18:3``)."""
    ids = sorted(set(ids))
    out: list[str] = []
    i = 0
    while i < len(ids):
        step = ids[i + 1] - ids[i] if i + 1 < len(ids) else 0
        if step == 1 or (i + 2 < len(ids) and ids[i + 2] - ids[i + 1] == step):
            j = i + 1
            while j + 1 < len(ids) and ids[j + 1] - ids[j] == step:
                j += 1
            out.append(f"{ids[i]}-{ids[j]}" + (f":{step}" if step > 1 else ""))
            i = j + 1
        else:
            out.append(str(ids[i]))
            i += 1
    return ",".join(out)
