"""The site resource model: load a site file into typed, frozen objects."""

from .errors import Problem, SiteError
from .loader import DEFAULT_SITE, SITE_CONFIGS, load_site, parse_site, resolve_site_path
from .schema import ARCHES, Accelerator, Calendar, Cluster, Cpu, Gpu, NodeGroup, Partition, Policy, Site

__all__ = [
    "ARCHES", "DEFAULT_SITE", "SITE_CONFIGS", "Accelerator", "Calendar", "Cluster", "Cpu", "Gpu", "NodeGroup",
    "Partition", "Policy", "Problem", "Site", "SiteError", "load_site", "parse_site", "resolve_site_path",
]
