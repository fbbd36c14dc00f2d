"""The admission daemon: an asyncio Unix-socket server answering the shim from a cached snapshot.

A connection carries request lines and gets one reply line for each, in order. The request path never calls Slurm: decisions
come from :func:`slurm_plugin.admission.admit` on the snapshot that :class:`SnapshotRefresher` keeps fresh in
a background thread. Security: the socket file gets ``socket_mode`` (default 0600) inside a directory only
its owner can write (checked at start, :func:`.guard.secure_socket_dir`), and every connection's peer uid
(SO_PEERCRED) must be in ``allow_users``; a peer that is refused, too slow (``read_timeout_s`` for a whole
request), too large or malformed gets an error line and the server goes on serving others. Each allowed uid
may hold ``max_connections_per_user`` connections; slurmctld's uid (``priority_uid``) is never refused for
being busy: its oldest idle connection is closed instead. Refusals are logged at most once a minute per uid;
control characters in log lines are escaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from time import perf_counter, thread_time

from ..admission import Admission, AdmissionOptions, admit
from ..deploy.form import deploy_active
from ..deploy.view import DeployViewer
from ..site import Site
from ..snapshot import SnapshotRefresher
from ..snapshot.federation import FederationRefresher
from .guard import EscapeControl, RateLimited, escape, secure_socket_dir
from .metrics import AdmissionMetrics
from .peercred import peer_ids
from .protocol import MAX_REQUEST_BYTES, ProtocolError, encode_decision, encode_error, parse_request_fields
from .trace import AdmissionTrace

log = logging.getLogger(__name__)
log.addFilter(EscapeControl())  # job names and comments are user-controlled: one record, one line


class _Connection(asyncio.Protocol):
    """One client connection: checks the peer uid, then answers each request line in order.

    A connection may carry many requests (the shim keeps one open); it is closed after a refused peer, an
    oversized or incomplete request (nothing complete within ``read_timeout_s``), or ``idle_timeout_s``
    without traffic.
    """

    def __init__(self, server: AdmissionServer):
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.deadline = 0.0
        self.why = "idle"
        self.peer = (0, -1, -1)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        srv = self.server
        self.peer = peer_ids(transport.get_extra_info("socket"))
        pid, uid, _ = self.peer
        mine = srv.connections.setdefault(uid, {})
        mine[self] = None  # insertion order = age
        srv.open_connections += 1
        if uid not in srv.allowed_uids:
            srv.stats["denied"] += 1
            srv.metrics.failed("unauthorised")
            srv.log_refusal(uid, pid, "not in allow_users")
            self._finish(encode_error(f"uid {uid} may not use this socket"))
        elif uid == srv.priority_uid:
            if len(mine) > srv.max_connections:  # slurmctld always gets through: drop its oldest idle one
                oldest = next(c for c in mine if c is not self)
                srv.stats["evicted"] += 1
                oldest._finish(encode_error("closed: newer connection from the same uid"))
            self._arm(srv.idle_timeout_s, "idle")
        elif len(mine) > srv.max_connections_per_user or srv.open_connections - len(
                srv.connections.get(srv.priority_uid, ())) > srv.max_connections:
            srv.stats["busy"] += 1
            srv.metrics.failed("busy")
            srv.log_refusal(uid, pid, f"busy ({len(mine) - 1} open from this uid)")
            self._finish(encode_error("busy: too many connections"))
        else:
            self._arm(srv.idle_timeout_s, "idle")

    def connection_lost(self, exc: Exception | None) -> None:
        srv = self.server
        srv.open_connections -= 1
        mine = srv.connections.get(self.peer[1])
        if mine is not None:
            mine.pop(self, None)
            if not mine:
                del srv.connections[self.peer[1]]
        if self.timer:
            self.timer.cancel()

    def _arm(self, seconds: float, why: str) -> None:
        """Expire ``seconds`` from now; one timer per connection, moved lazily (cheap per request)."""
        loop = asyncio.get_running_loop()
        self.deadline, self.why = loop.time() + seconds, why
        if self.timer is None or self.timer.when() > self.deadline:
            if self.timer:
                self.timer.cancel()
            self.timer = loop.call_at(self.deadline, self._expire)

    def _expire(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self.deadline:  # traffic moved the deadline: wait for the rest
            self.timer = loop.call_at(self.deadline, self._expire)
            return
        self.timer = None
        if self.why == "partial":
            self.server.stats["error"] += 1
            self.server.metrics.failed("timeout")
            log.warning("request from pid %d: nothing complete within %.1f s", self.peer[0],
                        self.server.read_timeout_s)
            self._finish(encode_error("request not received in time"))
        elif self.transport:
            self.transport.close()

    def _finish(self, reply: bytes) -> None:
        if self.transport and not self.transport.is_closing():
            self.transport.write(reply)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        continued = bool(self.buffer)  # the rest of a request whose clock already runs
        self.buffer += data
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self.buffer[:end])
            del self.buffer[:end + 1]
            continued = False
            self.transport.write(self.server.answer(line))
        if len(self.buffer) > MAX_REQUEST_BYTES:
            self.server.stats["error"] += 1
            self.server.metrics.failed("too_large")
            log.warning("request from pid %d larger than %d bytes: closing", self.peer[0], MAX_REQUEST_BYTES)
            self.buffer.clear()
            self._finish(encode_error(f"request larger than {MAX_REQUEST_BYTES} bytes"))
        elif self.buffer:
            if not continued:  # read_timeout_s is for the whole request, not per chunk
                self._arm(self.server.read_timeout_s, "partial")
        else:
            self._arm(self.server.idle_timeout_s, "idle")

    def eof_received(self) -> bool:
        if self.buffer.strip():  # a last request without its newline
            line = bytes(self.buffer)
            self.buffer.clear()
            if self.transport:
                self.transport.write(self.server.answer(line))
        return False  # close our side too


class AdmissionServer:
    """Serves admission requests on ``socket_path`` for the uids in ``allowed_uids``.

    ``stats`` counts outcomes (``accept``, ``reject``, ``error``, ``denied``, ``busy``, ``evicted``) for logs
    and tests; ``metrics`` (:class:`.metrics.AdmissionMetrics`) the same for Prometheus. ``priority_uid``:
    slurmctld's uid, never refused as busy (None: none is special).
    """

    def __init__(self, socket_path: str | Path, site: Site, refresher: SnapshotRefresher,
                 allowed_uids: set[int], options: AdmissionOptions = AdmissionOptions(),
                 socket_mode: int = 0o600, read_timeout_s: float = 1.0, max_connections: int = 64,
                 idle_timeout_s: float = 600.0, max_connections_per_user: int = 8,
                 priority_uid: int | None = None, refusal_log_period_s: float = 60.0,
                 metrics: AdmissionMetrics | None = None, federation: FederationRefresher | None = None):
        self.socket_path = Path(socket_path)
        self.site, self.refresher, self.allowed_uids, self.options = site, refresher, allowed_uids, options
        # the image store and bundle cache, read only where the site deploys containers or isolated work
        self.deployer = DeployViewer(site) if deploy_active(site) else None
        self.federation = federation  # the federation's members, read in the background (site.federation)
        self.socket_mode, self.read_timeout_s = socket_mode, read_timeout_s
        self.max_connections, self.idle_timeout_s = max_connections, idle_timeout_s
        self.max_connections_per_user, self.priority_uid = max_connections_per_user, priority_uid
        self.stats: Counter[str] = Counter()
        self.open_connections = 0
        self.connections: dict[int, dict[_Connection, None]] = {}  # uid -> its open connections, oldest first
        self._refusals = RateLimited(refusal_log_period_s)
        self.trace = AdmissionTrace.from_env()  # opt-in per-request timing (daemon/trace.py); None: off
        self.metrics = metrics or AdmissionMetrics(self._snapshot_age, lambda: self.open_connections,
                                                   pool=lambda: (self.site, self.refresher.current))

    def _snapshot_age(self) -> float:
        """Seconds since the snapshot in use was taken; NaN before the first one (scraped, not on the hot path)."""
        snap = self.refresher.current
        return snap.age_s() if snap.known else float("nan")

    def log_refusal(self, uid: int, pid: int, why: str) -> None:
        """One warning per uid per period (a flood of refused connects must not flood the log)."""
        if self._refusals.allow(uid):
            more = self._refusals.suppressed(uid)
            log.warning("refused a connection from uid %d (pid %d): %s%s", uid, pid, why,
                        f" ({more} more refused since the last line)" if more else "")

    def unknown_fields(self, names: list[str]) -> None:
        """Count request keys this daemon does not know (a newer shim); logged at most once a period."""
        self.metrics.unknown_fields.inc(len(names))
        if self._refusals.allow("unknown fields"):
            more = self._refusals.suppressed("unknown fields")
            log.info("ignored request field(s) this daemon does not know: %s%s (a newer shim?)",
                     ", ".join(names[:8]), f" ({more} more requests with some since the last line)" if more else "")

    def answer(self, line: bytes) -> bytes:
        """The reply line for one request line (pure apart from the stats, metrics and log); never raises."""
        started = perf_counter()
        cpu0 = thread_time() if self.trace is not None else 0.0
        try:
            req, ignored = parse_request_fields(line)
        except ProtocolError as err:
            self.stats["error"] += 1
            self.metrics.failed("malformed")
            log.warning("malformed request: %s", err)
            return encode_error(str(err))
        if ignored:
            self.unknown_fields(ignored)
        try:
            reply = self._decide(req)
        except Exception:  # a bug must cost one error reply (the shim fails open), never the connection
            self.stats["error"] += 1
            self.metrics.failed("internal")
            log.exception("admission failed for %s", escape(repr(req)[:500]))
            return encode_error("internal error in admission")
        took = perf_counter() - started
        self.metrics.observe(took)
        if self.trace is not None:
            self.trace.request(took, thread_time() - cpu0)
        return reply

    def _decide(self, req) -> bytes:
        if req.unanswered:
            self.metrics.unanswered.inc(req.unanswered)
        options = self.options
        if self.federation is not None:
            options = replace(options, federation=self.federation.current)
        if self.deployer is not None:
            options = replace(options, deploy=self.deployer.current(req))
        decision = admit(req, self.refresher.current, self.site, options)
        if self.deployer is not None and "container" in decision.changes:
            if self.deployer.prepare(str(decision.changes["container"])):  # stale view: read again, decide again
                options = replace(options, deploy=self.deployer.refresh())
                decision = admit(req, self.refresher.current, self.site, options)
                if "container" in decision.changes and (why := self.deployer.prepare(str(decision.changes["container"]))):
                    decision = Admission.reject(f"container bundle cannot be prepared: {why}")
        self.stats[decision.action] += 1
        self.metrics.decided(decision.action, bool(decision.changes), decision.kinds, decision.cause)
        log.log(logging.INFO if decision.action == "reject" else logging.DEBUG,
                "%s uid=%s name=%s -> %s %s: %s", req.op, req.user_id, req.name, decision.action,
                decision.changes, decision.reason)
        return encode_decision(decision)

    # --- lifecycle ---------------------------------------------------------------------------------------
    def _bind(self) -> socket.socket:
        """A listening socket at ``socket_path``, replacing a stale file but never a live server's socket."""
        path = self.socket_path
        secure_socket_dir(path)
        if path.exists() or path.is_symlink():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.settimeout(0.5)
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()
            else:
                raise RuntimeError(f"another daemon is serving {path}")
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # never world-writable, not even for an instant
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, self.socket_mode)
        sock.listen(256)
        return sock

    async def serve(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set; then close the socket and wait for open connections."""
        sock = self._bind()
        loop = asyncio.get_running_loop()
        server = await loop.create_unix_server(lambda: _Connection(self), sock=sock)
        log.info("serving admission on %s (uids %s)", self.socket_path, sorted(self.allowed_uids))
        lag = asyncio.ensure_future(self.trace.sample_lag(stop)) if self.trace is not None else None
        try:
            await stop.wait()
        finally:
            if lag is not None:
                lag.cancel()
                self.trace.flush()
            server.close()
            await asyncio.sleep(0)
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            log.info("stopped; served %s", dict(self.stats))


class PidFile:
    """``pid_file`` holding this process's pid while the daemon runs; refuses to clobber a live one."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None

    def __enter__(self) -> PidFile:
        if self.path:
            with contextlib.suppress(FileNotFoundError, ValueError):
                other = int(self.path.read_text().strip())
                if other != os.getpid() and Path(f"/proc/{other}").exists():
                    raise RuntimeError(f"{self.path} names running process {other}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(f"{os.getpid()}\n")
        return self

    def __exit__(self, *exc) -> None:
        if self.path:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


async def run_until_signal(server: AdmissionServer) -> None:
    """Run ``server`` until SIGTERM or SIGINT, then shut it down cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    started = time.monotonic()
    await server.serve(stop)
    log.info("ran %.0f s", time.monotonic() - started)
