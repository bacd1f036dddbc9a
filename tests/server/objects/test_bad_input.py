"""Bad input over the core's gRPC interface gets the Status kube-apiserver answers, carried in the
rich error details, never INTERNAL: bodies nested too deeply, objects too large to store (413 as
RESOURCE_EXHAUSTED), protobuf bodies Python's protobuf cannot read, and YAML alias bombs at every
call that reads YAML."""

from __future__ import annotations

import time
from typing import Any

import grpc
import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.codec.depth import MAX_DEPTH
from server.machinery.codec.wire import varint
from server.objects.size import MAX_OBJECT_BYTES
from tests.server.client import JSON, PROTOBUF, Client, path, refused
from tests.server.machinery.codec.test_yamlread import BOMB, REFUSED_WITHIN

CM = path("configmaps", "default", "c")
CMS = path("configmaps", "default")
YAML = core_pb2.ENCODING_YAML
TOO_DEEP = "invalid character '[' exceeded max depth"
SUMMARY = '{"apiVersion":"v1","kind":"Con ...'


def nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def configmap(extra: bytes) -> bytes:
    return b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},' + extra + b"}"


def body(data: bytes, encoding: Any = JSON) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=encoding, data=data)


async def create(client: Client, raw: core_pb2.RawObject) -> object:
    return await client.call(client.stub.Create, core_pb2.CreateRequest(path=CMS, object=raw))


async def update(client: Client, raw: core_pb2.RawObject) -> object:
    return await client.call(client.stub.Update, core_pb2.UpdateRequest(path=CM, object=raw))


async def patch(client: Client, kind: Any, data: bytes) -> object:
    return await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=CM, type=kind, patch=data, options={"fieldManager": "m"}))


def unrecognized(problem: str) -> str:
    return f"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; " \
           f"json parse error: {problem} ({SUMMARY})"


@pytest.mark.parametrize(("call", "message"), [
    pytest.param(lambda c: create(c, body(configmap(b'"unk":' + nested(1000)))), unrecognized(TOO_DEEP),
                 id="create, 1,000 deep unknown field"),
    pytest.param(lambda c: create(c, body(configmap(b'"unk":' + nested(MAX_DEPTH)))), unrecognized(TOO_DEEP),
                 id="create, just past the bound"),
    pytest.param(lambda c: update(c, body(configmap(b'"unk":' + nested(990)))), unrecognized(TOO_DEEP), id="update"),
    pytest.param(lambda c: patch(c, core_pb2.PATCH_TYPE_MERGE, b'{"unk":' + nested(990) + b"}"),
                 "error decoding patch: " + TOO_DEEP, id="merge patch"),
    pytest.param(lambda c: patch(c, core_pb2.PATCH_TYPE_JSON,
                                 b'[{"op":"add","path":"/u","value":' + nested(2000) + b"}]"),
                 "error decoding patch: " + TOO_DEEP, id="JSON patch"),
    pytest.param(lambda c: patch(c, core_pb2.PATCH_TYPE_APPLY, configmap(b'"unk":' + nested(900))),
                 "error decoding YAML: error converting YAML to JSON: yaml: the document nests too deeply",
                 id="apply"),
])
async def test_bodies_nested_too_deeply_are_a_bad_request(client: Client, call: Any, message: str) -> None:
    await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    before = client.revision()
    failed = await refused(call(client))
    assert failed.grpc_code == grpc.StatusCode.INVALID_ARGUMENT
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (400, "BadRequest", message)
    assert client.revision() == before


GO_MAP = "Go value of type map[string]interface {}"
MERGE, STRATEGIC = core_pb2.PATCH_TYPE_MERGE, core_pb2.PATCH_TYPE_STRATEGIC_MERGE


