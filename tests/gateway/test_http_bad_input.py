"""Bad input over REST gets kube-apiserver's 4xx Status on both core transports, never a 500 or a
dropped connection: client text that would reach a header raw, bodies nested too deeply, objects too
large to store, protobuf bodies Go decodes but Python's protobuf does not, and YAML alias bombs at every
entry point that reads YAML."""

from __future__ import annotations

import time

import orjson
import pytest

from capstan.api.core.v1 import core_pb2 as core
from capstan.api.meta.v1 import meta_pb2
from gateway.codecs import protobuf as protobuf_codec
from gateway.handlers.respond import warning_headers
from server.machinery.codec.depth import MAX_DEPTH
from server.machinery.codec.quantity import ERR_FORMAT
from server.machinery.codec.wire import varint
from server.objects.size import MAX_OBJECT_BYTES
from tests.gateway.conftest import Server
from tests.server.machinery.codec.test_yamlread import BOMB, REFUSED_WITHIN

CMS = "/api/v1/namespaces/default/configmaps"
JSON = "application/json"
YAML = "application/yaml"
APPLY = "application/apply-patch+yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def configmap(name: str, extra: bytes = b"") -> bytes:
    return b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' + name.encode() + b'"}' + extra + b"}"


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand to send what Python's protobuf would not."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def envelope(kind: str, message: bytes) -> bytes:
    return protobuf_codec.encode_envelope("v1", kind, message)


async def test_a_control_character_in_an_unknown_field_is_left_out_of_the_warnings(server: Server) -> None:
    # kube's warning recorder drops a text net/http could not send (NewWarningHeader refuses control
    # characters); the object is stored and the other warnings are answered.
    body = configmap("c", b',"\x7fdata":{"a":"b"},"\xc2\x85next":1,"caf\xc3\xa9":1')
    resp = await server.request("POST", CMS, body=body, headers={"Content-Type": JSON})
    assert resp.status == 201, resp.body
    assert resp.headers.getall("Warning") == ['299 - "unknown field \\"café\\""']
    assert (await server.request("GET", CMS + "/c")).status == 200


@pytest.mark.parametrize(("texts", "headers"), [
    pytest.param(["a", "a", "b\\c"], ['299 - "a"', '299 - "b\\\\c"'], id="repeated once, backslash escaped"),
    pytest.param(["bad\x00", "bad\x9f", "bad\ud800", "ok"], ['299 - "ok"'],
                 id="control characters and surrogates dropped"),
    pytest.param(["x" * 4000, "y" * 96], ['299 - "' + "x" * 4000 + '"', '299 - "' + "y" * 96 + '"'],
                 id="4096 runes fit"),
    pytest.param(["x" * 4000, "y" * 97, "z"], ['299 - "' + "x" * 256 + '"', '299 - "' + "y" * 97 + '"', '299 - "z"'],
                 id="past 4096 runes each is cut to 256"),
    pytest.param([f"w{i:02d}" + "x" * 300 for i in range(20)],
                 ['299 - "' + (f"w{i:02d}" + "x" * 300)[:256] + '"' for i in range(16)], id="then left out"),
])
def test_warning_headers_as_kubes_recorder_writes_them(texts: list[str], headers: list[str]) -> None:
    assert warning_headers(texts) == headers


TOO_DEEP = "invalid character '[' exceeded max depth"


def unrecognized(kind: str, problem: str, summary: str) -> str:
    return f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; " \
           f"json parse error: {problem} ({summary})"


YAML_HEAD = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n"


def block_yaml(depth: int) -> bytes:
    keys = b"".join(b"  " * (i + 1) + b"k:\n" for i in range(depth))
    return YAML_HEAD + b"unk:\n" + keys + b"  " * (depth + 1) + b"v: 1\n"


