"""Discrete-event simulator of one Slurm cluster (site file or SWF machine), with pluggable ranking,
placement and scaling policies (:mod:`.hooks`), EASY backfill and node power accounting."""
