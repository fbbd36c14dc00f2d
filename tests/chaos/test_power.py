"""Issue 11, power and config items replayed: one bad Redfish BMC among good ones (3), a cluster root that
would inject shell into the generated power programs (8), a crash between config switches (14), and a
credentials file others may change (14)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from tests.integration.bad_bmc import bad_bmc

from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.power.base import BmcConfigError, read_credentials
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.power.redfish import BmcTarget, RedfishPower
from slurm_plugin.site import SITE_CONFIGS

GOOD = ["rfn1", "rfn2", "rfn3"]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    pid, url = start_sushy(tmp_path_factory.mktemp("redfish"), GOOD)
    yield url
    assert stop_pid(pid, "sushy-emulator")


@pytest.mark.parametrize("kind, said", [("html", "the BMC did not answer JSON: b'<html>"),
                                        ("list", "expected a JSON object, got a JSON list")])
def test_item3_a_bmc_answering_garbage_fails_only_its_node(emulator, kind, said):
    """HTTP 200 with non-JSON or a JSON list raised a traceback and the node after it got no request."""
    with bad_bmc(kind) as (url, hits):
        targets = {"bad1": BmcTarget(url, "bad1", None, True), **{n: BmcTarget(emulator, n, None, True) for n in GOOD}}
        res = RedfishPower(targets, timeout=3).resume(["bad1", *GOOD])
    assert sorted(res.done) == GOOD, res
    assert list(res.failed) == ["bad1"] and res.failed["bad1"].startswith(f"GET {url}/redfish/v1/Systems: {said}")
    assert hits == ["GET /redfish/v1/Systems/bad1", "GET /redfish/v1/Systems"]  # by name, then the collection


def test_item3_silent_bmcs_are_asked_in_parallel(emulator):
    """Serial calls made a BMC that never answers cost 10 s per node: 8 of them must not cost 8 timeouts."""
    with bad_bmc("silent") as (url, _):
        silent = {f"mute{i}": BmcTarget(url, f"mute{i}", None, True) for i in range(8)}
        targets = {**silent, **{n: BmcTarget(emulator, n, None, True) for n in GOOD}}
        t0 = time.monotonic()
        res = RedfishPower(targets, timeout=2, workers=16, call_timeout=3).resume([*silent, *GOOD])
        took = time.monotonic() - t0
    assert sorted(res.done) == GOOD and sorted(res.failed) == sorted(silent), res
    assert all("timed out" in why or "no answer within" in why for why in res.failed.values()), res.failed
    assert took < 8, f"{took:.1f} s: the silent BMCs were waited for one after the other"


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o664, 0o604])
def test_item14_credentials_others_may_change_or_read_are_refused(tmp_path, mode):
    cred = tmp_path / "bmc.cred"
    cred.write_text("admin:pw\n")
    cred.chmod(mode)
    with pytest.raises(BmcConfigError, match=r"refusing to use it; make it chown root:slurm .* && chmod 0640"):
        read_credentials(str(cred))
    cred.chmod(0o640)
    assert read_credentials(str(cred)) == ("admin", "pw")
    assert os.stat(cred).st_mode & 0o777 == 0o640


# --- item 8: generated scripts quote every path -----------------------------------------------------------
def test_item8_a_cluster_root_with_shell_in_its_name_is_only_a_path(tmp_path):
    """A cluster root named ``c$(id>x)`` ran ``id`` from the generated ResumeProgram."""
    from slurm_plugin.cluster.local import LocalCluster

    work = tmp_path / "cwd"
    work.mkdir()
    root = tmp_path / "c$(id>x) it's"
    (root / "log").mkdir(parents=True)  # as `cluster up` makes it
    LocalCluster(root)._write_power_programs()
    for action in ("resume", "suspend", "resume-fail"):
        proc = subprocess.run([str(root / "bin" / action), "armn1"], cwd=work, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 1, proc
    assert not list(work.iterdir()) and not (tmp_path / "x").exists(), "a command in the root's name ran"
    log = (root / "log" / "power.log").read_text()
    assert f'detail="armn1 is not a node of the cluster at {root}"' in log, log  # the path arrived whole


def test_item8_rendered_programs_in_a_directory_with_shell_quotes_and_spaces(tmp_path):
    """`conf render` into such a directory: slurm.conf names the programs (quoted), and they run hetsched with
    the paths intact and nothing else."""
    from click.testing import CliRunner

    from slurm_plugin.cli import main

    etc = tmp_path / "etc $(touch pwned) it's"
    etc.mkdir()
    site = etc / "site $(touch pwned2).yaml"
    site.write_text((SITE_CONFIGS / "demo.yaml").read_text())
    log = tmp_path / "power $(touch pwned3).log"
    result = CliRunner().invoke(main, ["conf", "render", str(site), "-o", str(etc), "--power-log", str(log)])
    assert result.exit_code == 0, result.output
    power = (etc / "hetsched" / "power.conf").read_text()
    assert f'ResumeProgram="{etc}/hetsched/resume"' in power
    assert f'Include "{etc}/hetsched/nodes.conf"' in (etc / "slurm.conf").read_text()
    proc = subprocess.run([str(etc / "hetsched" / "suspend"), "x86n[1-2]"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, proc
    assert "node group cpu-x86 has no bmc" in proc.stderr, proc.stderr  # it read the site at that path
    assert not any(p.name.startswith("pwned") for p in tmp_path.rglob("*")), "a command in a path ran"
    assert log.read_text().count("suspend node=x86n") == 2
    bad = tmp_path / 'etc"q'
    bad.mkdir()
    refused = CliRunner().invoke(main, ["conf", "render", str(site), "-o", str(bad)])
    assert refused.exit_code == 1 and "cannot be written into slurm.conf" in refused.output
    assert not list(bad.iterdir())


# --- item 14: a render killed between switches leaves the old set whole ------------------------------------
def _tree(d):
    return {str(p.relative_to(d)): (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file()
                                    else b"/") for p in sorted(d.rglob("*"))}


def _render(etc, site, fault=None):
    """A render in this process, or (with ``fault``) in a child that the fault hook kills with SIGKILL."""
    if fault is None:
        from click.testing import CliRunner

        from slurm_plugin.cli import main

        result = CliRunner().invoke(main, ["conf", "render", str(site), "-o", str(etc)])
        return subprocess.CompletedProcess([], result.exit_code, result.output, "")
    env = {**os.environ, "HETSCHED_FAULT": f"conf-render:{fault}"}
    return subprocess.run([sys.executable, "-m", "slurm_plugin", "conf", "render", str(site), "-o", str(etc)],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("fault", ["set-partial", "set-written", "switched"])
def test_item14_killed_between_switches_the_old_set_is_intact(tmp_path, fault):
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurm.conf").write_text("ClusterName=prod\nAccountingStorageType=accounting_storage/none\n")
    assert _render(etc, "demo").returncode == 0
    before = _tree(etc)
    old_parts = {n: (etc / "hetsched" / n).read_bytes() for n in ("power.conf", "gres.conf", "nodes.conf")}
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["slurm"]["resume_timeout"] = 77
    data["clusters"][0]["node_groups"][3]["gpu"]["count"] = 2  # slurm.conf and gres.conf parts both change
    site = tmp_path / "v2.yaml"
    site.write_text(yaml.safe_dump(data))
    killed = _render(etc, site, fault)
    assert killed.returncode == -signal.SIGKILL, killed
    now = _tree(etc)
    current = {k: v for k, v in now.items() if not k.startswith("hetsched.d/")}
    if fault == "switched":  # the new set is whole and in place, the site's files unchanged
        assert b"ResumeTimeout=77" in (etc / "hetsched" / "power.conf").read_bytes()
        assert b"a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]" in (etc / "hetsched" / "gres.conf").read_bytes()
    else:  # the old set: every file the config reads is byte for byte what it was
        assert current == {k: v for k, v in before.items() if not k.startswith("hetsched.d/")}
        assert {n: (etc / "hetsched" / n).read_bytes() for n in old_parts} == old_parts
    assert now["slurm.conf"] == before["slurm.conf"] and now["gres.conf"] == before["gres.conf"]
    done = _render(etc, site)  # the next render finishes the job and removes what the crash left
    assert done.returncode == 0, done
    assert b"ResumeTimeout=77" in (etc / "hetsched" / "power.conf").read_bytes()
    assert not [p for p in etc.rglob(".*")], "temporary files left behind"
    sets = sorted(p.name for p in (etc / "hetsched.d").iterdir())
    assert os.readlink(etc / "hetsched") == f"hetsched.d/{sets[-1]}" and len(sets) == 2, sets
