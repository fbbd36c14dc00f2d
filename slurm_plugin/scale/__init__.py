"""Elastic scaling: node power state machine, controllers (PID, backlog), calendars. All pure; the daemon
turns their decisions into :mod:`slurm_plugin.decision` actions."""
