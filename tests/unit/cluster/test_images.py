"""The container cluster's one image per release (cluster/images.py): what mmdebstrap is asked, where the
suite's packages land in the tarball, what the label covers. The real build runs in tests/containers."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from slurm_plugin.cluster import images, suite_deps

DEB822 = """Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security/
Suites: bookworm-security
"""


def test_every_role_is_in_one_image_and_mariadb_only_in_the_db_release():
    bookworm, trixie = images.packages("bookworm"), images.packages("trixie")
    for role_package in ("slurmctld", "slurmd", "slurmdbd", "slurm-client", "munge", "python3"):
        assert role_package in bookworm and role_package in trixie
    assert images.DB_RELEASE == "bookworm" and "mariadb-server" in bookworm and "mariadb-server" not in trixie
    with pytest.raises(ValueError, match="sid"):
        images.packages("sid")


def test_mirrors_come_from_the_hosts_sources_else_debians():
    assert images.host_mirrors(DEB822) == ("http://mirror.example/debian", "http://mirror.example/debian-security")
    one_line = "deb http://m.example/debian bookworm main\n"
    assert images.host_mirrors(one_line) == ("http://m.example/debian", "http://deb.debian.org/debian-security")
    assert images.host_mirrors("") == ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security")


def test_one_mmdebstrap_run_installs_every_package_without_recommends():
    argv = images.rootfs_argv("trixie", Path("/t/out.tar"), "http://m/debian", "http://m/debian-security")
    assert argv[0] == "mmdebstrap" and "--variant=minbase" in argv and "--dpkgopt=force-unsafe-io" in argv
    assert '--aptopt=APT::Install-Recommends "false"' in argv
    assert f"--include={','.join(images.packages('trixie'))}" in argv
    tail = argv[argv.index("trixie"):]
    assert tail == ["trixie", "/t/out.tar", "deb http://m/debian trixie main",
                    "deb http://m/debian trixie-updates main", "deb http://m/debian-security trixie-security main"]


def test_the_label_changes_with_the_packages_and_the_requirements(monkeypatch):
    before = images.recipe("bookworm")
    assert before != images.recipe("trixie")
    monkeypatch.setattr(suite_deps, "requirements", lambda: ["click>=8.1"])
    assert images.recipe("bookworm") != before
    monkeypatch.undo()
    monkeypatch.setattr(images, "PACKAGES", (*images.PACKAGES, "vim"))
    assert images.recipe("bookworm") != before


def test_the_suite_packages_are_appended_under_the_images_site_packages(tmp_path):
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc" / "hostname").write_text("x\n")
    (rootfs / "usr/local/lib/python3.13/dist-packages").mkdir(parents=True)
    tarball = tmp_path / "rootfs.tar"
    subprocess.run(["tar", "-cf", str(tarball), "-C", str(rootfs), "."], check=True)
    deps = tmp_path / "deps"
    (deps / "click").mkdir(parents=True)
    (deps / "click" / "__init__.py").write_text("")
    (deps / "bin").mkdir()
    (deps / "bin" / "tool").write_text("")
    (deps / suite_deps.DONE).write_text("")
    subprocess.run(images.append_deps_argv(tarball, deps, "trixie"), check=True)
    with tarfile.open(tarball) as tf:
        names = {n.rstrip("/") for n in tf.getnames()}
        owners = {m.uid for m in tf.getmembers()}
    site = "./usr/local/lib/python3.13/dist-packages"
    assert {"./etc/hostname", f"{site}/click/__init__.py"} <= names
    assert not any("bin/tool" in n or suite_deps.DONE in n for n in names) and owners == {0}
    with tarfile.open(tarball) as tf:  # podman refuses a layer naming a path twice (the directory itself here)
        spelled = [m.name.lstrip(".").strip("/") for m in tf.getmembers()]
    assert len(spelled) == len(set(spelled))