CM_SUMMARY = '{"apiVersion":"v1","kind":"Con ...'
YAML_DEEP = "yaml: the document nests too deeply"
DEEP_CASES = [
    pytest.param("POST", CMS, JSON, configmap("d", b',"unk":' + nested(1000)),
                 unrecognized("ConfigMap", TOO_DEEP, CM_SUMMARY), id="create, 1,000 deep unknown field"),
    pytest.param("POST", CMS, JSON, configmap("d", b',"unk":' + nested(MAX_DEPTH)),
                 unrecognized("ConfigMap", TOO_DEEP, CM_SUMMARY), id="create, just past the bound"),
    pytest.param("POST", CMS, JSON, configmap("d", b',"unk":' + nested(5000)),
                 unrecognized("ConfigMap", TOO_DEEP, CM_SUMMARY), id="create, deeper than orjson reads"),
    pytest.param("PUT", CMS + "/base", JSON, configmap("base", b',"unk":' + nested(1000)),
                 unrecognized("ConfigMap", TOO_DEEP, CM_SUMMARY), id="update"),
    pytest.param("POST", CMS, YAML, YAML_HEAD + b"unk: " + nested(300) + b"\n",
                 "the object provided is unrecognized (must be of type ConfigMap): " + YAML_DEEP
                 + f" ({YAML_HEAD[:30].hex()} ...)", id="create YAML"),
    pytest.param("PATCH", CMS + "/base", "application/merge-patch+json", b'{"unk":' + nested(1000) + b"}",
                 "error decoding patch: " + TOO_DEEP, id="merge patch"),
    pytest.param("PATCH", CMS + "/base", "application/strategic-merge-patch+json", b'{"unk":' + nested(900) + b"}",
                 "error decoding patch: " + TOO_DEEP, id="strategic merge patch"),
    pytest.param("PATCH", CMS + "/base", "application/json-patch+json",
                 b'[{"op":"add","path":"/unk","value":' + nested(2000) + b"}]", "error decoding patch: " + TOO_DEEP,
                 id="JSON patch deeper than the stdlib reads"),
    pytest.param("PATCH", CMS + "/base?fieldManager=m", APPLY, block_yaml(900),
                 "error decoding YAML: error converting YAML to JSON: " + YAML_DEEP, id="apply, 900 deep YAML"),
    pytest.param("PATCH", CMS + "/base?fieldManager=m", APPLY, configmap("base", b',"unk":' + nested(900)),
                 "error decoding YAML: error converting YAML to JSON: " + YAML_DEEP, id="apply, 900 deep JSON"),
]


@pytest.mark.parametrize(("method", "path", "content_type", "body", "message"), DEEP_CASES)
async def test_bodies_nested_too_deeply_are_a_bad_request(
    server: Server, method: str, path: str, content_type: str, body: bytes, message: str,
) -> None:
    await server.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base"}})
    before = server.revision()
    resp = await server.request(method, path, body=body, headers={"Content-Type": content_type})
    assert (resp.status, resp.json()["reason"], resp.json()["message"]) == (400, "BadRequest", message)
    assert server.revision() == before
    assert (await server.request("GET", CMS + "/base")).status == 200  # the connection and the server live on


STORE_TOO_LARGE = "Request entity too large: etcdserver: request is too large: the object is "


def event(name: str, size: int) -> bytes:
    head = (b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"' + name.encode()
            + b'"},"involvedObject":{},"message":"')
    return head + b"x" * (size - len(head) - 2) + b'"}'


@pytest.mark.parametrize(("body", "status", "message"), [
    pytest.param(event("big", 3 * 1024 * 1024 + 1), 413, "Request entity too large: limit is 3145728",
                 id="a body over 3 MiB"),
    pytest.param(event("big", 3 * 1024 * 1024 - 100), 413,
                 STORE_TOO_LARGE, id="a 3 MiB Event"),
    pytest.param(event("big", MAX_OBJECT_BYTES + 100), 413, STORE_TOO_LARGE, id="just over the limit"),
])
async def test_objects_too_large_to_store_are_refused(server: Server, body: bytes, status: int, message: str) -> None:
    before = server.revision()
    resp = await server.request("POST", "/api/v1/namespaces/default/events", body=body,
                                headers={"Content-Type": JSON})
    assert (resp.status, resp.json()["reason"]) == (status, "RequestEntityTooLarge")
    assert resp.json()["message"].startswith(message)
    assert server.revision() == before


