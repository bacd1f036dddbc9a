"""A stored value renders its object with the resourceVersion spliced in, and PartialObjectMetadata from it.

The expected bytes are the protobuf library's own: the message with resourceVersion set, serialized
deterministically, and a meta.k8s.io PartialObjectMetadata holding that message's metadata.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.api.meta.v1 import meta_pb2
from server.machinery import stored
from tests.server.machinery.test_schema_render import CM, ENTRY, META, full

Obj = dict[str, Any]


def value_of(message: Any, obj: Obj, written_at: str = "") -> bytes:
    """The stored value of `obj` (no resourceVersion), as a write packs it."""
    body = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return stored.pack(orjson.dumps(body), full(message, body), written_at)


def with_version(obj: Obj, resource_version: str) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = resource_version
    return out


@pytest.mark.parametrize(("message", "obj"), [
    (core_v1.ConfigMap, CM),  # a name alone: ObjectMeta's head only
    (core_v1.ConfigMap, {**CM, "metadata": {**META, "managedFields": [ENTRY]}}),  # fields before and after 6
    (core_v1.ConfigMap, {"metadata": {"name": "x", "generation": 3}}),  # after 6 only, no other field
    (core_v1.Namespace, {"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {"finalizers": ["kubernetes"]}}),
    # strings of 128 bytes and more before field 6: their lengths take two bytes
    (core_v1.ConfigMap, {"metadata": {"name": "n" * 200, "generateName": "g" * 127, "namespace": "s" * 128,
                                      "uid": "u" * 63, "generation": 2}}),
])
@pytest.mark.parametrize("resource_version", ["1", "123456789012"])
@pytest.mark.parametrize("written_at", ["", "v1", "stable.example.com/v1beta2", f"{'g' * 253}/{'v' * 63}"])
def test_renderings_carry_the_resource_version(message: Any, obj: Obj, resource_version: str,
                                               written_at: str) -> None:
    value = value_of(message, obj, written_at)
    assert stored.written_at(value) == written_at
    whole = full(message, with_version(obj, resource_version))
    assert stored.render_proto(value, resource_version) == whole
    partial = meta_pb2.PartialObjectMetadata()
    partial.metadata.CopyFrom(message.FromString(whole).metadata)
    assert stored.framed_metadata(value, resource_version) == partial.SerializeToString(deterministic=True)
    rendered = orjson.loads(stored.render_json(value, resource_version))
    assert rendered == with_version(obj, resource_version)


@pytest.mark.parametrize("written_at", ["", "example.com/v2"])
def test_a_value_without_protobuf_has_no_framed_metadata(written_at: str) -> None:
    value = stored.pack(orjson.dumps({"metadata": {"name": "w"}, "spec": {}}), b"", written_at)
    assert stored.framed_metadata(value, "7") is None
    assert stored.written_at(value) == written_at
    assert orjson.loads(stored.render_json(value, "7")) == {"metadata": {"resourceVersion": "7", "name": "w"},
                                                            "spec": {}}


@pytest.mark.parametrize(("json", "expected"), [
    # kube prints ObjectMeta in field order: resourceVersion right after uid
    (b'{"metadata":{"name":"a","namespace":"d","uid":"u-1","generation":2},"data":{}}',
     b'{"kind":"K","metadata":{"name":"a","namespace":"d","uid":"u-1","resourceVersion":"7","generation":2},'
     b'"data":{}}'),
    (b'{"metadata":{"name":"a","generateName":"a-","uid":"u-1"}}',
     b'{"kind":"K","metadata":{"name":"a","generateName":"a-","uid":"u-1","resourceVersion":"7"}}'),
    # no uid of metadata's own: first, as before the uid is known
    (b'{"metadata":{"name":"a"},"data":{"uid":"x"}}', b'{"kind":"K","metadata":{"resourceVersion":"7","name":"a"},'
                                                      b'"data":{"uid":"x"}}'),
    (b'{"metadata":{"name":"a","labels":{"uid":"x"}}}',
     b'{"kind":"K","metadata":{"resourceVersion":"7","name":"a","labels":{"uid":"x"}}}'),
])
def test_the_resource_version_goes_where_kube_prints_it(json: bytes, expected: bytes) -> None:
    rendered = stored.render_json(stored.pack(json, b""), "7", b'"kind":"K",')
    assert rendered == expected
    assert orjson.loads(rendered)["metadata"]["resourceVersion"] == "7"
