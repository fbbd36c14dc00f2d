"""Bad input at the suite's file boundaries (issue 11, items 8, 11, 12 and the model items of 14), through the
real CLI in a subprocess with a memory cap: each bad file ends in a clear error naming the file and where,
within seconds and without a traceback; nothing is injected into a rendered config, and a model being saved
is never seen half-written."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from slurm_plugin.site import SITE_CONFIGS

REPO = Path(__file__).resolve().parents[2]
MEMORY_CAP = 2 << 30  # bytes of address space for each CLI run: a runaway allocation fails instead of swapping


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def hetsched(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "slurm_plugin", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=_cap_memory)


def refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode != 0, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def demo_with(tmp_path: Path, fn) -> Path:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    fn(data)
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# --- item 8: site fields cannot inject lines into slurm.conf / gres.conf -------------------------------------
INJECTIONS = [
    ("cpu.model", lambda d: d["clusters"][0]["node_groups"][0]["cpu"].update(
        model="EPYC\nPrologSlurmctld=/tmp/evil.sh"), "clusters[0].node_groups[0].cpu.model"),
    ("slurm.controller", lambda d: d["slurm"].update(controller="localhost\nPrologSlurmctld=/tmp/evil.sh"),
     "slurm.controller"),
    ("gpu.files", lambda d: d["clusters"][0]["node_groups"][3]["gpu"].update(
        files="/dev/nvidia[0-3]\nPrologSlurmctld=/tmp/evil.sh"), "clusters[0].node_groups[3].gpu.files"),
]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    """A config directory holding the clean demo site's rendered files."""
    out = tmp_path_factory.mktemp("etc")
    clean = demo_with(tmp_path_factory.mktemp("site"), lambda d: None)
    assert hetsched("conf", "render", str(clean), "-o", str(out)).returncode == 0
    return out


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (symlinks not followed) and its text."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                out[str(path.relative_to(root))] = path.read_text(errors="replace")
    return out


@pytest.mark.parametrize("field,mutation,path", INJECTIONS, ids=[i[0] for i in INJECTIONS])
def test_a_newline_in_a_site_field_renders_nothing(tmp_path, rendered, field, mutation, path):
    site = demo_with(tmp_path, mutation)
    before = tree(rendered)
    assert any(name.endswith("slurm.conf") for name in before)
    refused(hetsched("conf", "render", str(site), "-o", str(rendered)), f"{site}: {path}: ")
    after = tree(rendered)
    assert after == before  # refused before anything was written
    for name, text in after.items():
        assert not any(line.startswith("PrologSlurmctld") for line in text.splitlines()), name


# --- item 12: site files are bounded ---------------------------------------------------------------------------
def test_a_billion_nodes_is_refused_in_seconds(tmp_path):
    site = demo_with(tmp_path, lambda d: d["clusters"][0]["node_groups"][0].update(count=1_000_000_000))
    t0 = time.monotonic()
    refused(hetsched("conf", "check", str(site)), "node_groups[0].count", "less than or equal to 65536")
    assert time.monotonic() - t0 < 30  # before: 4.3 GB after 30 s and still running


def test_a_tier_above_the_shims_site_factor_is_refused(tmp_path):
    site = demo_with(tmp_path, lambda d: d["policy"]["qos_tiers"][0].update(priority=300_000))
    refused(hetsched("conf", "check", str(site)), "policy.qos_tiers[0].priority")


def test_a_binary_site_file_is_named_not_a_traceback(tmp_path):
    site = tmp_path / "site.yaml"
    site.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    refused(hetsched("conf", "check", str(site)), f"{site}: (top level): not UTF-8 text")


