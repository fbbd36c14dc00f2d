"""A thin, typed wrapper around Slurm's client commands.

Every call runs a real Slurm command with ``SLURM_CONF`` set (an unset SLURM_CONF makes Slurm look for DNS
SRV records and fail). JSON output is used where both supported versions have it (``squeue``/``sinfo
--json``; ``scontrol --json`` only from 23.02), ``scontrol -o`` text otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass
from functools import cached_property

from ..errors import PicklableError

FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
            "PREEMPTED")
log = logging.getLogger(__name__)
# scontrol answers that change nothing and pass: on 24.11.5 `scontrol update jobid=N partition=P features=F` on a
# job submitted a moment ago answered EAGAIN on 13 of 24 first tries (for up to 6 s; slurmctld logs
# "_slurm_rpc_update_job: JobId=N uid=0: Resource temporarily unavailable") and once EINTR; 22.05 never did.
TRANSIENT = ("Resource temporarily unavailable", "Interrupted system call")
RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # seconds before each retry of a transient scontrol failure (15.7 s)
# Slurm's keys are CamelCase; a lowercase word with "=" (a comment such as "hetsched:class=web x=1") is a value
_KEY = re.compile(r"(?:^|\s)([A-Z][\w:/.]*)=")


class SlurmError(PicklableError, RuntimeError):
    """A Slurm command failed; ``str()`` names the command and what it printed."""

    def __init__(self, argv: list[str], code: int, stderr: str):
        self.argv, self.code, self.stderr = argv, code, stderr.strip()
        super().__init__(f"`{' '.join(argv)}` exited {code}: {self.stderr or '(no output)'}")


@dataclass(frozen=True, order=True)
class SlurmVersion:
    major: int
    minor: int
    micro: int = 0

    @classmethod
    def parse(cls, text: str) -> SlurmVersion:
        m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
        if not m:
            raise ValueError(f"cannot read a Slurm version from {text!r}")
        return cls(int(m[1]), int(m[2]), int(m[3] or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.micro}"

    @property
    def scontrol_json(self) -> bool:
        """``scontrol show ... --json`` exists from 23.02 on."""
        return (self.major, self.minor) >= (23, 2)


def parse_scontrol_oneliner(line: str) -> dict[str, str]:
    """Parse one ``scontrol -o show ...`` record (``Key=Value Key2=Value with spaces``) into a dict."""
    keys = list(_KEY.finditer(line))
    out = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        out[m[1]] = line[m.end():end].strip()
    return out


TIMEOUT_ENV = "HETSCHED_SLURM_TIMEOUT"
CANCEL_CHUNK = 10_000  # job ids per scancel


def default_timeout() -> float:
    """Seconds a Slurm command may take: ``$HETSCHED_SLURM_TIMEOUT`` or 30 (``squeue --json`` of a 100,000-job
    queue takes longer on Slurm 22.05). Raises ValueError naming the variable when it is not a positive number."""
    raw = os.environ.get(TIMEOUT_ENV, "30")
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return value


class SlurmClient:
    """Runs Slurm commands against the cluster whose slurm.conf is ``conf``; each may take ``timeout`` seconds
    (default: :func:`default_timeout`)."""

    def __init__(self, conf: str | None = None, timeout: float | None = None):
        self.conf = conf or os.environ.get("SLURM_CONF")
        self.timeout = timeout if timeout is not None else default_timeout()

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.conf:
            env["SLURM_CONF"] = self.conf
        return env

    def run(self, *argv: str, input: str | None = None, timeout: float | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run one Slurm command; raises :class:`SlurmError` if it fails and ``check``. An ``scontrol`` that
        answers one of ``TRANSIENT`` (it changed nothing) is run again after each of ``RETRY_DELAYS``."""
        cmd = list(argv)
        for delay in (*RETRY_DELAYS, None) if cmd[0] == "scontrol" else (None,):
            proc = self._run_once(cmd, input, timeout, env)
            if delay is None or proc.returncode == 0 or not any(t in proc.stderr for t in TRANSIENT):
                break
            log.info("`%s` answered %r; retrying in %.1f s", " ".join(cmd), proc.stderr.strip(), delay)
            time.sleep(delay)
        if check and proc.returncode != 0:
            raise SlurmError(cmd, proc.returncode, proc.stderr or proc.stdout)
        return proc

    def _run_once(self, cmd: list[str], input: str | None, timeout: float | None,
                  env: dict[str, str] | None) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(cmd, input=input, capture_output=True, text=True, env=env or self.env,
                                  timeout=timeout or self.timeout)
        except FileNotFoundError as err:
            raise SlurmError(cmd, 127, f"{cmd[0]}: not installed ({err.strerror})") from None
        except OSError as err:  # e.g. E2BIG: an argument over MAX_ARG_STRLEN; a failure of this command alone
            raise SlurmError(cmd, 126, f"{cmd[0]}: cannot run ({err.strerror}; longest argument "
                                       f"{max(map(len, cmd)):,} characters)") from None
        except subprocess.TimeoutExpired:
            raise SlurmError(cmd, 124, f"timed out after {timeout or self.timeout:.0f} s") from None

    @cached_property
    def version(self) -> SlurmVersion:
        return SlurmVersion.parse(self.run("sinfo", "-V").stdout)

    # --- jobs -------------------------------------------------------------------------------------------
    def sbatch(self, *args: str, script: str | None = None, wrap: str | None = None) -> int:
        """Submit a batch job; returns its id. ``script`` is the script text, or use ``wrap``."""
        argv = ["sbatch", "--parsable", *args]
        if wrap is not None:
            argv += ["--wrap", wrap]
        out = self.run(*argv, input=script).stdout.strip()
        return int(out.split(";")[0])

    def show_job(self, job_id: int) -> dict[str, str]:
        lines = self.run("scontrol", "-o", "show", "job", str(job_id)).stdout.strip().splitlines()
        return parse_scontrol_oneliner(lines[0]) if lines else {}

    def wait_job(self, job_id: int, timeout: float = 60.0, until: tuple[str, ...] = FINISHED) -> dict[str, str]:
        """Poll ``scontrol show job`` until the job's state is one of ``until``; returns its record.

        Raises TimeoutError naming the job's last state and reason."""
        deadline = time.monotonic() + timeout
        job: dict[str, str] = {}
        while time.monotonic() < deadline:
            job = self.show_job(job_id)
            if job.get("JobState") in until:
                return job
            time.sleep(0.2)
        raise TimeoutError(f"job {job_id} still {job.get('JobState')} ({job.get('Reason')}) after {timeout:.0f} s")

    def squeue(self) -> dict:
        """``squeue --json`` as parsed JSON (all jobs the controller still remembers). SLURM_BITSTR_LEN=0: a
        pending array's task expression whole (22.05.8 cuts it at 64 characters with "..." otherwise)."""
        return json.loads(self.run("squeue", "--all", "--json", env={**self.env, "SLURM_BITSTR_LEN": "0"}).stdout)

    def site_factors(self, *job_ids: int) -> dict[int, int]:
        """The SITE column of ``sprio`` (the weighted SiteFactor) of each given pending job that sprio lists.

        One ``sprio`` of every pending job, filtered here: 24.11 refuses a list (``sprio -j 2,3``: "Invalid job
        id: 2"), 22.05 accepts it."""
        out = self.run("sprio", "-h", "-o", "%i %S").stdout.split()
        rows = {int(out[i]): int(out[i + 1]) for i in range(0, len(out) - 1, 2)}
        return {j: rows[j] for j in job_ids if j in rows}

    def cancel(self, *job_ids: int) -> None:
        """``scancel`` the jobs (exit status not checked), at most :data:`CANCEL_CHUNK` ids a command: an exec's
        arguments and their pointers must fit in ARG_MAX (2 MiB by default; 100,000 ids of 6 digits take 1.5 MB)."""
        ids = list(map(str, job_ids))
        for i in range(0, len(ids), CANCEL_CHUNK):
            self.run("scancel", *ids[i:i + CANCEL_CHUNK], check=False)

    # --- nodes and partitions ----------------------------------------------------------------------------
    def show_nodes(self) -> list[dict[str, str]]:
        out = self.run("scontrol", "-o", "show", "node").stdout
        return [parse_scontrol_oneliner(line) for line in out.splitlines() if line.strip()]

    def show_node(self, name: str) -> dict[str, str]:
        out = self.run("scontrol", "-o", "show", "node", name).stdout.strip().splitlines()
        return parse_scontrol_oneliner(out[0]) if out else {}

    def sinfo(self) -> dict:
        """``sinfo --json`` as parsed JSON."""
        return json.loads(self.run("sinfo", "--json").stdout)

    def scontrol_update(self, entity: str, name: str, **fields: str | int) -> None:
        """``scontrol update <entity>=<name> k=v ...`` (e.g. ``nodename``, ``jobid``, ``partitionname``)."""
        self.run("scontrol", "update", f"{entity}={name}", *(f"{k}={v}" for k, v in fields.items()))

    def ping(self) -> bool:
        proc = self.run("scontrol", "ping", check=False, timeout=10)
        return proc.returncode == 0 and "UP" in proc.stdout
