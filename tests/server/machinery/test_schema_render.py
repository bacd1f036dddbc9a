"""ProtoSchema.to_proto answers the whole object's encoding, whether or not it re-encodes only metadata."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capstan.api.apps.v1 import apps_pb2
from capstan.api.core.v1 import core_pb2 as core_v1
from server.machinery.codec import transcode
from server.machinery.schema import RESTS_MAX_BYTES, ProtoSchema, SchemaError

ENTRY = {"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2026-01-02T03:04:05Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}
META = {"name": "x", "namespace": "ns", "uid": "u-1", "creationTimestamp": "2026-01-02T03:04:05Z", "generation": 2,
        "labels": {"b": "1", "a": "2"}, "annotations": {"z": "y"}, "finalizers": ["f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o-1", "controller": True}]}


def full(message: Any, obj: dict[str, Any]) -> bytes:
    return transcode.decode(message, obj).message.SerializeToString(deterministic=True)  # type: ignore[no-any-return]


def set_meta(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].update(changes)
    return out


CM = {"metadata": {"name": "x"}, "data": {"b": "2", "a": "1"}, "binaryData": {"c": "AA=="}}
DEPLOYMENT = {"metadata": {"name": "d"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
                                                  "template": {"metadata": {"labels": {"app": "w"}},
                                                               "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


NORMAL_DEPLOYMENT = transcode.encode(transcode.decode(apps_pb2.Deployment, DEPLOYMENT).message)


# remembered: whether normalize keeps the body's other fields' protobuf (a body in normal form), so
# to_proto encodes only metadata.
@pytest.mark.parametrize(("message", "body", "changes", "remembered"), [
    (core_v1.ConfigMap, CM, {}, True),
    (core_v1.ConfigMap, {"apiVersion": "v1", "kind": "ConfigMap", **CM}, META, True),
    (core_v1.ConfigMap, CM, {**META, "managedFields": [ENTRY]}, True),
    (core_v1.ConfigMap, CM, {**META, "managedFields": [ENTRY, {**ENTRY, "manager": "n", "subresource": "status"}]},
     True),
    (core_v1.ConfigMap, CM, {"managedFields": [ENTRY, None]}, True),
    (core_v1.ConfigMap, CM, {"managedFields": []}, True),
    (core_v1.ConfigMap, {**CM, "unknown": 1}, {"uid": "u"}, False),
    (apps_pb2.Deployment, DEPLOYMENT, {**META, "managedFields": [ENTRY]}, False),  # prints structs it lacks
    (apps_pb2.Deployment, NORMAL_DEPLOYMENT, {**META, "managedFields": [ENTRY]}, True),
    (core_v1.Secret, {"metadata": {"name": "s"}, "type": "", "immutable": False}, {"uid": "u"}, False),  # "" set
])
def test_metadata_only_encoding_is_the_whole_encoding(message: Any, body: dict[str, Any], changes: dict[str, Any],
                                                      remembered: bool) -> None:
    schema = ProtoSchema(message)
    normalized, _ = schema.normalize(body)
    assert (len(schema._rests) == 1) is remembered  # white-box: which path to_proto takes
    written = set_meta(normalized, **changes)
    assert schema.to_proto(written) == full(message, written)


def test_a_changed_body_is_encoded_whole() -> None:
    schema = ProtoSchema(core_v1.ConfigMap)
    normalized, _ = schema.normalize(CM)
    changed = set_meta(normalized, uid="u")
    changed["data"]["a"] = "changed"
    assert schema.to_proto(changed) == full(core_v1.ConfigMap, changed)


def test_bad_metadata_is_worded_as_for_the_whole_object() -> None:
    schema = ProtoSchema(core_v1.ConfigMap)
    normalized, _ = schema.normalize(CM)
    with pytest.raises(SchemaError) as caught:
        schema.to_proto(set_meta(normalized, managedFields=[{**ENTRY, "time": 5}]))
    assert "ManagedFieldsEntry.time" in str(caught.value) or "time" in str(caught.value)


@pytest.mark.parametrize(("count", "size", "held_at_most"), [
    (300, 100, 256),  # the entry bound binds
    (20, 1 << 20, 7),  # the byte bound binds: a 1 MiB body's JSON and protobuf weigh ~2 MiB, 16 MiB in all
])
def test_remembered_bodies_stay_within_both_bounds(count: int, size: int, held_at_most: int) -> None:
    schema = ProtoSchema(core_v1.ConfigMap)
    for i in range(count):
        body = {"metadata": {"name": f"c{i}"}, "data": {"k": f"{i:06}" + "x" * size}}
        normalized, _ = schema.normalize(body)
        assert schema.to_proto(normalized) == full(core_v1.ConfigMap, normalized)
    assert len(schema._rests) <= held_at_most
    assert schema._rests.bytes <= RESTS_MAX_BYTES
    assert schema._rests.bytes == sum(len(key) + len(value) for key, value in schema._rests._entries.items())
