"""The site resource model: load a site file into typed, frozen objects.

The loader and schema (pydantic, yaml) are imported on first use: ``from slurm_plugin.site import SiteError``
stays cheap for commands that only report site errors.
"""

from .._lazy import lazy_exports
from .errors import Problem, SiteError

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".loader": ["DEFAULT_SITE", "SITE_CONFIGS", "load_site", "parse_site", "resolve_site_path"],
    ".schema": ["ARCHES", "Accelerator", "Calendar", "Cluster", "Cpu", "Gpu", "NodeGroup", "Partition", "Policy",
                "Site"],
}, eager=["Problem", "SiteError"])
