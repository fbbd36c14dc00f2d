"""The daemon's view of the image store: bundles are prepared when the store is read (the daemon's start), so a
container job's admission only touches its entry (a real busybox image built with umoci into a temporary store)."""

from __future__ import annotations

import yaml

from slurm_plugin.deploy.build import build_busybox
from slurm_plugin.deploy.site_patch import patch_site
from slurm_plugin.deploy.view import DeployViewer
from slurm_plugin.site import SITE_CONFIGS, Site


def test_bundles_are_prepared_when_the_daemon_starts_not_in_the_request(tmp_path):
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    patch_site(data, tmp_path)
    site = Site.model_validate(data)
    image = build_busybox(site.deploy.image_store, "busybox:latest")
    config = tmp_path / "bundles" / image.key / "config.json"
    viewer = DeployViewer(site)
    assert config.is_file(), "the first request would write and fsync it (fail open under load)"
    written = config.stat().st_mtime_ns
    assert viewer.current().catalog["busybox:latest"].key == image.key
    assert viewer.prepare(str(config.parent)) is None
    assert config.stat().st_mtime_ns == written  # the request path only touched last_used
    assert (config.parent / "last_used").exists()
