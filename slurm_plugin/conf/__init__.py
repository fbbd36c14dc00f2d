"""Generate slurm.conf, gres.conf and the shim's config from a site (jinja2 templates in gres_templates/).

A real site gets the suite's parts as fragments its own slurm.conf includes (:mod:`.merge`); the local test
cluster gets one standalone set (:func:`render_site` with a :class:`LocalLayout`). Names are imported on first use
(:func:`~slurm_plugin._lazy.lazy_exports`): :class:`.paths.DeployPaths` alone does not import the renderer."""

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".paths": ["DeployPaths"],
    ".render": ["LocalLayout", "render_fragments", "render_site", "write_atomic"],
})
