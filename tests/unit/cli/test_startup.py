"""Guard of the CLI's start-up: ``hetsched --help`` and the power command import no solver, plotting or
training library (each costs 50-500 ms; slurmctld runs ``hetsched power`` on every power event).

Each case runs in a fresh interpreter and lists which of the heavy modules ended up in ``sys.modules``.
The times themselves are measured by ``hetsched bench cli`` (results/cli/), not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_plugin.cli import GROUPS

REPO = Path(__file__).resolve().parents[3]
HEAVY = ("pyomo", "torch", "matplotlib", "scipy", "highspy", "numpy", "pandas", "networkx")
# The bare CLI needs click and nothing of the suite's own dependencies.
BARE = (*HEAVY, "pydantic", "jinja2", "yaml", "uvloop", "tqdm", "logging")

PROBE = """
import json, sys
sys.argv = ["hetsched", *json.loads(sys.argv[1])]
if sys.argv[1] == "<import>":
    import importlib
    importlib.import_module(sys.argv[2])
else:
    from slurm_plugin.cli import main
    try:
        main()
    except SystemExit as e:
        assert e.code in (0, None), e.code
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded_modules(args: list[str]) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("args", "forbidden"), [
    (["<import>", "slurm_plugin.cli"], BARE),
    (["--help"], BARE),
    (["--version"], BARE),
    (["power", "--help"], HEAVY),
    (["power", "resume", "--help"], HEAVY),
    # issue 20: the cycle's modules import in < 0.3 s; numpy, the solvers and the site schema (pydantic, ~0.25 s)
    # load when a packing runs or a site is read
    (["<import>", "slurm_plugin.cycle"], (*HEAVY, "pydantic")),
    # issue 14: the simulator's groups list their commands without the workload readers (numpy, pydantic: ~0.6 s
    # of CPU); `from slurm_plugin.workload import WorkloadError` is the light errors module
    (["sim", "--help"], (*HEAVY, "pydantic")),
    (["sim", "run", "--help"], (*HEAVY, "pydantic")),
    (["rank", "--help"], (*HEAVY, "pydantic")),
    (["tune", "--help"], (*HEAVY, "pydantic")),
], ids=["import slurm_plugin.cli", "hetsched --help", "hetsched --version", "hetsched power --help",
        "hetsched power resume --help", "import slurm_plugin.cycle", "hetsched sim --help",
        "hetsched sim run --help", "hetsched rank --help", "hetsched tune --help"])
def test_no_heavy_imports(args, forbidden):
    heavy = loaded_modules(args) & set(forbidden)
    what = f"import {args[1]}" if args[0] == "<import>" else f"hetsched {' '.join(args)}"
    assert not heavy, (f"`{what}` imports {sorted(heavy)}: import them inside the function that needs them, or "
                       "under `if TYPE_CHECKING:` when only annotations use them (python3 -X importtime shows who "
                       "pulls them in)")


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_no_group_help_imports_the_suites_heavy_parts(group):
    """Every command group lists its commands without the site model, the renderer, the daemon's server or the
    numeric stack (session 14: `cycle`, `daemon`, `status`, `scale`, `conf`, `cluster`, `sla`, `cost` and
    `accounting` took 180-375 ms for --help, now 50-90 ms); their commands import what they use."""
    heavy = loaded_modules([group, "--help"]) & {*HEAVY, "pydantic", "jinja2", "prometheus_client"}
    assert not heavy, (f"`hetsched {group} --help` imports {sorted(heavy)}: import them inside the command "
                       "that needs them (python3 -X importtime shows who pulls them in)")


def test_probe_sees_what_a_command_imports():
    """The probe itself works: a module that needs numpy is seen importing it."""
    assert "numpy" in loaded_modules(["<import>", "slurm_plugin.pack.solve"])
