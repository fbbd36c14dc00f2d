"""Typed, frozen description of a site: the resource model every other part reads.

A site file (YAML) is parsed into :class:`Site`. Field-level checks (types, ranges, unknown keys with a
did-you-mean, IANA time zones) live on the models; checks that span fields (duplicate node names, partitions
naming missing node groups) live in :mod:`slurm_plugin.site.checks`. Load with
:func:`slurm_plugin.site.load_site`, never by calling these constructors on raw YAML yourself.
"""

from __future__ import annotations

import difflib
import re
import zoneinfo
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .bounds import (ARCHES, MAX_CPUS_PER_NODE, MAX_DEVICES_PER_NODE, MAX_MEMORY_GB, MAX_NODES_PER_GROUP, SECONDS_MAX,
                     UINT16_MAX)
from .priority import BAND_SPAN, SITE_FACTOR_MAX

Arch = Literal[ARCHES]  # type: ignore[valid-type]  # the values of bounds.ARCHES
GpuVendor = Literal["nvidia", "amd", "intel"]
AccelKind = Literal["npu", "dpu", "fpga"]
AccelVendor = Literal["huawei", "nvidia", "intel", "amd", "xilinx"]
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

# Grammar of every value rendered into slurm.conf / gres.conf (``key=value`` words, ``#`` comments, one
# line each): no whitespace where a word is expected, never a newline, ``#`` or ``=``; each kind its charset.
# Slurm names: node names, partitions, GRES types, features.
SlurmName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$", max_length=64)]
# SlurmctldHost: a hostname, optionally with its address in parentheses (``ctl1(10.0.0.1)``).
HostName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(\([A-Za-z0-9.:-]+\))?$",
                                max_length=255)]
# gres.conf File=: absolute device paths with Slurm ranges, e.g. /dev/nvidia[0-3] or /dev/a0,/dev/a1.
DevicePaths = Annotated[str, Field(pattern=r"^/[A-Za-z0-9_./\[\],-]*$", max_length=1024)]
# Text shown in a generated comment line (a CPU model name): letters, digits, space and ``_.,:+()/@-``.
CommentText = Annotated[str, Field(pattern=r"^[A-Za-z0-9 _.,:+()/@-]*$", max_length=128)]
# Slurm time: [days-]hours[:minutes[:seconds]] or minutes (PriorityMaxAge, MaxTime).
SlurmTime = Annotated[str, Field(pattern=r"^\d{1,6}(-\d{1,2})?(:\d{1,2}){0,2}$")]
PosInt = Annotated[int, Field(gt=0)]
# An image reference: name[:tag] (a directory of the image store and a tag in its index.json).
ImageRef = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$")]
# An absolute path that can be written into a config file (no spaces, quotes, '#', '%' or '$').
AbsPath = Annotated[str, Field(pattern=r"^/[A-Za-z0-9_./@+-]*$", max_length=1024)]
NonNegInt = Annotated[int, Field(ge=0)]
NonNegFloat = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]

Count = Annotated[int, Field(gt=0, le=MAX_DEVICES_PER_NODE)]
Seconds = Annotated[int, Field(ge=0, le=SECONDS_MAX)]
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


