"""A List over gRPC never answers more than its client can receive (ListRequest.max_response_bytes, gRPC's default
4 MiB when unset): 3,000 ConfigMaps of 5 KiB (~16 MB as one message) listed over a channel with default settings
come as pages that fit, each with a continue token, and following the tokens gives the whole collection at the
first page's revision, as kube's limit/continue does. A client that says it takes more gets more.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import orjson
import pytest
import pytest_asyncio

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import JSON, PROTOBUF, path, raw

pytestmark = pytest.mark.asyncio(loop_scope="module")

COUNT = 3_000
PAYLOAD = "x" * 5 * 1024
DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024  # grpc's default max_receive_message_length
BIG = 64 * 1024 * 1024
CM = path("configmaps", "default")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def address(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A core holding COUNT ConfigMaps in `default`, half of them labelled half=even."""
    store = await LmdbStore.open(tmp_path_factory.mktemp("paging") / "lmdb",
                                 StoreOptions(sync=False, compact_interval=0))
    core: RunningCore = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                         namespace_controllers=False)
    try:
        address = f"127.0.0.1:{core.grpc_port}"
        async with grpc.aio.insecure_channel(address) as channel:
            stub = core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]

            async def create(i: int) -> None:
                labels = {"half": "even" if i % 2 == 0 else "odd"}
                await stub.Create(core_pb2.CreateRequest(path=CM, object=raw(
                    {"metadata": {"name": f"cm-{i:05}", "labels": labels}, "data": {"payload": PAYLOAD}})))

            for start in range(0, COUNT, 200):
                await asyncio.gather(*(create(i) for i in range(start, min(start + 200, COUNT))))
        yield address
    finally:
        await core.stop()
        await store.close()


def _names(response: Any) -> list[str]:
    if response.json_items:
        return [orjson.loads(text)["metadata"]["name"] for text in response.json_items]
    if response.encoding == JSON:
        return [orjson.loads(item)["metadata"]["name"] for item in response.items]
    return [f"cm-{i:05}" for i in range(len(response.items))]  # protobuf items: counted, not decoded


@pytest.mark.parametrize(("case", "options", "accept", "max_bytes", "selected", "pages"), [
    # an unpaged list, as a client with default settings asks it: pages that fit in 4 MiB
    ("unpaged, JSON", {}, JSON, 0, COUNT, (4, 6)),
    ("unpaged, JSON text", {}, core_pb2.ENCODING_JSON_TEXT, 0, COUNT, (4, 6)),
    ("unpaged, protobuf", {}, PROTOBUF, 0, COUNT, (3, 6)),
    ("unpaged, resourceVersion=0 (the watch cache's whole list)", {"resourceVersion": "0"}, JSON, 0, COUNT, (4, 6)),
    # a limit larger than fits: the page is cut short, with a continue token
    ("limit 5000", {"limit": 5000}, JSON, 0, COUNT, (4, 6)),
    # a selector: the pages hold only what it selects, and no remainingItemCount
    ("label selector", {"labelSelector": "half=even"}, JSON, 0, COUNT // 2, (2, 3)),
    # a client that takes 64 MiB and says so: one answer
    ("max_response_bytes 64 MiB", {}, JSON, BIG, COUNT, (1, 1)),
])
async def test_list_pages_fit_the_client(address: str, case: str, options: dict[str, Any], accept: core_pb2.Encoding,
                                         max_bytes: int, selected: int, pages: tuple[int, int]) -> None:
    channel_options = [("grpc.max_receive_message_length", BIG)] if max_bytes else []
    async with grpc.aio.insecure_channel(address, options=channel_options) as channel:  # else grpc's defaults
        stub = core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]
        request = core_pb2.ListRequest(path=CM, accept=accept, options=options, max_response_bytes=max_bytes)
        names: list[str] = []
        revisions: set[str] = set()
        count = 0
        while True:
            response = await stub.List(request)
            count += 1
            assert response.ByteSize() <= (max_bytes or DEFAULT_MAX_RECEIVE), case
            names += _names(response)
            revisions.add(response.metadata.resourceVersion)
            token = getattr(response.metadata, "continue")
            if "labelSelector" in options or not token:
                assert not response.metadata.HasField("remainingItemCount"), case
            else:
                assert response.metadata.remainingItemCount == selected - len(names), case
            if not token:
                break
            request = core_pb2.ListRequest(path=CM, accept=accept, max_response_bytes=max_bytes,
                                           options={**{k: v for k, v in options.items() if k != "resourceVersion"},
                                                    "continue": token})
    assert len(names) == selected, case
    if accept != PROTOBUF:
        step = 2 if "labelSelector" in options else 1
        assert names == [f"cm-{i:05}" for i in range(0, COUNT, step)], case
    assert len(revisions) == 1, case  # every page read at the first page's revision
    assert pages[0] <= count <= pages[1], (case, count)
