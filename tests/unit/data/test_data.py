"""Every data file is reached through slurm_plugin.data (importlib.resources), and its users read it from there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurm_plugin.data import NAMES, child_pythonpath, data_dir, data_file, import_root

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", NAMES)
def test_every_data_file_reads_through_the_accessor(name):
    files = [p for p in data_dir(name).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert files, f"data set {name} is empty"
    for path in files:
        assert path.read_bytes(), f"{path} is empty"


@pytest.mark.parametrize("name", ["gres_templates", "site_configs", "job_submit", "daemon"])
def test_in_the_repository_data_is_the_top_level_folder(name):
    """slurm_plugin/data/<name> is the repository's <name>/ (a symlink): one copy of each file."""
    assert data_dir(name).resolve() == (REPO / name).resolve()


def test_users_read_their_files_through_it():
    from slurm_plugin.cluster.local import JOB_SUBMIT_LUA
    from slurm_plugin.conf.render import TEMPLATES
    from slurm_plugin.rank.dqn.model import DEFAULT_MODEL
    from slurm_plugin.site import SITE_CONFIGS, resolve_site_path

    assert TEMPLATES == data_dir("gres_templates") and (TEMPLATES / "slurm.conf.j2").is_file()
    assert SITE_CONFIGS == data_dir("site_configs") and resolve_site_path("demo").is_file()
    assert JOB_SUBMIT_LUA == data_file("job_submit", "job_submit.lua") and JOB_SUBMIT_LUA.is_file()
    assert DEFAULT_MODEL == data_file("models", "dqn_default.npz") and DEFAULT_MODEL.is_file()


def test_children_import_this_same_package(monkeypatch, tmp_path):
    import slurm_plugin

    assert import_root() == Path(slurm_plugin.__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert child_pythonpath().split(os.pathsep) == [str(import_root()), str(tmp_path)]
    monkeypatch.delenv("PYTHONPATH")
    assert child_pythonpath() == str(import_root())


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="known: gres_templates, site_configs"):
        data_dir("templates")