class Strict(BaseModel):
    """Frozen model that rejects unknown keys with a did-you-mean."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _unknown_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
        unknown = [k for k in data if k not in known]
        if unknown:
            key = str(unknown[0])
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"unknown key '{key}'{hint} (valid keys: {', '.join(sorted(known))})")
        return data


def _check_hhmm(value: str) -> str:
    if value != "24:00" and not _HHMM.match(value):
        raise ValueError(f"time '{value}' is not HH:MM (00:00 .. 24:00)")
    return value


def _check_tz(value: str | None) -> str | None:
    if value is None:
        return value
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown IANA time zone '{value}' (e.g. 'Europe/Paris', 'America/New_York', 'UTC')")
    return value


class Cpu(Strict):
    arch: Arch
    cores: Annotated[int, Field(gt=0, le=MAX_CPUS_PER_NODE)] = Field(
        description="CPU cores per node (Slurm CPUs when threads_per_core is 1)")
    sockets: Annotated[int, Field(gt=0, le=256)] = 1
    threads_per_core: Annotated[int, Field(gt=0, le=8)] = 1
    ghz: Annotated[float, Field(gt=0, le=20, allow_inf_nan=False)] = 2.0
    model: CommentText = ""

    @model_validator(mode="after")
    def _sockets_divide_cores(self) -> Cpu:
        if self.cores % self.sockets:
            raise ValueError(f"cores ({self.cores}) must be a multiple of sockets ({self.sockets})")
        if self.cores * self.threads_per_core > MAX_CPUS_PER_NODE:
            raise ValueError(f"cores x threads_per_core ({self.cores * self.threads_per_core}) exceeds Slurm's "
                             f"{MAX_CPUS_PER_NODE} CPUs per node")
        return self


class Gpu(Strict):
    vendor: GpuVendor
    type: SlurmName
    count: Count
    memory_gb: Annotated[int, Field(gt=0, le=4096)] = 16
    autodetect: bool = Field(False, description="let slurmd detect the devices (nvml, rsmi, oneapi)")
    files: DevicePaths | None = Field(None, description="device files as a Slurm range, e.g. /dev/nvidia[0-3]")


class Accelerator(Strict):
    kind: AccelKind
    vendor: AccelVendor
    type: SlurmName
    count: Count
    memory_gb: Annotated[int, Field(ge=0, le=4096)] = 0
    files: DevicePaths | None = None


class PowerDraw(Strict):
    idle_w: NonNegFloat
    busy_w: NonNegFloat
    off_w: NonNegFloat = 0.0

    @model_validator(mode="after")
    def _busy_at_least_idle(self) -> PowerDraw:
        if self.busy_w < self.idle_w:
            raise ValueError(f"busy_w ({self.busy_w}) is below idle_w ({self.idle_w})")
        return self


class Bmc(Strict):
    """How to reach the nodes' baseboard management controllers for power (``{node}`` is the node name)."""

    protocol: Literal["redfish", "ipmi"]
    address: str = Field(description="e.g. https://{node}-bmc (redfish) or {node}-bmc[:port] (ipmi)")
    system: str | None = Field(None, description="Redfish system name; default: the node name, or the only one")
    credentials_file: str | None = Field(None, description="file with 'user:password', readable only by root")
    verify_tls: bool = True
    cipher_suite: Annotated[int, Field(ge=0, le=17)] | None = Field(
        None, description="IPMI lanplus cipher suite (ipmitool -C); default: ipmitool's own (17 on 1.8.19)")


class NodeGroup(Strict):
    """Identical nodes. Hostnames are ``prefix`` + index (``start`` .. ``start+count-1``), zero-padded to
    ``digits`` (default: the width of the last index), e.g. prefix ``arm``, count 3 -> ``arm[1-3]``."""

    name: SlurmName
    count: Annotated[int, Field(gt=0, le=MAX_NODES_PER_GROUP)]
    prefix: SlurmName | None = None
    start: Annotated[int, Field(ge=0, le=99_999_999)] = 1
    digits: Annotated[int, Field(ge=1, le=8)] | None = None
    cpu: Cpu
    memory_gb: Annotated[int, Field(gt=0, le=MAX_MEMORY_GB)]
    gpu: Gpu | None = None
    accelerators: tuple[Accelerator, ...] = Field((), max_length=16)
    features: tuple[SlurmName, ...] = Field((), max_length=64)
    cost_per_hour: NonNegFloat = 0.0
    power: PowerDraw = PowerDraw(idle_w=100.0, busy_w=300.0)
    boot_time_s: Seconds = 120
    shutdown_time_s: Seconds = 30
    region: SlurmName | None = None
    timezone: str | None = None
    burst: bool = Field(False, description="pay-per-use nodes (cloud burst): cost_per_hour is paid only for the "
                                           "hours they are on; `hetsched cost plan` turns them on when worth it")
    bmc: Bmc | None = None
    sensitive: bool = Field(False, description="may run workload classes of form 'sensitive' (exclusive, audited, "
                            "power-cycled after each such job)")
    kvm: bool = Field(False, description="the hardware offers virtualization: with deploy.vm set, sensitive jobs on "
                      "this group run inside a QEMU VM started by the Prolog (slurm_plugin/deploy/vm.py)")
    hw_profile: SlurmName | None = Field(None, description="vendor profile (BIOS settings) of these nodes: a name "
                                                            "in slurm_plugin/hw/profiles/*.yaml (`hetsched hw`)")
    speed_factor: Annotated[float, Field(gt=0, le=10)] = Field(
        1.0, description="measured run speed of these nodes against the other benchmarked nodes of their arch "
                         "(1.0: as the workload classes' speed says); normally set by the site's speed_factors "
                         "overlay (`hetsched hw bench analyze --factors`), which multiplies it into every class's "
                         "speed on this group")
    node_addr: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:{}-]+$", max_length=255)] | None = Field(
        None, description="slurm.conf NodeAddr of each node, '{node}' is its name (e.g. '{node}-ib', '127.0.0.1'); "
                          "default: the node name")

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_tz(v)))

    @cached_property
    def hostnames(self) -> tuple[str, ...]:
        prefix = self.prefix or self.name
        last = self.start + self.count - 1
        width = self.digits or len(str(last))
        return tuple(f"{prefix}{i:0{width}d}" for i in range(self.start, last + 1))

    @property
    def gres(self) -> tuple[tuple[str, str, int], ...]:
        """(name, type, count) of every typed GRES on one node, GPUs first."""
        out = [("gpu", self.gpu.type, self.gpu.count)] if self.gpu else []
        out += [(a.kind, a.type, a.count) for a in self.accelerators]
        return tuple(out)

    @property
    def all_features(self) -> tuple[str, ...]:
        """Slurm node Features: the arch, GPU/accelerator vendors and types, region, then the site's own."""
        feats: list[str] = [self.cpu.arch]
        if self.gpu:
            feats += [self.gpu.vendor, self.gpu.type]
        for acc in self.accelerators:
            feats += [acc.vendor, acc.type]
        if self.region:
            feats.append(self.region)
        feats += list(self.features)
        return tuple(dict.fromkeys(feats))


