"""Misbehaving Redfish BMCs on loopback, for the failures a real emulator will not produce.

Each is a real HTTP server in a thread: ``html`` answers every request with HTTP 200 and an HTML page,
``list`` with HTTP 200 and a JSON list, ``silent`` accepts the connection and never answers.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODIES = {"html": (b"<html><body>Login required</body></html>", "text/html"), "list": (b"[1, 2, 3]", "application/json")}


def _handler(kind: str, hits: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            hits.append(f"{self.command} {self.path}")
            body, ctype = BODIES[kind]
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    return Handler


def _silent(hits: list[str]) -> tuple[int, Callable[[], None], Callable[[], None]]:
    """A listener that accepts connections and never answers: (port, serve loop, stop)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
                hits.append("connect")
            except OSError:
                time.sleep(0.01)

    def close() -> None:
        stop.set()
        for c in held:
            c.close()
        srv.close()

    return srv.getsockname()[1], serve, close


def _http(kind: str, hits: list[str]) -> tuple[int, Callable[[], None], Callable[[], None]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(kind, hits))

    def close() -> None:
        server.shutdown()
        server.server_close()

    return server.server_address[1], server.serve_forever, close


@contextmanager
def bad_bmc(kind: str) -> Iterator[tuple[str, list[str]]]:
    """A running bad BMC of ``kind``: yields (base URL, requests it received)."""
    hits: list[str] = []
    port, serve, close = _silent(hits) if kind == "silent" else _http(kind, hits)
    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", hits
    finally:
        close()
