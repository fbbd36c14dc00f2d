"""Build a small image into the store without a registry: busybox (Debian's busybox-static) in a fresh OCI
layout, with ``umoci`` (init, new, unpack, repack, config). About 1 MB; enough for container jobs' shells."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .images import Image, ImageError, parse_ref, resolve

APPLETS = ("sh", "cat", "echo", "sleep", "ls", "date", "env", "true", "false", "head", "tr", "wc", "id", "hostname")


def _run(*argv: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise ImageError(f"{' '.join(argv[:3])} failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")


def build_busybox(store: str | Path, ref: str = "busybox:latest", busybox: str = "/bin/busybox") -> Image:
    """The image ``ref`` (a static busybox and its applets as symlinks, Cmd /bin/sh) written into ``store``;
    a layout that exists gets the tag added. Raises :class:`ImageError` when umoci or a static busybox is
    missing (Debian: ``apt-get install umoci busybox-static``)."""
    name, tag = parse_ref(ref)
    if not shutil.which("umoci"):
        raise ImageError("umoci is not installed (Debian package umoci)")
    src = Path(busybox)
    if not src.exists():
        raise ImageError(f"{busybox} does not exist (Debian package busybox-static)")
    layout = Path(store) / name
    layout.parent.mkdir(parents=True, exist_ok=True)
    if not (layout / "index.json").exists():
        _run("umoci", "init", "--layout", str(layout))
    with tempfile.TemporaryDirectory(dir=layout.parent, prefix=f".build-{name}-") as tmp:
        bundle = Path(tmp) / "bundle"
        _run("umoci", "new", "--image", f"{layout}:{tag}")
        _run("umoci", "unpack", "--image", f"{layout}:{tag}", str(bundle))
        root = bundle / "rootfs"
        for d in ("bin", "tmp", "proc", "dev", "sys", "etc"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, root / "bin" / "busybox")
        for applet in APPLETS:
            (root / "bin" / applet).symlink_to("busybox")
        (root / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
        _run("umoci", "repack", "--image", f"{layout}:{tag}", str(bundle))
    _run("umoci", "config", "--image", f"{layout}:{tag}", "--config.cmd", "/bin/sh", "--config.env", "PATH=/bin")
    _run("umoci", "gc", "--layout", str(layout))
    return resolve(store, ref)
