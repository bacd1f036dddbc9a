"""/healthz, /livez and /readyz on a port of their own, answered by a thread with its own event loop, so that
a probe's latency does not depend on how busy the serving loop is (`--health-port`, off by default).

kube-apiserver answers health checks in a goroutine of their own, which Go's scheduler runs beside every
other; one asyncio loop runs a tick's work in turn, and under a flood of clients one tick lasts hundreds of
milliseconds (docs/performance.md, bench.load), so a probe on the serving port waits for it. Here the
serving loop publishes the core's checks every PERIOD (a Snapshot, one reference swapped whole) and the
listener's thread answers from the latest, as gateway/health.py lays answers out. The core's checks are
at most PERIOD plus one run old: kube-apiserver answers its etcd check from the last probe for a second
(newETCD3Check's rate.Every(timeout/2)). A snapshot older than STALE means the serving loop has not run
the checks for that long, so it is not served: the core's checks then fail (`etcd` naming why), on every
endpoint. The thread shares the process's GIL, which the serving loop's thread hands over every
sys.getswitchinterval() (5 ms), so an answer costs a few of those at most.

Like etcd's --listen-metrics-urls, the port is plain HTTP on the bind address and serves only these paths
(anything else is Go's 404); its connections are bounded as the serving port's are (gateway/connections.py),
and the in-flight limits exempt health probes anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass

from aiohttp import web

from gateway import health
from gateway.app import start_http
from gateway.connections import ConnectionLimits
from gateway.handlers import respond

log = logging.getLogger(__name__)

PERIOD = 0.5  # seconds between the serving loop's runs of the core's checks
STALE = 5.0  # seconds without a new snapshot after which the core's checks fail (the store check's 2 s bound, twice)
START_TIMEOUT = 10.0  # seconds for the thread to bind its port


@dataclass(frozen=True, slots=True)
class Snapshot:
    core: tuple[health.Result, ...]
    taken: float  # time.monotonic() when the checks were asked


class Publisher:
    """Runs the core's checks on the serving loop every `period` and keeps the latest Snapshot.
    Contract: `latest` is read from any thread; it is replaced whole, never changed."""

    def __init__(self, checks: health.Health, period: float = PERIOD) -> None:
        self.checks = checks
        self.period = period
        self.latest: Snapshot | None = None

    async def run(self) -> None:
        while True:
            asked = time.monotonic()
            self.latest = Snapshot(tuple(await self.checks.core()), asked)
            await asyncio.sleep(self.period)

    def core(self, now: float, stale: float = STALE) -> list[health.Result]:
        """The core's results to answer at `now`: the snapshot's, or `etcd` failing when there is none fresh."""
        snapshot = self.latest
        if snapshot is None:
            return [health.Result(health.STORE, False, "the core's checks have not run yet")]
        age = now - snapshot.taken
        if age > stale:
            return [health.Result(health.STORE, False, f"the serving loop has not run the checks for {age:.1f}s")]
        return list(snapshot.core)


def app(publisher: Publisher, stale: float = STALE) -> web.Application:
    """The listener's application: the three endpoints and their checks, from the publisher's snapshot."""
    application = web.Application()

    def results(endpoint: str) -> list[health.Result]:
        return publisher.checks.assemble(endpoint, publisher.core(time.monotonic(), stale))

    for endpoint in health.ENDPOINTS:
        async def root(http: web.Request, endpoint: str = endpoint) -> web.Response:
            return health.report(endpoint, results(endpoint), http.query, http.query.getall("exclude", []))

        async def check(http: web.Request, endpoint: str = endpoint) -> web.Response:
            found = [r for r in results(endpoint) if r.name == http.match_info["check"]]
            return health.single(found[0]) if found else respond.go_not_found()

        application.router.add_route("*", f"/{endpoint}", root)
        application.router.add_route("*", f"/{endpoint}/{{check:.+}}", check)

    async def not_found(_: web.Request) -> web.Response:
        return respond.go_not_found()

    application.router.add_route("*", "/{tail:.*}", not_found)
    return application


class HealthListener:
    """The thread serving `app(publisher)` on listen:port; `start` and `stop` are called on the serving loop."""

    def __init__(self, checks: health.Health, *, limits: ConnectionLimits, period: float = PERIOD,
                 stale: float = STALE) -> None:
        self.publisher = Publisher(checks, period)
        self._limits = limits
        self._stale = stale
        self._publishing: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None

    async def start(self, listen: str, port: int) -> int:
        """Publishes the first snapshot, then serves; returns the bound port."""
        self.publisher.latest = Snapshot(tuple(await self.publisher.checks.core()), time.monotonic())
        self._publishing = asyncio.get_running_loop().create_task(self.publisher.run())
        bound: list[int] = []
        failed: list[BaseException] = []
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(listen, port, bound, failed, started),
                                        name="capstan-health", daemon=True)
        self._thread.start()
        await asyncio.get_running_loop().run_in_executor(None, started.wait, START_TIMEOUT)
        if failed or not bound:
            await self.stop()
            raise failed[0] if failed else RuntimeError("the health listener did not start")
        return bound[0]

    async def stop(self) -> None:
        if self._publishing is not None:
            self._publishing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._publishing
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join, START_TIMEOUT)

    def _serve(self, listen: str, port: int, bound: list[int], failed: list[BaseException],
               started: threading.Event) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                runner, actual = await start_http(app(self.publisher, self._stale), listen, port,
                                                  connection_limits=self._limits)
            except BaseException as err:
                failed.append(err)
                started.set()
                return
            bound.append(actual)
            started.set()
            try:
                await self._stopped.wait()
            finally:
                await runner.cleanup()

        try:
            asyncio.run(serve())
        except Exception:  # the serving port keeps going; the probes will say the health port is gone
            log.exception("the health listener stopped")