class PriceWindow(Strict):
    """A time-of-use electricity price: ``price_kwh`` during the weekly window (read in each node group's own
    time zone; an end not after the start runs past midnight)."""

    days: tuple[Weekday, ...] = WEEKDAYS
    start: str = "00:00"
    end: str = "24:00"
    price_kwh: NonNegFloat

    _hhmm = field_validator("start", "end")(classmethod(lambda cls, v: _check_hhmm(v)))


class Tariff(Strict):
    """Electricity price of a region: ``price_kwh`` (currency per kWh) except in ``windows`` (first match wins)."""

    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "EUR"
    price_kwh: NonNegFloat
    windows: tuple[PriceWindow, ...] = Field((), max_length=64)


class Cluster(Strict):
    name: SlurmName
    region: SlurmName | None = None
    timezone: str = "UTC"
    tariff: Tariff | None = Field(None, description="time-of-use electricity price of this cluster's region "
                                                    "(`hetsched cost plan`); none: energy costs nothing")
    node_groups: tuple[NodeGroup, ...] = Field(min_length=1, max_length=1024)

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_tz(v)))

    @model_validator(mode="after")
    def _inherit_region_and_timezone(self) -> Cluster:
        """Node groups without their own region/time zone take the cluster's."""
        groups = tuple(
            g.model_copy(update={"region": g.region or self.region, "timezone": g.timezone or self.timezone})
            for g in self.node_groups
        )
        object.__setattr__(self, "node_groups", groups)
        return self


class Partition(Strict):
    name: SlurmName
    node_groups: tuple[SlurmName, ...] = Field(min_length=1, max_length=1024)
    default: bool = False
    max_time: str = Field("INFINITE", pattern=r"^(INFINITE|UNLIMITED|\d{1,6}(-\d{1,2})?(:\d{1,2}){0,2})$")
    priority_tier: Annotated[int, Field(ge=0, le=UINT16_MAX)] = 1
    state: Literal["UP", "DOWN", "DRAIN", "INACTIVE"] = "UP"
    exclusive: bool = Field(False, description="OverSubscribe=EXCLUSIVE: every job gets whole nodes (sensitive work)")


class WorkloadClass(Strict):
    """A kind of work. ``portable`` work may be moved between the architectures in ``archs``; ``speed`` gives
    relative speed per arch or accelerator type (missing = 1.0, 0 = cannot run there)."""

    name: SlurmName
    portable: bool = False
    archs: tuple[Arch, ...] = ARCHES
    accelerators: tuple[SlurmName, ...] = ()
    speed: dict[str, NonNegFloat] = Field(default_factory=dict)
    qos: SlurmName | None = None
    form: Literal["batch", "container", "sensitive", "function"] = Field(
        "batch", description="how admission deploys this class's jobs (slurm_plugin/deploy/form.py)")
    image: ImageRef | None = Field(None, description="the container image of form 'container'/'function' jobs "
                                   "that name none")


