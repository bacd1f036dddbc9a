"""A large list is read, rendered and converted a slice at a time, yielding to the event loop between slices,
and answers the same bytes as in one go.

Slice sizes are lowered so that a few dozen objects cross them. Whether the loop was free is measured by a
ticker task counting its turns while one list runs: a list that held the loop leaves it none.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest

import server.objects.list
import storage.lmdb.store
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.objects import views
from server.startup.app import RunningCore
from tests.server.client import Client, path

COUNT = 60
CM = path("configmaps", "default")
SLICE = 5


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server.objects.list, "RENDER_SLICE", SLICE)
    monkeypatch.setattr(server.objects.list, "CONVERT_SLICE", SLICE)
    monkeypatch.setattr(storage.lmdb.store, "LIST_SLICE", SLICE)
    monkeypatch.setattr(storage.lmdb.store, "COUNT_SLICE", SLICE)


async def fill(client: Client) -> None:
    for i in range(COUNT):
        await client.create(CM, {"metadata": {"name": f"cm-{i:03}", "labels": {"n": str(i % 3)}}, "data": {"v": "1"}})


async def turns_during(call: asyncio.Future[object] | asyncio.Task[object]) -> int:
    """How often another task ran while `call` did."""
    turns = 0

    async def tick() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)  # the ticker is running
    turns = 0
    await call
    ticker.cancel()
    return turns


@pytest.mark.parametrize(("options", "view", "slices"), [
    ({}, core_pb2.VIEW_UNSPECIFIED, COUNT // SLICE),  # the store's reads and the items' renderings
    ({"limit": 2}, core_pb2.VIEW_UNSPECIFIED, (COUNT - 2) // SLICE),  # counting what follows the page
    ({"labelSelector": "n=1"}, core_pb2.VIEW_UNSPECIFIED, COUNT // SLICE),  # the store's reads
    ({}, core_pb2.VIEW_TABLE, COUNT // SLICE),
    ({}, core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST, COUNT // SLICE),
])
async def test_a_large_list_yields_between_slices(
    client: Client, running: RunningCore, options: dict[str, object], view: core_pb2.View, slices: int
) -> None:
    await fill(client)
    request = core_pb2.ListRequest(path=CM, options=options, view=core_pb2.ViewOptions(view=view))
    listing = asyncio.ensure_future(running.core.list(request))
    assert await turns_during(listing) >= slices
    listed = listing.result()
    count = options.get("limit", COUNT // 3 if "labelSelector" in options else COUNT)
    if view:
        doc = orjson.loads(listed.converted.data)
        assert len(doc["rows"] if view == core_pb2.VIEW_TABLE else doc["items"]) == count
    else:
        assert len(listed.items) == count


@pytest.mark.parametrize(("view", "include"), [
    (core_pb2.VIEW_TABLE, ""),
    (core_pb2.VIEW_TABLE, "Object"),
    (core_pb2.VIEW_TABLE, "None"),
    (core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST, ""),
])
async def test_sliced_conversions_are_the_whole_ones(
    client: Client, running: RunningCore, view: core_pb2.View, include: str
) -> None:
    await fill(client)
    store = running.core.context.store
    resource = running.core.context.registry.get("", "v1", "configmaps")
    assert resource is not None
    for _ in range(3):  # a Table's ages are read from the clock: a second may turn between the two
        listed = await store.list(b"/core/configmaps/default/")
        view_options = core_pb2.ViewOptions(view=view, include_object=include)
        meta: dict[str, object] = {"resourceVersion": str(listed.revision), "continue": "", "remainingItemCount": None}
        sliced = await server.objects.list._converted(resource, view_options, list(listed.kvs), meta)
        whole = views.many(resource, view_options, list(listed.kvs), meta)
        if sliced.data == whole.data:
            break
    assert sliced == whole
