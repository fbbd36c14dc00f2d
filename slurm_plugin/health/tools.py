"""The accelerator tools the health check reads: each one's command lines and a pure parser of what it prints.

Every record is one device (or tile) as a flat JSON object for the ``json`` signatures; records of the vendor
tools carry ``tool`` (the tool's name) so their signatures cannot match another tool's fields:

- ``nvidia-smi --query-gpu=<NVIDIA_FIELDS> --format=csv,noheader,nounits``: one record per GPU, keyed by the
  query field names (no ``tool``: the field names are nvidia-smi's own).
- ``rocm-smi --showtemp --showuse --showmemuse --showxgmierr --json``: ``{"card0": {"Temperature (Sensor edge)
  (C)": "45.0", "GPU use (%)": "0", "XGMI Error count": "0", ...}, "system": {...}}`` (rocm_smi.py's printLog
  keys; ``formatJson``): one record per ``cardN`` with ``card``.
- ``npu-smi info``: the device table (``| NPU Name | Health | Power(W) Temp(C) ... |`` over ``| Chip | Bus-Id |
  AICore(%) ... |``, a pair of rows per chip): one record per chip with ``NPU ID``, ``Chip ID`` and ``Health
  Status`` (the names ``npu-smi info -t health`` prints, so the same signatures apply), ``Name``, ``Power(W)``,
  ``Temp(C)``, ``Bus-Id``, ``AICore(%)``; the process table after it is not read.
- ``xpu-smi discovery -j`` (``{"device_list": [{"device_id": 0, ...}]}``) then ``xpu-smi stats -d ID -j``
  (``{"device_id": 0, "device_level": [{"metrics_type": "XPUM_STATS_POWER", "value": 44.7}, ...],
  "tile_level": [{"tile_id": 0, "data_list": [...]}]}``): one record per device and per tile, each metric under
  its name without the ``XPUM_STATS_`` prefix.

A tool that is not installed is listed as absent (skipped, not a failure); one that fails or prints something
else is logged and yields nothing this run.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
NVIDIA_FIELDS = ("index", "pci.bus_id", "remapped_rows.pending", "remapped_rows.failure", "retired_pages.pending",
                 "ecc.errors.uncorrected.volatile.total", "clocks_throttle_reasons.hw_thermal_slowdown",
                 "clocks_throttle_reasons.hw_power_brake_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown")
ROCM_ARGS = ("--showtemp", "--showuse", "--showmemuse", "--showxgmierr", "--json")
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
Record = dict[str, Any]


def run_tool(argv: list[str], timeout: float) -> str | None:
    """The tool's stdout, or None (logged) when it fails, exits non-zero or runs past ``timeout``."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s: %s", argv[0], exc)
        return None
    if proc.returncode != 0:
        log.warning("%s exited %d: %s", argv[0], proc.returncode, proc.stderr.strip()[:200])
        return None
    return proc.stdout


