"""The suite's data files, found through :mod:`importlib.resources` wherever the package is installed.

=================  ===========================================================================
``gres_templates``  jinja2 templates of slurm.conf, gres.conf and the vendor GRES lines
``site_configs``    example site files (``demo``, ``large``, ``philly-v100``)
``job_submit``      the Lua shim slurmctld loads (``job_submit.lua``) and its stand-in driver
``daemon``          systemd units, the default daemon settings (``hetsched.yaml``), the Grafana dashboard
                    (``grafana/hetsched.json``) and Prometheus scrape jobs
``containers``      the container cluster's Containerfile, entry script and base-image script
``models``          the shipped ranking model (``dqn_default.npz``)
``signatures``      the fault signature library (``*.yaml``, :mod:`slurm_plugin.health.signatures`)
=================  ===========================================================================

In the repository all but ``models`` are the top-level folders of the same names; ``slurm_plugin/data/<name>`` are
symlinks to them, so a checkout on ``PYTHONPATH``, an editable install and a built wheel (where setuptools
copies the files behind the links) all read the same names through this module.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

# name -> (package, folder inside it)
_WHERE = {
    "gres_templates": (__name__, "gres_templates"),
    "site_configs": (__name__, "site_configs"),
    "job_submit": (__name__, "job_submit"),
    "daemon": (__name__, "daemon"),
    "containers": (__name__, "containers"),
    "models": ("slurm_plugin.rank", "models"),
    "signatures": ("slurm_plugin.health", "signatures"),
}
NAMES = tuple(_WHERE)


def data_dir(name: str) -> Path:
    """The directory of the data set ``name`` (one of :data:`NAMES`), as a real filesystem path.

    Raises KeyError for an unknown name and FileNotFoundError (naming the package) when the files are missing
    or the package is not installed as plain files (pip always installs it so; a zipped import is not)."""
    if name not in _WHERE:
        raise KeyError(f"no data set '{name}' (known: {', '.join(NAMES)})")
    package, folder = _WHERE[name]
    where = files(package) / folder
    if not isinstance(where, Path) or not where.is_dir():
        raise FileNotFoundError(f"{package}/{folder} is missing from the installed slurm_plugin ({where}): "
                                "reinstall the package (pip install slurm-hetsched)")
    return where


def data_file(name: str, relative: str) -> Path:
    """One file of a data set, e.g. ``data_file("job_submit", "job_submit.lua")`` (not checked to exist)."""
    return data_dir(name) / relative


def import_root() -> Path:
    """The directory holding the imported ``slurm_plugin`` package: what a child Python needs first on its
    ``PYTHONPATH`` to run this same code (the checkout in development, site-packages or a ``--target`` dir
    when installed)."""
    return Path(files("slurm_plugin")).resolve().parent


def child_pythonpath() -> str:
    """``PYTHONPATH`` for a child process that must run this same ``slurm_plugin`` (Slurm's power programs, the
    admission daemon): :func:`import_root` first, then whatever this process had."""
    return os.pathsep.join(filter(None, [str(import_root()), os.environ.get("PYTHONPATH")]))
