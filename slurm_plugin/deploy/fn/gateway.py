"""The function gateway: a small HTTP endpoint for invocations (``POST /invoke/NAME`` with ``{"args": [...]}``,
``GET /status``) and a TCP port the pilot jobs connect back to (JSON lines). One asyncio loop; the only
blocking calls (``sbatch``, ``scancel``) run in a thread.

Every ``tick`` seconds (and at once when an invocation finds no pilot) each function's pool goes through
:func:`~slurm_plugin.deploy.functions.plan_pilots`: pilots are submitted for the request rate and released
after the idle timeout (scale to zero; a released pilot's job ends, a pilot that never connected is
cancelled by id after ``pilot_start_timeout``). Invocations wait in order for a free pilot.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...slurm import SlurmClient
from ..cache import BundleCache
from ..functions import Function, FunctionError, PoolState, load, plan_pilots
from ..images import resolve

log = logging.getLogger(__name__)


@dataclass
class Pilot:
    job: str
    node: str
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    seq: int = 0


@dataclass
class PilotPool:
    fn: Function
    bundle: Path
    pending: dict = field(default_factory=dict)  # job id -> submit time
    idle: collections.OrderedDict = field(default_factory=collections.OrderedDict)  # job -> (Pilot, since)
    busy: dict = field(default_factory=dict)
    waiters: collections.deque = field(default_factory=collections.deque)
    requests: collections.deque = field(default_factory=collections.deque)  # request times, last 10 s
    service_s: float = 0.01
    last_request: float = float("-inf")
    served: int = 0

    def state(self, now: float) -> PoolState:
        while self.requests and now - self.requests[0] > 10:
            self.requests.popleft()
        rate = len(self.requests) / 10.0
        return PoolState(len(self.pending), {j: t for j, (_, t) in self.idle.items()}, len(self.busy),
                         len(self.waiters), rate, self.service_s, self.last_request)


class Gateway:
    """Serves the functions of ``state`` at ``site``; ``client`` submits and cancels pilots."""

    def __init__(self, site, state: str | Path, client: SlurmClient, listen: tuple[str, int],
                 pilot_listen: tuple[str, int], runtime_root: str, tick: float = 0.5,
                 pilot_start_timeout: float = 120.0, python: str = sys.executable):
        self.site, self.state, self.client = site, Path(state), client
        self.listen, self.pilot_listen, self.runtime_root = listen, pilot_listen, runtime_root
        self.tick, self.pilot_start_timeout, self.python = tick, pilot_start_timeout, python
        self.pools: dict[str, PilotPool] = {}
        self.cache = BundleCache(site.deploy.bundle_cache, site.deploy.cache_max_mb << 20)
        self.submitted: list[str] = []  # every pilot job id, for the operator and the tests
        self.cold_starts: list[float] = []
        self._kick = asyncio.Event()

    # --- pools -------------------------------------------------------------------------------------------
    def pool(self, name: str) -> PilotPool:
        if name not in self.pools:
            fn = load(self.state, name)
            image = resolve(self.site.deploy.image_store, fn.image)
            self.pools[name] = PilotPool(fn, self.cache.prepare(image))
        return self.pools[name]

    def _pilot_command(self, pool: PilotPool) -> str:
        host, port = self.pilot_address
        argv = [self.python, "-m", "slurm_plugin.deploy.fn.pilot", "--gateway", f"{host}:{port}", "--fn",
                pool.fn.name, "--bundle", str(pool.bundle), "--command", pool.fn.command, "--runtime",
                self.site.deploy.runtime, "--state-dir", self.runtime_root, "--workdir", str(self.state / "pilots")]
        return shlex.join(argv)

    async def _submit(self, pool: PilotPool) -> None:
        (self.state / "pilots").mkdir(parents=True, exist_ok=True)
        args = ["sbatch", "--parsable", "--job-name", f"hs-fn-{pool.fn.name}", "--comment",
                f"class={pool.fn.workload_class} fn={pool.fn.name}", "-o", str(self.state / "pilots" / "%j.out"),
                "--wrap", "exec " + self._pilot_command(pool)]
        proc = await asyncio.to_thread(self.client.run, *args, check=False)
        if proc.returncode != 0:
            log.error("pilot for %s not submitted: %s", pool.fn.name, proc.stderr.strip())
            return
        job = proc.stdout.strip().split(";")[0]
        pool.pending[job] = time.monotonic()
        self.submitted.append(job)
        log.info("pilot %s submitted for %s", job, pool.fn.name)

    async def _release(self, pool: PilotPool, job: str) -> None:
        pilot, _ = pool.idle.pop(job)
        try:
            pilot.writer.write(b'{"release": true}\n')
            await pilot.writer.drain()
            pilot.writer.close()
        except (ConnectionError, RuntimeError):
            pass
        log.info("pilot %s of %s released (idle)", job, pool.fn.name)

    async def scale_once(self) -> None:
        now = time.monotonic()
        for pool in list(self.pools.values()):
            for job, t in list(pool.pending.items()):
                if now - t > self.pilot_start_timeout:  # never connected: cancel by id
                    pool.pending.pop(job)
                    await asyncio.to_thread(self.client.run, "scancel", job, check=False)
            plan = plan_pilots(pool.state(now), now, self.site.deploy.fn_idle_timeout_s, self.site.deploy.fn_max_pilots)
            for _ in range(plan.submit):
                await self._submit(pool)
            for job in plan.release:
                await self._release(pool, job)

    async def _scaler(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._kick.wait(), self.tick)
            except asyncio.TimeoutError:
                pass
            self._kick.clear()
            try:
                await self.scale_once()
            except Exception:  # noqa: BLE001 - the loop must go on; logged with the trace
                log.exception("scaler")

    # --- invocations -------------------------------------------------------------------------------------
    async def _acquire(self, pool: PilotPool, timeout: float) -> Pilot:
        if pool.idle:
            job, (pilot, _) = pool.idle.popitem(last=True)  # the most recently used: warmest
            pool.busy[job] = pilot
            return pilot
        fut = asyncio.get_running_loop().create_future()
        pool.waiters.append(fut)
        self._kick.set()
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            if fut in pool.waiters:
                pool.waiters.remove(fut)

    def _give_back(self, pool: PilotPool, pilot: Pilot) -> None:
        pool.busy.pop(pilot.job, None)
        while pool.waiters:
            fut = pool.waiters.popleft()
            if not fut.done():
                pool.busy[pilot.job] = pilot
                fut.set_result(pilot)
                return
        pool.idle[pilot.job] = (pilot, time.monotonic())

    async def invoke(self, name: str, args: list, timeout: float = 180.0) -> dict:
        """Run function ``name`` with ``args`` on a pilot; returns ``{stdout, exit, pilot, node, ms, cold}``."""
        t0 = time.monotonic()
        pool = self.pool(name)
        pool.requests.append(t0)
        pool.last_request = t0
        cold = not pool.idle and not pool.busy
        pilot = await self._acquire(pool, timeout)
        try:
            pilot.seq += 1
            t1 = time.monotonic()
            pilot.writer.write((json.dumps({"id": pilot.seq, "args": [str(a) for a in args]}) + "\n").encode())
            await pilot.writer.drain()
            line = await pilot.reader.readline()
            if not line:
                raise FunctionError(f"pilot {pilot.job} of {name} went away")
            reply = json.loads(line)
            pool.service_s = 0.8 * pool.service_s + 0.2 * (time.monotonic() - t1)
        except BaseException:
            pool.busy.pop(pilot.job, None)
            raise
        self._give_back(pool, pilot)
        pool.served += 1
        ms = (time.monotonic() - t0) * 1000
        if cold:
            self.cold_starts.append(ms)
        if "error" in reply:
            raise FunctionError(f"pilot {pilot.job}: {reply['error']}")
        return {"stdout": reply["stdout"], "exit": reply["exit"], "pilot": pilot.job, "node": pilot.node,
                "ms": round(ms, 2), "cold": cold}

    def status(self) -> dict:
        return {name: {"pending": sorted(p.pending), "idle": list(p.idle), "busy": list(p.busy),
                       "waiting": len(p.waiters), "served": p.served} for name, p in self.pools.items()}

    # --- servers -----------------------------------------------------------------------------------------
    async def _on_pilot(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            hello = json.loads(await reader.readline() or b"{}")
            pool = self.pool(hello["hello"])
        except (ValueError, KeyError, FunctionError) as err:
            log.warning("pilot connection refused: %s", err)
            writer.close()
            return
        job = str(hello.get("job", ""))
        pool.pending.pop(job, None)
        pilot = Pilot(job, hello.get("node", ""), reader, writer)
        self._give_back(pool, pilot)
        log.info("pilot %s of %s ready on %s", job, pool.fn.name, pilot.node)

    async def _on_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readline()
                if not request:
                    return
                method, path, _ = request.decode("latin-1").split(" ", 2)
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = header.decode("latin-1").partition(":")
                    if key.strip().lower() == "content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                code, doc = await self._route(method, path, body)
                data = json.dumps(doc).encode()
                writer.write(f"HTTP/1.1 {code} {'OK' if code == 200 else 'Error'}\r\nContent-Type: application/json"
                             f"\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _route(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        if method == "GET" and path == "/status":
            return 200, self.status()
        if method == "POST" and path.startswith("/invoke/"):
            try:
                args = json.loads(body or b"{}").get("args", [])
                return 200, await self.invoke(path[len("/invoke/"):], args)
            except (FunctionError, ValueError) as err:
                return 400, {"error": str(err)}
            except asyncio.TimeoutError:
                return 504, {"error": "no pilot became ready in time"}
        return 404, {"error": f"{method} {path}: use POST /invoke/NAME or GET /status"}

    async def serve(self, stop: asyncio.Event) -> None:
        pilots = await asyncio.start_server(self._on_pilot, *self.pilot_listen)
        http = await asyncio.start_server(self._on_http, *self.listen)
        self.pilot_address = pilots.sockets[0].getsockname()[:2]
        self.address = http.sockets[0].getsockname()[:2]
        scaler = asyncio.create_task(self._scaler())
        log.info("functions on http://%s:%s, pilots connect to %s:%s", *self.address, *self.pilot_address)
        try:
            await stop.wait()
        finally:
            scaler.cancel()
            for pool in self.pools.values():
                for job in list(pool.idle):
                    await self._release(pool, job)
                for job in list(pool.pending) + list(pool.busy):
                    await asyncio.to_thread(self.client.run, "scancel", job, check=False)
            pilots.close()
            http.close()
