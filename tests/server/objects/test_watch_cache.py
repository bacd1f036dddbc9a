"""The watch cache on real LMDB and a real etcd: which reads it answers (kube-apiserver 1.28's cacher rules),
that its answers are the store's at the revision they name, and that it follows compaction, dropped watches
and its memory bound.

kube's rules (staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go, shouldDelegateList and Get): LIST
"0" ignores a limit (the whole list, no continue token); N without a limit is not older than N; a limit with
N, Exact, a continue token and an unset resourceVersion read the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.objects.watchcache import CacheConfig
from server.startup.app import RunningCore, start_core
from storage import Store, StoreOptions
from tests.server.client import Client, Obj, path, refused
from tests.storage.conftest import etcd_server, open_backend  # noqa: F401  (etcd_server: the session's etcd)
from tests.storage.etcd_server import EtcdServer

CM = path("configmaps", "default")
ALL_CM = path("configmaps")
PREFIX = b"/core/configmaps/"
OPTIONS = StoreOptions(sync=False, compact_interval=0, future_wait=0.5)
CONFIG = CacheConfig(fresh_wait=0.5)
NAMES = ["a", "b", "c", "d", "e"]


@pytest.fixture(params=["lmdb", "etcd", "encrypted"])  # encrypted: LMDB behind encryption at rest, every key
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


async def open_core(backend: str, tmp_path: Path, request: pytest.FixtureRequest, *, options: StoreOptions = OPTIONS,
                    config: CacheConfig = CONFIG) -> tuple[Store, RunningCore]:
    etcd: EtcdServer | None = request.getfixturevalue("etcd_server") if backend == "etcd" else None
    store = await open_backend(backend, tmp_path / "db", options, etcd)
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            watch_cache=config)
    return store, core


@pytest.fixture
async def running(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[RunningCore]:
    store, core = await open_core(backend, tmp_path, request)
    try:
        yield core
    finally:
        await core.stop()
        await store.close()


async def seed(client: Client) -> int:
    """The five ConfigMaps of `default` (labelled by their tier) and one in kube-system; the last revision."""
    for i, name in enumerate(NAMES):
        await client.create(CM, {"metadata": {"name": name, "labels": {"tier": "front" if i % 2 else "back"}}})
    created = await client.create(path("configmaps", "kube-system"), {"metadata": {"name": "other"}})
    return int(created["metadata"]["resourceVersion"])


async def cache_ready(running: RunningCore, prefix: bytes = PREFIX) -> None:
    """Start the prefix's cache (as a first read does) and wait until it has listed."""
    async with asyncio.timeout(10):
        while running.core.caches.cache(prefix) is None:
            await asyncio.sleep(0.01)


def store_of(client: Client) -> Store:
    return client.running.core.context.store


async def store_names(client: Client, prefix: bytes, revision: int) -> list[tuple[str, str]]:
    """(name, resourceVersion) of every key under `prefix` as the store answers at `revision`."""
    listed = await store_of(client).list(prefix, at_revision=revision)
    return [(kv.key.rsplit(b"/", 1)[1].decode(), str(kv.mod_revision)) for kv in listed.kvs]


