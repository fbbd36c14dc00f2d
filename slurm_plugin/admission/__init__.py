"""Admission: the pure decision for one job submission, from a request, a snapshot and the site.

``admit(JobRequest, Snapshot, Site) -> Admission``; see :mod:`.classify` for the class/tier convention.
"""

from .admit import AdmissionOptions, admit
from .classify import CLASS_STEP, Classification, classify
from .decision import SETTABLE, Admission
from .request import ArchChoice, JobRequest, arch_choice

__all__ = ["CLASS_STEP", "SETTABLE", "Admission", "AdmissionOptions", "ArchChoice", "Classification", "JobRequest",
           "admit", "arch_choice", "classify"]
