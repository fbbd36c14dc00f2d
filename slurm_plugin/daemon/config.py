"""The daemon's settings (``daemon/hetsched.yaml``), validated; command-line options override them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..metrics import DEFAULT_LISTEN, metrics_url, parse_listen

if TYPE_CHECKING:
    from ..admission import AdmissionOptions


class AdmissionSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    set_qos: bool = False
    site_factor: bool = True
    annotate_comment: bool = True

    def options(self) -> AdmissionOptions:
        from ..admission import AdmissionOptions  # the admission code only when a daemon runs, not to read settings

        return AdmissionOptions(**self.model_dump())


class MetricsSettings(BaseModel):
    """Prometheus metrics: ``listen`` HOST:PORT for ``/metrics`` (null or "off": no endpoint); ``textfile``:
    also rewrite this file every ``textfile_interval_s`` s (for node_exporter's textfile collector)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    listen: str | None = DEFAULT_LISTEN
    textfile: str | None = None
    textfile_interval_s: Annotated[float, Field(gt=0)] = 15.0

    @field_validator("listen")
    @classmethod
    def _address(cls, value):
        parse_listen(value)  # ValueError names the bad address; pydantic adds the field path
        return value

    @property
    def url(self) -> str | None:
        """The scrape URL this setting asks for (None when off)."""
        where = parse_listen(self.listen)
        return metrics_url(*where) if where else None


class DaemonConfig(BaseModel):
    """See daemon/hetsched.yaml for what each key means."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    socket: str = "/run/hetsched/hetsched.sock"
    socket_mode: Annotated[int, Field(ge=0, le=0o777)] = 0o600
    allow_users: tuple[str | int, ...] = ("slurm",)
    site: str | None = None  # None: the CLI resolves it ($HETSCHED_SITE, /etc/hetsched/site.yaml); never the demo
    slurm_conf: str | None = None
    refresh_s: Annotated[float, Field(gt=0)] = 5.0
    jobs_refresh_s: Annotated[float, Field(ge=0)] = 30.0  # the job queue (metrics only) at most this often
    queue_file: str | None = None  # the queue the cycle read (`cycle run --queue-file`), used while young enough
    queue_file_max_age_s: Annotated[float, Field(gt=0)] = 60.0  # ... at most this old (a cycle period and its read)
    pid_file: str | None = None
    read_timeout_s: Annotated[float, Field(gt=0)] = 1.0
    max_connections: Annotated[int, Field(ge=1, le=100000)] = 64
    max_connections_per_user: Annotated[int, Field(ge=1, le=100000)] = 8
    slurmctld_user: str | int | None = None
    idle_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    # hold the kernel's CPU wake-up latency limit at this many µs while serving (daemon/cpu_latency.py); None: off
    cpu_latency_us: Annotated[int, Field(ge=0, le=2_000_000_000)] | None = None

    @property
    def priority_user(self) -> str | int | None:
        """slurmctld's user: ``slurmctld_user``, else the first of ``allow_users``."""
        return self.slurmctld_user if self.slurmctld_user is not None else next(iter(self.allow_users), None)
    admission: AdmissionSettings = AdmissionSettings()
    metrics: MetricsSettings = MetricsSettings()

    @field_validator("socket_mode", mode="before")
    @classmethod
    def _octal(cls, value):
        """Modes are octal: ``"0600"``/``"0o600"`` in YAML (a bare 0600 is already octal in YAML 1.1)."""
        return int(value, 8) if isinstance(value, str) else value

    @classmethod
    def load(cls, path: str | Path | None, **overrides) -> DaemonConfig:
        """Read ``path`` (None = defaults) and apply the overrides that are not None."""
        data = yaml.safe_load(Path(path).read_text()) or {} if path else {}
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)
