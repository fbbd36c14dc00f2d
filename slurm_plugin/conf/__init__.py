"""Generate slurm.conf, gres.conf and the shim's config from a site (jinja2 templates in gres_templates/).

A real site gets the suite's parts as fragments its own slurm.conf includes (:mod:`.merge`); the local test
cluster gets one standalone set (:func:`render_site` with a :class:`LocalLayout`)."""

from .render import DeployPaths, LocalLayout, render_fragments, render_site, write_atomic

__all__ = ["DeployPaths", "LocalLayout", "render_fragments", "render_site", "write_atomic"]
