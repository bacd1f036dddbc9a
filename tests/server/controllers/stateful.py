"""What the statefulset, daemonset and persistentvolume-binder tests share: a core over gRPC running those
controllers (with the default set, so the garbage collector and ServiceAccounts run as in a cluster), and
`settled`, which waits for what a controller converges to."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server import admission
from server.auth.config import INSECURE
from server.startup import controllers
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client, Failed, Obj, path

NS = "default"
STATEFUL = frozenset({"statefulset", "daemonset", "persistentvolume-binder"})
# No node lifecycle controller runs to lift a new Node's not-ready taint, so, as kube's integration tests do
# without one, TaintNodesByCondition is off.
WITHOUT_NODE_TAINT = admission.enabled(disable=["TaintNodesByCondition"])


@pytest.fixture(name="stateful_client")
async def stateful_client_fixture(tmp_path: Path) -> AsyncIterator[Client]:
    store, core = await bootstrapped.started(tmp_path / "stateful", StoreOptions(sync=False, compact_interval=0),
                                             security=INSECURE,
                                             controller_names=controllers.DEFAULT | (STATEFUL & controllers.KNOWN),
                                             admission_plugins=WITHOUT_NODE_TAINT)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()


async def settled(fetch: Callable[[], Awaitable[Any]], want: Any, timeout: float = 10.0) -> Any:
    """What fetch() answers once it equals `want` (or `want(answer)` is true), within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if (want(got) if callable(want) else got == want):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"got {got}, wanted {want}")
        await asyncio.sleep(0.05)


async def names(client: Client, resource: str, namespace: str = NS, *, group: str = "", **options: Any) -> list[str]:
    _, items = await client.list(path(resource, namespace, group=group), **options)
    return sorted(item["metadata"]["name"] for item in items)


async def get_or_none(client: Client, resource: str, name: str, namespace: str = NS, *, group: str = "") -> Obj | None:
    try:
        return await client.get(path(resource, namespace, name, group=group))
    except Failed as err:
        if err.grpc_code == grpc.StatusCode.NOT_FOUND:
            return None
        raise


async def modify(client: Client, at: Any, change: Callable[[Obj], None]) -> Obj:
    """GET, change, PUT; again on a conflict (the controllers write the same objects' status meanwhile)."""
    for _ in range(20):
        current = await client.get(at)
        change(current)
        try:
            updated, _ = await client.update(at, current)
            return updated
        except Failed as err:
            if err.status.get("code") != 409:
                raise
    raise AssertionError(f"{at} kept conflicting")


async def events_of(client: Client, name: str, namespace: str = NS) -> list[tuple[str, str]]:
    _, items = await client.list(path("events", namespace), fieldSelector=f"involvedObject.name={name}")
    return [(e["reason"], e["message"]) for e in items]
