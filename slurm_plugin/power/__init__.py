"""Node power backends, called from Slurm's ResumeProgram/SuspendProgram via ``hetsched power``."""

from .base import PowerBackend, PowerResult
from .registry import BACKENDS, make_backend

__all__ = ["BACKENDS", "PowerBackend", "PowerResult", "make_backend"]
