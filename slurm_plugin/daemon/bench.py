"""Measurements of the submit path (``hetsched bench submit``): each function measures one thing for real.

Nothing here is simulated: round trips go through the real job_submit.lua run by lua5.1 against a running
daemon; sbatch figures come from a real local cluster and slurmctld's own ``sdiag``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..data import data_file
from ..pack.bench import machine as common_machine
from ..slurm import SlurmClient
from ..slurm.sdiag import rpc_stats
from .process import DaemonProcess

SHIM = data_file("job_submit", "job_submit.lua")
DRIVER = data_file("job_submit", "standin/drive.lua")
# What a benchmark submission asks: a portable job the daemon routes (a full decision, not a shortcut).
BENCH_JOB = {"features": "aarch64|x86_64", "comment": "class=web", "min_cpus": 2, "name": "bench", "user_id": 0}
def summarize(values: list[float]) -> dict:
    """p50/p99 (nearest rank), max, mean and count of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": None, "p99": None, "max": None, "mean": None, "n": 0}

    def rank(q: float) -> float:
        return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]

    return {"p50": rank(0.50), "p99": rank(0.99), "max": ordered[-1], "mean": round(statistics.fmean(ordered), 1),
            "n": len(ordered)}


def shim_roundtrip(socket_path: Path, rate: float, seconds: float, timeout_ms: int = 50,
                   job: dict | None = None) -> dict:
    """Call slurm_job_submit of the real shim (lua5.1, stand-in slurm table) at a steady ``rate`` for ``seconds``.

    Returns the per-call time in microseconds (``roundtrip_us``), the rate achieved, return codes, and how
    many calls got job_desc changes applied (a decision really came back).
    """
    if not shutil.which("lua5.1"):
        raise RuntimeError("lua5.1 is not installed (apt-get install lua5.1 lua-socket lua-cjson)")
    with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp:
        cfg = Path(tmp) / "hetsched-shim.json"
        cfg.write_text(json.dumps({"version": 1, "socket": str(socket_path), "timeout_ms": timeout_ms,
                                   "fail": "open"}))
        out = subprocess.run(["lua5.1", str(DRIVER), str(SHIM), str(cfg), "bench", str(rate), str(seconds),
                              json.dumps(job or BENCH_JOB)], capture_output=True, text=True,
                             timeout=seconds * 3 + 30)
    if out.returncode:
        raise RuntimeError(f"lua5.1 driver failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    lat = doc["latencies_us"]
    return {"roundtrip_us": summarize(lat), "rate_per_s": round(len(lat) / doc["elapsed_s"], 1),
            "target_rate_per_s": rate, "duration_s": round(doc["elapsed_s"], 2), "return_codes": doc["rc"],
            "decisions_applied": doc["sets"]}


class FixedReplyServer:
    """A Unix-socket server that answers every line with one fixed ``reply``, deciding nothing: run through
    :func:`shim_roundtrip` with the default accept, it gives the machine's floor (Lua + kernel + scheduling)
    under the same load; tests use it with garbage replies. A stale file at ``path`` is replaced."""

    REPLY = b'{"v":1,"ok":true,"action":"accept","set":{},"reason":"floor"}\n'

    def __init__(self, path: Path, reply: bytes = REPLY):
        self.path, self.reply = path, reply
        path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            try:
                while reader.readline():
                    conn.sendall(self.reply)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


def roundtrip_floor(rate: float, seconds: float) -> dict:
    """``shim_roundtrip`` against :class:`FixedReplyServer`: what the same driver costs without a daemon."""
    with tempfile.TemporaryDirectory(prefix="hs-floor-") as tmp:
        server = FixedReplyServer(Path(tmp) / "floor.sock")
        try:
            return shim_roundtrip(server.path, rate, seconds)["roundtrip_us"]
        finally:
            server.close()


def sdiag_submit(client: SlurmClient) -> dict:
    """slurmctld's own REQUEST_SUBMIT_BATCH_JOB figures since the last reset (count, average and total µs)."""
    stat = rpc_stats(client.run("sdiag").stdout)[0].get("REQUEST_SUBMIT_BATCH_JOB")
    if stat is None:
        return {"count": 0, "ave_time_us": None, "total_time_us": 0}
    return {"count": stat.count, "ave_time_us": stat.ave_time_us, "total_time_us": stat.total_time_us}


@dataclass
class SubmitRun:
    """Outcome of a batch of sbatch calls: submitted ids, failures (stderr), wall time, sdiag figures."""

    ids: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sdiag: dict = field(default_factory=dict)

    @property
    def per_s(self) -> float:
        return len(self.ids) / self.seconds if self.seconds else 0.0


def sbatch_once(client: SlurmClient, *args: str) -> tuple[int | None, str, float]:
    """One held ``sbatch``: (job id or None, stderr, seconds)."""
    started = time.monotonic()
    proc = client.run("sbatch", "--parsable", "--hold", "-o", "/dev/null", *args, "--wrap", "true", check=False)
    seconds = time.monotonic() - started
    job_id = int(proc.stdout.strip().split(";")[0]) if proc.returncode == 0 else None
    return job_id, proc.stderr.strip(), seconds


def sbatch_burst(client: SlurmClient, jobs: int, threads: int, *args: str) -> SubmitRun:
    """Submit ``jobs`` held jobs from ``threads`` parallel submitters; sdiag is reset first and read after."""
    client.run("sdiag", "--reset", check=False)
    run, lock = SubmitRun(), threading.Lock()
    todo = iter(range(jobs))

    def worker() -> None:
        while True:
            with lock:
                if next(todo, None) is None:
                    return
            job_id, err, _ = sbatch_once(client, *args)
            with lock:
                (run.ids.append(job_id) if job_id else run.failures.append(err))

    started = time.monotonic()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    run.seconds = time.monotonic() - started
    run.sdiag = sdiag_submit(client)
    return run


def median_submit_ms(client: SlurmClient, n: int, *args: str) -> tuple[float, list[str]]:
    """Median wall time of ``n`` sequential held sbatch calls in ms, and the stderr of any that failed."""
    times, failures = [], []
    for _ in range(n):
        job_id, err, seconds = sbatch_once(client, *args)
        times.append(seconds * 1000)
        if job_id is None:
            failures.append(err)
    return round(statistics.median(times), 2), failures


def chaos_submissions(client: SlurmClient, daemon: DaemonProcess, seconds: float, seed: int = 1) -> dict:
    """Submit continuously while the daemon is killed, restarted, hung and resumed at random; count refusals."""
    rng, stop = random.Random(seed), threading.Event()
    done: Counter[str] = Counter()
    ids, failures = [], []

    def submitter() -> None:
        while not stop.is_set():
            job_id, err, _ = sbatch_once(client, "--constraint=aarch64|x86_64")
            (ids.append(job_id) if job_id else failures.append(err))

    thread = threading.Thread(target=submitter)
    thread.start()
    deadline = time.monotonic() + seconds
    actions = {"kill": daemon.kill, "hang": daemon.hang, "resume": daemon.resume,
               "restart": lambda: daemon.start(wait_for_snapshot=False)}
    while time.monotonic() < deadline:
        name = rng.choice(sorted(actions))
        actions[name]()
        done[name] += 1
        time.sleep(rng.uniform(0.1, 0.5))
    stop.set()
    thread.join(60)
    daemon.resume()
    return {"submissions": len(ids) + len(failures), "rejections": len(failures), "failures": failures[:5],
            "actions": dict(done), "seconds": seconds}


def machine() -> dict:
    """Where the figures were measured: the suite's common machine record plus kernel, Lua and load."""
    lua = ""
    if shutil.which("lua5.1"):
        out = subprocess.run(["lua5.1", "-v"], capture_output=True, text=True)
        lua = (out.stdout or out.stderr).strip()  # lua5.1 prints its version on stderr
    record = {k: v for k, v in common_machine().items() if k not in ("highspy", "pyomo", "git_dirty")}
    return {**record, "hostname": platform.node(), "kernel": platform.release(), "lua": lua,
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}