async def test_an_update_past_the_size_limit_is_refused_and_a_smaller_one_is_stored(server: Server) -> None:
    events = "/api/v1/namespaces/default/events"
    await server.create(events, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "grow"},
                                 "involvedObject": {}})
    before = server.revision()
    resp = await server.request("PATCH", events + "/grow", body=orjson.dumps({"message": "x" * MAX_OBJECT_BYTES}),
                                headers={"Content-Type": "application/merge-patch+json"})
    assert (resp.status, resp.json()["reason"]) == (413, "RequestEntityTooLarge"), resp.body
    assert resp.json()["message"].endswith(f"limit is {MAX_OBJECT_BYTES}")
    assert server.revision() == before
    smaller = orjson.dumps({"message": "x" * (MAX_OBJECT_BYTES - 1000)})
    resp = await server.request("PATCH", events + "/grow", body=smaller,
                                headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status == 200, resp.body[:300]


def meta_with_fields_v1(raw: bytes) -> meta_pb2.ObjectMeta:
    return meta_pb2.ObjectMeta(name="mf", managedFields=[meta_pb2.ManagedFieldsEntry(
        manager="someone", operation="Update", apiVersion="v1", fieldsType="FieldsV1",
        fieldsV1=meta_pb2.FieldsV1(Raw=raw))])


def quota(quantity: bytes) -> bytes:
    spec = field(1, field(1, b"cpu") + field(2, field(1, quantity)))  # hard: {"cpu": Quantity{string}}
    return envelope("ResourceQuota", core.ResourceQuota(metadata=meta_pb2.ObjectMeta(name="q")).SerializeToString()
                    + field(2, spec))


@pytest.mark.parametrize(("path", "body", "message"), [
    pytest.param(CMS, envelope("ConfigMap", core.ConfigMap(metadata=meta_pb2.ObjectMeta(name="u")).SerializeToString()
                               + field(2, field(1, b"\xffk") + field(2, b"v"))),
                 'ConfigMap in version "v1" cannot be handled as a ConfigMap: proto: a map key is not valid UTF-8',
                 id="a map key that is not UTF-8"),
    pytest.param("/api/v1/namespaces/default/resourcequotas", quota(b"\xff\xfe"),
                 f'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: {ERR_FORMAT}',
                 id="a Quantity that is not text"),
    pytest.param("/api/v1/namespaces/default/resourcequotas", quota(b"lots"),
                 f'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: {ERR_FORMAT}',
                 id="a Quantity that does not parse"),
])
async def test_protobuf_bodies_python_cannot_read_are_a_bad_request(
    server: Server, path: str, body: bytes, message: str,
) -> None:
    resp = await server.request("POST", path, body=body, headers={"Content-Type": PROTOBUF, "Accept": JSON})
    assert (resp.status, resp.json()["reason"], resp.json()["message"]) == (400, "BadRequest", message)


async def test_managed_fields_that_are_not_json_are_replaced_as_kubes_field_manager_replaces_them(
    server: Server,
) -> None:
    # decodeLiveOrNew: managedFields that do not decode give way to the live object's (none on a create),
    # and the write is recorded for its own manager.
    body = envelope("ConfigMap", core.ConfigMap(metadata=meta_with_fields_v1(b"not json"), data={"a": "b"})
                    .SerializeToString())
    resp = await server.request("POST", CMS + "?fieldManager=me", body=body,
                                headers={"Content-Type": PROTOBUF, "Accept": JSON})
    assert resp.status == 201, resp.body
    managed = resp.json()["metadata"]["managedFields"]
    assert [(m["manager"], m["fieldsV1"]) for m in managed] == [("me", {"f:data": {".": {}, "f:a": {}}})]
    update = envelope("ConfigMap", core.ConfigMap(metadata=meta_with_fields_v1(b"\xff{"), data={"a": "c"})
                      .SerializeToString())
    resp = await server.request("PUT", CMS + "/mf?fieldManager=other", body=update,
                                headers={"Content-Type": PROTOBUF, "Accept": JSON})
    assert resp.status == 200, resp.body
    # the live object's entries, then the update: "someone"'s unreadable entry never appears
    assert [m["manager"] for m in resp.json()["metadata"]["managedFields"]] == ["me", "other"]


BOMB_CM = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n" + b"\n".join(
    b"  " + line if i else b"data:\n  " + line for i, line in enumerate(BOMB.strip().split(b"\n")))


