"""The image store: OCI image layouts on disk, ``<store>/<name>/`` (``index.json``, ``blobs/sha256/``), one per
image name, its tags as ``org.opencontainers.image.ref.name`` annotations. No registry is involved: an image
gets there by ``hetsched deploy image build`` or ``skopeo copy``/``umoci`` into the store.

:func:`resolve` reads only ``index.json`` and the manifest, so admission can call it on every submission of a
container job: an image is identified by its manifest digest, which names its bundle in the cache."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]{0,63})(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
TAG_KEY = "org.opencontainers.image.ref.name"


class ImageError(ValueError):
    """An image reference that cannot be served: unknown name or tag, or a damaged layout (message says which)."""


@dataclass(frozen=True)
class Image:
    """A resolved image: ``name:tag`` in ``layout``, identified by its manifest ``digest``; ``size`` is the sum
    of its layers' (compressed) sizes in bytes."""

    name: str
    tag: str
    layout: Path
    digest: str
    size: int

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"

    @property
    def key(self) -> str:
        """The cache key: ``sha256-<hex>`` (a directory name)."""
        return self.digest.replace(":", "-")


def parse_ref(ref: str) -> tuple[str, str]:
    """``name[:tag]`` -> (name, tag), tag ``latest`` when omitted; raises :class:`ImageError` on a bad reference."""
    m = REF.match(ref or "")
    if not m:
        raise ImageError(f"image reference {ref!r} is not name[:tag] (lower-case name, e.g. 'busybox:1.35')")
    return m["name"], m["tag"] or "latest"


def _read_json(path: Path, what: str) -> dict:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ImageError(f"{what}: {path} does not exist") from None
    except (OSError, ValueError) as err:
        raise ImageError(f"{what}: {path} is not readable JSON ({err})") from None
    if not isinstance(doc, dict):
        raise ImageError(f"{what}: {path} is not a JSON object")
    return doc


def blob_path(layout: Path, digest: str) -> Path:
    if not DIGEST.match(str(digest)):
        raise ImageError(f"{layout}: digest {digest!r} is not sha256:<64 hex>")
    return layout / "blobs" / "sha256" / digest.split(":", 1)[1]


def resolve(store: str | Path, ref: str) -> Image:
    """The image ``ref`` in ``store``; raises :class:`ImageError` naming what is missing (the store has no
    image of that name, or the name has no such tag: the tags it has are listed)."""
    name, tag = parse_ref(ref)
    layout = Path(store) / name
    if not (layout / "index.json").exists():
        known = sorted(p.name for p in Path(store).iterdir() if (p / "index.json").exists()) if Path(store).is_dir() else []
        raise ImageError(f"unknown image {name!r}: no OCI layout {layout} (images in {store}: "
                         f"{', '.join(known) or 'none'})")
    index = _read_json(layout / "index.json", f"image {name}")
    tags = {}
    for m in index.get("manifests", []):
        t = (m.get("annotations") or {}).get(TAG_KEY)
        if t:
            tags[t] = m.get("digest")
    if tag not in tags:
        raise ImageError(f"unknown image {name}:{tag}: {layout} has tags {', '.join(sorted(tags)) or 'none'}")
    digest = tags[tag]
    manifest = _read_json(blob_path(layout, digest), f"image {name}:{tag} manifest")
    size = sum(int(layer.get("size", 0)) for layer in manifest.get("layers", []))
    return Image(name, tag, layout, digest, size)


def images(store: str | Path) -> list[Image]:
    """Every tagged image in ``store`` (damaged layouts are left out)."""
    out = []
    root = Path(store)
    for layout in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            index = _read_json(layout / "index.json", layout.name)
        except ImageError:
            continue
        for m in index.get("manifests", []):
            tag = (m.get("annotations") or {}).get(TAG_KEY)
            if tag and REF.match(f"{layout.name}:{tag}"):
                try:
                    out.append(resolve(root, f"{layout.name}:{tag}"))
                except ImageError:
                    continue
    return out
