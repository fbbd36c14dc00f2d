"""Admission: the pure decision for one job submission, from a request, a snapshot and the site.

``admit(JobRequest, Snapshot, Site) -> Decision``; see :mod:`.classify` for the class/tier convention.
"""

from .admit import AdmissionOptions, admit
from .classify import CLASS_STEP, Classification, classify
from .decision import SETTABLE, Decision
from .request import ArchChoice, JobRequest, arch_choice

__all__ = ["CLASS_STEP", "SETTABLE", "AdmissionOptions", "ArchChoice", "Classification", "Decision", "JobRequest",
           "admit", "arch_choice", "classify"]
