"""What the workload controller tests share: a core running named controllers, and waiting for a state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup import controllers
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client, Failed, Obj, path


@asynccontextmanager
async def controlled(tmp_path: Path, *names: str) -> AsyncIterator[Client]:
    """A client of a core that runs the default controllers and `names`."""
    store, core = await bootstrapped.started(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0),
                                             security=INSECURE, controller_names=controllers.DEFAULT | frozenset(names))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()


async def until(fetch: Callable[[], Awaitable[Any]], check: Callable[[Any], bool], timeout: float = 10.0) -> Any:
    """What fetch() answers once check() accepts it, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if check(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached; last: {got}")
        await asyncio.sleep(0.05)


async def pods_of(client: Client, namespace: str, owner_uid: str, *, active: bool = True) -> list[Obj]:
    _, items = await client.list(path("pods", namespace))
    return [p for p in items
            if any(r.get("uid") == owner_uid for r in p["metadata"].get("ownerReferences") or [])
            and not (active and p["metadata"].get("deletionTimestamp"))]


async def events_about(client: Client, namespace: str, name: str) -> list[Obj]:
    _, items = await client.list(path("events", namespace), fieldSelector=f"involvedObject.name={name}")
    return items


async def modify(client: Client, at: core_pb2.ResourcePath, change: Callable[[Obj], None]) -> Obj:
    """GET, change, PUT, again on a conflict (a controller's status write between the two), as kubectl edit
    users retry."""
    while True:
        current = await client.get(at)
        change(current)
        try:
            updated, _ = await client.update(at, current)
            return updated
        except Failed as failed:
            if failed.status.get("code") != 409:
                raise
