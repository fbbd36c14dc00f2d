"""The admission answer: accept (possibly with job_desc changes) or reject, always with reasons."""

from __future__ import annotations

from dataclasses import dataclass, field

# job_desc fields a decision may set; the shim applies nothing else.
SETTABLE = ("partition", "features", "qos", "site_factor", "comment",
            "cpus_per_task", "min_cpus", "pn_min_cpus", "min_mem_per_cpu", "min_mem_per_node", "container",
            "time_limit", "begin_time",  # these two: a script's #HETSCHED intent line
            "clusters")  # the federation members the job may run on (follow-the-sun, federation.py)


@dataclass(frozen=True)
class Admission:
    """``action`` is ``accept`` or ``reject``; ``changes`` maps job_desc fields (:data:`SETTABLE`) to new
    values; ``reasons`` says why, one sentence each, shown to the user by the shim; ``kinds`` tags what was
    decided (``arch``, ``accel``, ``class``, ``rightsize``, ``federation``, ``refuse``) for tests and logs;
    ``cause`` is a refusal's bounded category (``gres``, ``combination``, ``partition``, ``intent``, ``other``)
    for metrics.
    """

    action: str = "accept"
    changes: dict[str, str | int] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    cause: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.changes) - set(SETTABLE)
        if unknown or self.action not in ("accept", "reject"):
            raise ValueError(f"bad decision: action={self.action!r} fields={sorted(unknown)}")

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @classmethod
    def reject(cls, reason: str, cause: str = "other") -> Admission:
        return cls(action="reject", reasons=(reason,), kinds=("refuse",), cause=cause)


@dataclass
class AdmissionBuilder:
    """Collects the parts of a decision as each step runs (one per request, never shared)."""

    changes: dict[str, str | int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)

    def add(self, kind: str, reason: str, **changes: str | int) -> None:
        self.changes.update(changes)
        self.reasons.append(reason)
        if kind not in self.kinds:
            self.kinds.append(kind)

    def build(self) -> Admission:
        return Admission("accept", dict(self.changes), tuple(self.reasons), tuple(self.kinds))
