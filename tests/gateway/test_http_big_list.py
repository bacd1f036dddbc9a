"""Whole lists fetched from the core in pages and written in chunks, over both transports.

Page, slice and message sizes are lowered so that a few dozen objects cross them: every answer must be the
very bytes of the same list fetched in one core call (the page size raised past the collection), in every
encoding, over both transports; and the split form must serve a list larger than its gRPC message limit.
"""

from __future__ import annotations

import asyncio

import pytest

import gateway.compression
import gateway.handlers.paging
import gateway.transport.grpc
import server.objects.list
import storage.lmdb.store
from tests.gateway.conftest import Server

COUNT = 40
PATH = "/api/v1/namespaces/default/configmaps"
PAYLOAD = "x" * 2048  # 40 objects of ~2 KiB: ~80 KiB, past the lowered 64 KiB message limit
MESSAGE_LIMIT = 64 * 1024
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
POML = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
POML_PROTOBUF = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
LOWERED_LIMIT = {"test_split_form_serves_a_list_past_its_message_limit"}


@pytest.fixture(autouse=True)
def small_sizes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the server fixture builds its gRPC client, which reads MAX_MESSAGE then; the message limit is
    lowered where a test asks the list in one call to fail over gRPC."""
    if request.function.__name__ in LOWERED_LIMIT:
        monkeypatch.setattr(gateway.transport.grpc, "MAX_MESSAGE", MESSAGE_LIMIT)
    monkeypatch.setattr(gateway.handlers.paging, "PAGE", 7)
    monkeypatch.setattr(gateway.handlers.paging, "ENCODE_SLICE", 3)
    monkeypatch.setattr(server.objects.list, "RENDER_SLICE", 5)
    monkeypatch.setattr(server.objects.list, "CONVERT_SLICE", 3)
    monkeypatch.setattr(storage.lmdb.store, "LIST_SLICE", 4)
    monkeypatch.setattr(storage.lmdb.store, "COUNT_SLICE", 3)


async def fill(server: Server) -> None:
    for i in range(COUNT):
        labels = {"half": "even" if i % 2 == 0 else "odd"}
        await server.create(PATH, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"cm-{i:03}", "labels": labels},
                                   "data": {"payload": PAYLOAD, "lines": "a<b && c>d\nmulti\nline\n"}})


async def cache_answers(server: Server) -> None:
    """Wait until the watch cache answers resourceVersion=0 (it starts with the first such list, which the store
    answers meanwhile): it answers the whole collection whatever the limit."""
    for _ in range(500):
        if len((await server.request("GET", PATH + "?resourceVersion=0&limit=1")).json()["items"]) == COUNT:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the watch cache did not answer within 5 s")


@pytest.mark.parametrize(("query", "accept"), [
    ("", "application/json"),
    ("?pretty=true", "application/json"),
    ("", "application/yaml"),
    ("", "application/vnd.kubernetes.protobuf"),
    ("?labelSelector=half%3Dodd", "application/json"),
    ("?labelSelector=half%3Dodd", "application/vnd.kubernetes.protobuf"),
    ("?resourceVersion=1", "application/json"),
    # the watch cache answers the whole list in one page, written PAGE items at a time
    ("?resourceVersion=0", "application/yaml"),
    ("?resourceVersion=0", "application/json"),
    ("?resourceVersion=0&pretty=true", "application/json"),
    ("?resourceVersion=0", "application/vnd.kubernetes.protobuf"),
    ("?resourceVersion=0&labelSelector=half%3Dodd", "application/json"),
    # a limit with resourceVersion=0 (client-go's informers list so): the cache answers all of it, as kube's does
    ("?resourceVersion=0&limit=5", "application/json"),
    ("?resourceVersion=0&limit=5", "application/vnd.kubernetes.protobuf"),
    ("", TABLE),
    ("?includeObject=Object", TABLE),
    ("?pretty=true", TABLE),
    ("", "application/yaml;as=Table;v=v1;g=meta.k8s.io"),
    ("?labelSelector=half%3Deven", TABLE),
    ("", POML),
    ("", POML_PROTOBUF),
    ("?labelSelector=half%3Dodd", POML_PROTOBUF),
])
async def test_paged_list_is_the_one_call_list(
    server: Server, monkeypatch: pytest.MonkeyPatch, query: str, accept: str
) -> None:
    await fill(server)
    if "resourceVersion=0" in query:
        await cache_answers(server)
    headers = {"Accept": accept}
    for _ in range(3):  # a Table's ages are read from the clock: a second may turn between the two answers
        paged = await server.request("GET", PATH + query, headers=headers)
        with monkeypatch.context() as one_call:
            one_call.setattr(gateway.handlers.paging, "PAGE", 10_000)
            whole = await server.request("GET", PATH + query, headers=headers)
        assert paged.status == whole.status == 200, (paged.body[:300], whole.body[:300])
        if paged.body == whole.body or "Table" not in accept:
            break
    assert paged.headers["Content-Type"] == whole.headers["Content-Type"]
    assert paged.body == whole.body, (paged.body[:200], whole.body[:200])
    assert paged.headers.get("Transfer-Encoding") == "chunked"


async def test_split_form_serves_a_list_past_its_message_limit(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(server)
    listed = await server.request("GET", PATH)
    assert listed.status == 200, listed.body[:300]
    assert [item["metadata"]["name"] for item in listed.json()["items"]] == [f"cm-{i:03}" for i in range(COUNT)]
    monkeypatch.setattr(gateway.handlers.paging, "PAGE", 10_000)
    # Pages of more than the channel takes come back cut short, with a continue token the paging follows.
    one_call = await server.request("GET", PATH)
    assert one_call.body == listed.body


async def test_a_paged_request_is_passed_through(server: Server) -> None:
    await fill(server)
    first = await server.request("GET", PATH + "?limit=10")
    doc = first.json()
    assert len(doc["items"]) == 10
    assert doc["metadata"]["remainingItemCount"] == COUNT - 10
    assert "Transfer-Encoding" not in first.headers
    rest = await server.request("GET", PATH + "?limit=100&continue=" + doc["metadata"]["continue"])
    assert [item["metadata"]["name"] for item in rest.json()["items"]] == [f"cm-{i:03}" for i in range(10, COUNT)]


@pytest.mark.parametrize(("query", "encoding", "compressed"), [
    ("?limit=100", "gzip", True),  # one page, one answer of known length
    ("", "gzip, deflate", True),  # the list the gateway pages through
    ("?resourceVersion=0", "gzip", True),  # the watch cache's whole list, written a page at a time
    ("?limit=100", "identity", False),
    ("?limit=5", "gzip", False),  # below the threshold
])
async def test_large_answers_are_gzipped_as_kube_gzips_them(
    server: Server, monkeypatch: pytest.MonkeyPatch, query: str, encoding: str, compressed: bool
) -> None:
    """Answers from the threshold on, to a client that accepts gzip, carry Content-Encoding: gzip and Vary:
    Accept-Encoding (kube's deferredResponseWriter), and inflate to the uncompressed answer."""
    monkeypatch.setattr(gateway.compression, "GZIP_THRESHOLD", 32 * 1024)
    await fill(server)
    got = await server.request("GET", PATH + query, headers={"Accept-Encoding": encoding})
    plain = await server.request("GET", PATH + query, headers={"Accept-Encoding": "identity"})
    assert got.status == plain.status == 200
    assert got.headers.get("Content-Encoding") == ("gzip" if compressed else None)
    assert ("Accept-Encoding" in got.headers.getall("Vary", [])) == compressed
    assert got.body == plain.body  # the client inflated it