def pairs(items: list[Obj]) -> list[tuple[str, str]]:
    return [(i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in items]


# ---------------------------------------------------------------- which LISTs the cache answers

# (options, names answered, a continue token?): "N" stands for the last write's revision.
LISTS: list[tuple[dict[str, Any], list[str], bool]] = [
    ({"resourceVersion": "0"}, NAMES, False),
    ({"resourceVersion": "0", "limit": 2}, NAMES, False),  # the cacher ignores a limit with "0"
    ({"resourceVersion": "0", "resourceVersionMatch": "NotOlderThan", "limit": 2}, NAMES, False),
    ({"resourceVersion": "N"}, NAMES, False),
    ({"resourceVersion": "N", "resourceVersionMatch": "NotOlderThan"}, NAMES, False),
    ({"resourceVersion": "N", "resourceVersionMatch": "NotOlderThan", "limit": 2}, ["a", "b"], True),  # the store
    ({"resourceVersion": "N", "limit": 2}, ["a", "b"], True),  # Exact, from the store
    ({"resourceVersion": "N", "resourceVersionMatch": "Exact"}, NAMES, False),
    ({"limit": 2}, ["a", "b"], True),  # a consistent read: the store
    ({"resourceVersion": "0", "labelSelector": "tier=front"}, ["b", "d"], False),
    ({"resourceVersion": "0", "labelSelector": "tier!=front", "limit": 1}, ["a", "c", "e"], False),
    ({"resourceVersion": "0", "fieldSelector": "metadata.name=c"}, ["c"], False),
    ({"resourceVersion": "0", "fieldSelector": "metadata.name!=c", "labelSelector": "tier=back"}, ["a", "e"], False),
]


@pytest.mark.parametrize(("options", "expected", "paged"), LISTS)
async def test_list_answers_as_kube_1_28s_cacher(client: Client, options: dict[str, Any], expected: list[str],
                                                 paged: bool) -> None:
    last = await seed(client)
    await cache_ready(client.running)
    asked = {k: str(last) if v == "N" else v for k, v in options.items()}
    meta, items = await client.list(CM, **asked)
    assert [i["metadata"]["name"] for i in items] == expected
    assert bool(meta.get("continue")) is paged
    revision = int(meta["resourceVersion"])
    assert revision >= last
    on_store = dict(await store_names(client, b"/core/configmaps/default/", revision))
    assert pairs(items) == [(name, on_store[name]) for name in expected]


async def test_a_list_of_every_namespace_and_of_one_come_from_one_cache(client: Client) -> None:
    await seed(client)
    await cache_ready(client.running)
    _, everywhere = await client.list(ALL_CM, resourceVersion="0")
    _, system = await client.list(path("configmaps", "kube-system"), resourceVersion="0")
    assert sorted(i["metadata"]["name"] for i in everywhere) == sorted([*NAMES, "other"])
    assert [i["metadata"]["name"] for i in system] == ["other"]
    assert client.running.core.caches.prefixes() == [PREFIX]


# ---------------------------------------------------------------- answers are the store's at their revision


async def test_cached_lists_are_the_stores_state_at_their_revision_under_writes(client: Client) -> None:
    await seed(client)
    await cache_ready(client.running)

    async def writer(n: int) -> None:
        for i in range(15):
            name = f"w{n}-{i % 4}"
            try:
                await client.create(CM, {"metadata": {"name": name}, "data": {"i": str(i)}})
            except Exception:
                await client.delete(path("configmaps", "default", name))

    writers = [asyncio.create_task(writer(n)) for n in range(3)]
    seen = 0
    while not all(w.done() for w in writers) or seen < 3:
        meta, items = await client.list(CM, resourceVersion="0")
        revision = int(meta["resourceVersion"])
        assert pairs(items) == await store_names(client, b"/core/configmaps/default/", revision)
        seen += 1
        await asyncio.sleep(0)
    await asyncio.gather(*writers)


@pytest.mark.parametrize("resource_version", ["0", "N"])
async def test_a_read_after_a_write_answered_by_this_core_sees_it(client: Client, resource_version: str) -> None:
    await seed(client)
    await cache_ready(client.running)
    for i in range(5):
        written = await client.create(CM, {"metadata": {"name": f"new-{i}"}})
        rv = written["metadata"]["resourceVersion"]
        asked = rv if resource_version == "N" else "0"
        assert f"new-{i}" in await client.names(CM, resourceVersion=asked)
        got = await client.get(path("configmaps", "default", f"new-{i}"), resourceVersion=asked)
        assert got["metadata"]["resourceVersion"] == rv


# ---------------------------------------------------------------- GET


async def test_get_from_the_cache_is_not_older_than_asked(client: Client) -> None:
    await seed(client)
    await cache_ready(client.running)
    current = await client.get(path("configmaps", "default", "a"))
    current["data"] = {"v": "2"}
    updated, _ = await client.update(path("configmaps", "default", "a"), current)
    rv = updated["metadata"]["resourceVersion"]
    got = await client.get(path("configmaps", "default", "a"), resourceVersion=rv)
    assert (got["data"], got["metadata"]["resourceVersion"]) == ({"v": "2"}, rv)
    deleted = await client.delete(path("configmaps", "default", "b"))
    assert deleted["status"] == "Success"
    failed = await refused(client.get(path("configmaps", "default", "b"), resourceVersion="0"))
    assert failed.status["code"] == 404


@pytest.mark.parametrize("verb", ["get", "list"])
async def test_a_revision_nobody_has_reached_is_504(client: Client, verb: str) -> None:
    last = await seed(client)
    await cache_ready(client.running)
    future = str(last + 1000)
    if verb == "get":
        failed = await refused(client.get(path("configmaps", "default", "a"), resourceVersion=future))
    else:
        failed = await refused(client.list(CM, resourceVersion=future))
    assert (failed.status["code"], failed.status["reason"]) == (504, "Timeout")
    assert failed.status["message"].startswith("Timeout: Too large resource version")


# ---------------------------------------------------------------- WATCH


async def test_a_watch_from_0_starts_with_the_cached_state_then_follows(client: Client) -> None:
    last = await seed(client)
    await cache_ready(client.running)
    stream = client.watch(CM, resourceVersion="0")
    added = [await anext(stream) for _ in NAMES]
    assert [(kind, obj["metadata"]["name"]) for kind, obj in added] == [("ADDED", n) for n in NAMES]
    assert all(int(obj["metadata"]["resourceVersion"]) <= last for _, obj in added)
    await client.create(CM, {"metadata": {"name": "f"}})
    kind, obj = await asyncio.wait_for(anext(stream), 5)
    assert (kind, obj["metadata"]["name"]) == ("ADDED", "f")
    await stream.aclose()


async def test_a_watch_from_a_recent_revision_replays_what_followed_it(client: Client) -> None:
    start = await seed(client)
    await cache_ready(client.running)
    await client.delete(path("configmaps", "default", "a"))
    await client.create(CM, {"metadata": {"name": "f"}})
    events = await client.events(CM, lambda e: e[1]["metadata"]["name"] == "f", resourceVersion=str(start))
    assert [(kind, obj["metadata"]["name"]) for kind, obj in events] == [("DELETED", "a"), ("ADDED", "f")]


async def test_a_watch_from_before_the_window_is_410(client: Client) -> None:
    start = await seed(client)
    await cache_ready(client.running)
    await client.delete(path("configmaps", "default", "a"))
    store = store_of(client)
    await store.compact(store.current_revision())
    events = await client.events(CM, lambda e: e[0] == "ERROR", resourceVersion=str(start))
    kind, status = events[-1]
    assert (kind, status["code"], status["reason"]) == ("ERROR", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {start}")


# ---------------------------------------------------------------- relist, memory bound, lifecycle


@pytest.mark.parametrize("backend", ["lmdb"])
async def test_a_dropped_watch_makes_the_cache_list_again(backend: str, tmp_path: Path,
                                                         request: pytest.FixtureRequest) -> None:
    # A queue of 3 events: a burst of creates committed together drops the cache's watch.
    store, running = await open_core(backend, tmp_path, request,
                                     options=StoreOptions(sync=False, compact_interval=0, watch_queue_size=3))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            await seed(client)
            await cache_ready(running)
            await asyncio.gather(*(client.create(CM, {"metadata": {"name": f"burst-{i}"}}) for i in range(30)))
            await cache_ready(running)
            meta, items = await client.list(CM, resourceVersion=str(store.current_revision()))
            assert len(items) == len(NAMES) + 30
            assert pairs(items) == await store_names(client, b"/core/configmaps/default/",
                                                     int(meta["resourceVersion"]))
    finally:
        await running.stop()
        await store.close()


@pytest.mark.parametrize("backend", ["lmdb", "etcd"])
async def test_a_resource_past_the_memory_bound_is_read_from_the_store(backend: str, tmp_path: Path,
                                                                      request: pytest.FixtureRequest) -> None:
    store, running = await open_core(backend, tmp_path, request, config=CacheConfig(max_bytes=2_000))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            for i in range(10):
                await client.create(CM, {"metadata": {"name": f"big-{i}"}, "data": {"v": "x" * 300}})
            meta, _ = await client.list(CM, resourceVersion="0", limit=3)
            assert meta.get("continue")  # the store answered: the limit holds
            async with asyncio.timeout(5):
                while PREFIX in running.core.caches.prefixes():
                    await asyncio.sleep(0.01)
            assert running.core.caches.cache(PREFIX) is None  # and it is not started again meanwhile
            assert running.core.caches.held_bytes <= 2_000
    finally:
        await running.stop()
        await store.close()
