"""The daemon's reader of the image store and the bundle cache: a :class:`~.form.DeployView` at most ``ttl``
seconds old (re-read at once when a job names an image the last read did not have), and the bundle preparation
admission's answer needs before the job can start (``config.json``: milliseconds, once per image).

Every read prepares the bundles of the images it found, and the first read is made when the viewer is built
(the daemon's start), so a job naming an image the store already had costs the request path only a touch of
the entry: writing and fsyncing ``config.json`` inside a request took longer than the shim's 50 ms at load
30-100, and the shim then accepted the job unchanged (fail open: it ran without its container)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from .cache import BundleCache
from .form import DeployView, job_image
from .images import ImageError, images, parse_ref

log = logging.getLogger(__name__)


class DeployViewer:
    """Reads ``site.deploy`` (store and cache); :meth:`current` for the request ``req`` (may be None)."""

    def __init__(self, site, ttl: float = 5.0, clock=time.monotonic):
        d = site.deploy
        self.store = d.image_store
        self.cache = BundleCache(d.bundle_cache, d.cache_max_mb << 20)
        self.ttl, self.clock = ttl, clock
        self.vm_bundle = f"{d.vm.run_dir}/bundle" if d.vm else None  # each VM Prolog writes it on its node
        self._view, self._at = DeployView(cache=self.cache.view()), float("-inf")
        self._read()

    def _read(self) -> DeployView:
        catalog = {im.ref: im for im in images(self.store)} if self.store else {}
        for image in catalog.values():
            try:
                self.cache.prepare(image)  # idempotent: writes only what is missing
            except (ImageError, OSError) as err:  # admission's prepare says why, for the job that names it
                log.warning("cannot prepare the bundle of %s: %s", image.ref, err)
        self._view, self._at = DeployView(catalog, self.cache.view()), self.clock()
        return self._view

    def current(self, req=None) -> DeployView:
        if self.clock() - self._at > self.ttl:
            return self._read()
        ref = job_image(req) if req is not None else None
        if ref:
            try:
                name, tag = parse_ref(ref)
            except ValueError:
                return self._view
            if f"{name}:{tag}" not in self._view.catalog:
                return self._read()
        cold = {im.key for im in self._view.catalog.values()} - self._view.cache.unpacked
        if any((self.cache.root / key / "rootfs").is_dir() for key in cold):
            return self._read()  # a node unpacked one since: warm now
        return self._view

    def refresh(self) -> DeployView:
        return self._read()

    def prepare(self, bundle: str) -> str | None:
        """Write the bundle's config.json (if missing) for the cache entry ``bundle`` admission chose; returns
        None when done, else why not (the image changed under a stale view: re-read and decide again)."""
        if bundle == self.vm_bundle:
            return None
        key = Path(bundle).name
        for image in self._view.catalog.values():
            if image.key == key:
                try:
                    self.cache.prepare(image)
                    return None
                except (ImageError, OSError) as err:
                    return str(err)
        return f"bundle {key} is no image of the store any more"
