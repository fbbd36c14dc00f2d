"""The accelerator tool readers (rocm-smi, npu-smi, xpu-smi, nvidia-smi) on a fake tool directory: small scripts
printing each tool's output format (no such hardware here), read by the check and turned into its findings."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_plugin.decision.actions import DrainNodes
from slurm_plugin.health.check import Memory, NodeFacts, decide, match_records
from slurm_plugin.health.signatures import load_library
from slurm_plugin.health.tools import parse_npu_info, parse_rocm_json, parse_xpu_stats, tool_records

LIB = load_library()

# rocm-smi --showtemp --showuse --showmemuse --showxgmierr --json (rocm_smi.py's printLog keys per cardN)
ROCM = {"card0": {"Temperature (Sensor edge) (C)": "34.0", "Temperature (Sensor junction) (C)": "37.0",
                  "Temperature (Sensor memory) (C)": "32.0", "GPU use (%)": "0",
                  "GPU Memory Allocated (VRAM%)": "0", "XGMI Error count": "0"},
        "card1": {"Temperature (Sensor edge) (C)": "51.0", "Temperature (Sensor junction) (C)": "58.0",
                  "Temperature (Sensor memory) (C)": "49.0", "GPU use (%)": "97",
                  "GPU Memory Allocated (VRAM%)": "81", "XGMI Error count": "2"},
        "system": {"Driver version": "6.7.0"}}

# npu-smi info (device table: a pair of rows per chip, then the process table)
NPU = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.0                   Version: 24.1.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B                | OK            | 70.0        34                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           1197 / 13553      1365 / 32768         |
+===========================+===============+====================================================+
| 1     910B                | Alarm         | 66.9        91                0    / 0             |
| 0                         | 0000:81:00.0  | 0           2411 / 15665      4    / 32768         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
"""

# xpu-smi discovery -j, then stats -d ID -j
XPU_DISCOVERY = {"device_list": [{"device_id": 0, "device_name": "Intel(R) Data Center GPU Max 1550",
                                  "pci_bdf_address": "0000:29:00.0"}]}
XPU_STATS = {"device_id": 0, "begin": "2021-10-25T10:25:44.000Z", "end": "2021-10-25T10:40:22.095Z",
             "device_level": [{"avg": 23, "max": 25, "metrics_type": "XPUM_STATS_POWER", "min": 23, "value": 23},
                              {"metrics_type": "XPUM_STATS_RAS_ERROR_CAT_RESET", "value": 0},
                              {"metrics_type": "XPUM_STATS_RAS_ERROR_CAT_CACHE_ERRORS_CORRECTABLE", "value": 5},
                              {"metrics_type": "XPUM_STATS_RAS_ERROR_CAT_CACHE_ERRORS_UNCORRECTABLE", "value": 1}],
             "tile_level": [{"tile_id": 0, "data_list": [
                 {"avg": 35, "max": 35, "metrics_type": "XPUM_STATS_GPU_CORE_TEMPERATURE", "min": 35, "value": 35}]}]}


def _tool(d: Path, name: str, body: str) -> None:
    (d / name).write_text("#!/bin/sh\n" + body)
    (d / name).chmod(0o755)


def _fake_tools(d: Path) -> None:
    _tool(d, "rocm-smi", f"[ \"$*\" = '--showtemp --showuse --showmemuse --showxgmierr --json' ] || exit 2\n"
                         f"cat <<'EOF'\n{json.dumps(ROCM)}\nEOF\n")
    _tool(d, "npu-smi", f"[ \"$1\" = info ] || exit 2\ncat <<'EOF'\n{NPU}EOF\n")
    _tool(d, "xpu-smi", "case \"$1 $2 $3 $4\" in\n"
                        f"  'discovery -j  ') echo '{json.dumps(XPU_DISCOVERY)}' ;;\n"
                        f"  'stats -d 0 -j') echo '{json.dumps(XPU_STATS)}' ;;\n"
                        "  *) exit 2 ;;\nesac\n")


