"""Real node sizes from ``slurmd -C`` into a site file, so slurm.conf never claims more than a node has.

``slurmd -C`` prints the node as slurmd sees it (``NodeName=n1 CPUs=64 Boards=1 SocketsPerBoard=2
CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000 [Gres=gpu:a100:4]``). Memory is rounded *down* to whole
GB (the site file's unit), so the rendered RealMemory is never above what the node reports (a node that has
less memory than slurm.conf says goes INVAL).
"""

from __future__ import annotations

import re
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..fsio import write_file_atomic


@dataclass(frozen=True)
class RealNode:
    name: str
    cores: int
    sockets: int
    threads_per_core: int
    memory_mb: int
    gres: tuple[tuple[str, str, int], ...] = field(default=())

    @property
    def memory_gb(self) -> int:
        return self.memory_mb // 1024


def parse_slurmd_c(text: str) -> RealNode:
    """The first ``NodeName=...`` line of ``slurmd -C`` output; raises ValueError naming what is missing."""
    line = next((ln for ln in text.splitlines() if ln.startswith("NodeName=")), None)
    if line is None:
        raise ValueError("no 'NodeName=...' line on stdin: pipe the output of `slurmd -C` (run on the node)")
    kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
    try:
        boards, sockets, cores, threads = (int(kv.get("Boards", 1)), int(kv["SocketsPerBoard"]),
                                           int(kv["CoresPerSocket"]), int(kv["ThreadsPerCore"]))
        memory = int(kv["RealMemory"])
    except KeyError as err:
        raise ValueError(f"`slurmd -C` line lacks {err.args[0]}: {line}") from None
    except ValueError:
        raise ValueError(f"`slurmd -C` line has a non-numeric size: {line}") from None
    if memory < 1024:
        raise ValueError(f"RealMemory={memory} MB is below 1 GB, the site file's unit")
    gres = []
    for item in filter(None, kv.get("Gres", "").split(",")):
        parts = re.sub(r"\(.*\)$", "", item).split(":")
        if len(parts) == 3 and parts[2].isdigit():
            gres.append((parts[0], parts[1], int(parts[2])))
        elif len(parts) == 2 and parts[1].isdigit():
            gres.append((parts[0], parts[0], int(parts[1])))
    return RealNode(kv["NodeName"], boards * sockets * cores, boards * sockets, threads, memory, tuple(gres))


def apply_to_group(group: dict, node: RealNode) -> dict:
    """``group`` (a site node group as parsed YAML) with ``node``'s CPU, memory and GRES."""
    out = dict(group)
    out["cpu"] = {**group.get("cpu", {"arch": "x86_64"}), "cores": node.cores, "sockets": node.sockets,
                  "threads_per_core": node.threads_per_core}
    out["memory_gb"] = node.memory_gb
    accels = [dict(a) for a in group.get("accelerators", [])]
    for name, typ, count in node.gres:
        if name == "gpu":
            out["gpu"] = {**group.get("gpu", {"vendor": "nvidia"}), "type": typ, "count": count}
        else:
            match = [a for a in accels if a.get("kind") == name]
            if not match:
                raise ValueError(f"slurmd reports {name}:{typ}:{count} but the group has no '{name}' accelerator: "
                                 "add one (kind, vendor) to the site file first")
            match[0].update(type=typ, count=count)
    if accels:
        out["accelerators"] = accels
    return out


def node_group_yaml(node: RealNode) -> str:
    """A node group to paste under ``node_groups:`` (arch and the rest are for the admin to fill in)."""
    prefix = re.sub(r"\d+$", "", node.name) or node.name
    group = apply_to_group({"name": prefix, "prefix": prefix, "count": 1, "cpu": {"arch": "x86_64"}}, node)
    text = yaml.safe_dump([group], sort_keys=False, default_flow_style=None)
    return (f"# from `slurmd -C` on {node.name} ({node.memory_mb} MB reported, {node.memory_gb} GB kept); "
            f"check cpu.arch and count\n{text}")


def _find_group(doc: yaml.Node, name: str) -> yaml.MappingNode:
    def get(node: yaml.Node, key: str) -> yaml.Node | None:
        if isinstance(node, yaml.MappingNode):
            return next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        return None

    for cluster in getattr(get(doc, "clusters"), "value", []) or []:
        for group in getattr(get(cluster, "node_groups"), "value", []) or []:
            if getattr(get(group, "name"), "value", None) == name:
                return group
    raise ValueError(f"no node group named '{name}' in the site file")


def import_into_site(path: Path, group: str, node: RealNode, write: bool = False) -> tuple[str, bool]:
    """The YAML of ``group`` in the site file ``path`` with ``node``'s sizes, and whether it changed; with
    ``write`` the file is updated atomically (old one kept as ``PATH.hetsched-<time>.bak``) after the whole new
    file validated. Only that group's lines change (the rest of the file, comments included, stays)."""
    from ..site import parse_site

    text = path.read_text()
    try:
        node_yaml = _find_group(yaml.compose(text), group)
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {err}") from None
    start, end = node_yaml.start_mark.index, node_yaml.end_mark.index
    region = text[start:end]
    body = region.rstrip()
    indent = " " * node_yaml.start_mark.column
    new = apply_to_group(yaml.safe_load(textwrap.dedent(indent + body)), node)
    dumped = yaml.safe_dump(new, sort_keys=False, default_flow_style=None).rstrip("\n").splitlines()
    new_body = "\n".join([dumped[0], *(indent + line for line in dumped[1:])])
    new_text = text[:start] + new_body + region[len(body):] + text[end:]
    parse_site(yaml.safe_load(new_text), str(path))  # raises SiteError naming the field if it is not valid
    changed = new_text != text
    if write and changed:
        write_file_atomic(path.with_name(f"{path.name}.hetsched-{time.strftime('%Y%m%dT%H%M%S')}.bak"), text)
        write_file_atomic(path, new_text, mode=path.stat().st_mode & 0o777)
    return yaml.safe_dump([new], sort_keys=False, default_flow_style=None), changed
