"""Node power backends, called from Slurm's ResumeProgram/SuspendProgram/ResumeFailProgram via ``hetsched power``."""

from .base import PowerBackend, PowerResult
from .registry import BACKEND_NAMES, BACKENDS, make_backend, route

__all__ = ["BACKENDS", "BACKEND_NAMES", "PowerBackend", "PowerResult", "make_backend", "route"]
