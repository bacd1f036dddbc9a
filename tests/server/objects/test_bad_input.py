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


FIND_KIND = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'


def summary_of(data: bytes) -> str:
    return data[:30].decode() + " ..." if len(data) > 30 else (data.decode() if data[:1] == b"{" else data.hex())


# As kube-apiserver 1.28 answers them: its json serializer looks the kind up first (Go's json.Unmarshal into
# {apiVersion, kind}), so a malformed document is refused in Go's words before anything else, with
# transformDecodeError's summary of the body.
@pytest.mark.parametrize(("data", "problem"), [
    (b"{", "unexpected end of JSON input"),
    (configmap(b'"data":{"a":"b",}'), "invalid character '}' looking for beginning of object key string"),
    (configmap(b'"data":{"a" "b"}'), "invalid character '\"' after object key"),
    (configmap(b'"data":{"a":tru}'), "invalid character '}' in literal true (expecting 'e')"),
    (configmap(b'"data":{"a":"\\x"}'), "invalid character 'x' in string escape code"),
    (configmap(b'"data":{"a":"\x01"}'), "invalid character '\\x01' in string literal"),
    (configmap(b'"data":{"a":-}'), "invalid character '}' in numeric literal"),
    (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}} x',
     "invalid character 'x' after top-level value"),
    (b"nul", "invalid character ' ' in literal null (expecting 'l')"),
    (b"\x81", "invalid character '\\u0081' looking for beginning of value"),
    (b"[1,2]", f"json: cannot unmarshal array into Go value of type {FIND_KIND}"),
    (b'"str"', f"json: cannot unmarshal string into Go value of type {FIND_KIND}"),
    (b'{"kind":1}', "json: cannot unmarshal number into Go struct field .kind of type string"),
    (b'{"metadata":{},"APIVERSION":["v1"],"kind":1}',
     "json: cannot unmarshal array into Go struct field .apiVersion of type string"),
], ids=["truncated", "trailing comma", "no colon", "bad literal", "bad escape", "control character", "bad number",
        "after the document", "nul", "not UTF-8", "array", "string", "kind a number", "apiVersion an array"])
@pytest.mark.parametrize("verb", ["create", "update"])
async def test_malformed_json_bodies(client: Client, verb: str, data: bytes, problem: str) -> None:
    await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    before = client.revision()
    failed = await refused((create if verb == "create" else update)(client, body(data)))
    message = ("the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; "
               f"json parse error: {problem} ({summary_of(data)})")
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (400, "BadRequest", message)
    assert client.revision() == before


@pytest.mark.parametrize(("verb", "data", "code", "message"), [
    ("create", b"null", 422,
     'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'),
    ("update", b"null", 400, "the name of the object (c based on URL) was undeterminable: name must be provided"),
    ("update", b'{"metadata":{"name":""}}', 400,
     "the name of the object (c based on URL) was undeterminable: name must be provided"),
    ("update", b'{"metadata":{"name":"d","namespace":"other"}}', 400,
     "the namespace of the provided object does not match the namespace sent on the request"),
    ("update", b'{"metadata":{"name":"d"}}', 400, "the name of the object (d) does not match the name on the URL (c)"),
])
async def test_a_body_naming_no_object(client: Client, verb: str, data: bytes, code: int, message: str) -> None:
    await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    failed = await refused((create if verb == "create" else update)(client, body(data)))
    assert (failed.status["code"], failed.status["message"]) == (code, message)


async def test_a_string_that_is_not_utf8_is_read_as_go_reads_it(client: Client) -> None:
    """Go's decoder puts U+FFFD for each byte of a string that is not UTF-8, where orjson refuses the body."""
    answer: Any = await create(client, body(configmap(b'"data":{"a":"x\xff\xfey"}')))
    assert orjson.loads(answer.object.data)["data"] == {"a": "x\ufffd\ufffdy"}


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


JSON_PATCH = core_pb2.PATCH_TYPE_JSON
OPS = "[]handlers.jsonPatchOp"


# As kube-apiserver 1.28 answers them: malformed patches in Go 1.21's encoding/json words (a strategic merge patch's
# bare, the others' behind "error decoding patch: "); a JSON patch read with field validation as kjson decodes it
# into []handlers.jsonPatchOp, without (fieldValidation=Ignore) as evanphx/json-patch's DecodePatch reads it.
@pytest.mark.parametrize(("kind", "document", "validation", "message"), [
    (MERGE, b'{"a":', "", "error decoding patch: unexpected end of JSON input"),
    (STRATEGIC, b'{"a":', "", "unexpected end of JSON input"),
    (STRATEGIC, b'{"a":tru}', "", "invalid character '}' in literal true (expecting 'e')"),
    (MERGE, b'{"a":NaN}', "", "error decoding patch: invalid character 'N' looking for beginning of value"),
    (JSON_PATCH, b'[{"op":"add","path":"/x","value":}]', "",
     "error decoding patch: invalid character '}' looking for beginning of value"),
    (JSON_PATCH, b'[{"op":"add","path":"/x","value":NaN}]', "",
     "error decoding patch: invalid character 'N' looking for beginning of value"),
    (JSON_PATCH, b'[{"op":"add","path":"/x","value":}]', "Ignore",
     "invalid character '}' looking for beginning of value"),
    (JSON_PATCH, b'"x"', "", f"error decoding patch: json: cannot unmarshal string into Go value of type {OPS}"),
    (JSON_PATCH, b"{}", "Strict", f"error decoding patch: json: cannot unmarshal object into Go value of type {OPS}"),
    (JSON_PATCH, b"[1]", "", "error decoding patch: json: cannot unmarshal number into Go value of type "
     "handlers.jsonPatchOp"),
    (JSON_PATCH, b'[{"op":1,"path":"/x"}]', "", "error decoding patch: json: cannot unmarshal number into Go struct "
     "field jsonPatchOp.op of type string"),
    (JSON_PATCH, b"1", "Ignore", "json: cannot unmarshal number into Go value of type jsonpatch.Patch"),
    (JSON_PATCH, b"[true]", "Ignore", "json: cannot unmarshal bool into Go value of type jsonpatch.Operation"),
])
async def test_malformed_patches(client: Client, kind: Any, document: bytes, validation: str, message: str) -> None:
    await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    before = client.revision()
    failed = await refused(client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=CM, type=kind, patch=document, options={"fieldManager": "m", "fieldValidation": validation})))
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (400, "BadRequest", message)
    assert client.revision() == before


@pytest.mark.parametrize("validation", ["", "Ignore"])
async def test_a_null_json_patch_changes_nothing(client: Client, validation: str) -> None:
    created = await client.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    answer: Any = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=CM, type=JSON_PATCH, patch=b"null", options={"fieldManager": "m", "fieldValidation": validation}))
    assert orjson.loads(answer.object.data)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


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
