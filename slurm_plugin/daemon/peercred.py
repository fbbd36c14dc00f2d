"""Who is on the other end of a Unix socket (Linux SO_PEERCRED)."""

from __future__ import annotations

import pwd
import socket
import struct

_UCRED = struct.Struct("3i")  # pid, uid, gid


def peer_ids(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process that connected ``sock``, as the kernel recorded them at connect."""
    return _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))


def resolve_uid(user: str | int) -> int:
    """A user name or number -> uid (KeyError for an unknown name)."""
    if isinstance(user, int) or str(user).isdigit():
        return int(user)
    return pwd.getpwnam(str(user)).pw_uid