def _json(text: str | None, tool: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        log.warning("%s: output is not JSON (%r...)", tool, text[:80])
        return None


def parse_nvidia_csv(text: str) -> list[Record]:
    """One record per GPU of nvidia-smi's ``--format=csv,noheader,nounits`` rows of :data:`NVIDIA_FIELDS`."""
    out = []
    for row in text.splitlines():
        values = [v.strip() for v in row.split(",")]
        if len(values) == len(NVIDIA_FIELDS):
            out.append(dict(zip(NVIDIA_FIELDS, values)))
    return out


def parse_rocm_json(text: str) -> list[Record]:
    """One record per ``cardN`` of ``rocm-smi ... --json`` (the ``system`` section is not a device)."""
    doc = _json(text, "rocm-smi")
    if not isinstance(doc, dict):
        return []
    return [{"tool": "rocm-smi", "card": card, **fields} for card, fields in doc.items()
            if card.startswith("card") and isinstance(fields, dict)]


def parse_npu_info(text: str) -> list[Record]:
    """One record per chip of ``npu-smi info``'s device table (its pair of rows: NPU/Name/Health/Power/Temp, then
    Chip/Bus-Id/AICore); stops at the process table."""
    out: list[Record] = []
    device: Record | None = None
    for line in text.splitlines():
        line = line.strip()
        if "Process id" in line or "Process name" in line:
            break
        if not (line.startswith("|") and line.endswith("|")):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 3 or cells[1] in ("Health", "Bus-Id", ""):
            continue
        first, values = cells[0].split(), cells[2].split()
        if _BUS_ID.match(cells[1]):  # the chip row under its device row
            if device is not None and first:
                out.append({**device, "Chip ID": first[0], "Bus-Id": cells[1],
                            "AICore(%)": values[0] if values else ""})
            continue
        if first and first[0].isdigit():
            device = {"tool": "npu-smi", "NPU ID": first[0], "Name": " ".join(first[1:]), "Health Status": cells[1],
                      "Power(W)": values[0] if values else "", "Temp(C)": values[1] if len(values) > 1 else ""}
    return out


def xpu_device_ids(text: str) -> list[int]:
    """The device ids of ``xpu-smi discovery -j``."""
    doc = _json(text, "xpu-smi")
    devices = doc.get("device_list") if isinstance(doc, dict) else None
    return [int(d["device_id"]) for d in devices or [] if isinstance(d, dict) and "device_id" in d]


def _metrics(items: Any) -> Record:
    out: Record = {}
    for m in items or []:
        if not isinstance(m, dict):
            continue
        name = str(m.get("metrics_type") or m.get("metric_type") or "")
        value = m.get("value")
        if isinstance(value, dict):  # some versions: {"value": 20, "unit": "%"}
            value = value.get("value")
        if name:
            out[name.removeprefix("XPUM_STATS_")] = value
    return out


def parse_xpu_stats(text: str) -> list[Record]:
    """One record for the device and one per tile of ``xpu-smi stats -d ID -j``."""
    doc = _json(text, "xpu-smi")
    if not isinstance(doc, dict):
        return []
    dev = doc.get("device_id")
    out = [{"tool": "xpu-smi", "device_id": dev, **_metrics(doc.get("device_level"))}]
    for tile in doc.get("tile_level") or []:
        if isinstance(tile, dict):
            out.append({"tool": "xpu-smi", "device_id": dev, "tile_id": tile.get("tile_id"),
                        **_metrics(tile.get("data_list"))})
    return out


def _nvidia(exe: str, timeout: float) -> list[Record]:
    text = run_tool([exe, f"--query-gpu={','.join(NVIDIA_FIELDS)}", "--format=csv,noheader,nounits"], timeout)
    return parse_nvidia_csv(text or "")


def _rocm(exe: str, timeout: float) -> list[Record]:
    return parse_rocm_json(run_tool([exe, *ROCM_ARGS], timeout) or "")


def _npu(exe: str, timeout: float) -> list[Record]:
    return parse_npu_info(run_tool([exe, "info"], timeout) or "")


def _xpu(exe: str, timeout: float) -> list[Record]:
    ids = xpu_device_ids(run_tool([exe, "discovery", "-j"], timeout) or "")
    return [r for i in ids for r in parse_xpu_stats(run_tool([exe, "stats", "-d", str(i), "-j"], timeout) or "")]


READERS: dict[str, Callable[[str, float], list[Record]]] = {
    "nvidia-smi": _nvidia, "rocm-smi": _rocm, "npu-smi": _npu, "xpu-smi": _xpu}


def tool_records(timeout: float, path: str | None = None) -> tuple[list[tuple[str, Record]], list[str]]:
    """(tool, record) of every device of every accelerator tool installed (found on ``path``, default $PATH),
    and the tools that are absent (skipped, not failures). ``timeout``: seconds per tool command."""
    records: list[tuple[str, Record]] = []
    absent = []
    for tool, read in READERS.items():
        exe = shutil.which(tool, path=path)
        if exe is None:
            absent.append(tool)
            continue
        records += [(tool, rec) for rec in read(exe, timeout)]
    return records, absent
