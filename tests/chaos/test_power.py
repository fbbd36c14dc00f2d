"""Issue 11, power and config items replayed: one bad Redfish BMC among good ones (3), a cluster root that
would inject shell into the generated power programs (8), a crash between config switches (14), and a
credentials file others may change (14)."""

from __future__ import annotations

import os
import time

import pytest
from tests.integration.bad_bmc import bad_bmc

from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.power.base import BmcConfigError, read_credentials
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.power.redfish import BmcTarget, RedfishPower

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
    assert hits == ["GET /redfish/v1/Systems"]


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
