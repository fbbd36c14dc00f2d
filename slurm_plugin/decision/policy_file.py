"""The site's active policy file: its identity (content digest) and the guard's atomic rollback of it (the
applier's one action that is a file, not a Slurm command: :class:`~.actions.SwitchPolicy`).

``hetsched tune`` writes the active file (default :data:`SITE_POLICY_FILE`) and keeps the one it replaced
beside it, named in ``twin.previous``. A rollback (:func:`switch_policy_file`) replaces the active file's content
with a copy of ``previous`` (or with an empty policy: the defaults), atomically (:mod:`slurm_plugin.fsio`),
after keeping the rolled-back content beside it as ``<stem>-rolled-back-<UTC time><suffix>``. Relative paths in
``previous`` (``ranking.model``, its own ``twin.previous``) are then read relative to the active file's
directory, which is where ``tune`` keeps it.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

SITE_POLICY_FILE = "/etc/hetsched/policy.d/policy.yaml"  # the cycle's policy unless an option names one


def content_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def site_policy_file() -> Path | None:
    """The site's active policy file if it exists: ``$HETSCHED_POLICY_FILE``, else :data:`SITE_POLICY_FILE`."""
    path = Path(os.environ.get("HETSCHED_POLICY_FILE") or SITE_POLICY_FILE)
    return path if path.is_file() else None


def _stamped(path: Path, label: str, now: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    target = path.with_name(f"{path.stem}-{label}-{stamp}{path.suffix}")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.stem}-{label}-{stamp}-{n}{path.suffix}"), n + 1
    return target


def switch_policy_file(path: str | Path, to: str | Path | None, from_sha256: str, reason: str,
                       now: float | None = None) -> str:
    """Roll the active policy file ``path`` back to a copy of ``to`` (None: the default policy).

    Idempotent and safe to repeat: nothing is done if ``path`` no longer holds ``from_sha256`` (someone installed
    another policy meanwhile, or the rollback already happened). Returns what was done, for the journal.
    Raises OSError when ``path`` or ``to`` cannot be read or the new file cannot be written (nothing changed)."""
    from ..fsio import write_file_atomic

    path, now = Path(path), time.time() if now is None else now
    current = path.read_bytes()
    if content_sha256(current) != from_sha256:
        return f"{path} no longer holds the judged policy: left as it is"
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    if to is None:
        body, what = b"# the default policy (every choice at its default)\n", "the default policy"
    else:
        body, what = Path(to).read_bytes(), f"a copy of {to}"
    head = f"# rolled back by the hetsched guard at {when} to {what}: {reason}\n".replace("\n", " ").strip()
    kept = write_file_atomic(_stamped(path, "rolled-back", now), current)
    write_file_atomic(path, head.encode() + b"\n" + body)
    return f"{path} is now {what}; the rolled-back policy is kept as {kept}"
