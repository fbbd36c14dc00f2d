"""``slurm_plugin._lazy.lazy_exports``: names come from their submodule on first use, and a name that is also a
submodule's name is refused (the submodule's import would rebind it to the module)."""

from __future__ import annotations

import importlib

import pytest

from slurm_plugin._lazy import lazy_exports


def test_a_name_comes_from_its_module_on_first_use():
    ns: dict = {}
    getattr_, dir_, all_ = lazy_exports("slurm_plugin.cycle", ns, {".state": ["parse_cycle_state"]})
    assert "parse_cycle_state" not in ns and all_ == ["parse_cycle_state"]
    got = getattr_("parse_cycle_state")
    assert got is importlib.import_module("slurm_plugin.cycle.state").parse_cycle_state
    assert ns["parse_cycle_state"] is got and "parse_cycle_state" in dir_()
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        getattr_("nosuch")


def test_a_name_shared_with_a_submodule_is_refused():
    with pytest.raises(ValueError, match="decide share a submodule's name"):
        lazy_exports("slurm_plugin.cycle", {}, {".decide": ["CycleConfig", "decide"]})


@pytest.mark.parametrize("package", ["slurm_plugin.cycle", "slurm_plugin.daemon", "slurm_plugin.conf"])
def test_the_lazy_packages_export_what_they_list(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None
