"""Render a :class:`Site` into Slurm's config files.

``render_site`` is pure (site in, ``{file name: text}`` out) so a failed render writes nothing;
``write_atomic`` then replaces each file in one rename. Two layouts exist: a real deployment
(:class:`DeployPaths`, standard Debian paths) and the local one-host test cluster (:class:`LocalLayout`:
one slurmd per node on its own port, fake device files, power scripts that start/stop that slurmd).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import hostlist
import jinja2

from ..data import data_dir
from ..deploy.programs import deploys
from ..fsio import write_atomic  # noqa: F401  (re-exported by slurm_plugin.conf)
from ..site import NodeGroup, Site
from .billing import site_billing_weights
from .paths import DeployPaths

TEMPLATES = data_dir("gres_templates")
SHIM_CONFIG = "hetsched-shim.json"

# Default device files per (GRES name, vendor); a site overrides them with ``files:``.
DEVICE_PATTERNS: dict[tuple[str, str], str] = {
    ("gpu", "nvidia"): "/dev/nvidia{}",
    ("gpu", "amd"): "/dev/dri/renderD{}",
    ("gpu", "intel"): "/dev/dri/renderD{}",
    ("npu", "huawei"): "/dev/davinci{}",
    ("dpu", "nvidia"): "/dev/infiniband/uverbs{}",
}
# First device index per vendor (DRM render nodes start at 128).
DEVICE_BASE = {("gpu", "amd"): 128, ("gpu", "intel"): 128}
AUTODETECT = {"nvidia": "nvml", "amd": "rsmi", "intel": "oneapi"}


def loopback_addr(index: int) -> str:
    """The ``index``-th address of 127.1.0.1 onwards (Linux answers all of 127.0.0.0/8 on ``lo``)."""
    n = index + 1
    return f"127.{1 + n // 65536}.{n // 256 % 256}.{n % 256}"


@dataclass(frozen=True)
class LocalLayout(DeployPaths):
    """The one-host test cluster under ``root``: every slurmd on 127.0.0.1 with its own port."""

    root: str = "/var/lib/hetsched/cluster"
    slurmd_ports: dict[str, int] = field(default_factory=dict)
    slurm_user: str = "root"
    job_submit: bool = False
    powered_down: bool = False  # every node State=CLOUD: slurmctld starts them powered down, no slurmd runs
    node_addrs: dict[str, str] = field(default_factory=dict)  # a node not named here is at 127.0.0.1

    @classmethod
    def under(cls, root: str | Path, site: Site, job_submit: bool = False, daemon_socket: str | None = None,
              powered_down: bool = False, port_span: int | None = None) -> LocalLayout:
        """``port_span``: the slurmds share that many ports (node i gets ``slurmd_port + i % port_span``) and each
        node gets its own loopback address (127.1.x.y), so a site of thousands of powered-down nodes needs few
        ports; only nodes with distinct ports can run at the same time. None: one port per node, all on 127.0.0.1."""
        root = str(Path(root).resolve())
        hosts = [h for g in site.node_groups for h in g.hostnames]
        span = port_span if port_span and port_span < len(hosts) else len(hosts) or 1
        ports = {h: site.slurm.slurmd_port + i % span for i, h in enumerate(hosts)}
        addrs = {h: loopback_addr(i) for i, h in enumerate(hosts)} if span < len(hosts) else {}
        return cls(etc=f"{root}/etc", state_save=f"{root}/spool/ctld", slurmd_spool=f"{root}/spool",
                   log_dir=f"{root}/log", run_dir=f"{root}/run", resume_program=f"{root}/bin/resume",
                   suspend_program=f"{root}/bin/suspend", resume_fail_program=f"{root}/bin/resume-fail",
                   health_check_program=f"{root}/bin/healthcheck", reboot_program=f"{root}/bin/reboot",
                   prolog_program=f"{root}/bin/prolog",
                   epilog_program=f"{root}/bin/epilog", oci_run=f"{root}/bin/oci-run", oci_state=f"{root}/run/oci",
                   root=root, slurmd_ports=ports, powered_down=powered_down, node_addrs=addrs,
                   job_submit=job_submit, daemon_socket=daemon_socket or f"{root}/run/hetsched.sock")

    def device_dir(self, owner: str) -> str:
        return f"{self.root}/dev/{owner}"

    def device_owners(self, group: NodeGroup) -> list[tuple[str, str]]:
        """``(owner, nodes)``: whose device directory the gres.conf line of ``nodes`` names. Each node has its own;
        on a powered-down site a group shares one (one gres.conf line per group: slurmctld parses gres.conf once
        per node, so one line per node costs it minutes at thousands of nodes)."""
        if self.powered_down:
            return [(group.name, hostlist.collect_hostlist(list(group.hostnames)))]
        return [(h, h) for h in group.hostnames]


@dataclass(frozen=True)
class ContainerLayout(DeployPaths):
    """The container test cluster: every node is its own container (hostname = NodeName) at a fixed address on
    a private bridge, slurmctld and slurmdbd have theirs; Debian's paths inside, no cgroups (config_overrides).
    ``accounting_addr`` (slurmdbd's address) turns on accounting: QOS, associations, fair-share."""

    slurm_user: str = "root"
    job_submit: bool = False
    controller_addr: str = "127.0.0.1"
    accounting_addr: str = ""
    node_addrs: dict[str, str] = field(default_factory=dict)
    resume_program: str = "/etc/slurm/hetsched-resume"
    suspend_program: str = "/etc/slurm/hetsched-suspend"
    resume_fail_program: str = "/etc/slurm/hetsched-resume-fail"
    health_check_program: str = "/etc/slurm/hetsched-healthcheck"
    reboot_program: str = ""  # containers are not rebooted: drain_reboot nodes stay drained


@dataclass(frozen=True)
class GresLine:
    """One gres.conf line: a GRES of one node (local) or a node group (deployment)."""

    nodes: str
    name: str
    type: str
    count: int
    vendor: str
    files: str
    autodetect: str | None


def _device_range(name: str, vendor: str, count: int) -> str:
    pattern = DEVICE_PATTERNS.get((name, vendor), f"/dev/{name}{{}}")
    base = DEVICE_BASE.get((name, vendor), 0)
    rng = f"{base}" if count == 1 else f"[{base}-{base + count - 1}]"
    return pattern.format(rng)


def device_files(name: str, vendor: str, count: int) -> list[str]:
    """The device file names of one node's ``count`` devices, e.g. ``nvidia0 .. nvidia3``."""
    return [os.path.basename(p) for p in hostlist.expand_hostlist(_device_range(name, vendor, count))]


def _gres_lines(group: NodeGroup, layout: DeployPaths) -> list[GresLine]:
    items = []
    if group.gpu:
        g = group.gpu
        items.append(("gpu", g.type, g.count, g.vendor, g.files, AUTODETECT[g.vendor] if g.autodetect else None))
    items += [(a.kind, a.type, a.count, a.vendor, a.files, None) for a in group.accelerators]
    lines = []
    for name, typ, count, vendor, files, auto in items:
        if isinstance(layout, LocalLayout):
            # Fake devices live under the cluster root; a range like nvidia[0-3] names them all.
            rng = os.path.basename(_device_range(name, vendor, count))
            for owner, nodes in layout.device_owners(group):
                lines.append(GresLine(nodes, name, typ, count, vendor, f"{layout.device_dir(owner)}/{rng}", None))
        else:
            nodes = hostlist.collect_hostlist(list(group.hostnames))
            lines.append(GresLine(nodes, name, typ, count, vendor, files or _device_range(name, vendor, count),
                                  auto))
    return lines


class ConfValueError(ValueError):
    """A value cannot be written into slurm.conf (it would end the line, start a comment or an unbalanced quote)."""


def conf_value(value: str) -> str:
    """A slurm.conf value: as is, or in double quotes when it holds spaces (Slurm's parser reads ``"..."``).

    Raises :class:`ConfValueError` for a newline, ``#`` or ``"``, which slurm.conf cannot carry in a value.
    """
    bad = [c for c in ("\n", "\r", "#", '"') if c in value]
    if bad:
        raise ConfValueError(f"{value!r} cannot be written into slurm.conf (it contains {bad[0]!r}): "
                             "choose a path without newlines, '#' or '\"'")
    return f'"{value}"' if any(c.isspace() for c in value) else value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["hostlist"] = lambda names: hostlist.collect_hostlist(list(names))
    env.filters["conf_value"] = conf_value
    env.filters["node_addr"] = lambda node, pattern: pattern.format(node=node)
    return env


def _node_weight(site: Site) -> dict[str, int]:
    """Slurm allocates lower Weight first: rank node groups by cost per hour (cheapest = 1)."""
    costs = sorted({g.cost_per_hour for g in site.node_groups})
    return {g.name: costs.index(g.cost_per_hour) + 1 for g in site.node_groups}


def shim_config(site: Site, layout: DeployPaths, timeout_ms: int = 50, fail: str = "open") -> dict:
    """What job_submit.lua reads at load: where the daemon is, how long to wait, and what to do without it
    (``fallback.gres``: where GPU/NPU jobs that name no partition go then; ``sensitive``: the classes and
    partitions isolation needs, which never fail open; see admission.fallback)."""
    from ..admission.fallback import gres_fallback, sensitive_fallback

    config = {"version": 1, "socket": layout.daemon_socket, "timeout_ms": timeout_ms, "fail": fail,
              "site": site.name, "fallback": {"gres": gres_fallback(site)}}
    sensitive = sensitive_fallback(site)
    if sensitive:
        config["sensitive"] = sensitive
    return config


def _context(site: Site, layout: DeployPaths) -> dict:
    groups = [
        {"group": g, "hostlist": hostlist.collect_hostlist(list(g.hostnames)),
         "gres": ",".join(f"{n}:{t}:{c}" for n, t, c in g.gres), "features": ",".join(g.all_features),
         "weight": _node_weight(site)[g.name]}
        for g in site.node_groups
    ]
    partitions = [
        {"p": p, "nodes": hostlist.collect_hostlist([h for n in p.node_groups for h in site.group(n).hostnames])}
        for p in site.partitions
    ]
    gres = [line for g in site.node_groups for line in _gres_lines(g, layout)]
    containers = isinstance(layout, ContainerLayout)
    return {"site": site, "s": site.slurm, "layout": layout, "local": isinstance(layout, LocalLayout),
            "containers": containers, "accounting": layout.accounting_addr if containers else "",
            "preempt": any(t.preempts for t in site.policy.qos_tiers), "groups": groups, "partitions": partitions,
            # the container cluster's node image has no Python for the node programs: no Prolog/Epilog there
            "gres_lines": gres, "fragments": False, "deploy_programs": deploys(site) and not containers,
            "oci_conf": bool(site.deploy.image_store),
            # sreport/sacct and fair-share need slurmdbd, and slurmctld refuses gres TRES without it
            "billing": site_billing_weights(site) if containers and layout.accounting_addr else {}}


def render_site(site: Site, layout: DeployPaths | None = None) -> dict[str, str]:
    """Render every config file for ``site`` as one standalone set; returns ``{file name: contents}`` and
    writes nothing. The local cluster runs this; a real site merges :func:`render_fragments` instead.
    ``oci.conf`` (a site with ``deploy.image_store``) is :func:`slurm_plugin.deploy.oci.render_oci_conf`'s."""
    layout = layout or DeployPaths()
    env = _environment()
    ctx = _context(site, layout)
    out = {
        "slurm.conf": env.get_template("slurm.conf.j2").render(ctx),
        "gres.conf": env.get_template("gres.conf.j2").render(ctx),
        SHIM_CONFIG: json.dumps(shim_config(site, layout), indent=2, sort_keys=True) + "\n",
    }
    return out


# The parts of a site's config the suite owns, as files a site's slurm.conf / gres.conf include.
SLURM_FRAGMENTS = ("nodes.conf", "partitions.conf", "power.conf", "job_submit.conf")
DEPLOY_FRAGMENT = "deploy.conf"  # Prolog/Epilog: only for a site that deploys (see slurm_fragments)
GRES_FRAGMENT = "gres.conf"


def slurm_fragments(site: Site) -> tuple[str, ...]:
    """The slurm.conf fragments of ``site``: :data:`SLURM_FRAGMENTS`, and :data:`DEPLOY_FRAGMENT` when it deploys
    (a site without deployment keeps its Include block as it was)."""
    return SLURM_FRAGMENTS + ((DEPLOY_FRAGMENT,) if deploys(site) else ())


def render_fragments(site: Site, layout: DeployPaths, sets_dir: str = "hetsched.d") -> dict[str, str]:
    """The suite's parts of the config as fragments (``{name: text}``, pure): node lines and GresTypes,
    partitions, power saving (programs and timeouts), JobSubmitPlugins, Prolog/Epilog of a site that deploys
    (``deploy.conf``; its oci.conf and programs are :func:`slurm_plugin.deploy.programs.deploy_files`'), the
    gres.conf lines, and the shim's config. Nothing of the site's own settings (ClusterName, accounting, priority weights...) is in them."""
    env = _environment()
    ctx = _context(site, layout)
    out = {name: env.get_template(f"fragments/{name}.j2").render({**ctx, "fragment": name, "sets_dir": sets_dir})
           for name in (*slurm_fragments(site), GRES_FRAGMENT)}
    out[SHIM_CONFIG] = json.dumps(shim_config(site, layout), indent=2, sort_keys=True) + "\n"
    return out


def render_base(site: Site, layout: DeployPaths, include_block: str) -> str:
    """A slurm.conf for a directory that has none: the site file's cluster-wide settings and ``include_block``
    (the ``Include`` lines of the fragments) instead of the suite's own parts. From then on it is the site's."""
    ctx = {**_context(site, layout), "fragments": True, "include_block": include_block.rstrip("\n")}
    return _environment().get_template("slurm.conf.j2").render(ctx)