class VmSettings(Strict):
    """The VM form of sensitive work on node groups flagged ``kvm`` (slurm_plugin/deploy/vm.py): the guest's
    kernel and initramfs (``hetsched deploy vm initrd`` builds the agent's), QEMU's accelerator (``auto``:
    KVM, else QEMU falls back to TCG; ``tcg`` where /dev/kvm opens but runs no guest), size and limits."""

    kernel: AbsPath
    initrd: AbsPath
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    qemu: Annotated[str, Field(pattern=r"^[A-Za-z0-9_./+-]+$", max_length=1024)] = "qemu-system-x86_64"
    machine: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.,=-]+$", max_length=256)] = "pc"
    memory_mb: Annotated[int, Field(ge=64, le=MAX_MEMORY_GB * 1024)] = 256
    cpus: Annotated[int, Field(ge=1, le=1024)] = 1
    boot_timeout_s: Annotated[int, Field(gt=0, le=3600)] = 300
    run_dir: AbsPath = "/run/hetsched/vm"
    append: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.,=:/ -]*$", max_length=512)] = Field(
        "", description="more kernel arguments")


class Deploy(Strict):
    """Containers and serverless (issue 19): the OCI runtime Slurm calls (rendered into oci.conf), where images
    (OCI layouts, one directory per image name) and the content-addressed bundle cache live, its size and age
    bounds, the append-only audit log of sensitive jobs, and the function gateway's pilots."""

    runtime: Literal["runc", "crun"] = "runc"
    image_store: AbsPath | None = Field(None, description="OCI layouts <image_store>/<name>/ (None: containers off)")
    bundle_cache: AbsPath = "/var/lib/hetsched/bundles"
    cache_max_mb: Annotated[int, Field(gt=0, le=MAX_MEMORY_GB * 1024)] = 10240
    cache_max_age_s: Seconds = 7 * 86400
    audit_log: AbsPath = "/var/log/hetsched/sensitive-audit.jsonl"
    fn_idle_timeout_s: Annotated[int, Field(gt=0, le=86400)] = 60
    fn_max_pilots: Annotated[int, Field(gt=0, le=1024)] = 4
    vm: VmSettings | None = Field(None, description="sensitive jobs on node groups flagged kvm run in a QEMU VM "
                                                    "(None: they run on the node itself)")


class QosTier(Strict):
    name: SlurmName
    target_pct: Annotated[float, Field(gt=0, le=100)]
    priority: Annotated[int, Field(ge=0, le=SITE_FACTOR_MAX // BAND_SPAN)] = Field(
        0, description="band of the tier; band x 4000 is the SiteFactor (see slurm_plugin.site.priority)")
    # Used where Slurm keeps accounting (slurmdbd: the container cluster, `hetsched accounting apply`).
    preempts: tuple[SlurmName, ...] = Field((), description="tiers whose running jobs this tier's jobs may preempt")
    max_wall: SlurmTime | None = Field(None, description="the longest time limit a job of this tier may ask")
    max_wait: SlurmTime | None = Field(None, description="the SLA: target_pct % of this tier's jobs start within this "
                                       "wait (Slurm time, e.g. 5:00); `hetsched sla report` measures it")
    sla_penalty: NonNegFloat = Field(0.0, description="currency per node-hour of this tier's work still waiting "
                                                      "past max_wait, per hour (`hetsched cost plan`)")
    grp_tres: Annotated[str, Field(pattern=r"^[a-z]+(/[A-Za-z0-9_:.-]+)?=\d+(,[a-z]+(/[A-Za-z0-9_:.-]+)?=\d+)*$")] | None = Field(
        None, description="what all running jobs of this tier may hold together, Slurm's GrpTRES (cpu=64,gres/gpu=4)")


class Window(Strict):
    days: tuple[Weekday, ...] = WEEKDAYS
    start: str = "00:00"
    end: str = "24:00"

    _hhmm = field_validator("start", "end")(classmethod(lambda cls, v: _check_hhmm(v)))


class Calendar(Strict):
    """Named set of weekly windows, read in each node group's own time zone unless ``timezone`` is set.
    A window whose end is before its start runs past midnight (e.g. 19:00-07:00)."""

    name: SlurmName
    windows: tuple[Window, ...] = Field(min_length=1, max_length=256)
    timezone: str | None = None

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_tz(v)))


