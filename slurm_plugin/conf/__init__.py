"""Generate slurm.conf, gres.conf and the shim's config from a site (jinja2 templates in gres_templates/)."""

from .render import DeployPaths, LocalLayout, render_site, write_atomic

__all__ = ["DeployPaths", "LocalLayout", "render_site", "write_atomic"]
