"""Workloads for the simulator: SWF traces, Slurm accounting exports, GPU traces (Gavel/Philly, Alibaba OpenB)
a synthetic heterogeneous generator and the Lublin-Feitelson model, all read into one columnar :class:`JobTable`."""

from .errors import UnfitJobsError, WorkloadError
from .fit import unfit_jobs
from .gavel import read_philly
from .jobs import ARCH_BIT, JobTable, Workload, arch_mask
from .loader import load_workload
from .lublin import LublinSpec, generate_lublin
from .openb import read_openb, read_openb_nodes
from .sacct import read_sacct_json, read_sacct_parsable
from .swf import read_swf
from .synthetic import SyntheticSpec, generate

__all__ = ["ARCH_BIT", "JobTable", "LublinSpec", "SyntheticSpec", "UnfitJobsError", "Workload", "WorkloadError", "arch_mask",
           "generate", "generate_lublin", "load_workload", "read_openb", "read_openb_nodes", "read_philly", "read_sacct_json",
           "read_sacct_parsable", "read_swf", "unfit_jobs"]
