"""Tell Slurm a node could not be powered up: ``scontrol update nodename=X state=DOWN reason="..."``.

A failed ResumeProgram call changes nothing in slurmctld by itself (the node would sit POWERING_UP until
ResumeTimeout), so ``hetsched power resume`` marks each node it could not power up DOWN with a reason naming the
backend and its error, which ``sinfo -R`` and ``scontrol show node`` show: ``resume failed (redfish): ...``.
The reason deliberately does not start with the suite's ``hetsched:`` tag: the power state machine
(scale/power_state.py) reads a DOWN node with a reason not its own, after a power-up, as a failed power-up to
retry with backoff; ``hetsched: resume failed N times`` is its own give-up text.
"""

from __future__ import annotations

import os

PREFIX = "resume failed"
MAX_REASON = 240


def reason_for(error: str, backend: str) -> str:
    """``resume failed (<backend>): <error>`` as one printable line of at most :data:`MAX_REASON` characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in error).split()).replace('"', "'")
    reason = f"{PREFIX} ({backend}): {text}"
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 3] + "..."


def mark_down(errors: dict[str, str], backends: dict[str, str], slurm_conf: str | None = None,
              timeout: float = 20.0, client=None) -> dict[str, str | None]:
    """``{host: None if marked, else why not}`` after setting each host of ``errors`` (host -> error) DOWN with
    :func:`reason_for` its error and backend (``backends``: host -> name). Hosts that share a reason are set in
    one ``scontrol`` (a hostlist): a power-up of 255 nodes refused alike is one command, not 255, each of which
    would parse slurm.conf and take slurmctld's node write lock. ``client``: the
    :class:`~slurm_plugin.slurm.SlurmClient` to run ``scontrol`` with (e.g. a container cluster's); default the
    host's, with ``slurm_conf`` or $SLURM_CONF."""
    import hostlist

    from ..slurm import SlurmClient, SlurmError
    from .pool import run_bounded

    if client is None:
        conf = slurm_conf or os.environ.get("SLURM_CONF")
        if not conf or not os.path.exists(conf):  # scontrol would fall back to DNS SRV lookups and hang
            why = f"no slurm.conf at {conf}" if conf else "SLURM_CONF is not set (--slurm-conf)"
            return {host: f"cannot set DOWN: {why}" for host in errors}
        client = SlurmClient(conf, timeout=timeout)
    reason_of = {host: reason_for(error, backends.get(host, "none")) for host, error in errors.items()}
    hosts_of: dict[str, list[str]] = {}
    for host, reason in reason_of.items():
        hosts_of.setdefault(reason, []).append(host)

    def set_down(hosts: list[str], reason: str) -> str | None:
        try:
            proc = client.run("scontrol", "update", f"nodename={hostlist.collect_hostlist(hosts)}", "state=DOWN",
                              f"reason={reason}", input="", timeout=timeout, check=False)  # stdin empty, as before
        except SlurmError as err:  # not installed, timed out
            return err.stderr
        return ((proc.stderr or proc.stdout).strip() or f"scontrol exit {proc.returncode}") if proc.returncode else None

    failed: dict[str, str] = {}

    def one(reason: str) -> str:
        hosts = hosts_of[reason]
        why = set_down(hosts, reason)
        if why is not None and len(hosts) > 1:  # e.g. one name slurmctld does not know: the others still go
            failed.update({h: w for h in hosts if (w := set_down([h], reason)) is not None})
        elif why is not None:
            failed[hosts[0]] = why
        return "down"

    outcomes = run_bounded(hosts_of, one, workers=8, timeout=timeout + 30)  # scontrol retries a transient answer
    return {host: (None if outcomes[reason].ok else outcomes[reason].text) if host not in failed else failed[host]
            for host, reason in reason_of.items()}
