"""Misbehaving Redfish BMCs on loopback, for the failures a real emulator will not produce.

Each is a real HTTP server in a thread: ``html`` answers every request with HTTP 200 and an HTML page,
``list`` with HTTP 200 and a JSON list, ``silent`` accepts the connection and never answers.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
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


@contextmanager
def bad_bmc(kind: str) -> Iterator[tuple[str, list[str]]]:
    """A running bad BMC of ``kind``: yields (base URL, requests it received)."""
    hits: list[str] = []
    if kind == "silent":
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        held: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            srv.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                    held.append(conn)
                    hits.append("connect")
                except OSError:
                    time.sleep(0.01)

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        try:
            yield f"http://127.0.0.1:{srv.getsockname()[1]}", hits
        finally:
            stop.set()
            t.join()
            for c in held:
                c.close()
            srv.close()
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(kind, hits))
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
