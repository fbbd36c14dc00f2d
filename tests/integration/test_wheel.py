"""The built wheel on its own: it carries the data files, and installed apart from the repository it checks and
renders a site, simulates with the shipped DQN model and answers an admission request from a started daemon.

Built offline with what the test extra installs (setuptools, wheel): ``pip wheel --no-deps --no-build-isolation``
on a copy of the sources (the checkout gets no build/ or egg-info), installed with ``pip install --target`` and
run from a directory outside the repository with only that target on PYTHONPATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from slurm_plugin import __version__
from slurm_plugin.daemon.process import ask

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DATA_DIRS = ("gres_templates", "site_configs", "job_submit", "daemon")  # top-level folders shipped as data
SOURCES = ("pyproject.toml", "README.md", "slurm_plugin", *DATA_DIRS)


def _can_build_wheels() -> bool:
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return importlib.util.find_spec("wheel") is not None or (major, minor) >= (70, 1)


def expected_data() -> set[str]:
    """Every data file the wheel must hold, as paths inside it."""
    names = {f"slurm_plugin/data/{p.relative_to(REPO)}" for d in DATA_DIRS for p in (REPO / d).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    return names | {f"slurm_plugin/rank/models/{p.name}" for p in (REPO / "slurm_plugin/rank/models").glob("*.npz")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if not _can_build_wheels():
        pytest.skip("building a wheel offline needs setuptools>=70.1 or the 'wheel' package "
                    "(both in the test extra: pip install -e '.[test]')")
    tmp = tmp_path_factory.mktemp("wheel")
    src, dist = tmp / "src", tmp / "dist"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():  # symlinks=True: slurm_plugin/data/* stay links, to the copied folders
            shutil.copytree(REPO / name, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "-w", str(dist), str(src)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("target")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                          str(target), str(wheel)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return target


def run(installed: Path, cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``hetsched ARGS`` from the installed copy only (no repository on the path, no HETSCHED_* settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETSCHED_")}
    env["PYTHONPATH"] = str(installed)
    return subprocess.run([sys.executable, "-m", "slurm_plugin", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_wheel_holds_the_data_and_the_version(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = expected_data() - names
    assert not missing, f"data files missing from {wheel.name}: {sorted(missing)}"
    assert "slurm_plugin/data/job_submit/job_submit.lua" in names  # (a check that could fail if rglob found nothing)
    assert wheel.name.startswith(f"slurm_hetsched-{__version__}-")


def test_installed_wheel_runs_from_anywhere(installed, tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()

    version = run(installed, cwd, "--version")
    assert version.returncode == 0, version.stderr
    assert f"version {__version__}" in version.stdout
    assert f"package: {installed.resolve() / 'slurm_plugin'}" in version.stdout  # not the repository's copy

    check = run(installed, cwd, "conf", "check", "demo")
    assert check.returncode == 0 and "demo: ok" in check.stdout, check.stdout + check.stderr

    out = tmp_path / "etc"
    render = run(installed, cwd, "conf", "render", "demo", "-o", str(out))
    assert render.returncode == 0, render.stderr
    rendered = "".join(p.read_text() for p in out.rglob("*") if p.is_file())  # slurm.conf, gres.conf and parts
    assert "NodeName=" in rendered and "Name=gpu" in rendered, sorted(out.rglob("*"))  # from the templates
    resume = next(p for p in out.rglob("resume") if p.is_file()).read_text()
    assert f"PYTHONPATH={installed.resolve()} " in resume  # the power programs run the installed copy

    result = tmp_path / "sim.json"
    sim = run(installed, cwd, "sim", "run", "--site", "demo", "-w", "synthetic:jobs=200,seed=1", "--policy", "dqn",
              "--output", str(result))
    assert sim.returncode == 0, sim.stderr
    assert json.loads(result.read_text())["policy"].startswith("dqn")


def test_installed_daemon_answers(installed, tmp_path):
    sock = tmp_path / "d.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETSCHED_")}
    env["PYTHONPATH"] = str(installed)
    proc = subprocess.Popen([sys.executable, "-m", "slurm_plugin", "daemon", "run", "--socket", str(sock),
                             "--site", "demo", "--allow-user", str(os.getuid()),
                             "--slurm-conf", str(tmp_path / "missing.conf"), "--refresh", "60"],
                            cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        reply = ask(sock, {"comment": "class=web", "min_cpus": 2})
        assert reply.get("ok") is True, f"reply {reply}; daemon exit {proc.poll()}"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
