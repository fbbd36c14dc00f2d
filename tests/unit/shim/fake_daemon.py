"""A scripted stand-in daemon for shim tests: replies come from a function of the request line."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path

# reply(request_line) -> bytes to send (b"" = send nothing and hang until closed), or None = close at once
Responder = Callable[[bytes], bytes | None]


def accept(changes: dict | None = None, reason: str = "ok") -> bytes:
    return json.dumps({"v": 1, "ok": True, "action": "accept", "set": changes or {}, "reason": reason}).encode() + b"\n"


def reject(reason: str) -> bytes:
    return json.dumps({"v": 1, "ok": True, "action": "reject", "set": {}, "reason": reason}).encode() + b"\n"


class FakeDaemon:
    """Listens on ``path``; each request line gets ``responder(line)``; records requests in ``requests``.

    ``close_after_reply``: close every connection after one reply (what a restarted daemon looks like to a
    shim that kept its connection). A reply without a final newline is sent and the connection closed."""

    def __init__(self, path: Path, responder: Responder, close_after_reply: bool = False):
        self.path, self.responder, self.close_after_reply = path, responder, close_after_reply
        self.requests: list[bytes] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(64)
        self.stopped = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            while not self.stopped.is_set():
                try:
                    line = reader.readline()
                except OSError:
                    return
                if not line:
                    return
                self.requests.append(line)
                reply = self.responder(line)
                if reply is None:
                    return
                if reply == b"":
                    self.stopped.wait(5)
                    return
                try:
                    conn.sendall(reply)
                except OSError:
                    return
                if self.close_after_reply or not reply.endswith(b"\n"):
                    return

    def request(self, i: int = -1) -> dict:
        return json.loads(self.requests[i])

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
