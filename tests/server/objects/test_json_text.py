"""Objects as JSON text (ENCODING_JSON_TEXT): what a proto3 JSON client such as grpcurl reads and writes
without base64. Bodies given as RawObject.json or PatchRequest.patch_text are read as their bytes would be;
answers asked for with accept ENCODING_JSON_TEXT carry the text in every place an object travels."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server.client import Client, path, refused

TEXT = core_pb2.ENCODING_JSON_TEXT
CM = path("configmaps", "default")
A = path("configmaps", "default", "a")


def text(obj: dict[str, Any], encoding: core_pb2.Encoding = TEXT) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=encoding, json=json.dumps(obj))


def parsed(raw: core_pb2.RawObject) -> Any:
    assert raw.encoding == TEXT and raw.data == b""
    return json.loads(raw.json)


@pytest.mark.parametrize("encoding", [TEXT, core_pb2.ENCODING_UNSPECIFIED, core_pb2.ENCODING_JSON])
async def test_create_reads_a_json_text_body(client: Client, encoding: core_pb2.Encoding) -> None:
    body = {"metadata": {"name": "a", "labels": {"app": "x"}}, "data": {"k": "v"}}
    response = await client.call(client.stub.Create, core_pb2.CreateRequest(path=CM, object=text(body, encoding)))
    assert response.object.encoding == core_pb2.ENCODING_JSON  # answers stay bytes unless asked
    assert (await client.get(A))["data"] == {"k": "v"}


async def test_every_answer_carries_text_when_asked(client: Client) -> None:
    created = await client.call(client.stub.Create, core_pb2.CreateRequest(
        path=CM, object=text({"metadata": {"name": "a", "labels": {"app": "x"}}}), accept=TEXT))
    rv = parsed(created.object)["metadata"]["resourceVersion"]
    got = await client.call(client.stub.Get, core_pb2.GetRequest(path=A, accept=TEXT))
    assert parsed(got.object)["kind"] == "ConfigMap"

    listed = await client.call(client.stub.List, core_pb2.ListRequest(
        path=CM, options={"labelSelector": "app=x"}, accept=TEXT))
    assert listed.encoding == TEXT and not listed.items
    assert [json.loads(item)["metadata"]["name"] for item in listed.json_items] == ["a"]

    updated = await client.call(client.stub.Update, core_pb2.UpdateRequest(
        path=A, object=text({"metadata": {"name": "a", "resourceVersion": rv}, "data": {"k": "2"}}), accept=TEXT))
    assert parsed(updated.object)["data"] == {"k": "2"}
    patched = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=A, type=core_pb2.PATCH_TYPE_MERGE, patch_text='{"data": {"k": "3"}}', accept=TEXT))
    assert parsed(patched.object)["data"] == {"k": "3"}

    watch = client.stub.Watch(core_pb2.WatchRequest(path=CM, options={"resourceVersion": rv}, accept=TEXT))
    deleted = await client.call(client.stub.Delete, core_pb2.DeleteRequest(path=A, accept=TEXT))
    assert deleted.WhichOneof("result") == "status"  # a ConfigMap's DELETE answers a Success Status
    seen: list[tuple[str, Any]] = []
    async for response in watch:
        seen += [(event.type, parsed(event.object)["data"]) for event in response.events]
        if len(seen) == 3:
            break
    watch.cancel()
    assert seen == [("MODIFIED", {"k": "2"}), ("MODIFIED", {"k": "3"}), ("DELETED", {"k": "3"})]


async def test_a_shared_watch_message_stays_bytes_for_other_watchers(client: Client) -> None:
    as_text = client.stub.Watch(core_pb2.WatchRequest(path=CM, accept=TEXT))
    as_bytes = client.stub.Watch(core_pb2.WatchRequest(path=CM))
    await asyncio.sleep(0.2)
    await client.create(CM, {"metadata": {"name": "a"}})
    text_event = (await as_text.read()).events[0]
    bytes_event = (await as_bytes.read()).events[0]
    as_text.cancel()
    as_bytes.cancel()
    assert parsed(text_event.object)["metadata"]["name"] == "a"
    assert bytes_event.object.encoding == core_pb2.ENCODING_JSON
    assert json.loads(bytes_event.object.data)["metadata"]["name"] == "a"


async def test_protobuf_answers_stay_protobuf(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    got = await client.call(client.stub.Get, core_pb2.GetRequest(path=A, accept=core_pb2.ENCODING_PROTOBUF))
    assert got.object.encoding == core_pb2.ENCODING_PROTOBUF and not got.object.json


@pytest.mark.parametrize(("request_", "message"), [
    (core_pb2.CreateRequest(path=CM, object=core_pb2.RawObject(json='{"metadata":{"name":"a"}}', data=b"{}")),
     "the object is given twice: a RawObject holds it in data or in json, not both"),
    (core_pb2.CreateRequest(path=CM, object=core_pb2.RawObject(encoding=TEXT, data=b'{"metadata":{"name":"a"}}')),
     "with ENCODING_JSON_TEXT the object is RawObject.json, but data is set instead"),
    (core_pb2.CreateRequest(path=CM, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_PROTOBUF, json="{}")),
     "RawObject.json holds JSON text, but the encoding is ENCODING_PROTOBUF: use ENCODING_JSON_TEXT"),
    (core_pb2.PatchRequest(path=A, type=core_pb2.PATCH_TYPE_MERGE, patch=b"{}", patch_text="{}"),
     "the patch is given twice: a PatchRequest holds it in patch or in patch_text, not both"),
])
async def test_ambiguous_text_bodies_are_a_bad_request(client: Client, request_: Any, message: str) -> None:
    method = client.stub.Create if isinstance(request_, core_pb2.CreateRequest) else client.stub.Patch
    failed = await refused(client.call(method, request_))
    assert failed.grpc_code == grpc.StatusCode.INVALID_ARGUMENT
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (400, "BadRequest", message)
