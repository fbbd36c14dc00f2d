"""The request parser: strict known fields, unknown ones ignored, every failure a ProtocolError, never anything
else (fuzzed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugin.admission import Admission
from slurm_plugin.daemon.protocol import (JOB_FIELDS, MAX_REQUEST_BYTES, ProtocolError, encode_decision,
                                          encode_error, parse_request, parse_request_fields)


def line(**doc) -> bytes:
    return json.dumps({"v": 1, "op": "submit", "job": {}, **doc}).encode()


def test_valid_request():
    req = parse_request(line(job={"gres": "gres:gpu:1", "min_cpus": 4, "comment": "class=web", "user_id": 1000}))
    assert (req.op, req.gres, req.min_cpus, req.comment, req.user_id) == ("submit", "gres:gpu:1", 4, "class=web", 1000)


def test_modify_with_job_id():
    req = parse_request(line(op="modify", job_id=17, job={"partition": "gpu"}))
    assert (req.op, req.job_id, req.partition) == ("modify", 17, "gpu")


@pytest.mark.parametrize("data, message", [
    (b"", "not JSON"), (b"{", "not JSON"), (b"[]", "JSON object"), (b"null", "JSON object"),
    (line(v=2), "version"), (line(v=True), "version"), (line(op="delete"), "op must be"),
    (line(job=[]), "job must be an object"), (line(job={"partition": 5}), "must be a string"),
    (line(job={"min_cpus": "4"}), "must be a number"), (line(job={"min_cpus": -1}), "whole number"),
    (line(job={"min_cpus": 1.5}), "whole number"), (line(job={"min_cpus": 2 ** 40}), "whole number"),
    (line(job={"min_cpus": True}), "must be a number"), (line(job={"comment": "x" * 5000}), "too long"),
    (line(job={"name": "a\x00b"}), "NUL"), (b'{"v": 1, "op": "submit", "job": {"min_cpus": NaN}}', "not allowed"),
    (b"x" * (MAX_REQUEST_BYTES + 1), "larger than"), (b"[" * 10000, "not JSON"),
    (line(job_id=-3, op="modify"), "whole number"),
], ids=lambda v: v[:30].decode("latin-1") if isinstance(v, bytes) else None)
def test_malformed(data, message):
    with pytest.raises(ProtocolError, match=message):
        parse_request(data)


def test_unknown_keys_are_ignored_and_named():
    """A newer shim's fields (top level or in job) reach an older daemon as ignored names, not as an error;
    known fields beside them are still checked."""
    req, ignored = parse_request_fields(line(unanswered=2, trace_id="x" * 100, job={"partition": "gpu",
                                                                                  "script": "#!/bin/sh"}))
    assert (req.partition, req.unanswered) == ("gpu", 2)
    assert ignored == ["trace_id", "job.script"]
    assert parse_request_fields(line(job={"partition": "gpu"}))[1] == []
    with pytest.raises(ProtocolError, match="must be a string"):
        parse_request(line(future={"a": 1}, job={"partition": 5}))


def test_invalid_utf8_is_replaced_not_fatal():
    req = parse_request(b'{"v":1,"op":"submit","job":{"name":"caf\xe9"}}')
    assert req.name.startswith("caf")


def test_replies_are_one_json_line():
    ok = encode_decision(Admission(changes={"partition": "gpu"}, reasons=("r",)))
    assert ok.endswith(b"\n") and ok.count(b"\n") == 1
    assert json.loads(ok) == {"v": 1, "ok": True, "action": "accept", "set": {"partition": "gpu"}, "reason": "r"}
    err = encode_error("bad\nthing")
    assert err.count(b"\n") == 1 and json.loads(err)["ok"] is False


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids,
                                                                                     max_size=4), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_bytes_only_protocol_errors(data):
    try:
        parse_request(data)
    except ProtocolError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.fixed_dictionaries({"v": st.sampled_from([1, 1, 2, "1"]), "op": st.sampled_from(["submit", "modify", "x"])},
                             optional={"job": st.dictionaries(st.sampled_from(JOB_FIELDS + ("bogus",)), json_values,
                                                              max_size=6),
                                       "job_id": json_values}))
def test_fuzz_structured_only_protocol_errors(doc):
    try:
        req = parse_request(json.dumps(doc).encode())
    except ProtocolError:
        return
    assert req.op in ("submit", "modify")
