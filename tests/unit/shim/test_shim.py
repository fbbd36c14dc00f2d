"""The real job_submit.lua run by lua5.1 with a stand-in slurm table, against a scripted fake daemon.

Covers: the request's whitelist, applying a good answer, every kind of bad answer (fail-open, fuzzed),
absent/hung/slow daemons within the timeout, fail-closed, slurm_job_modify, and a daemon restart between
calls on the kept connection.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from .fake_daemon import FakeDaemon, accept, reject
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[3]
SHIM = REPO / "job_submit" / "job_submit.lua"
DRIVE = REPO / "job_submit" / "standin" / "drive.lua"
SETTABLE = {"partition", "features", "qos", "comment", "site_factor", "cpus_per_task", "min_cpus", "pn_min_cpus",
            "min_mem_per_cpu", "min_mem_per_node", "time_limit", "begin_time"}

pytestmark = pytest.mark.skipif(not shutil.which("lua5.1"), reason="lua5.1 not installed (apt-get install lua5.1)")


@pytest.fixture
def where(tmp_path):
    return tmp_path


def config(where: Path, timeout_ms: int = 50, fail: str = "open") -> Path:
    path = where / "hetsched-shim.json"
    path.write_text(json.dumps({"version": 1, "socket": str(where / "d.sock"), "timeout_ms": timeout_ms,
                                "fail": fail, "site": "demo"}))
    return path


def run(cfg: Path, job: dict, mode: str = "once") -> dict:
    out = subprocess.run(["lua5.1", str(DRIVE), str(SHIM), str(cfg), mode, json.dumps(job)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for key in ("set", "user", "log"):  # cjson writes empty tables as {}
        result[key] = result[key] or ({} if key == "set" else [])
    return result


def serve(where: Path, responder, **kw) -> FakeDaemon:
    return FakeDaemon(where / "d.sock", responder, **kw)


def test_request_carries_whitelisted_fields_without_no_val(where):
    daemon = serve(where, lambda line: accept())
    job = {"partition": "batch", "features": "aarch64|x86_64", "tres_per_node": "gres:gpu:1", "min_cpus": 4,
           "min_mem_per_node": 2048, "time_limit": 60, "comment": "class=web", "name": "j", "user_id": 1000,
           "script": "#!/bin/sh\nsecret", "environment": "X=1"}
    assert run(config(where), job)["rc"] == 0
    sent = daemon.request()
    daemon.close()
    assert sent["v"] == 1 and sent["op"] == "submit"
    assert sent["job"] == {"partition": "batch", "features": "aarch64|x86_64", "gres": "gres:gpu:1", "min_cpus": 4,
                           "mem_per_node_mb": 2048, "time_limit": 60, "comment": "class=web", "name": "j",
                           "user_id": 1000}  # NO_VAL numbers, script and environment never leave slurmctld


@pytest.mark.parametrize("script,intent", [
    ("#!/bin/sh\n#SBATCH -n 1\n#HETSCHED intent train on 4 GPUs, cheapest\nrun\n", "train on 4 GPUs, cheapest"),
    ("#HETSCHED intent render 5 frames\r\n", "render 5 frames"),
    ("#!/bin/sh\necho '#HETSCHED intent not at a line start'\n", None),
    ("#!/bin/sh\nsrun true\n", None),
])
def test_intent_line_sent_only_when_the_script_has_one(where, script, intent):
    daemon = serve(where, lambda line: accept({"time_limit": 120, "begin_time": 1796000000}))
    result = run(config(where), {"script": script})
    sent = daemon.request()
    daemon.close()
    assert sent["job"].get("intent") == intent
    assert result["rc"] == 0 and result["set"] == {"time_limit": 120, "begin_time": 1796000000}


def test_answer_applied_and_user_told(where):
    daemon = serve(where, lambda line: accept({"partition": "gpu", "site_factor": 1030, "features": "a100|h100"},
                                              "gpu:1 can run on a100, h100"))
    result = run(config(where), {"tres_per_node": "gres:gpu:1"})
    daemon.close()
    assert result["rc"] == 0
    assert result["set"] == {"partition": "gpu", "site_factor": 1030, "features": "a100|h100"}
    assert any("a100, h100" in m for m in result["user"])


def test_rightsizing_fields_sent_and_applied(where):
    changes = {"cpus_per_task": 3, "min_cpus": 6, "pn_min_cpus": 3, "min_mem_per_cpu": 2731,
               "comment": "class=web,hetsched:rightsize=cpt:8>3"}
    daemon = serve(where, lambda line: accept(changes, "right-sized for class web"))
    job = {"cpus_per_task": 8, "num_tasks": 2, "min_cpus": 16, "pn_min_cpus": 8, "ntasks_per_node": 65534,
           "min_mem_per_cpu": 1024, "comment": "class=web"}
    result = run(config(where), job)
    sent = daemon.request()
    daemon.close()
    assert {k: v for k, v in sent["job"].items() if k != "user_id"} == {
        "cpus_per_task": 8, "num_tasks": 2, "min_cpus": 16, "pn_min_cpus": 8, "mem_per_cpu_mb": 1024,
        "comment": "class=web"}  # ntasks_per_node NO_VAL16: not set
    assert result["rc"] == 0 and result["set"] == changes


def test_reject_refuses_with_reason(where):
    daemon = serve(where, lambda line: reject("no node has 9 x gpu"))
    result = run(config(where), {"tres_per_node": "gres:gpu:9"})
    daemon.close()
    assert result["rc"] == -1 and result["set"] == {}
    assert result["user"] == ["hetsched: job refused: no node has 9 x gpu"]


def test_absent_daemon_fails_open_with_one_log_line(where):
    result = run(config(where), {"features": "aarch64|x86_64"})
    assert result["rc"] == 0 and result["set"] == {} and result["user"] == []
    assert [m for m in result["log"] if "accepted unchanged" in m] == [
        "hetsched shim: submit: connect: No such file or directory; job accepted unchanged (fail=open)"]


def test_absent_daemon_fail_closed(where):
    result = run(config(where, fail="closed"), {})
    assert result["rc"] == -1 and "unavailable" in result["user"][0]


@pytest.mark.parametrize("timeout_ms", [20, 50])
def test_hung_daemon_costs_the_timeout_only(where, timeout_ms):
    daemon = serve(where, lambda line: b"")
    result = run(config(where, timeout_ms=timeout_ms), {})
    daemon.close()
    assert result["rc"] == 0 and result["set"] == {}
    # plus the time the shim's process waited for a CPU (a loaded CI machine): the timeout cannot fire then
    assert timeout_ms * 1000 * 0.95 <= result["elapsed_us"] <= (timeout_ms + 10) * 1000 + result["waited_us"]
    assert any("timeout" in m for m in result["log"])


def test_slow_daemon_fails_open(where):
    def slow(line):
        time.sleep(0.12)
        return accept({"partition": "gpu"})
    daemon = serve(where, slow)
    result = run(config(where), {})
    daemon.close()
    assert result["rc"] == 0 and result["set"] == {}


GARBAGE = [
    b"not json\n", b"[]\n", b"null\n", b'"accept"\n', b'{"v": 2, "ok": true, "action": "accept"}\n',
    b'{"v": 1, "ok": false, "error": "bad request"}\n', b'{"v": 1, "ok": true, "action": "maybe"}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"script": "rm -rf /"}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"partition": "gpu; rm"}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"partition": ""}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"site_factor": "9"}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"site_factor": 1e12}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"site_factor": 1.5}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"comment": "a\\nb"}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"cpus_per_task": 0}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"min_mem_per_node": -5}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"pn_min_cpus": 70000}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": ["partition"]}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"partition": null}}\n',
    b'{"v": 1, "ok": true, "action": "accept", "reason": 5}\n',
    b'{"v": 1, "ok": true, "action": "accept", "set": {"partition": "' + b"p" * 2000 + b'"}}\n',
    b"x" * 200000 + b"\n", b'{"v": 1, "ok": true, "action": "accept", "set": {"partition": "gpu"}}',  # no newline
    b"\xff\xfe\x00garbage\n",
]


@pytest.mark.parametrize("reply", GARBAGE, ids=[g[:40].decode("latin-1") for g in GARBAGE])
def test_garbage_reply_fails_open_unchanged(where, reply):
    daemon = serve(where, lambda line: reply)
    result = run(config(where), {"partition": "batch"})
    daemon.close()
    assert result["rc"] == 0 and result["set"] == {}, result
    assert any("accepted unchanged" in m for m in result["log"])


json_scalars = st.none() | st.booleans() | st.integers(-10**13, 10**13) | st.floats(allow_nan=False) | st.text(
    max_size=30)
replies = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ") + b"\n"),
    st.fixed_dictionaries(
        {"v": st.sampled_from([1, 1, 1, 2, "1"]), "ok": st.sampled_from([True, True, False, 1]),
         "action": st.sampled_from(["accept", "accept", "reject", "bogus"])},
        optional={"set": st.dictionaries(st.sampled_from(sorted(SETTABLE) + ["script", "priority"]),
                                         json_scalars, max_size=4) | json_scalars,
                  "reason": json_scalars}).map(lambda d: json.dumps(d).encode() + b"\n"),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=replies)
def test_fuzz_replies_never_break_submission(tmp_path_factory, reply):
    where = tmp_path_factory.mktemp("fuzz")
    daemon = serve(where, lambda line: reply)
    result = run(config(where), {"partition": "batch"})
    daemon.close()
    assert result["rc"] in (0, -1)
    assert set(result["set"]) <= SETTABLE
    try:
        doc = json.loads(reply)
    except ValueError:
        doc = None
    valid_reject = isinstance(doc, dict) and doc.get("v") == 1 and doc.get("ok") is True and doc.get(
        "action") == "reject"
    if result["rc"] == -1:
        assert valid_reject or result["set"] == {}
    if not (isinstance(doc, dict) and doc.get("v") == 1 and doc.get("ok") is True):
        assert result["rc"] == 0 and result["set"] == {}


def test_modify_without_placement_change_skips_the_daemon(where):
    daemon = serve(where, lambda line: reject("should not be asked"))
    result = run(config(where), {"time_limit": 30}, mode="modify")
    assert result["rc"] == 0 and daemon.requests == []
    result = run(config(where), {"tres_per_node": "gres:gpu:9", "job_id": 77}, mode="modify")
    daemon.close()
    assert result["rc"] == -1 and daemon.request()["op"] == "modify" and daemon.request()["job_id"] == 77


def test_kept_connection_survives_daemon_restarts(where):
    """Each reply closes the connection (as a restart would): every call still gets its answer."""
    daemon = serve(where, lambda line: accept({"partition": "gpu"}), close_after_reply=True)
    out = subprocess.run(["lua5.1", str(DRIVE), str(SHIM), str(config(where)), "bench", "100", "0.5",
                          json.dumps({"tres_per_node": "gres:gpu:1"})], capture_output=True, text=True, timeout=30)
    daemon.close()
    result = json.loads(out.stdout)
    assert result["rc"] == {"0": 50} and result["sets"] == 50


def test_a_garbage_reply_drops_the_kept_connection(where):
    """A peer that answered nonsense is never asked again on the same connection: after a stand-in or broken
    daemon is replaced, the next submission reaches the new one instead of the old connection."""
    daemon = serve(where, lambda line: b"}{ not json\n")
    out = subprocess.run(["lua5.1", str(DRIVE), str(SHIM), str(config(where)), "bench", "100", "0.2",
                          json.dumps({"tres_per_node": "gres:gpu:1"})], capture_output=True, text=True, timeout=30)
    daemon.close()
    result = json.loads(out.stdout)
    calls = result["rc"]["0"]
    assert calls >= 10 and result["sets"] == 0  # every call failed open, unchanged
    assert len(daemon.conns) == calls  # one fresh connection per call


def test_unanswered_calls_reported_on_the_next_answered_one(where):
    """Calls the shim answered without the daemon are counted in its Lua state and sent as ``unanswered`` with
    the next request; once a reply came back the count starts again (the daemon's metrics show the outage)."""
    replies = iter([b"}{ not json\n"] * 3)
    daemon = serve(where, lambda line: next(replies, accept({"partition": "gpu"})))
    out = subprocess.run(["lua5.1", str(DRIVE), str(SHIM), str(config(where)), "bench", "100", "0.2",
                          json.dumps({"tres_per_node": "gres:gpu:1"})], capture_output=True, text=True, timeout=30)
    daemon.close()
    assert json.loads(out.stdout)["rc"]["0"] >= 6, out.stdout
    sent = [daemon.request(i).get("unanswered") for i in range(6)]
    assert sent == [None, 1, 2, 3, None, None], sent


def test_an_older_daemon_that_refuses_unanswered_still_answers(where):
    """A daemon older than the ``unanswered`` field replied 'unknown keys' to it, which failed every call
    open after one outage: the shim asks once more without the field and leaves it out on that connection;
    reply keys the shim does not know are ignored (protocol additions work both ways)."""
    replies = iter([b"}{ not json\n"] * 2)

    def old_daemon(line: bytes) -> bytes:
        reply = next(replies, None)
        if reply is not None:
            return reply
        if b"unanswered" in line:
            return b'{"v":1,"ok":false,"error":"unknown keys [\'unanswered\'] (valid: v, op, job_id, job)"}\n'
        return accept({"partition": "gpu"})[:-2] + b', "hint": {"new": 1}}\n'
    daemon = serve(where, old_daemon)
    # a generous timeout: this is about the protocol, and a call timed out on a loaded machine fails open too
    out = subprocess.run(["lua5.1", str(DRIVE), str(SHIM), str(config(where, timeout_ms=2000)), "bench", "100", "0.2",
                          json.dumps({"tres_per_node": "gres:gpu:1"})], capture_output=True, text=True, timeout=30)
    daemon.close()
    result = json.loads(out.stdout)
    assert result["rc"]["0"] >= 5 and result["sets"] == result["rc"]["0"] - 2, out.stdout
    sent = [daemon.request(i).get("unanswered") for i in range(6)]
    assert sent == [None, 1, 2, None, None, None], sent