# --- item 11: traces are bounded -------------------------------------------------------------------------------
GOOD = "1 0 -1 60 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n"
TRACES = [
    ("huge.swf", "; MaxNodes: 1000000000\n; MaxProcs: 1000000000\n" + GOOD, ":1: header MaxNodes is 1e+09"),
    ("zero.swf", "; MaxNodes: 0\n" + GOOD, ":1: header MaxNodes is 0"),
    ("nan.swf", "; MaxNodes: 8\n" + GOOD + GOOD.replace("1 0 -1", "2 nan -1", 1), ":3: submit time (field 2) is nan"),
    ("inf.swf", "; MaxNodes: 8\n" + GOOD.replace(" 60 ", " inf ", 1), ":2: run time (field 4) is inf"),
    ("digits.swf", "; MaxNodes: 8\n" + GOOD.replace(" 60 ", " " + "9" * 4300 + " ", 1),
     ":2: run time (field 4) has 4300 characters"),
    ("zeros.swf", "; MaxNodes: 8\n" + GOOD.replace(" 4 -1 -1 4 ", " 0 -1 -1 0 ", 1) * 3,
     ": no usable job records: all skipped (3 unknown size"),
]


@pytest.mark.parametrize("name,text,words", TRACES, ids=[t[0] for t in TRACES])
def test_a_bad_trace_ends_sim_run_with_file_and_line(tmp_path, name, text, words):
    trace = tmp_path / name
    trace.write_text(text)
    refused(hetsched("sim", "run", "-w", str(trace), timeout=60), f"{trace}{words}")


def test_a_corrupt_gzip_trace_is_named(tmp_path):
    import gzip
    trace = tmp_path / "t.swf.gz"
    packed = gzip.compress(("; MaxNodes: 8\n" + GOOD * 500).encode())
    trace.write_bytes(packed[:len(packed) // 2])
    refused(hetsched("sim", "run", "-w", str(trace)), f"{trace}: corrupt gzip data")


# --- item 14: models -------------------------------------------------------------------------------------------
SAVER = """
import sys
from slurm_plugin.rank.dqn import DqnModel, save_model
i = 0
while True:
    save_model(DqnModel.init(hidden=(256, 256), seed=i % 7), sys.argv[1])
    i += 1
"""


def test_a_model_killed_while_saving_is_old_or_new_never_partial(tmp_path):
    from slurm_plugin.rank.dqn import load_model
    path = tmp_path / "model.npz"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for delay in (0.9, 1.3, 1.7, 2.1, 2.6):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], env=env)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)  # our own child, by pid
        proc.wait()
        if path.exists():
            load_model(path)  # raises ModelError on a partial file (before: a 0-byte model)
    assert path.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"] or all(
        p.name == "model.npz" or p.name.startswith(".model.npz.") for p in tmp_path.iterdir())


def test_a_model_that_unpacks_to_gigabytes_is_refused_within_the_memory_cap(tmp_path):
    import zipfile

    import numpy as np
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("w0.npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (12, 10**8)})
        block = bytes(1 << 20)
        for _ in range(200):  # 200 MB of zeros: about 200 KB on disk
            fh.write(block)
    code = "from slurm_plugin.rank.dqn import load_model, ModelError\ntry:\n    load_model(%r)\n" \
           "except ModelError as e:\n    print(e)\n" % str(bomb)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=_cap_memory)
    assert proc.returncode == 0 and "w0.npy: float32 array of shape (12, 100000000)" in proc.stdout, proc


def test_a_model_with_nan_weights_is_refused_by_sim(tmp_path):
    import numpy as np

    from slurm_plugin.rank.dqn import DqnModel
    m = DqnModel.init(seed=1)
    m.weights[1][0, 0] = np.nan
    arrays = {f"w{i}": w for i, w in enumerate(m.weights)} | {f"b{i}": b for i, b in enumerate(m.biases)}
    import json
    path = tmp_path / "nan.npz"
    np.savez(path, meta=np.array(json.dumps(m.meta)), **arrays)
    proc = hetsched("sim", "run", "-w", "synthetic:jobs=50", "--site", "demo", "-p", "dqn", "--model", str(path))
    refused(proc, f"{path}: layer 1 has 1 non-finite weights")
