"""The container cluster's image: one per Debian release, holding what every role runs (MariaDB, slurmdbd,
slurmctld, slurmd, Slurm's clients, munge, Lua, Python and the suite's Python packages); a role is only the
command the container starts (``entry.sh`` with ``HETSCHED_ROLE``), never a layer of its own.

Built from nothing in one pass per release, without a registry and without ``podman build``:

1. ``mmdebstrap --variant=minbase --include=<every package>``: one apt run resolves and downloads everything
   (in parallel) and dpkg installs it with ``force-unsafe-io``, recommends off, docs/man/locales left out,
   in a temporary directory on tmpfs when there is room (``/dev/shm``); the rootfs comes out as one tarball;
2. meanwhile the host installs the suite's Python packages for the image's Python (:mod:`.suite_deps`, made
   once per requirements and release, then reused);
3. those are appended to the tarball (``tar -r``) and ``podman import`` makes it one image, labelled with the
   digest of its recipe (packages, mmdebstrap options, requirements), so a changed recipe is rebuilt and an
   unchanged one never.

MariaDB is in the image of :data:`DB_RELEASE` only (bookworm: trixie's MariaDB 11.8 and slurmdbd 24.11
do not get along), so a trixie cluster runs its ``db`` container from the bookworm image; the two images then
build side by side. ``docker compose`` builds the same set of packages from Debian's official image through
``containers/Containerfile`` (the ``PACKAGES`` build argument, pip from the index).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import suite_deps

RELEASES = {"bookworm": "22.05", "trixie": "24.11"}  # Debian release -> its Slurm
IMAGE = "localhost/hetsched-cluster:{release}"
# MariaDB runs from the bookworm image (10.11) for every release: trixie's MariaDB 11.8 answers slurmdbd 24.11.5's
# start-up check (`select @var := concat('')`) with error 5027 through libmariadb 11.8, and slurmdbd exits.
DB_RELEASE = "bookworm"

# What every role runs (procps/iproute2 for debugging inside; util-linux's unshare and runuser are essential)
PACKAGES = ("slurmctld", "slurmd", "slurmdbd", "slurm-client", "munge", "lua-socket", "lua-cjson", "lua-posix",
            "python3", "procps", "iproute2", "ca-certificates")
DB_PACKAGES = ("mariadb-server", "mariadb-client")
# dpkg leaves these out of every package (as Debian's slim images do, and MariaDB's offline table tools and
# benchmarks, ~50 MB): nothing in the cluster reads them
EXCLUDED_PATHS = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*",
                  "/usr/bin/aria_*", "/usr/bin/myisam*", "/usr/bin/mariadb-binlog", "/usr/bin/mariadb-slap",
                  "/usr/bin/mariadb-conv", "/usr/bin/innochecksum")
# Run in the finished rootfs ($1): the packages' example configs would shadow nothing (/etc/slurm is mounted) but
# confuse a reader; the database mariadb-server's postinst makes (~110 MB) is dead weight: entry.sh makes its own
# in the mounted data directory
CLEANUP = 'rm -rf "$1/etc/slurm/slurm.conf" "$1/etc/slurm/slurmdbd.conf" "$1"/var/lib/mysql/*'
# Changed by hand when the recipe changes in a way the argv does not show (e.g. how the tarball is finished)
RECIPE_VERSION = "3"
LABEL = "io.hetsched.recipe"
# mmdebstrap runs the system's tools: its helpers (mmtarfilter, once per package) start `python3` from PATH, and a
# version manager's shim there (pyenv) costs a shell script per call
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
TMPFS = Path("/dev/shm")
TMPFS_ROOM = 4 << 30  # bytes free on tmpfs to build there (rootfs and tarball of one release: about 1.1 GB)

Report = Callable[[str, float], None]


class ClusterImageError(RuntimeError):
    """An image could not be built; the message names the log."""


def packages(release: str) -> list[str]:
    """The Debian packages of ``release``'s image (MariaDB's only in the DB release's)."""
    if release not in RELEASES:
        raise ValueError(f"unknown release {release!r} (known: {', '.join(RELEASES)})")
    return [*PACKAGES, *(DB_PACKAGES if release == DB_RELEASE else ())]


def host_mirrors(sources_text: str) -> tuple[str, str]:
    """(Debian mirror, security mirror) named in the host's apt sources (deb822 or one-line), else Debian's."""
    uris = sorted({u.rstrip("/") for u in re.findall(r"https?://\S*/debian(?:-security)?/?(?=\s|$)", sources_text)})
    main = next((u for u in uris if not u.endswith("-security")), "http://deb.debian.org/debian")
    security = next((u for u in uris if u.endswith("-security")), "http://deb.debian.org/debian-security")
    return main, security


def read_host_sources() -> str:
    paths = [*sorted(Path("/etc/apt/sources.list.d").glob("*.sources")), Path("/etc/apt/sources.list")]
    return "\n".join(p.read_text(errors="replace") for p in paths if p.is_file())