# As kube-apiserver 1.28.7 answers them (compared over HTTPS): encoding/json's type names, a merge patch's behind
# its field validation's "error decoding patch: ", and a null strategic merge patch that changes nothing.
@pytest.mark.parametrize(("kind", "document", "message"), [
    (STRATEGIC, b'"str"', f"json: cannot unmarshal string into {GO_MAP}"),
    (MERGE, b'"str"', f"error decoding patch: json: cannot unmarshal string into {GO_MAP}"),
    (STRATEGIC, b"1", f"json: cannot unmarshal number into {GO_MAP}"),
    (MERGE, b"1.5", f"error decoding patch: json: cannot unmarshal number into {GO_MAP}"),
    (STRATEGIC, b"true", f"json: cannot unmarshal bool into {GO_MAP}"),
    (MERGE, b"false", f"error decoding patch: json: cannot unmarshal bool into {GO_MAP}"),
    (STRATEGIC, b"[1]", f"json: cannot unmarshal array into {GO_MAP}"),
    (MERGE, b"[1]", f"error decoding patch: json: cannot unmarshal array into {GO_MAP}"),
    (MERGE, b"null", "Invalid JSON Patch"),
    (STRATEGIC, b"null", None),
])
async def test_a_patch_that_is_not_an_object(client: Client, kind: Any, document: bytes, message: str | None) -> None:
    created = await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    before = client.revision()
    if message is None:
        answer: Any = await patch(client, kind, document)
        assert orjson.loads(answer.object.data)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    else:
        failed = await refused(patch(client, kind, document))
        assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (
            400, "BadRequest", message)
    assert client.revision() == before


def event(name: str, message_size: int) -> core_pb2.RawObject:
    return body(orjson.dumps({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                              "involvedObject": {}, "message": "x" * message_size}))


async def test_objects_too_large_to_store_are_refused_on_create_and_update(client: Client) -> None:
    events = path("events", "default")
    failed = await refused(client.call(client.stub.Create, core_pb2.CreateRequest(
        path=events, object=event("big", 3 * 1024 * 1024 - 1000))))
    assert failed.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (failed.status["code"], failed.status["reason"]) == (413, "RequestEntityTooLarge")
    assert failed.status["message"].startswith("Request entity too large: etcdserver: request is too large: ")
    assert failed.status["message"].endswith(f"limit is {MAX_OBJECT_BYTES}")
    await client.call(client.stub.Create, core_pb2.CreateRequest(path=events, object=event("e", 10)))
    before = client.revision()
    failed = await refused(client.call(client.stub.Update, core_pb2.UpdateRequest(
        path=path("events", "default", "e"), object=event("e", MAX_OBJECT_BYTES))))
    assert (failed.grpc_code, failed.status["code"]) == (grpc.StatusCode.RESOURCE_EXHAUSTED, 413)
    assert client.revision() == before
    dry = await client.call(client.stub.Create, core_pb2.CreateRequest(
        path=events, object=event("dry", MAX_OBJECT_BYTES), options={"dryRun": ["All"]}))
    assert dry.object.data  # a dry run never reaches the store, as in kube


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


async def test_a_protobuf_map_key_that_is_not_utf8_is_a_bad_request(client: Client) -> None:
    data = field(1, field(1, b"c")) + field(2, field(1, b"\xffk") + field(2, b"v"))
    failed = await refused(create(client, body(data, PROTOBUF)))
    assert (failed.status["code"], failed.status["message"]) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: proto: a map key is not valid UTF-8')


BOMB_CM = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n" + b"".join(
    b"  " + line + b"\n" for line in BOMB.strip().split(b"\n"))


@pytest.mark.parametrize("call", [
    pytest.param(lambda c: create(c, body(BOMB_CM, YAML)), id="create"),
    pytest.param(lambda c: update(c, body(BOMB_CM, YAML)), id="update"),
    pytest.param(lambda c: patch(c, core_pb2.PATCH_TYPE_APPLY, BOMB_CM), id="apply"),
])
async def test_a_yaml_alias_bomb_is_refused_by_every_call_that_reads_yaml(client: Client, call: Any) -> None:
    await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    started = time.monotonic()
    failed = await refused(call(client))
    assert time.monotonic() - started < REFUSED_WITHIN
    assert (failed.status["code"], failed.status["reason"]) == (400, "BadRequest")
    assert "yaml: document contains excessive aliasing" in failed.status["message"]
