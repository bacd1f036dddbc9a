"""Golden bytes for the Kubernetes-compatible messages generated from protos/capstan/api.

kubectl and client-go speak these messages, so their field numbers and names are wire facts.
Every expectation here is written by hand from upstream's numbers (k8s.io/apimachinery and
k8s.io/api generated.proto), as tag = number << 3 | wire type, never derived from our own
descriptors: a renumbered or renamed field fails here.
"""

from __future__ import annotations

import struct
from pathlib import PurePosixPath
from typing import Any

import pytest
from google.protobuf.message import Message

from capstan.api.core.v1 import core_pb2 as core
from capstan.api.intstr import intstr_pb2 as intstr
from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.resource import resource_pb2 as resource
from capstan.api.runtime import runtime_pb2 as runtime

VARINT, LEN = 0, 2

# The four bytes before every protobuf-encoded Kubernetes object.
MAGIC = b"k8s\x00"


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement on the wire
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def int_field(number: int, value: int) -> bytes:
    """A varint field (int32, int64, bool)."""
    return varint(number << 3 | VARINT) + varint(value)


def len_field(number: int, payload: str | bytes) -> bytes:
    """A length-delimited field (string, bytes, nested message, map entry)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | LEN) + varint(len(data)) + data


def entry(number: int, key: str, value: str | bytes) -> bytes:
    """One map entry: a nested message with key = 1 and value = 2."""
    return len_field(number, len_field(1, key) + len_field(2, value))


def label(message: type[Message]) -> str:
    """A test id such as "runtime.TypeMeta" (meta and runtime both define a TypeMeta)."""
    return f"{PurePosixPath(message.DESCRIPTOR.file.name).stem}.{message.__name__}"


def assign(msg: Message, field: str, value: Any) -> None:
    """Sets one field, whatever its shape; setattr also reaches `continue`, a Python keyword."""
    if isinstance(value, dict):
        getattr(msg, field).update(value)
    elif isinstance(value, list):
        getattr(msg, field).extend(value)
    elif isinstance(value, Message):
        getattr(msg, field).CopyFrom(value)
    else:
        setattr(msg, field, value)


T0 = 1_700_000_000  # a fixed instant, in seconds since the epoch

# (message, field, value, bytes of a message with only that field set). The number in each
# golden is upstream's field number for that field.
# fmt: off
SINGLE_FIELDS: list[tuple[type[Message], str, Any, bytes]] = [
    # meta/v1 ObjectMeta
    (meta.ObjectMeta, "name", "cm", len_field(1, "cm")),
    (meta.ObjectMeta, "generateName", "cm-", len_field(2, "cm-")),
    (meta.ObjectMeta, "namespace", "default", len_field(3, "default")),
    (meta.ObjectMeta, "selfLink", "/x", len_field(4, "/x")),
    (meta.ObjectMeta, "uid", "u-1", len_field(5, "u-1")),
    (meta.ObjectMeta, "resourceVersion", "42", len_field(6, "42")),
    (meta.ObjectMeta, "generation", 3, int_field(7, 3)),
    (meta.ObjectMeta, "creationTimestamp", meta.Time(seconds=T0), len_field(8, int_field(1, T0))),
    (meta.ObjectMeta, "deletionTimestamp", meta.Time(seconds=T0), len_field(9, int_field(1, T0))),
    (meta.ObjectMeta, "deletionGracePeriodSeconds", 30, int_field(10, 30)),
    (meta.ObjectMeta, "labels", {"app": "web"}, entry(11, "app", "web")),
    (meta.ObjectMeta, "annotations", {"a": ""}, entry(12, "a", "")),
    (meta.ObjectMeta, "finalizers", ["f1", "f2"], len_field(14, "f1") + len_field(14, "f2")),
    (meta.ObjectMeta, "managedFields", [meta.ManagedFieldsEntry(manager="m")],
     len_field(17, len_field(1, "m"))),
    # Go always writes non-pointer fields, even empty; proto2 presence reproduces that.
    (meta.ObjectMeta, "generateName", "", len_field(2, "")),
    (meta.ObjectMeta, "generation", 0, int_field(7, 0)),
    # meta/v1 ListMeta, Status, options, watch
    (meta.ListMeta, "resourceVersion", "7", len_field(2, "7")),
    (meta.ListMeta, "continue", "tok", len_field(3, "tok")),
    (meta.ListMeta, "remainingItemCount", 5, int_field(4, 5)),
    (meta.Status, "status", "Failure", len_field(2, "Failure")),
    (meta.Status, "reason", "NotFound", len_field(4, "NotFound")),
    (meta.Status, "details", meta.StatusDetails(kind="pods"), len_field(5, len_field(3, "pods"))),
    (meta.Status, "code", 404, int_field(6, 404)),
    (meta.StatusDetails, "uid", "u", len_field(6, "u")),
    (meta.StatusDetails, "retryAfterSeconds", 1, int_field(5, 1)),
    (meta.ListOptions, "continue", "tok", len_field(8, "tok")),
    (meta.ListOptions, "resourceVersionMatch", "Exact", len_field(10, "Exact")),
    (meta.ListOptions, "sendInitialEvents", True, int_field(11, 1)),
    (meta.DeleteOptions, "gracePeriodSeconds", -1, int_field(1, -1)),
    (meta.DeleteOptions, "propagationPolicy", "Foreground", len_field(4, "Foreground")),
    (meta.UpdateOptions, "fieldManager", "kubectl", len_field(2, "kubectl")),
    (meta.WatchEvent, "type", "ADDED", len_field(1, "ADDED")),
    (meta.WatchEvent, "object", runtime.RawExtension(raw=b"\x01"), len_field(2, len_field(1, b"\x01"))),
    # APIResource.verbs is a nested Verbs message, not a repeated field of APIResource.
    (meta.APIResource, "verbs", meta.Verbs(items=["get"]), len_field(4, len_field(1, "get"))),
    (meta.APIResource, "singularName", "pod", len_field(6, "pod")),
    (meta.TypeMeta, "kind", "Pod", len_field(1, "Pod")),
    # Tables have no upstream protobuf ("+protobuf=false"); these numbers are Capstan's own.
    (meta.Table, "rows", [meta.TableRow()], len_field(3, b"")),
    (meta.TableColumnDefinition, "priority", 1, int_field(5, 1)),
    # runtime: the envelope; TypeMeta here is apiVersion = 1, kind = 2 (the reverse of meta/v1)
    (runtime.TypeMeta, "apiVersion", "v1", len_field(1, "v1")),
    (runtime.TypeMeta, "kind", "ConfigMap", len_field(2, "ConfigMap")),
    (runtime.Unknown, "typeMeta", runtime.TypeMeta(kind="K"), len_field(1, len_field(2, "K"))),
    (runtime.Unknown, "raw", b"\x0a\x00", len_field(2, b"\x0a\x00")),
    (runtime.Unknown, "contentEncoding", "gzip", len_field(3, "gzip")),
    (runtime.Unknown, "contentType", "", len_field(4, "")),
    (intstr.IntOrString, "strVal", "http", len_field(3, "http")),
    (resource.Quantity, "string", "500m", len_field(1, "500m")),
    # core/v1
    (core.ConfigMap, "data", {"k": "v"}, entry(2, "k", "v")),
    (core.ConfigMap, "binaryData", {"b": b"\x00\xff"}, entry(3, "b", b"\x00\xff")),
    (core.ConfigMap, "immutable", True, int_field(4, 1)),
    (core.Secret, "data", {"k": b"\x00"}, entry(2, "k", b"\x00")),
    (core.Secret, "type", "Opaque", len_field(3, "Opaque")),
    (core.Secret, "stringData", {"k": "v"}, entry(4, "k", "v")),
    (core.Secret, "immutable", False, int_field(5, 0)),
    (core.NamespaceSpec, "finalizers", ["kubernetes"], len_field(1, "kubernetes")),
    (core.NamespaceStatus, "phase", "Active", len_field(1, "Active")),
    (core.NamespaceCondition, "lastTransitionTime", meta.Time(seconds=1), len_field(4, int_field(1, 1))),
]
# fmt: on


@pytest.mark.parametrize(
    ("message", "field", "value", "golden"),
    [pytest.param(*case, id=f"{label(case[0])}.{case[1]}={case[2]!r}") for case in SINGLE_FIELDS],
)
def test_single_field_bytes(message: type[Message], field: str, value: Any, golden: bytes) -> None:
    msg = message()
    assign(msg, field, value)
    assert msg.SerializeToString(deterministic=True) == golden
    assert message.FromString(golden) == msg


# Every field of every message: upstream name -> upstream number.
# fmt: off
FIELD_NUMBERS: list[tuple[type[Message], dict[str, int]]] = [
    (meta.TypeMeta, {"kind": 1, "apiVersion": 2}),
    (meta.ObjectMeta, {
        "name": 1, "generateName": 2, "namespace": 3, "selfLink": 4, "uid": 5, "resourceVersion": 6,
        "generation": 7, "creationTimestamp": 8, "deletionTimestamp": 9, "deletionGracePeriodSeconds": 10,
        "labels": 11, "annotations": 12, "ownerReferences": 13, "finalizers": 14, "managedFields": 17,
    }),
    (meta.OwnerReference, {
        "kind": 1, "name": 3, "uid": 4, "apiVersion": 5, "controller": 6, "blockOwnerDeletion": 7,
    }),
    (meta.ManagedFieldsEntry, {
        "manager": 1, "operation": 2, "apiVersion": 3, "time": 4, "fieldsType": 6, "fieldsV1": 7,
        "subresource": 8,
    }),
    (meta.FieldsV1, {"Raw": 1}),
    (meta.Time, {"seconds": 1, "nanos": 2}),
    (meta.MicroTime, {"seconds": 1, "nanos": 2}),
    (meta.Duration, {"duration": 1}),
    (meta.ListMeta, {"selfLink": 1, "resourceVersion": 2, "continue": 3, "remainingItemCount": 4}),
    (meta.Status, {"metadata": 1, "status": 2, "message": 3, "reason": 4, "details": 5, "code": 6}),
    (meta.StatusDetails, {"name": 1, "group": 2, "kind": 3, "causes": 4, "retryAfterSeconds": 5, "uid": 6}),
    (meta.StatusCause, {"reason": 1, "message": 2, "field": 3}),
    (meta.ListOptions, {
        "labelSelector": 1, "fieldSelector": 2, "watch": 3, "resourceVersion": 4, "timeoutSeconds": 5,
        "limit": 7, "continue": 8, "allowWatchBookmarks": 9, "resourceVersionMatch": 10,
        "sendInitialEvents": 11,
    }),
    (meta.GetOptions, {"resourceVersion": 1}),
    (meta.CreateOptions, {"dryRun": 1, "fieldManager": 3, "fieldValidation": 4}),
    (meta.UpdateOptions, {"dryRun": 1, "fieldManager": 2, "fieldValidation": 3}),
    (meta.PatchOptions, {"dryRun": 1, "force": 2, "fieldManager": 3, "fieldValidation": 4}),
    (meta.DeleteOptions, {
        "gracePeriodSeconds": 1, "preconditions": 2, "orphanDependents": 3, "propagationPolicy": 4,
        "dryRun": 5, "ignoreStoreReadErrorWithClusterBreakingPotential": 6,
    }),
    (meta.Preconditions, {"uid": 1, "resourceVersion": 2}),
    (meta.WatchEvent, {"type": 1, "object": 2}),
    (meta.TableOptions, {"includeObject": 1}),
    # Capstan's own numbering (upstream has no protobuf for tables), pinned all the same.
    (meta.Table, {"metadata": 1, "columnDefinitions": 2, "rows": 3}),
    (meta.TableColumnDefinition, {"name": 1, "type": 2, "format": 3, "description": 4, "priority": 5}),
    (meta.TableRow, {"cells": 1, "conditions": 2, "object": 3}),
    (meta.TableRowCondition, {"type": 1, "status": 2, "reason": 3, "message": 4}),
    (meta.PartialObjectMetadata, {"metadata": 1}),
    (meta.PartialObjectMetadataList, {"metadata": 1, "items": 2}),
    (meta.APIVersions, {"versions": 1, "serverAddressByClientCIDRs": 2}),
    (meta.APIGroupList, {"groups": 1}),
    (meta.APIGroup, {"name": 1, "versions": 2, "preferredVersion": 3, "serverAddressByClientCIDRs": 4}),
    (meta.GroupVersionForDiscovery, {"groupVersion": 1, "version": 2}),
    (meta.ServerAddressByClientCIDR, {"clientCIDR": 1, "serverAddress": 2}),
    (meta.APIResourceList, {"groupVersion": 1, "resources": 2}),
    (meta.APIResource, {
        "name": 1, "namespaced": 2, "kind": 3, "verbs": 4, "shortNames": 5, "singularName": 6,
        "categories": 7, "group": 8, "version": 9, "storageVersionHash": 10,
    }),
    (meta.Verbs, {"items": 1}),
    (meta.LabelSelector, {"matchLabels": 1, "matchExpressions": 2}),
    (meta.LabelSelectorRequirement, {"key": 1, "operator": 2, "values": 3}),
    (meta.Condition, {
        "type": 1, "status": 2, "observedGeneration": 3, "lastTransitionTime": 4, "reason": 5, "message": 6,
    }),
    (runtime.RawExtension, {"raw": 1}),
    (runtime.TypeMeta, {"apiVersion": 1, "kind": 2}),
    (runtime.Unknown, {"typeMeta": 1, "raw": 2, "contentEncoding": 3, "contentType": 4}),
    (intstr.IntOrString, {"type": 1, "intVal": 2, "strVal": 3}),
    (resource.Quantity, {"string": 1}),
    (core.Namespace, {"metadata": 1, "spec": 2, "status": 3}),
    (core.NamespaceSpec, {"finalizers": 1}),
    (core.NamespaceStatus, {"phase": 1, "conditions": 2}),
    (core.NamespaceCondition, {"type": 1, "status": 2, "lastTransitionTime": 4, "reason": 5, "message": 6}),
    (core.NamespaceList, {"metadata": 1, "items": 2}),
    (core.ConfigMap, {"metadata": 1, "data": 2, "binaryData": 3, "immutable": 4}),
    (core.ConfigMapList, {"metadata": 1, "items": 2}),
    (core.Secret, {"metadata": 1, "data": 2, "type": 3, "stringData": 4, "immutable": 5}),
    (core.SecretList, {"metadata": 1, "items": 2}),
]
# fmt: on


@pytest.mark.parametrize(("message", "numbers"), [pytest.param(*c, id=label(c[0])) for c in FIELD_NUMBERS])
def test_every_field_has_upstream_name_and_number(message: type[Message], numbers: dict[str, int]) -> None:
    assert {f.name: f.number for f in message.DESCRIPTOR.fields} == numbers


def full_object_meta(name: str, namespace: str) -> meta.ObjectMeta:
    """ObjectMeta with every field set, maps with several keys to exercise ordering."""
    return meta.ObjectMeta(
        name=name,
        generateName=f"{name}-",
        namespace=namespace,
        selfLink="",
        uid="6f2a7a3e-0000-4000-8000-000000000001",
        resourceVersion="12345",
        generation=2,
        creationTimestamp=meta.Time(seconds=T0),
        deletionTimestamp=meta.Time(seconds=T0 + 60),
        deletionGracePeriodSeconds=30,
        labels={"app": "web", "tier": "front", "a": ""},
        annotations={"note": "x" * 200, "kubectl.kubernetes.io/last-applied-configuration": "{}"},
        ownerReferences=[
            meta.OwnerReference(
                apiVersion="apps/v1",
                kind="Deployment",
                name="web",
                uid="u-2",
                controller=True,
                blockOwnerDeletion=True,
            )
        ],
        finalizers=["example.com/a", "example.com/b"],
        managedFields=[
            meta.ManagedFieldsEntry(
                manager="kubectl",
                operation="Apply",
                apiVersion="v1",
                time=meta.Time(seconds=T0),
                fieldsType="FieldsV1",
                fieldsV1=meta.FieldsV1(Raw=b'{"f:data":{}}'),
                subresource="",
            )
        ],
    )


def full_config_map() -> core.ConfigMap:
    return core.ConfigMap(
        metadata=full_object_meta("game-config", "default"),
        data={"game.properties": "lives=3\n", "ui": "dark", "": "empty key"},
        binaryData={"blob": bytes(range(256))},
        immutable=True,
    )


def full_namespace() -> core.Namespace:
    return core.Namespace(
        metadata=full_object_meta("team-a", ""),
        spec=core.NamespaceSpec(finalizers=["kubernetes"]),
        status=core.NamespaceStatus(
            phase="Terminating",
            conditions=[
                core.NamespaceCondition(
                    type="NamespaceDeletionContentFailure",
                    status="False",
                    lastTransitionTime=meta.Time(seconds=T0),
                    reason="ContentDeleted",
                    message="done",
                )
            ],
        ),
    )


@pytest.mark.parametrize("build", [full_config_map, full_namespace], ids=["ConfigMap", "Namespace"])
def test_full_object_round_trips_deterministically(build: Any) -> None:
    obj = build()
    every_field = {f.name for f in meta.ObjectMeta.DESCRIPTOR.fields}
    assert {f.name for f, _ in obj.metadata.ListFields()} == every_field
    data = obj.SerializeToString(deterministic=True)
    assert type(obj).FromString(data) == obj
    assert build().SerializeToString(deterministic=True) == data
    # Map order on the wire is sorted by key (as Go writes it), not insertion order.
    reordered = build()
    labels = dict(reordered.metadata.labels)
    reordered.metadata.ClearField("labels")
    reordered.metadata.labels.update(dict(reversed(labels.items())))
    assert reordered.SerializeToString(deterministic=True) == data


# What client-go (kubectl's library) sends to create ConfigMap default/game-config with one label
# and one data key, built by hand. Go writes every non-pointer field of ObjectMeta even when
# empty, and the zero creationTimestamp as an empty message; the Unknown envelope always carries
# contentEncoding and contentType, empty.
CLIENT_GO_OBJECT_META = (
    len_field(1, "game-config")  # name
    + len_field(2, "")  # generateName
    + len_field(3, "default")  # namespace
    + len_field(4, "")  # selfLink
    + len_field(5, "")  # uid
    + len_field(6, "")  # resourceVersion
    + int_field(7, 0)  # generation
    + len_field(8, b"")  # creationTimestamp: the zero time
    + entry(11, "app", "demo")  # labels
)
CLIENT_GO_CONFIG_MAP = len_field(1, CLIENT_GO_OBJECT_META) + entry(2, "ui", "dark")  # metadata, data
CLIENT_GO_ENVELOPE = MAGIC + (
    len_field(1, len_field(1, "v1") + len_field(2, "ConfigMap"))  # typeMeta {apiVersion, kind}
    + len_field(2, CLIENT_GO_CONFIG_MAP)  # raw
    + len_field(3, "")  # contentEncoding
    + len_field(4, "")  # contentType
)


def test_client_go_envelope_decodes() -> None:
    assert CLIENT_GO_ENVELOPE.startswith(MAGIC)
    unknown = runtime.Unknown.FromString(CLIENT_GO_ENVELOPE[len(MAGIC) :])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "ConfigMap")
    assert (unknown.contentEncoding, unknown.contentType) == ("", "")
    cm = core.ConfigMap.FromString(unknown.raw)
    assert (cm.metadata.name, cm.metadata.namespace) == ("game-config", "default")
    assert dict(cm.metadata.labels) == {"app": "demo"}
    assert dict(cm.data) == {"ui": "dark"}
    assert cm.metadata.HasField("creationTimestamp") and not cm.HasField("immutable")


def test_client_go_envelope_encodes_byte_for_byte() -> None:
    cm = core.ConfigMap(
        metadata=meta.ObjectMeta(
            name="game-config",
            generateName="",
            namespace="default",
            selfLink="",
            uid="",
            resourceVersion="",
            generation=0,
            creationTimestamp=meta.Time(),
            labels={"app": "demo"},
        ),
        data={"ui": "dark"},
    )
    unknown = runtime.Unknown(
        typeMeta=runtime.TypeMeta(apiVersion="v1", kind="ConfigMap"),
        raw=cm.SerializeToString(deterministic=True),
        contentEncoding="",
        contentType="",
    )
    assert MAGIC + unknown.SerializeToString(deterministic=True) == CLIENT_GO_ENVELOPE
    # Decoding and re-encoding keeps every byte: proto2 remembers which empty fields were present.
    decoded = core.ConfigMap.FromString(CLIENT_GO_CONFIG_MAP)
    assert decoded.SerializeToString(deterministic=True) == CLIENT_GO_CONFIG_MAP


def test_watch_frame_wraps_a_bare_event_around_an_enveloped_object() -> None:
    # A protobuf watch stream frame: 4-byte big-endian length, then a WatchEvent with no magic and
    # no envelope of its own; the object inside is a complete envelope.
    event = meta.WatchEvent(type="ADDED", object=runtime.RawExtension(raw=CLIENT_GO_ENVELOPE))
    body = event.SerializeToString(deterministic=True)
    assert body == len_field(1, "ADDED") + len_field(2, len_field(1, CLIENT_GO_ENVELOPE))
    frame = struct.pack(">I", len(body)) + body
    (length,) = struct.unpack(">I", frame[:4])
    decoded = meta.WatchEvent.FromString(frame[4 : 4 + length])
    assert decoded.object.raw.startswith(MAGIC)
    assert decoded == event
