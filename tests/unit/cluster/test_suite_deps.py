"""The suite image's Python dependencies installed on the host (cluster/suite_deps.py): what pip is asked, where
the install goes, and that an interrupted install is never taken for a finished one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from slurm_plugin.cluster import suite_deps


def test_requirements_are_the_packages_runtime_ones_without_the_heavy_extras():
    import tomllib

    from slurm_plugin.data import import_root

    names = {suite_deps._name(r) for r in suite_deps.requirements()}
    project = tomllib.loads((import_root() / "pyproject.toml").read_text())["project"]["dependencies"]
    assert names <= {suite_deps._name(r) for r in project}
    assert not names & {"matplotlib", "scipy", "pymoo", "tqdm", "torch"}
    assert {"pydantic", "numpy", "uvloop", "python-hostlist"} <= names


def test_install_argv_targets_the_release_python_with_wheels_only(tmp_path):
    argv = suite_deps.install_argv("trixie", tmp_path / "t", tmp_path / "w", arch="x86_64")
    assert argv[:3] == [sys.executable, "-m", "pip"] and "--only-binary=:all:" in argv
    assert argv[argv.index("--python-version") + 1] == "3.13" and argv[argv.index("--target") + 1] == str(tmp_path / "t")
    platforms = [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"]
    assert "manylinux_2_41_x86_64" in platforms and "manylinux2014_x86_64" in platforms
    assert "manylinux_2_42_x86_64" not in platforms  # newer than trixie's glibc
    assert "--no-compile" in argv  # the image's Python compiles what it imports
    assert argv[-len(suite_deps.requirements()):] == suite_deps.requirements()
    bookworm = suite_deps.install_argv("bookworm", tmp_path, tmp_path, arch="aarch64")
    assert "manylinux_2_36_aarch64" in bookworm and "manylinux_2_37_aarch64" not in bookworm
    with pytest.raises(ValueError, match="unknown release 'sid'"):
        suite_deps.install_argv("sid", tmp_path, tmp_path)


def test_target_is_named_by_release_and_requirements(tmp_path, monkeypatch):
    a = suite_deps.target_dir(tmp_path, "bookworm")
    assert a.parent == tmp_path / "suite-deps" and a.name.startswith("bookworm-")
    assert suite_deps.target_dir(tmp_path, "trixie") != a
    monkeypatch.setattr(suite_deps, "requirements", lambda: ["click>=8.1"])
    assert suite_deps.target_dir(tmp_path, "bookworm") != a  # changed requirements: a new install


def test_an_unfinished_install_is_redone_and_a_finished_one_reused(tmp_path, monkeypatch):
    calls = []

    def fake_run(argv, **kw):  # pip stands in here: it writes what pip would, into --target
        calls.append(argv)
        if "--target" in argv:
            (Path(argv[argv.index("--target") + 1]) / "click").mkdir(parents=True)
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(suite_deps.subprocess, "run", fake_run)
    target = suite_deps.target_dir(tmp_path, "bookworm")
    target.mkdir(parents=True)  # left by an interrupted run: no completion marker
    got = suite_deps.ensure("bookworm", tmp_path, tmp_path / "log")
    assert got == target and (got / suite_deps.DONE).exists() and (got / "click").is_dir()
    assert calls[0][3] == "wheel" and "python-hostlist>=1.23" in calls[0]  # the source-only one, built once
    calls.clear()
    assert suite_deps.ensure("bookworm", tmp_path, tmp_path / "log") == target and calls == []
