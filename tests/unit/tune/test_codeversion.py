"""The power sweep's cache is keyed by the code's version (tune/codeversion.py): a digest of the sources the
simulation imports, transitively; a cache written by other code is never read back."""

from __future__ import annotations

import json

from slurm_plugin.sim.run import Prepared
from slurm_plugin.tune import power
from slurm_plugin.tune.codeversion import PACKAGE_DIR, source_digest, source_files
from slurm_plugin.tune.split import split_history
from slurm_plugin.workload import Workload

from .test_power import MACHINE8, small_workload


def _package(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {"__init__.py": "", "a.py": "def f():\n    from . import b\n    return b\n",
             "b.py": "from .sub.c import x\nimport os\n", "sub/__init__.py": "", "sub/c.py": "x = 1\n",
             "sub/e.py": "from .. import d\n", "d.py": "y = 2\n", "unrelated.py": "z = 3\n"}
    for name, text in files.items():
        (pkg / name).write_text(text)
    return pkg


def test_the_digest_follows_imports_at_any_depth_and_nothing_else(tmp_path):
    pkg = _package(tmp_path)
    assert set(source_files(["pkg.a"], pkg)) == {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c"}
    assert set(source_files(["pkg.sub.e"], pkg)) == {"pkg", "pkg.sub", "pkg.sub.e", "pkg.d"}
    before = source_digest(["pkg.a"], pkg)
    (pkg / "unrelated.py").write_text("z = 4\n")
    assert source_digest(["pkg.a"], pkg) == before
    (pkg / "sub" / "c.py").write_text("x = 2\n")  # imported by b, which a imports inside a function
    changed = source_digest(["pkg.a"], pkg)
    assert changed != before
    (pkg / "sub" / "__init__.py").write_text("# runs on import\n")
    assert source_digest(["pkg.a"], pkg) != changed


def test_the_simulation_sources_are_in_the_version():
    files = source_files(power.SIM_ROOTS, PACKAGE_DIR)
    for name in ("slurm_plugin.sim.engine", "slurm_plugin.sim.power", "slurm_plugin.sim.scaling",
                 "slurm_plugin.scale.warm", "slurm_plugin.tune.power", "slurm_plugin.tune.split"):
        assert name in files
    assert "slurm_plugin.cli" not in files


def test_a_cache_written_by_other_code_is_not_read(tmp_path, monkeypatch):
    jobs = small_workload()
    p = Prepared(None, MACHINE8, Workload("small", jobs))
    split = split_history(jobs)
    kw = dict(jobs=1, timers=(300.0,), prices=(), cache=tmp_path)
    first = power.tune_power(p, split, "fcfs", **kw)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 2  # the timer and its matched timer
    for f in files:  # tamper with every entry: a read would show
        doc = json.loads(f.read_text())
        doc["test"][0] = 1e6
        f.write_text(json.dumps(doc))
    same = power.tune_power(p, split, "fcfs", **kw)
    assert [s.test.energy_kwh for s in same.scores] == [1e6, 1e6]  # same code: the cache is read
    import slurm_plugin.tune.codeversion as cv

    monkeypatch.setattr(cv, "code_version", lambda roots: "other code")
    other = power.tune_power(p, split, "fcfs", **kw)
    assert [s.test for s in other.scores] == [s.test for s in first.scores]  # replayed, not read
    assert len(list(tmp_path.glob("*.json"))) == 4
