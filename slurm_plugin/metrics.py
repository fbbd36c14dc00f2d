"""Prometheus exposition shared by the suite's processes (the admission daemon, ``hetsched cycle run``): a
registry of their own served over HTTP on HOST:PORT and/or rewritten atomically as a textfile for
node_exporter's textfile collector. A port that cannot be bound is logged and skipped: the process runs on
without metrics. Each :class:`Exposition` has its own registry, so tests and several in one process never
share series.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .fsio import write_file_atomic

log = logging.getLogger(__name__)
DEFAULT_LISTEN = "127.0.0.1:9817"  # the admission daemon's /metrics (hetsched.yaml metrics.listen)


def parse_listen(value: str | None, example: str = "127.0.0.1:9817") -> tuple[str, int] | None:
    """``"host:port"`` -> (host, port) (port 0: any free one); None, ``""`` or ``"off"`` -> None. ValueError names the bad value."""
    if value is None or value.strip().lower() in ("", "off", "none", "false"):
        return None
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"metrics listen address {value!r}: expected HOST:PORT (e.g. {example}) or 'off'")
    return host.strip("[]") or "127.0.0.1", int(port)


def metrics_url(host: str, port: int) -> str:
    """The scrape URL of an endpoint on ``host``:``port`` (IPv6 hosts in brackets)."""
    return f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"


class Exposition:
    """``registry``'s series as text, over HTTP (:meth:`serve`) and/or in a textfile (:meth:`start_textfile`)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry  # imported with the first registry: `--help` needs none

        self.registry = CollectorRegistry(auto_describe=True)
        self._http = None
        self._textfile: tuple[threading.Thread, threading.Event, str | Path] | None = None

    def text(self) -> bytes:
        """The Prometheus text exposition of every series."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def serve(self, listen: str | None) -> str | None:
        """Serve ``/metrics`` on ``listen`` (HOST:PORT, or off) in a background thread; returns the URL, or None
        when off or when the port cannot be bound (logged)."""
        where = parse_listen(listen)
        if where is None:
            return None
        try:
            from prometheus_client import start_http_server

            self._http, _ = start_http_server(where[1], addr=where[0], registry=self.registry)
        except OSError as err:
            log.warning("metrics: cannot listen on %s:%d (%s); running on without an endpoint", *where, err)
            return None
        url = metrics_url(where[0], self._http.server_port)
        log.info("metrics on %s", url)
        return url

    def write_textfile(self, path: str | Path) -> None:
        """Write the exposition to ``path`` atomically (node_exporter's textfile collector reads ``*.prom``)."""
        write_file_atomic(path, self.text())

    def start_textfile(self, path: str | Path | None, interval_s: float = 15.0) -> None:
        """Rewrite ``path`` every ``interval_s`` seconds in a daemon thread (None: nothing)."""
        if not path:
            return
        stop = threading.Event()

        def loop() -> None:
            while True:
                try:
                    self.write_textfile(path)
                except OSError as err:
                    log.warning("metrics: cannot write %s: %s", path, err)
                if stop.wait(interval_s):
                    return

        thread = threading.Thread(target=loop, name="metrics-textfile", daemon=True)
        thread.start()
        self._textfile = (thread, stop, path)

    def close(self) -> None:
        """Stop the endpoint and the textfile writer (after one last write)."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._textfile is not None:
            thread, stop, path = self._textfile
            stop.set()
            thread.join(timeout=5)
            self._textfile = None
            try:
                self.write_textfile(path)  # the final counts, not those of up to interval_s ago
            except OSError as err:
                log.warning("metrics: cannot write %s: %s", path, err)
