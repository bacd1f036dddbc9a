"""Updates from a stale hint: two cores over one etcd, the first core's watch held back.

A core on etcd starts an update from the store's recent memory of the object (Store.recent: the etcd
watch's window) instead of reading it, as kube-apiserver starts GuaranteedUpdate from its watch cache. When
another core has written the object since, the memory is stale: the write's compare fails and answers the
current object, and whatever the stale object alone would have decided is decided again from the current
one. Each row writes through core B, then asks core A (whose etcd watch is stopped, so its memory stays
behind) and expects what a core reading etcd first answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import start_core
from storage import StoreOptions
from storage.etcd import EtcdConfig, EtcdStore
from tests.server.client import Client, Failed, path
from tests.storage.conftest import etcd_server  # noqa: F401  (the session's one etcd)
from tests.storage.etcd_server import EtcdServer

Obj = dict[str, Any]
CM = path("configmaps", "default", "stale")
KEY = b"/core/configmaps/default/stale"  # its storage key


@pytest.fixture
async def cores(etcd_server: EtcdServer, tmp_path: Path) -> AsyncIterator[tuple[Client, Client, EtcdStore]]:  # noqa: F811
    """Clients of core A and core B over one prefix, and A's store."""
    prefix = "/stale-test/" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    config = EtcdConfig(servers=(etcd_server.url,), prefix=prefix, compact_key=prefix.encode() + b"\x00compact")
    options = StoreOptions(compact_interval=0, future_wait=0.5)
    stores = [await EtcdStore.open(config, options) for _ in range(2)]
    running = [await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                namespace_controllers=False) for store in stores]
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{r.grpc_port}") for r in running]
    try:
        a, b = (Client(core_pb2_grpc.CoreServiceStub(c), r)  # type: ignore[no-untyped-call]
                for c, r in zip(channels, running, strict=True))
        yield a, b, stores[0]
    finally:
        for channel in channels:
            await channel.close()
        for r in running:
            await r.stop()
        for store in stores:
            await store.close()


def config_map(data: dict[str, str], resource_version: str = "") -> Obj:
    metadata: Obj = {"name": "stale", "namespace": "default"}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


async def patch(client: Client, body: bytes) -> Obj:
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=CM, patch=body, type=core_pb2.PATCH_TYPE_MERGE))
    obj: Obj = orjson.loads(response.object.data)
    return obj


@pytest.mark.parametrize("case", ["put-current-version", "put-stale-version", "put-unconditional",
                                  "put-unchanged", "merge-patch"])
async def test_an_update_from_a_stale_memory_answers_as_from_a_read(
    cores: tuple[Client, Client, EtcdStore], case: str
) -> None:
    a, b, store_a = cores
    first = await a.create(path("configmaps", "default"), config_map({"k": "a"}))
    key = store_a.recent(KEY)
    assert key is not None  # A remembers its own create
    await store_a._feed.stop()  # A's watch stops: its memory stays at the create
    second, _ = await b.update(CM, config_map({"k": "b"}, first["metadata"]["resourceVersion"]))
    assert store_a.recent(KEY) == key  # stale from here on
    current = second["metadata"]["resourceVersion"]
    if case == "put-current-version":
        got, _ = await a.update(CM, config_map({"k": "c"}, current))
        assert (got["data"], int(got["metadata"]["resourceVersion"]) > int(current)) == ({"k": "c"}, True)
    elif case == "put-stale-version":
        with pytest.raises(Failed) as failed:
            await a.update(CM, config_map({"k": "c"}, first["metadata"]["resourceVersion"]))
        assert (failed.value.status["code"], failed.value.status["reason"]) == (409, "Conflict")
    elif case == "put-unconditional":
        got, _ = await a.update(CM, config_map({"k": "c"}))
        assert got["data"] == {"k": "c"}
    elif case == "put-unchanged":  # the current object as it is: no write, the current resourceVersion
        got, _ = await a.update(CM, config_map({"k": "b"}, current))
        assert (got["data"], got["metadata"]["resourceVersion"]) == ({"k": "b"}, current)
    else:  # a merge patch applies to the current object, not the remembered one
        got = await patch(a, b'{"data": {"more": "x"}}')
        assert got["data"] == {"k": "b", "more": "x"}
    if case != "put-stale-version":
        assert (await b.get(CM))["data"] == got["data"]  # what was answered is what etcd holds