@pytest.mark.parametrize(("method", "path", "content_type", "message"), [
    pytest.param("POST", CMS, YAML, "the object provided is unrecognized (must be of type ConfigMap): "
                 "yaml: document contains excessive aliasing", id="create"),
    pytest.param("PUT", CMS + "/base", YAML, "the object provided is unrecognized (must be of type ConfigMap): "
                 "yaml: document contains excessive aliasing", id="update"),
    pytest.param("PATCH", CMS + "/base?fieldManager=m", APPLY,
                 "error decoding YAML: error converting YAML to JSON: yaml: document contains excessive aliasing",
                 id="apply"),
    pytest.param("DELETE", CMS + "/base", YAML, "yaml: document contains excessive aliasing", id="DeleteOptions"),
    pytest.param("DELETE", CMS, YAML, "yaml: document contains excessive aliasing", id="DeleteOptions of a collection"),
])
async def test_a_yaml_alias_bomb_is_refused_at_every_entry_point(
    server: Server, method: str, path: str, content_type: str, message: str,
) -> None:
    await server.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base"}})
    before = server.revision()
    started = time.monotonic()
    resp = await server.request(method, path, body=BOMB_CM, headers={"Content-Type": content_type})
    assert time.monotonic() - started < REFUSED_WITHIN
    assert (resp.status, resp.json()["reason"]) == (400, "BadRequest"), resp.body
    assert message in resp.json()["message"]
    assert server.revision() == before


INVALID_PATCH = (422, "Invalid", "the server rejected our request due to an error in our request")


@pytest.mark.parametrize(("name", "operations", "answer"), [
    pytest.param("base", [{"op": "nope", "path": "/data/x"}], INVALID_PATCH, id="unknown op"),
    pytest.param("base", [{"path": "/data/x", "value": "1"}], INVALID_PATCH, id="no op"),
    pytest.param("base", [{"op": "add", "path": "/data/x"}], INVALID_PATCH, id="add without a value"),
    pytest.param("nope", [{"op": "nope", "path": "/data/x"}],
                 (404, "NotFound", 'configmaps "nope" not found'), id="unknown op on a missing object"),
])
async def test_json_patch_operations_are_checked_when_applied(
    server: Server, name: str, operations: list[dict[str, str]], answer: tuple[int, str, str],
) -> None:
    """evanphx/json-patch decodes any list of objects; an operation it cannot apply fails when it is applied,
    after the object was read: kube-apiserver 1.28's 422 of NewGenericServerResponse (details {}), or the
    object's 404 first."""
    await server.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base"}})
    before = server.revision()
    resp = await server.request("PATCH", f"{CMS}/{name}", body=orjson.dumps(operations),
                                headers={"Content-Type": "application/json-patch+json"})
    doc = resp.json()
    assert (resp.status, doc["reason"], doc["message"]) == answer
    if answer[0] == 422:
        assert doc["details"] == {}
    assert server.revision() == before