class Reshape(Strict):
    """While ``calendar`` is active, change ``partition``: add the nodes of ``add_groups`` (each group's
    calendar read in its own time zone, which gives follow-the-sun), and/or keep only ``keep_fraction`` of
    each of its own node groups (rounded up). A node leaves a partition only when no job of that partition
    runs on it."""

    name: SlurmName
    calendar: SlurmName
    partition: SlurmName
    add_groups: tuple[SlurmName, ...] = ()
    keep_fraction: Annotated[float, Field(ge=0, le=1)] | None = None


class CostWeights(Strict):
    wait: NonNegFloat = 1.0
    cost: NonNegFloat = 0.1
    energy: NonNegFloat = 0.1


class Rightsize(Strict):
    """Vertical right-sizing from job history (``hetsched scale rightsize``), opt-in. ``suggest``: the CLI
    reports; ``apply``: admission also lowers ``--cpus-per-task``/memory of new jobs of ``classes`` (empty = every
    class with a suggestion) to the suggested share, never below the ``percentile`` of past use plus ``margin``.
    ``history``: sacct -P / --json export or SWF of finished jobs (a relative path is read beside the site file)."""

    mode: Literal["off", "suggest", "apply"] = "off"
    history: str | None = None
    classes: tuple[SlurmName, ...] = ()
    percentile: Annotated[float, Field(ge=50, le=100)] = 95.0
    margin: Annotated[float, Field(ge=0, le=2)] = 0.2
    min_jobs: PosInt = 30
    min_saving: Annotated[float, Field(ge=0, lt=1)] = 0.25

    @model_validator(mode="after")
    def _history_when_on(self) -> Rightsize:
        if self.mode != "off" and not self.history:
            raise ValueError(f"rightsize mode '{self.mode}' needs 'history' (a sacct export or SWF file)")
        return self


# A user or group as the site's passwd/group databases know it: a name or a numeric id.
Principal = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*[$]?$", max_length=64)] | Annotated[
    int, Field(ge=0, le=4294967294)]


class Grant(Strict):
    """Who may run work of higher classes and tiers than the default when Slurm's accounting does not decide
    it (see docs/trust.md): the users and groups named (names or ids, matched against the job's uid as
    slurmctld passes it and that uid's groups) may use ``classes`` (each with its own ``qos`` tier) and
    ``tiers``. Nothing here is read from anything a user writes into a job."""

    users: tuple[Principal, ...] = ()
    groups: tuple[Principal, ...] = ()
    classes: tuple[SlurmName, ...] = ()
    tiers: tuple[SlurmName, ...] = ()

    @model_validator(mode="after")
    def _someone_something(self) -> Grant:
        if not (self.users or self.groups):
            raise ValueError("a grant needs 'users' or 'groups'")
        if not (self.classes or self.tiers):
            raise ValueError("a grant needs 'classes' or 'tiers'")
        return self


class Policy(Strict):
    workload_classes: tuple[WorkloadClass, ...] = Field((), max_length=256)
    default_class: SlurmName | None = None
    qos_tiers: tuple[QosTier, ...] = Field((), max_length=256)
    grants: tuple[Grant, ...] = Field((), max_length=1024)
    calendars: tuple[Calendar, ...] = Field((), max_length=256)
    reshapes: tuple[Reshape, ...] = Field((), max_length=256)
    cost_weights: CostWeights = CostWeights()
    rightsize: Rightsize = Rightsize()


