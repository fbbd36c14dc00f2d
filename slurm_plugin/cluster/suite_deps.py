"""The suite image's Python dependencies, installed once on the host and copied into the image build.

``pip install`` inside the suite image's build was the long pole of bringing the container cluster up from
nothing (pip's HTTP cache stays empty here: the index's answers are not cacheable, so every build resolved and
downloaded again). Instead the host installs ``containers/suite-requirements.txt`` for the image's Python
(``pip install --target`` with the release's Python version and manylinux platforms: wheels only, nothing
runs) into ``<cache>/suite-deps/<release>-<digest of the requirements>/``; the build mounts that directory and
copies it into the image's dist-packages. The directory is reused by every later build of the same
requirements, of any cluster root. Packages PyPI publishes only as source are built into a wheelhouse once
(``<cache>/wheels/``, pure Python) and found there.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from ..data import data_dir

# The Python and glibc of each release's Debian (the image's /usr/bin/python3; manylinux tags up to the glibc)
PYTHON = {"bookworm": (3, 11), "trixie": (3, 13)}
GLIBC_MINOR = {"bookworm": 36, "trixie": 41}
# On PyPI only as a source distribution: built into the wheelhouse (pure Python, any version) before the install
SOURCE_ONLY = ("python-hostlist",)
DONE = ".hetsched-complete"
# How the install is made, beyond the requirements (a change makes a new install, not a reuse of the old one)
FORM = "no-compile"


class SuiteDepsError(RuntimeError):
    """The host could not install the suite's dependencies; the message names the log."""


def requirements_file() -> Path:
    return data_dir("containers") / "suite-requirements.txt"


def requirements() -> list[str]:
    """The requirement lines of ``containers/suite-requirements.txt`` (comments and blanks dropped)."""
    lines = (line.split("#", 1)[0].strip() for line in requirements_file().read_text().splitlines())
    return [line for line in lines if line]


def target_dir(cache: Path, release: str) -> Path:
    """Where the install for ``release`` lives: named by the release and the digest of the requirements and of
    the install's form (:data:`FORM`)."""
    digest = hashlib.sha256("\n".join([FORM, *requirements()]).encode()).hexdigest()[:12]
    return cache / "suite-deps" / f"{release}-{digest}"


def install_argv(release: str, target: Path, wheels: Path, arch: str | None = None) -> list[str]:
    """The host's ``pip install`` of the requirements into ``target`` for ``release``'s Python (pure).

    Not byte-compiled: compiling all of it cost about 24 CPU s and 60 MB of image (a third of the install) for
    the few modules the suite imports, which its Python compiles on first import (and a host of another Python
    version could not compile for the image anyway)."""
    if release not in PYTHON:
        raise ValueError(f"unknown release {release!r} (known: {', '.join(PYTHON)})")
    major, minor = PYTHON[release]
    arch = arch or platform.machine()
    platforms = [f"manylinux_2_{m}_{arch}" for m in range(GLIBC_MINOR[release], 16, -1)] + [f"manylinux2014_{arch}"]
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
            "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
            "--python-version", f"{major}.{minor}", "--find-links", str(wheels)]
    for plat in platforms:
        argv += ["--platform", plat]
    return argv + ["--no-compile", *requirements()]


def ensure(release: str, cache: Path, log: Path) -> Path:
    """The installed dependencies for ``release`` (built now if missing; ``log`` gets pip's output).

    Written beside and renamed into place with a completion marker, so an interrupted install is never
    mistaken for a finished one."""
    target = target_dir(cache, release)
    if (target / DONE).exists():
        return target
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    source_only = [r for r in requirements() if _name(r) in SOURCE_ONLY and not _has_wheel(wheels, _name(r))]
    steps = ([[sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), *source_only]]
             if source_only else []) + [install_argv(release, tmp, wheels)]
    with open(log, "w") as out:
        for argv in steps:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            if subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=1800).returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise SuiteDepsError(f"installing the suite's Python dependencies for {release} failed; see {log}")
    (tmp / DONE).write_text(" ".join(requirements()) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def _name(requirement: str) -> str:
    """The project name of a requirement line (``numpy>=1.26`` -> ``numpy``), normalized."""
    for sep in "<>=!~[; ":
        requirement = requirement.split(sep, 1)[0]
    return requirement.strip().lower().replace("_", "-")


def _has_wheel(wheels: Path, name: str) -> bool:
    return any(wheels.glob(f"{name.replace('-', '_')}-*.whl"))
