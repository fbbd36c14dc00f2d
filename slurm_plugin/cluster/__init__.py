"""The real local multi-node Slurm cluster (plain processes on one host)."""
