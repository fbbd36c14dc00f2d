"""Where a real deployment keeps things: a light module, so a command's options can name these defaults without
importing the renderer (jinja2, the site model)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeployPaths:
    """Where a real deployment keeps things (Debian's slurm-wlm packages)."""

    etc: str = "/etc/slurm"
    state_save: str = "/var/spool/slurmctld"
    slurmd_spool: str = "/var/spool/slurmd"
    log_dir: str = "/var/log/slurm"
    run_dir: str = "/run"
    slurm_user: str = "slurm"
    resume_program: str = "/usr/lib/hetsched/resume"
    suspend_program: str = "/usr/lib/hetsched/suspend"
    resume_fail_program: str = "/usr/lib/hetsched/resume-fail"
    health_check_program: str = "/usr/lib/hetsched/healthcheck"
    reboot_program: str = "/sbin/reboot"  # what the health check's drain_reboot has Slurm run on the node
    prolog_program: str = "/usr/lib/hetsched/prolog"
    epilog_program: str = "/usr/lib/hetsched/epilog"
    oci_run: str = "/usr/lib/hetsched/oci-run"
    oci_state: str = "/run/hetsched/oci"
    daemon_socket: str = "/run/hetsched/hetsched.sock"
    job_submit: bool = True