class SlurmSettings(Strict):
    """Cluster-wide slurm.conf settings the suite sets on purpose; everything else keeps Slurm's default."""

    cluster_name: SlurmName = "hetsched"
    controller: HostName = "localhost"
    slurmctld_port: Annotated[int, Field(ge=1024, le=65535)] = 6817
    slurmd_port: Annotated[int, Field(ge=1024, le=65535)] = 6818
    suspend_time: int = Field(-1, ge=-1, le=SECONDS_MAX,
                              description="idle seconds before Slurm powers a node down; -1 = never")
    resume_timeout: Annotated[int, Field(gt=0, le=UINT16_MAX)] = 300
    suspend_timeout: Annotated[int, Field(gt=0, le=UINT16_MAX)] = 60
    resume_rate: Annotated[int, Field(ge=0, le=UINT16_MAX)] = 0
    suspend_rate: Annotated[int, Field(ge=0, le=UINT16_MAX)] = 0
    priority_weight_age: Annotated[int, Field(ge=0, le=0xFFFFFFFE)] = 1000
    priority_weight_job_size: Annotated[int, Field(ge=0, le=0xFFFFFFFE)] = 100
    priority_max_age: SlurmTime = "7-0"
    # Only where Slurm keeps accounting (slurmdbd: the container cluster); without it both weights are 0.
    priority_weight_fairshare: Annotated[int, Field(ge=0, le=0xFFFFFFFE)] = 10000
    priority_weight_qos: Annotated[int, Field(ge=0, le=0xFFFFFFFE)] = 10000
    max_job_count: int | None = Field(None, ge=1, le=2**31 - 1,
                                      description="slurm.conf MaxJobCount: jobs slurmctld keeps (queued, running "
                                                  "and recently ended); None = Slurm's default, 10,000")
    max_array_size: int | None = Field(None, ge=1, le=4_000_001,
                                       description="slurm.conf MaxArraySize; None = Slurm's default, 1,001")
    health_check_interval: int = Field(0, ge=0, le=UINT16_MAX,
                                       description="seconds between `hetsched health check` runs on each node "
                                                   "(slurm.conf HealthCheckProgram); 0 = no health check")


class FederationMember(Strict):
    """One Slurm cluster of the site's federation: its ``ClusterName`` and where it is (local night is read in
    ``timezone``)."""

    cluster: SlurmName
    timezone: str = "UTC"
    region: SlurmName | None = None

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_tz(v)))


class Federation(Strict):
    """The Slurm federation this site's cluster belongs to (``hetsched accounting federate``), for admission's
    follow-the-sun routing: a portable job (a class of ``portable_classes``, every class when empty; not
    pinned to one cluster by ``-M``) goes to a member at local ``night`` with room for it, else to the member
    with the most free CPUs, through the job's ``clusters`` (admission/federation.py)."""

    name: SlurmName
    members: tuple[FederationMember, ...] = Field(min_length=2, max_length=64)
    night: tuple[Window, ...] = Field((Window(start="22:00", end="06:00"),), min_length=1, max_length=16)
    portable_classes: tuple[SlurmName, ...] = Field((), max_length=256)
    refresh_s: float = Field(30.0, gt=0, le=3600, description="how often admission reads the members' free CPUs")


class Site(Strict):
    """The whole site: Slurm settings, a resource pool of clusters, partitions and policy."""

    name: SlurmName
    description: str = Field("", max_length=4096)
    slurm: SlurmSettings = SlurmSettings()
    clusters: tuple[Cluster, ...] = Field(min_length=1, max_length=256)
    partitions: tuple[Partition, ...] = Field(min_length=1, max_length=1024)
    policy: Policy = Policy()
    speed_factors: str | None = Field(
        None, max_length=4096, description="measured speed factors per node group (a file written by `hetsched hw "
                                           "bench analyze --factors`, relative to the site file): the loader sets "
                                           "each named group's speed_factor from it")
    deploy: Deploy = Deploy()
    federation: Federation | None = None

    @property
    def node_groups(self) -> tuple[NodeGroup, ...]:
        return tuple(g for c in self.clusters for g in c.node_groups)

    def group(self, name: str) -> NodeGroup:
        for g in self.node_groups:
            if g.name == name:
                return g
        raise KeyError(name)

    @property
    def gres_types(self) -> tuple[str, ...]:
        """GRES names present anywhere in the site (for GresTypes=)."""
        return tuple(dict.fromkeys(name for g in self.node_groups for name, _, _ in g.gres))

    def sensitive_partitions(self) -> tuple[str, ...]:
        """Partitions that are exclusive and made only of node groups marked ``sensitive`` (deploy/form.py)."""
        return tuple(p.name for p in self.partitions
                     if p.exclusive and all(self.group(g).sensitive for g in p.node_groups))

    def node_count(self) -> int:
        return sum(g.count for g in self.node_groups)
