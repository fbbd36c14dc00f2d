"""Talking to Slurm through its own commands (``--json`` where the version has it)."""

from .client import SlurmClient, SlurmError, SlurmVersion

__all__ = ["SlurmClient", "SlurmError", "SlurmVersion"]
