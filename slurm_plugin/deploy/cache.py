"""The image-to-bundle cache on the nodes: ``<cache>/sha256-<hex>/`` is the OCI runtime bundle of the image
whose manifest has that digest (content-addressed: two names of one image share it; a re-tagged name gets a
new entry), shared read-only by every job that runs it.

An entry is made in two steps, each atomic: :meth:`BundleCache.prepare` (at admission; milliseconds) writes
``config.json`` (the runtime spec from the image's config; Slurm rewrites its own copy per step) and
``image.json`` (where the layout is); :meth:`BundleCache.unpack` (on the node, by the OCI run wrapper when the
job starts and ``rootfs`` is missing: the cold start) unpacks the layers with ``umoci raw unpack`` into a
temporary directory and renames it to ``rootfs``. Both run under a per-entry lock, so concurrent jobs unpack
once; a killed unpack leaves only a ``.tmp-*`` directory that the next prune removes. Every use touches the
entry (``last_used``); :meth:`BundleCache.prune` renames entries unused for ``max_age_s`` aside and removes
them, so a job never sees half an entry. ``size`` is recorded after unpacking (``.size``) for the room check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..fsio import LockHeld, exclusive_lock, write_atomic
from .images import Image, ImageError, _read_json, blob_path

# Unpacked size estimate for an image not unpacked yet: its compressed layers times this (busybox: 1.0 MB
# compressed, 2.2 MB unpacked; Debian minbase about 3x).
UNPACK_FACTOR = 3


class CacheError(RuntimeError):
    """The cache cannot serve a bundle: no room, a failed unpack (message says which and where)."""


@dataclass(frozen=True)
class CacheView:
    """What admission needs to know about the cache, read by the daemon (pure data): the entries with a
    ``config.json`` (``prepared``) and with a ``rootfs`` (``unpacked``), bytes used and the bound."""

    root: str
    prepared: frozenset[str] = frozenset()
    unpacked: frozenset[str] = frozenset()
    used_bytes: int = 0
    max_bytes: int = 0

    def room_for(self, image: Image) -> bool:
        return image.key in self.unpacked or self.used_bytes + UNPACK_FACTOR * image.size <= self.max_bytes


class _Locked:
    def __init__(self, path: Path, timeout: float):
        self.path, self.timeout = path, timeout

    def __enter__(self):
        self._cm = exclusive_lock(self.path)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._cm.__enter__()
            except LockHeld:
                if time.monotonic() > deadline:
                    raise
                self._cm = exclusive_lock(self.path)
                time.sleep(0.05)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def runtime_spec(image_config: dict) -> dict:
    """An OCI runtime spec (config.json) for a bundle of an image with config ``image_config`` (the image
    config's ``config``: Cmd, Entrypoint, Env, WorkingDir). Namespaces pid, ipc, uts, mount (host network, so
    jobs and pilots reach the cluster); the usual /proc, /dev, /sys mounts; no extra capabilities."""
    cfg = image_config or {}
    args = list(cfg.get("Entrypoint") or []) + list(cfg.get("Cmd") or []) or ["/bin/sh"]
    caps = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
    return {
        "ociVersion": "1.0.0",
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": args,
                    "env": list(cfg.get("Env") or ["PATH=/usr/local/bin:/usr/bin:/bin"]),
                    "cwd": cfg.get("WorkingDir") or "/",
                    "capabilities": {k: caps for k in ("bounding", "effective", "inheritable", "permitted", "ambient")},
                    "noNewPrivileges": True},
        "root": {"path": "rootfs", "readonly": True},  # shared by every job: nobody writes into it
        "hostname": "hetsched",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        ],
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],
                  "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
                  "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]},
    }


class BundleCache:
    """The cache under ``root`` (see the module docstring); ``max_bytes`` bounds its size (the room check)."""

    def __init__(self, root: str | Path, max_bytes: int = 10 << 30, lock_timeout: float = 120.0):
        self.root, self.max_bytes, self.lock_timeout = Path(root), max_bytes, lock_timeout

    def entry(self, image: Image) -> Path:
        return self.root / image.key

    def _lock(self, key: str) -> _Locked:
        return _Locked(self.root / f".lock-{key}", self.lock_timeout)

    def prepare(self, image: Image) -> Path:
        """Make sure the entry of ``image`` has its ``config.json`` and ``image.json``; touch it as used.
        Returns the bundle directory (``--container`` of the job). Idempotent; atomic per file."""
        entry = self.entry(image)
        if not (entry / "config.json").exists():
            manifest = _read_json(blob_path(image.layout, image.digest), f"image {image.ref} manifest")
            config = _read_json(blob_path(image.layout, manifest.get("config", {}).get("digest", "")),
                                f"image {image.ref} config")
            with self._lock(image.key):
                write_atomic(entry, {
                    "image.json": json.dumps({"layout": str(image.layout), "ref": image.ref, "digest": image.digest,
                                              "size": image.size}, indent=1) + "\n",
                    "config.json": json.dumps(runtime_spec(config.get("config") or {}), indent=1) + "\n"})
        self.touch(entry)
        return entry

    def touch(self, entry: Path) -> None:
        (entry / "last_used").touch()

    def unpack(self, entry: str | Path) -> Path:
        """Unpack the entry's ``rootfs`` if it is missing (the cold start), under the entry's lock; returns the
        rootfs. Raises :class:`CacheError` when ``umoci`` fails or is missing (its message included)."""
        entry = Path(entry)
        rootfs = entry / "rootfs"
        if rootfs.is_dir():
            return rootfs
        meta = _read_json(entry / "image.json", f"bundle {entry}")
        with self._lock(entry.name):
            if rootfs.is_dir():  # another job unpacked it while this one waited
                return rootfs
            tmp = self.root / f".tmp-{entry.name}-{uuid.uuid4().hex[:8]}"
            tag = meta["ref"].split(":", 1)[1]
            umoci = shutil.which("umoci")
            if not umoci:
                raise CacheError("umoci is not installed (Debian package umoci): cannot unpack "
                                 f"{meta['ref']} into {entry}")
            try:
                proc = subprocess.run([umoci, "raw", "unpack", "--image", f"{meta['layout']}:{tag}", str(tmp)],
                                      capture_output=True, text=True, timeout=600)
                if proc.returncode != 0:
                    raise CacheError(f"umoci raw unpack {meta['layout']}:{tag} failed (exit {proc.returncode}): "
                                     f"{proc.stderr.strip()[-400:]}")
                size = _du(tmp)
                os.rename(tmp, rootfs)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            write_atomic(entry, {".size": f"{size}\n"})
        return rootfs

    def ensure(self, image: Image) -> Path:
        """prepare + unpack: the whole bundle now (``hetsched deploy cache ensure``, pre-warming a node)."""
        entry = self.prepare(image)
        self.unpack(entry)
        return entry

    def view(self) -> CacheView:
        """The cache as admission sees it (one directory scan)."""
        prepared, unpacked, used = set(), set(), 0
        for entry in self.root.iterdir() if self.root.is_dir() else []:
            if not entry.name.startswith("sha256-"):
                continue
            if (entry / "config.json").exists():
                prepared.add(entry.name)
            if (entry / "rootfs").is_dir():
                unpacked.add(entry.name)
                try:
                    used += int((entry / ".size").read_text())
                except (OSError, ValueError):
                    pass
        return CacheView(str(self.root), frozenset(prepared), frozenset(unpacked), used, self.max_bytes)

    def prune(self, max_age_s: float, now: float | None = None) -> list[str]:
        """Remove entries unused for ``max_age_s`` (and leftovers of killed unpacks); returns their names.
        An entry locked by an unpack in progress is skipped. Removal is rename-then-delete."""
        now = time.time() if now is None else now
        removed = []
        for entry in sorted(self.root.iterdir()) if self.root.is_dir() else []:
            name = entry.name
            if name.startswith(".tmp-") and now - entry.stat().st_mtime > 3600:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(name)
                continue
            if not name.startswith("sha256-"):
                continue
            stamp = entry / "last_used"
            last = stamp.stat().st_mtime if stamp.exists() else entry.stat().st_mtime
            if now - last <= max_age_s:
                continue
            try:
                with exclusive_lock(self.root / f".lock-{name}"):
                    trash = self.root / f".trash-{name}-{uuid.uuid4().hex[:8]}"
                    os.rename(entry, trash)
            except LockHeld:
                continue
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(name)
        return removed


def _du(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


__all__ = ["BundleCache", "CacheError", "CacheView", "ImageError", "runtime_spec"]
