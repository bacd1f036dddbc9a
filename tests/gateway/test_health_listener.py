"""The health port (`--health-port`, gateway/health_listener.py): the serving port's answers, from a thread of
its own, so a probe is answered while the serving loop is busy; its core checks follow the core within the
publishing period, and fail once the serving loop has not published for the stale bound.

The serving loop is kept busy deterministically: a callback that sleeps BLOCK seconds on it, while a thread
asks over plain HTTP (the test's own loop is the one blocked).
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.connections import KUBE_LIMITS
from gateway.health import HEALTH_KEY
from gateway.health_listener import HealthListener
from server.auth.config import INSECURE
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

PERIOD = 0.05  # seconds between snapshots in these tests
STALE = 0.4  # seconds after which a snapshot is too old in these tests
BLOCK = 1.0  # seconds the serving loop is held


@dataclass
class Ports:
    serving: str
    health: str
    core: RunningCore


@pytest.fixture
async def ports(tmp_path: Path) -> AsyncIterator[Ports]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)
    app = build_app(InProcessClient(core.guard))
    runner, port = await start_http(app, "127.0.0.1", 0)
    listener = HealthListener(app[HEALTH_KEY], limits=KUBE_LIMITS, period=PERIOD, stale=STALE)
    health_port = await listener.start("127.0.0.1", 0)
    for _ in range(200):  # readyz's informer-sync waits for the garbage collector's first list
        if core.garbage_collector.synced():
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(2 * PERIOD)
    try:
        yield Ports(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{health_port}", core)
    finally:
        await listener.stop()
        await runner.cleanup()
        await core.stop()
        await store.close()


def ask(url: str) -> tuple[int, bytes, float]:
    """A blocking GET: status, body and seconds taken."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read(), time.monotonic() - started
    except urllib.error.HTTPError as err:
        return err.code, err.read(), time.monotonic() - started


async def while_blocked(url: str, *, after: float = 0.0) -> tuple[int, bytes, float]:
    """GET url from a thread `after` seconds into a BLOCK-second stall of this loop."""
    answers: list[tuple[int, bytes, float]] = []

    def asker() -> None:
        time.sleep(after)
        answers.append(ask(url))

    thread = threading.Thread(target=asker)

    def stall() -> None:
        thread.start()
        time.sleep(BLOCK)  # the test hook: the serving loop holds the GIL's turn and runs nothing else

    asyncio.get_running_loop().call_soon(stall)
    await asyncio.sleep(0.01)
    await asyncio.to_thread(thread.join, 10)
    return answers[0]


@pytest.mark.parametrize(("port", "answered_within", "waited_at_least"), [
    ("health", BLOCK / 4, 0.0),  # its own thread answers while the serving loop is held
    ("serving", 10.0, BLOCK * 0.8),  # the serving port waits for its loop: why the health port exists
])
async def test_readyz_while_the_serving_loop_is_held(ports: Ports, port: str, answered_within: float,
                                                      waited_at_least: float) -> None:
    code, body, took = await while_blocked(getattr(ports, port) + "/readyz")
    assert (code, body) == (200, b"ok")
    assert waited_at_least <= took < answered_within


@pytest.mark.parametrize("path", [
    "/readyz", "/livez", "/healthz", "/readyz?verbose", "/livez?verbose=1", "/healthz?verbose",
    "/readyz?exclude=etcd&exclude=nope&verbose", "/readyz/etcd", "/livez/ping", "/readyz/informer-sync",
    "/healthz/etcd-readiness", "/readyz/nope", "/readyz/", "/nope",
])
async def test_the_same_answers_as_the_serving_port(ports: Ports, path: str) -> None:
    async with aiohttp.ClientSession() as session:
        answers = []
        for base in (ports.serving, ports.health):
            async with session.get(base + path) as resp:
                answers.append((resp.status, resp.headers.get("Content-Type"),
                                resp.headers.get("X-Content-Type-Options"), await resp.read()))
    assert answers[1] == answers[0]


async def test_the_core_checks_follow_the_store(ports: Ports) -> None:
    await ports.core.core.context.store.close()
    await asyncio.sleep(3 * PERIOD)
    code, body, _ = await asyncio.to_thread(ask, ports.health + "/readyz?verbose")
    failed = [line for line in body.decode().splitlines() if line.startswith("[-]")]
    assert (code, failed[:2]) == (500, ["[-]etcd failed: reason withheld", "[-]etcd-readiness failed: reason withheld"])


@pytest.mark.parametrize(("path", "expected"), [
    ("/readyz/etcd", b"internal server error: the serving loop has not run the checks for "),
    ("/livez/etcd", b"internal server error: the serving loop has not run the checks for "),
    ("/livez/ping", b"ok"),
])
async def test_a_stale_snapshot_fails_the_core_checks(ports: Ports, path: str, expected: bytes) -> None:
    """Held longer than STALE, the serving loop publishes nothing: its store check is not vouched for."""
    code, body, _ = await while_blocked(ports.health + path, after=STALE + 0.3)
    assert (code == 200, body[:len(expected)]) == (expected == b"ok", expected)
