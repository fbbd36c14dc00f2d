"""Errors of the workload readers: every message names the file and, where it applies, the line."""

from __future__ import annotations

from ..errors import PicklableError


class WorkloadError(PicklableError, ValueError):
    """A workload could not be read; ``str()`` is ``file:line: what is wrong``."""

    def __init__(self, source: str, message: str, line: int | None = None):
        self.source, self.line, self.message = source, line, message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


class UnfitJobsError(WorkloadError):
    """Some jobs need more of a resource than the machine has; ``unfit`` lists (job id, reason)."""

    def __init__(self, source: str, unfit: list[tuple[int, str]]):
        self.unfit = unfit
        shown = "; ".join(f"job {j}: {why}" for j, why in unfit[:5])
        more = f" (and {len(unfit) - 5} more)" if len(unfit) > 5 else ""
        super().__init__(source, f"{len(unfit)} job(s) need more than the machine has: {shown}{more}; "
                                 "use a bigger site or --drop-unfit to drop (and report) them")
