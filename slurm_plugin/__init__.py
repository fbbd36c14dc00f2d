"""slurm-hetsched: one elastic Slurm pool out of ARM, x86 and accelerator nodes."""

__version__ = "0.1.0"