def rootfs_argv(release: str, out: Path, mirror: str, security: str) -> list[str]:
    """The ``mmdebstrap`` call writing ``release``'s rootfs with every package to the tarball ``out`` (pure)."""
    return ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar",
            "--aptopt=APT::Install-Recommends \"false\"", "--dpkgopt=force-unsafe-io",
            *(f"--dpkgopt=path-exclude={p}" for p in EXCLUDED_PATHS),
            f"--include={','.join(packages(release))}",
            f"--customize-hook={CLEANUP}",
            release, str(out),
            f"deb {mirror} {release} main", f"deb {mirror} {release}-updates main",
            f"deb {security} {release}-security main"]


def site_packages(release: str) -> str:
    """Where the image's Python finds packages installed outside Debian (Debian's /usr/local dist-packages)."""
    major, minor = suite_deps.PYTHON[release]
    return f"usr/local/lib/python{major}.{minor}/dist-packages"


def append_deps_argv(tarball: Path, deps: Path, release: str) -> list[str]:
    """``tar -r`` appending the suite's installed packages (the entries of ``deps`` but its scripts and its
    completion marker) to the image's tarball, under its site-packages and spelt as mmdebstrap spells paths
    (``./usr/...``): the directory itself is already there, and an image layer may not name a path twice."""
    entries = sorted(e.name for e in deps.iterdir() if e.name not in ("bin", suite_deps.DONE))
    return ["tar", "-rf", str(tarball), "--owner=0", "--group=0", "-C", str(deps),
            f"--transform=s,^,./{site_packages(release)}/,", *entries]


def recipe(release: str) -> str:
    """The digest labelling ``release``'s image: its mmdebstrap call (mirrors left out), the suite's
    requirements and :data:`RECIPE_VERSION`."""
    text = "\n".join([RECIPE_VERSION, *rootfs_argv(release, Path("OUT"), "M", "S"), site_packages(release),
                      *suite_deps.requirements()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def image_name(release: str) -> str:
    return IMAGE.format(release=release)


def _scratch(cache: Path) -> Path:
    """Where the rootfs and its tarball are made: tmpfs when it has room, else the build cache."""
    try:
        st = os.statvfs(TMPFS)
        if st.f_bavail * st.f_frsize >= TMPFS_ROOM:
            return TMPFS
    except OSError:
        pass
    return cache


def build(release: str, cache: Path, logs: Path, env: dict[str, str], report: Report | None = None) -> None:
    """Build ``release``'s image (see the module's docstring); ``report(phase, seconds)`` is told the wall time
    of each step as it ends: ``suite deps``, ``rootfs`` (mmdebstrap), ``import``. Raises :class:`ClusterImageError`."""
    report = report or (lambda name, s: None)
    if not shutil.which("mmdebstrap"):
        raise ClusterImageError("mmdebstrap is not installed (apt-get install mmdebstrap)")
    work = _scratch(cache) / f"hetsched-image-{release}-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tarball = work / "rootfs.tar"
    deps: dict[str, Path | Exception] = {}

    def install_deps() -> None:
        t0 = time.monotonic()
        try:
            deps["dir"] = suite_deps.ensure(release, cache, logs / f"suite-deps-{release}.log")
            report(f"suite deps {release}", time.monotonic() - t0)
        except Exception as e:  # handed to the caller's thread below
            deps["error"] = e

    side = threading.Thread(target=install_deps, name=f"suite-deps-{release}")
    side.start()
    try:
        t0 = time.monotonic()
        mirror, security = host_mirrors(read_host_sources())
        # not under nice: `up` waits for it (about 100 CPU s in all), and a batch job's nice would queue it behind
        # every other process of a loaded host
        _run(rootfs_argv(release, tarball, mirror, security), logs / f"rootfs-{release}.log",
             {**env, "TMPDIR": str(work), "PATH": SYSTEM_PATH}, f"the {release} rootfs (mmdebstrap)")
        report(f"rootfs {release}", time.monotonic() - t0)
        side.join()
        if "error" in deps:
            raise ClusterImageError(str(deps["error"])) from deps["error"]
        t0 = time.monotonic()
        log = logs / f"import-{release}.log"
        _run(append_deps_argv(tarball, deps["dir"], release), log, env, f"the {release} image's Python packages")
        _run(["podman", "import", "--change", 'CMD ["/etc/slurm/entry.sh"]', "--change",
              f"LABEL {LABEL}={recipe(release)}", str(tarball), image_name(release)], log, env,
             f"importing {image_name(release)}", append=True)
        report(f"import {release}", time.monotonic() - t0)
    finally:
        side.join()
        shutil.rmtree(work, ignore_errors=True)


def _run(argv: list[str], log: Path, env: dict[str, str], what: str, append: bool = False) -> None:
    with open(log, "a" if append else "w") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=1800)
    if proc.returncode != 0:
        raise ClusterImageError(f"{what} failed (exit {proc.returncode}); see {log}")
