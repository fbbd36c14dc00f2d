"""Workloads for the simulator: SWF traces, Slurm accounting exports, GPU traces (Gavel/Philly, Alibaba OpenB)
a synthetic heterogeneous generator and the Lublin-Feitelson model, all read into one columnar :class:`JobTable`.

The readers are imported on first use (:mod:`slurm_plugin._lazy`): ``from slurm_plugin.workload import
WorkloadError`` (what the CLI's command modules need at start-up) does not import numpy or pydantic.
"""

from .._lazy import lazy_exports
from .errors import UnfitJobsError, WorkloadError

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".fit": ["unfit_jobs"],
    ".gavel": ["read_philly"],
    ".jobs": ["ARCH_BIT", "JobTable", "Workload", "arch_mask"],
    ".loader": ["load_workload"],
    ".lublin": ["LublinSpec", "generate_lublin"],
    ".openb": ["read_openb", "read_openb_nodes"],
    ".sacct": ["read_sacct_json", "read_sacct_parsable"],
    ".swf": ["read_swf"],
    ".synthetic": ["SyntheticSpec", "generate"],
}, eager=["UnfitJobsError", "WorkloadError"])
