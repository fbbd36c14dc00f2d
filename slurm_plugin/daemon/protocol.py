"""The shim <-> daemon wire format, version 1: one JSON object per line each way.

Request (shim -> daemon), at most :data:`MAX_REQUEST_BYTES` including the newline::

    {"v": 1, "op": "submit" | "modify", "job_id": 12 (modify only), "job": {<JOB_FIELDS>}}

Reply (daemon -> shim)::

    {"v": 1, "ok": true, "action": "accept" | "reject", "set": {"partition": "gpu", ...}, "reason": "..."}
    {"v": 1, "ok": false, "error": "..."}          # the shim then fails open (or closed, if so configured)

Known fields are strict: wrong types, negative or out-of-range numbers and over-long strings are errors, so a
request is either understood or refused with a message. Unknown keys (top level or in ``job``) are ignored and
their names returned by :func:`parse_request_fields`, so a newer shim works with an older daemon and the
reverse (fields are only ever added, with defaults that mean "as before"; the shim likewise ignores reply keys
it does not know, but never a ``set`` key outside its whitelist). The version ``v`` changes only for a change
that is not an addition.
"""

from __future__ import annotations

import json
from typing import Any

from ..admission import Admission, JobRequest

VERSION = 1
MAX_REQUEST_BYTES = 16384
MAX_STRING = 4096
MAX_NUMBER = 0xFFFFFFFF
STRING_FIELDS = ("partition", "features", "gres", "tres_per_job", "qos", "account", "name", "comment", "wckey",
                 "array_inx", "licenses", "req_nodes", "image", "container", "intent", "clusters")
NUMBER_FIELDS = ("min_cpus", "cpus_per_task", "num_tasks", "min_nodes", "max_nodes", "mem_per_node_mb",
                 "mem_per_cpu_mb", "time_limit", "user_id", "ntasks_per_node", "pn_min_cpus")
JOB_FIELDS = STRING_FIELDS + NUMBER_FIELDS
TOP_FIELDS = ("v", "op", "job_id", "job", "unanswered")
_TOP = frozenset(TOP_FIELDS)
_FIELD_KIND = {**{k: str for k in STRING_FIELDS}, **{k: int for k in NUMBER_FIELDS}}


class ProtocolError(ValueError):
    """A request that does not follow the schema; ``str()`` is sent back to the client."""


def _check_string(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"job.{key} must be a string")
    if len(value) > MAX_STRING or "\x00" in value:
        raise ProtocolError(f"job.{key} is too long or has a NUL byte")
    return value


def _check_number(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{key} must be a number")
    if value != value or not 0 <= value <= MAX_NUMBER or int(value) != value:
        raise ProtocolError(f"{key} must be a whole number in 0..{MAX_NUMBER}")
    return int(value)


def _no_constants(name: str) -> Any:
    raise ProtocolError(f"{name} is not allowed")


def _job_fields(job: dict, ignored: list[str]) -> dict[str, Any]:
    """Validated job fields (unknown ones appended to ``ignored`` as ``job.NAME``); the common case (plain
    str/int values) costs one dict look-up per field."""
    out: dict[str, Any] = {}
    for key, value in job.items():
        kind = _FIELD_KIND.get(key)
        if kind is None:
            ignored.append(f"job.{key}"[:64])
            continue
        if kind is str:
            out[key] = value if (type(value) is str and len(value) <= MAX_STRING and "\x00" not in value) \
                else _check_string(key, value)
        else:
            out[key] = value if (type(value) is int and 0 <= value <= MAX_NUMBER) else _check_number(f"job.{key}",
                                                                                                     value)
    return out


def parse_request(data: bytes) -> JobRequest:
    """Bytes of one request line -> JobRequest; raises ProtocolError with a reason fit to send back."""
    return parse_request_fields(data)[0]


def parse_request_fields(data: bytes) -> tuple[JobRequest, list[str]]:
    """Bytes of one request line -> (JobRequest, names of the keys ignored as unknown, at most 64 characters
    each); raises ProtocolError with a reason fit to send back."""
    if len(data) > MAX_REQUEST_BYTES:
        raise ProtocolError(f"request larger than {MAX_REQUEST_BYTES} bytes")
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"), parse_constant=_no_constants)
    except (json.JSONDecodeError, RecursionError) as err:
        raise ProtocolError(f"not JSON: {err.__class__.__name__}") from None
    except ProtocolError:
        raise
    except ValueError:  # Python's limit on integer digits (4300): numbers here are at most 10 digits
        raise ProtocolError(f"a number has too many digits (numbers are whole numbers in 0..{MAX_NUMBER})") from None
    if type(doc) is not dict:
        raise ProtocolError("request must be a JSON object")
    ignored = [] if doc.keys() <= _TOP else [k[:64] for k in doc if k not in _TOP]
    if doc.get("v") != VERSION or type(doc.get("v")) is not int:
        raise ProtocolError(f"unsupported protocol version {doc.get('v')!r} (this daemon speaks {VERSION})")
    op = doc.get("op")
    if op not in ("submit", "modify"):
        raise ProtocolError("op must be 'submit' or 'modify'")
    job = doc.get("job")
    if type(job) is not dict:
        raise ProtocolError("job must be an object")
    job_id = _check_number("job_id", doc["job_id"]) if doc.get("job_id") is not None else None
    unanswered = _check_number("unanswered", doc["unanswered"]) if doc.get("unanswered") is not None else 0
    return JobRequest(op=op, job_id=job_id, unanswered=unanswered, **_job_fields(job, ignored)), ignored


def _encode(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def encode_decision(decision: Admission) -> bytes:
    return _encode({"v": VERSION, "ok": True, "action": decision.action, "set": decision.changes,
                    "reason": decision.reason})


def encode_error(message: str) -> bytes:
    return _encode({"v": VERSION, "ok": False, "error": message[:500]})
