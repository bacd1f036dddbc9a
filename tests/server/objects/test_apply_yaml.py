"""Apply configurations read as kube-apiserver reads them (sigs.k8s.io/yaml over yaml.v2), over the
core's gRPC Patch: JSON-style YAML with trailing commas, keys given twice (fieldValidation decides:
400 for Strict, one warning each for Warn), and the alias-bomb bound."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, path, refused
from tests.server.machinery.codec.test_yamlread import BOMB, REFUSED_WITHIN

A = path("configmaps", "default", "a")
HEAD = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
TWICE = HEAD + b"data:\n  k: one\n  k: two\n"  # line 7 repeats k
TWICE_JSON = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"one","k":"two"}}'


async def apply(client: Client, body: bytes, **options: Any) -> core_pb2.PatchResponse:
    response: core_pb2.PatchResponse = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=A, type=core_pb2.PATCH_TYPE_APPLY, patch=body, options={"fieldManager": "alpha", **options}))
    return response


@pytest.mark.parametrize("body", [
    pytest.param(b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "two",},}',
                 id="JSON with trailing commas"),
    pytest.param(HEAD + b'data: {"k": "two",}\n', id="flow mapping with a trailing comma"),
    pytest.param(TWICE, id="repeated key, last wins"),
    pytest.param(TWICE_JSON, id="repeated JSON key, last wins"),
])
async def test_configurations_kube_reads(client: Client, body: bytes) -> None:
    response = await apply(client, body, fieldValidation="Ignore")
    assert orjson.loads(response.object.data)["data"] == {"k": "two"}
    assert list(response.warnings) == []


@pytest.mark.parametrize("body", [pytest.param(TWICE, id="YAML"), pytest.param(TWICE_JSON, id="JSON")])
@pytest.mark.parametrize(("validation", "warnings"), [
    pytest.param("Warn", ['line 7: key "k" already set in map'], id="Warn"),
    pytest.param("", ['line 7: key "k" already set in map'], id="default"),
])
async def test_repeated_keys_warn(client: Client, body: bytes, validation: str, warnings: list[str]) -> None:
    if body == TWICE_JSON:
        warnings = [w.replace("line 7", "line 1") for w in warnings]
    response = await apply(client, body, fieldValidation=validation)
    assert list(response.warnings) == warnings
    assert orjson.loads(response.object.data)["data"] == {"k": "two"}


@pytest.mark.parametrize(("body", "line"), [pytest.param(TWICE, 7, id="YAML"), pytest.param(TWICE_JSON, 1, id="JSON")])
async def test_repeated_keys_are_a_bad_request_when_strict(client: Client, body: bytes, line: int) -> None:
    # applyPatcher: yaml.UnmarshalStrict after the apply, wrapped in "error strict decoding YAML: ...".
    before = client.revision()
    failed = await refused(apply(client, body, fieldValidation="Strict"))
    assert failed.status == kube.bad_request(
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        f'  line {line}: key "k" already set in map')
    assert client.revision() == before


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(b"k: v\na: b: c\n", "yaml: line 2: mapping values are not allowed in this context", id="syntax"),
    pytest.param(BOMB, "yaml: document contains excessive aliasing", id="alias bomb"),
])
async def test_unreadable_configurations(client: Client, body: bytes, message: str) -> None:
    started = time.monotonic()
    failed = await refused(apply(client, body))
    assert failed.status == kube.bad_request(f"error decoding YAML: error converting YAML to JSON: {message}")
    assert time.monotonic() - started < REFUSED_WITHIN  # the event loop is never held for the bomb's expansion