def test_parsers_read_each_tools_format():
    cards = parse_rocm_json(json.dumps(ROCM))
    assert [c["card"] for c in cards] == ["card0", "card1"] and cards[1]["XGMI Error count"] == "2"
    chips = parse_npu_info(NPU)
    assert [(c["NPU ID"], c["Chip ID"], c["Health Status"], c["Bus-Id"], c["Temp(C)"]) for c in chips] == \
        [("0", "0", "OK", "0000:C1:00.0", "34"), ("1", "0", "Alarm", "0000:81:00.0", "91")]
    dev, tile = parse_xpu_stats(json.dumps(XPU_STATS))
    assert dev["RAS_ERROR_CAT_CACHE_ERRORS_UNCORRECTABLE"] == 1 and dev["POWER"] == 23
    assert tile["tile_id"] == 0 and tile["GPU_CORE_TEMPERATURE"] == 35
    assert parse_rocm_json("not json") == [] and parse_npu_info("") == [] and parse_xpu_stats("{") == []


def test_the_check_reads_every_tool_of_a_fake_tool_directory_and_drains(tmp_path: Path):
    records, absent = tool_records(5.0, path=str(tmp_path))
    assert records == [] and absent == ["nvidia-smi", "rocm-smi", "npu-smi", "xpu-smi"]
    _fake_tools(tmp_path)
    records, absent = tool_records(5.0, path=str(tmp_path))
    assert absent == ["nvidia-smi"]
    assert sorted({t for t, _ in records}) == ["npu-smi", "rocm-smi", "xpu-smi"] and len(records) == 6
    hits = match_records(LIB, records, 1000.0)
    assert sorted(h.signature.id for h in hits) == ["amd-rocm-smi-xgmi-multiple-errors",
                                                     "ascend-npu-smi-health-alarm",
                                                     "intel-xpu-smi-cache-uncorrectable"]
    facts = NodeFacts("acc1", ("IDLE",))
    decision, memory, notes = decide(facts, hits, Memory(), 1000.0)
    (drain,) = decision.actions
    assert isinstance(drain, DrainNodes) and drain.action == "DRAIN" and drain.nodes == ("acc1",)
    assert drain.reason == "health ascend-npu-smi-health-alarm: npu_health (drain) [ascend-npu-smi-health-alarm]"
    assert any("amd-rocm-smi-xgmi-multiple-errors: 1/3" in n for n in notes)  # counted, below its threshold
    assert any(n.startswith("intel-xpu-smi-cache-uncorrectable: drain (xpu-smi: ") for n in notes), notes


def test_healthy_tool_output_gives_no_finding(tmp_path: Path):
    ROCM["card1"]["XGMI Error count"] = "0"
    stats = json.loads(json.dumps(XPU_STATS))
    stats["device_level"][3]["value"] = 0
    _tool(tmp_path, "rocm-smi", f"cat <<'EOF'\n{json.dumps(ROCM)}\nEOF\n")
    _tool(tmp_path, "npu-smi", f"cat <<'EOF'\n{NPU.replace('Alarm', 'OK   ')}EOF\n")
    _tool(tmp_path, "xpu-smi", f"[ \"$1\" = discovery ] && echo '{json.dumps(XPU_DISCOVERY)}' || "
                               f"echo '{json.dumps(stats)}'\n")
    try:
        records, _ = tool_records(5.0, path=str(tmp_path))
        assert len(records) == 6 and match_records(LIB, records, 0.0) == []
    finally:
        ROCM["card1"]["XGMI Error count"] = "2"


def test_a_failing_tool_yields_nothing(tmp_path: Path):
    _tool(tmp_path, "npu-smi", "echo 'dcmi module initialize failed. ret is -8005' >&2\nexit 1\n")
    _tool(tmp_path, "rocm-smi", "echo 'ERROR:root:Driver not initialized (amdgpu not found in modules)'\n")
    records, absent = tool_records(5.0, path=str(tmp_path))
    assert records == [] and "npu-smi" not in absent and "rocm-smi" not in absent
