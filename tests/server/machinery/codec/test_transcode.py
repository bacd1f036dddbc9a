"""The Kubernetes JSON <-> protobuf transcoder against what kube-apiserver accepts, rejects and prints.

Expectations are written by hand from the Go types (k8s.io/api core/v1, apimachinery meta/v1) and Go's
encoding/json, never derived from the transcoder: round trips, the exact 400 wording for wrong types,
the paths of unknown fields, and golden JSON for protobuf built byte by byte as client-go writes it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from capstan.api.apps.v1 import apps_pb2 as apps
from capstan.api.core.v1 import core_pb2 as core
from capstan.api.intstr import intstr_pb2
from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.resource import resource_pb2
from capstan.options.v1 import options_pb2
from server.machinery.codec import DecodeError, decode, encode, encode_json_bytes

T = "2024-05-01T10:00:00Z"
T_SECONDS = 1714557600

# --- a probe message for the types no Kubernetes kind served yet uses -------------------------------------

_F = descriptor_pb2.FieldDescriptorProto
_INTSTR = ".k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = ".k8s.io.apimachinery.pkg.api.resource.Quantity"
_META = ".k8s.io.apimachinery.pkg.apis.meta.v1."


def _probe_class() -> type[Message]:
    """capstan.test.Probe: IntOrString, Quantity, MicroTime, Duration, bytes, numbers, and lists and maps of
    them, declared as descriptors only (the transcoder never sees generated code for it)."""
    name = "capstan_test/probe.proto"
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(name)
    except KeyError:
        proto = descriptor_pb2.FileDescriptorProto(
            name=name,
            package="capstan.test",
            syntax="proto2",
            dependency=[module.DESCRIPTOR.name for module in (intstr_pb2, resource_pb2, meta, options_pb2)],
        )
        probe = proto.message_type.add(name="Probe")
        sub = proto.message_type.add(name="Sub")
        sub.field.add(name="name", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        for entry_name, value_type, type_name in (
            ("LimitsEntry", _F.TYPE_MESSAGE, _QUANTITY),
            ("SubsEntry", _F.TYPE_MESSAGE, ".capstan.test.Sub"),
            ("CountsEntry", _F.TYPE_INT32, ""),
        ):
            entry = probe.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
            value = entry.field.add(name="value", number=2, type=value_type, label=_F.LABEL_OPTIONAL)
            if type_name:
                value.type_name = type_name
        fields: list[tuple[str, int, str, bool]] = [
            ("port", _F.TYPE_MESSAGE, _INTSTR, False),
            ("ports", _F.TYPE_MESSAGE, _INTSTR, True),
            ("cpu", _F.TYPE_MESSAGE, _QUANTITY, False),
            ("limits", _F.TYPE_MESSAGE, ".capstan.test.Probe.LimitsEntry", True),
            ("renewTime", _F.TYPE_MESSAGE, _META + "MicroTime", False),
            ("timeout", _F.TYPE_MESSAGE, _META + "Duration", False),
            ("times", _F.TYPE_MESSAGE, _META + "Time", True),
            ("blobs", _F.TYPE_BYTES, "", True),
            ("ratio", _F.TYPE_DOUBLE, "", False),
            ("count", _F.TYPE_UINT32, "", False),
            ("counts", _F.TYPE_MESSAGE, ".capstan.test.Probe.CountsEntry", True),
            ("sub", _F.TYPE_MESSAGE, ".capstan.test.Sub", False),
            ("subs", _F.TYPE_MESSAGE, ".capstan.test.Probe.SubsEntry", True),
            ("targetPort", _F.TYPE_MESSAGE, _INTSTR, False),  # emit_zero: a Go non-pointer IntOrString
        ]
        for number, (field_name, kind, type_name, repeated) in enumerate(fields, start=1):
            label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            field = probe.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = type_name
            if field_name == "targetPort":
                emit_zero: Any = options_pb2.emit_zero  # the generated stub types it as a plain FieldDescriptor
                field.options.Extensions[emit_zero] = True
        pool.Add(proto)
    cls: type[Message] = message_factory.GetMessageClass(pool.FindMessageTypeByName("capstan.test.Probe"))
    return cls


Probe = _probe_class()


def body(obj: dict[str, Any]) -> dict[str, Any]:
    """obj without its TypeMeta: what encode() prints for the message alone."""
    return {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}


def roundtrip(cls: type[Message], obj: dict[str, Any]) -> dict[str, Any]:
    """JSON -> message -> protobuf bytes -> message -> JSON, as a stored revision goes."""
    result = decode(cls, obj)
    assert result.unknown == []
    return encode(cls.FromString(result.message.SerializeToString()))


# --- round trips: what goes in comes out --------------------------------------------------------------------

FULL_METADATA = {
    "name": "game-config",
    "generateName": "game-",
    "namespace": "default",
    "uid": "6f2a7a3e-0000-4000-8000-000000000001",
    "resourceVersion": "42",
    "generation": 3,
    "creationTimestamp": T,
    "deletionTimestamp": "2024-05-01T10:05:00Z",
    "deletionGracePeriodSeconds": 0,  # a Go *int64: zero is printed
    "labels": {"app": "web", "empty": ""},
    "annotations": {"note": "x" * 200},
    "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-1", "controller": False},
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-2", "controller": True, "blockOwnerDeletion": True},
    ],
    "finalizers": ["example.com/a", "example.com/b"],
    "managedFields": [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:ui": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }
    ],
}

# An ObjectMeta with no creationTimestamp, as Go prints it: a zero metav1.Time is null (omitempty keeps structs).
NO_TIME: dict[str, Any] = {"creationTimestamp": None}

ROUND_TRIPS: list[tuple[str, type[Message], dict[str, Any]]] = [
    ("ConfigMap", core.ConfigMap, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "creationTimestamp": None, "labels": {"a": "b"},
                     "annotations": {"c": "d"}},  # an unset creationTimestamp (a Time value) prints as null
        "immutable": False,  # a Go *bool: false is printed
        "data": {"game.properties": "lives=3\n", "": "empty key", "unicode": "ünï ✓"},
        "binaryData": {"blob": "AAEC/f7/", "empty": ""},
    }),
    ("ConfigMap/ObjectMeta every field", core.ConfigMap, {"metadata": FULL_METADATA, "data": {"k": "v"}}),
    ("Secret", core.Secret, {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default", "creationTimestamp": None},
        "immutable": True,
        "data": {"password": "czNjcjN0", "bin": "AP8="},
        "stringData": {"user": "admin"},
        "type": "Opaque",
    }),
    ("Namespace", core.Namespace, {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "creationTimestamp": T},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating", "conditions": [
            {"type": "NamespaceDeletionContentFailure", "status": "False", "lastTransitionTime": T,
             "reason": "ContentDeleted", "message": "All content successfully deleted"},
        ]},
    }),
    ("Namespace/empty spec and status", core.Namespace,
     {"metadata": {"name": "a", "creationTimestamp": None}, "spec": {}, "status": {}}),
    ("Status", meta.Status, {
        "apiVersion": "v1", "kind": "Status", "metadata": {},
        "status": "Failure", "message": "ConfigMap \"x\" is invalid", "reason": "Invalid",
        "details": {"name": "x", "kind": "ConfigMap", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "data"},
            {"reason": "FieldValueInvalid", "message": "bad", "field": "metadata.name"},
        ], "retryAfterSeconds": 5},
        "code": 422,
    }),
    ("Table", meta.Table, {
        "apiVersion": "meta.k8s.io/v1", "kind": "Table",
        "metadata": {"resourceVersion": "9"},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "the name", "priority": 0},
            {"name": "Data", "type": "integer", "format": "", "description": "", "priority": 1},
        ],
        "rows": [
            {"cells": ["cm", 3, 1.5, True, None, ["a", 1], {"k": {"n": 2}}],
             "object": {"kind": "PartialObjectMetadata"}},
            {"cells": [], "conditions": [{"type": "Completed", "status": "True"}], "object": None},
        ],
    }),
    ("DeleteOptions", meta.DeleteOptions, {
        "kind": "DeleteOptions", "apiVersion": "v1",
        "gracePeriodSeconds": 0, "preconditions": {"uid": "", "resourceVersion": "7"},
        "orphanDependents": False, "propagationPolicy": "Foreground", "dryRun": ["All"],
    }),
    ("Probe/IntOrString, Quantity, MicroTime, Duration", Probe, {
        "port": 8080, "ports": [80, "http", 0, ""], "cpu": "500m", "limits": {"memory": "1Gi", "cpu": "2"},
        "renewTime": "2024-05-01T10:00:00.123456Z", "timeout": "1h0m0s", "times": [T, None],
        "blobs": ["AAE=", ""], "ratio": 0.5, "count": 4294967295, "counts": {"a": -1},
        "sub": {"name": "x"}, "subs": {"a": {"name": "y"}, "b": {}}, "targetPort": "http",
    }),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "obj"), [pytest.param(c, o, id=i) for i, c, o in ROUND_TRIPS])
def test_round_trip(cls: type[Message], obj: dict[str, Any]) -> None:
    assert roundtrip(cls, obj) == body(obj)


# Values that come back in Kubernetes' canonical form: (cls, JSON in, JSON out).
NORMALIZED: list[tuple[str, type[Message], dict[str, Any], dict[str, Any]]] = [
    ("Time with offset", core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T12:30:00+02:30"}},
     {"metadata": {"creationTimestamp": T}}),
    ("Time drops fraction", core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T10:00:00.999Z"}},
     {"metadata": {"creationTimestamp": T}}),
    ("Time one-digit hour (Go accepts)", core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T9:00:00Z"}},
     {"metadata": {"creationTimestamp": "2024-05-01T09:00:00Z"}}),
    ("Time year 0", core.ConfigMap, {"metadata": {"creationTimestamp": "0000-03-01T00:00:00Z"}},
     {"metadata": {"creationTimestamp": "0000-03-01T00:00:00Z"}}),
    ("MicroTime offset", Probe, {"renewTime": "2024-05-01T11:00:00.000001+01:00"},
     {"renewTime": "2024-05-01T10:00:00.000001Z", "targetPort": 0}),
    ("Duration", Probe, {"timeout": "90m"}, {"timeout": "1h30m0s", "targetPort": 0}),
    ("Duration fraction", Probe, {"timeout": "1500ms"}, {"timeout": "1.5s", "targetPort": 0}),
    ("Duration micro", Probe, {"timeout": "-1.5us"}, {"timeout": "-1.5µs", "targetPort": 0}),
    ("Quantity number and spaces", Probe, {"cpu": 1, "limits": {"m": " 2Gi ", "r": 0.5}},
     {"cpu": "1", "limits": {"m": "2Gi", "r": "500m"}, "targetPort": 0}),
    ("IntOrString null element", Probe, {"ports": [None]}, {"ports": [0], "targetPort": 0}),
    ("integral float cell", meta.Table, {"rows": [{"cells": [5.0, -2.0]}]},
     {"metadata": {}, "columnDefinitions": [], "rows": [{"cells": [5, -2], "object": None}]}),
    ("null fields are unset", core.ConfigMap, {"metadata": None, "data": None, "immutable": None},
     {"metadata": NO_TIME}),
    ("null elements are zero", core.ConfigMap,
     {"metadata": {"finalizers": ["a", None], "labels": {"k": None}}, "data": {"k": None}, "binaryData": {"b": None}},
     {"metadata": {"creationTimestamp": None, "finalizers": ["a", ""], "labels": {"k": ""}},
      "data": {"k": ""}, "binaryData": {"b": ""}}),
    ("base64 with newlines (Go skips them)", core.Secret, {"data": {"k": "QUJD\r\nRA=="}},
     {"metadata": NO_TIME, "data": {"k": "QUJDRA=="}}),
    ("bytes from an array of numbers", core.Secret, {"data": {"k": [0, 255]}},
     {"metadata": NO_TIME, "data": {"k": "AP8="}}),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "given", "printed"), [pytest.param(*c[1:], id=c[0]) for c in NORMALIZED])
def test_normalized(cls: type[Message], given: dict[str, Any], printed: dict[str, Any]) -> None:
    assert roundtrip(cls, given) == printed


# --- golden: protobuf as client-go writes it, printed as kube-apiserver prints it ---------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def num(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field(number: int, payload: str | bytes) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: str | bytes) -> bytes:
    return field(number, field(1, key) + field(2, value))


# Go writes every non-pointer field, empty or not, and the zero Time as an empty message.
CLIENT_GO_META = (
    field(1, "game-config") + field(2, "") + field(3, "default") + field(4, "") + field(5, "")
    + field(6, "") + num(7, 0) + field(8, b"") + entry(11, "app", "demo")
)  # fmt: skip
OWNER = field(5, "apps/v1") + field(1, "ReplicaSet") + field(3, "web-1") + field(4, "u-9")

GOLDEN: list[tuple[str, type[Message], bytes, dict[str, Any]]] = [
    ("client-go ConfigMap", core.ConfigMap, field(1, CLIENT_GO_META) + entry(2, "ui", "dark"),
     {"metadata": {"name": "game-config", "namespace": "default", "creationTimestamp": None,
                   "labels": {"app": "demo"}}, "data": {"ui": "dark"}}),
    ("pointer zeros are printed", core.ConfigMap,
     field(1, field(1, "a") + num(10, 0) + field(13, OWNER + num(6, 0))) + num(4, 0),
     {"metadata": {"name": "a", "creationTimestamp": None, "deletionGracePeriodSeconds": 0, "ownerReferences": [
         {"kind": "ReplicaSet", "name": "web-1", "uid": "u-9", "apiVersion": "apps/v1", "controller": False}]},
      "immutable": False}),
    ("non-omitempty strings are printed empty", core.ConfigMap,
     field(1, field(13, field(1, "") + field(3, "") + field(4, "") + field(5, ""))),
     {"metadata": {"creationTimestamp": None,
                   "ownerReferences": [{"kind": "", "name": "", "uid": "", "apiVersion": ""}]}}),
    ("empty message: non-pointer structs are printed", core.Namespace, b"",
     {"metadata": NO_TIME, "spec": {}, "status": {}}),
    ("empty spec present", core.Namespace, field(1, field(1, "ns")) + field(2, b""),
     {"metadata": {"name": "ns", "creationTimestamp": None}, "spec": {}, "status": {}}),
    ("Status metadata is always printed", meta.Status, field(2, "Failure") + num(6, 404),
     {"metadata": {}, "status": "Failure", "code": 404}),
    ("zero Time: null (Go's Time values have no omitzero)", core.Namespace,
     field(3, field(2, field(1, "Ready") + field(2, "") + field(4, b""))),
     {"metadata": NO_TIME, "spec": {},
      "status": {"conditions": [{"type": "Ready", "status": "", "lastTransitionTime": None}]}}),
    ("Time of 0 seconds is the epoch", core.ConfigMap, field(1, field(8, num(1, 0))),
     {"metadata": {"creationTimestamp": "1970-01-01T00:00:00Z"}}),
    ("Go's zero time prints as null", core.ConfigMap, field(1, field(8, num(1, -62135596800) + num(2, 0))),
     {"metadata": NO_TIME}),
    ("FieldsV1 and RawExtension print the JSON they hold", meta.WatchEvent,
     field(1, "ADDED") + field(2, field(1, b'{"kind":"Status","code":1}')),
     {"type": "ADDED", "object": {"kind": "Status", "code": 1}}),
    ("emit_zero lists and objects when absent", meta.TableRow, b"", {"cells": [], "object": None}),
    ("IntOrString by its type", Probe, field(1, num(1, 1) + num(2, 0) + field(3, "http")) + field(14, b""),
     {"port": "http", "targetPort": 0}),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "wire", "printed"), [pytest.param(*g[1:], id=g[0]) for g in GOLDEN])
def test_golden_encode(cls: type[Message], wire: bytes, printed: dict[str, Any]) -> None:
    message = cls.FromString(wire)
    assert encode(message) == printed
    assert orjson.loads(encode_json_bytes(message)) == printed


def test_encode_puts_type_meta_first_in_go_order() -> None:
    status = meta.Status(status="Failure", code=404)  # metadata is absent, so encode reorders
    data = encode_json_bytes(status, kind="Status", api_version="v1")
    assert data == b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":404}'


def test_decode_keeps_go_wire_facts() -> None:
    """Time carries nanos=0 and IntOrString all three fields, as Go marshals them."""
    cm = decode(core.ConfigMap, {"metadata": {"creationTimestamp": T}}).message
    assert cm.metadata.creationTimestamp.SerializeToString() == num(1, T_SECONDS) + num(2, 0)
    probe = decode(Probe, {"port": 80}).message
    assert probe.SerializeToString() == field(1, num(1, 0) + num(2, 80) + field(3, ""))


# --- wrong types: kube-apiserver's exact words -------------------------------------------------------------


def test_the_message_kubectl_users_see() -> None:
    with pytest.raises(DecodeError) as caught:
        decode(core.ConfigMap, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"port": 8080}})
    assert caught.value.message == "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    assert caught.value.path == "data.port"


def cannot(kind: str, field: str, go_type: str) -> str:
    """Go's UnmarshalTypeError, spelled out: the value's kind, Struct.path.of.fields, the Go type."""
    return f"json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"


def bad_time(value: str, rest: str, element: str, layout: str = "2006-01-02T15:04:05Z07:00") -> str:
    """Go's time.ParseError for an element that does not parse."""
    return f'parsing time "{value}" as "{layout}": cannot parse "{rest}" as "{element}"'


QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
BAD_ISO = "2024-05-01 10:00:00Z"

WRONG_TYPES: list[tuple[type[Message], dict[str, Any], str, str]] = [
    (core.ConfigMap, {"data": {"k": {"a": 1}}}, cannot("object", "ConfigMap.data", "string"), "data.k"),
    (core.ConfigMap, {"data": ["k"]}, cannot("array", "ConfigMap.data", "map[string]string"), "data"),
    (core.ConfigMap, {"binaryData": {"k": 5}}, cannot("number", "ConfigMap.binaryData", "[]uint8"), "binaryData.k"),
    (core.ConfigMap, {"binaryData": {"k": "QUJD!!!!"}}, "illegal base64 data at input byte 4", "binaryData.k"),
    (core.ConfigMap, {"binaryData": {"k": "QUJDRA"}}, "illegal base64 data at input byte 4", "binaryData.k"),
    (core.ConfigMap, {"binaryData": {"k": [256]}}, cannot("number 256", "ConfigMap.binaryData", "uint8"),
     "binaryData.k[0]"),
    (core.ConfigMap, {"immutable": "true"}, cannot("string", "ConfigMap.immutable", "bool"), "immutable"),
    (core.ConfigMap, {"metadata": "x"}, cannot("string", "ConfigMap.metadata", "v1.ObjectMeta"), "metadata"),
    # kube-apiserver 1.28.7's words for a claim template's TypeMeta (a StatefulSet's, embedded in Go).
    (apps.StatefulSet, {"spec": {"volumeClaimTemplates": [{}, {"kind": 5}]}},
     cannot("number", "PersistentVolumeClaim.spec.volumeClaimTemplates.kind", "string"),
     "spec.volumeClaimTemplates[1].kind"),
    (core.ConfigMap, {"metadata": {"name": 5}}, cannot("number", "ObjectMeta.metadata.name", "string"),
     "metadata.name"),
    (core.ConfigMap, {"metadata": {"labels": {"a": True}}}, cannot("bool", "ObjectMeta.metadata.labels", "string"),
     "metadata.labels.a"),
    (core.ConfigMap, {"metadata": {"generation": "1"}}, cannot("string", "ObjectMeta.metadata.generation", "int64"),
     "metadata.generation"),
    (core.ConfigMap, {"metadata": {"generation": 1.5}},
     cannot("number 1.5", "ObjectMeta.metadata.generation", "int64"), "metadata.generation"),
    (core.ConfigMap, {"metadata": {"deletionGracePeriodSeconds": 1 << 63}},
     cannot("number 9223372036854775808", "ObjectMeta.metadata.deletionGracePeriodSeconds", "int64"),
     "metadata.deletionGracePeriodSeconds"),
    (core.ConfigMap, {"metadata": {"finalizers": "a"}}, cannot("string", "ObjectMeta.metadata.finalizers", "[]string"),
     "metadata.finalizers"),
    (core.ConfigMap, {"metadata": {"finalizers": ["a", 1]}},
     cannot("number", "ObjectMeta.metadata.finalizers", "string"), "metadata.finalizers[1]"),
    (core.ConfigMap, {"metadata": {"ownerReferences": {}}},
     cannot("object", "ObjectMeta.metadata.ownerReferences", "[]v1.OwnerReference"), "metadata.ownerReferences"),
    (core.ConfigMap, {"metadata": {"ownerReferences": ["x"]}},
     cannot("string", "ObjectMeta.metadata.ownerReferences", "v1.OwnerReference"), "metadata.ownerReferences[0]"),
    (core.ConfigMap, {"metadata": {"ownerReferences": [{}, {"controller": "yes"}]}},
     cannot("string", "OwnerReference.metadata.ownerReferences.controller", "bool"),
     "metadata.ownerReferences[1].controller"),
    # Time.UnmarshalJSON reads a Go string first; the decoder adds the field to that error.
    (core.ConfigMap, {"metadata": {"creationTimestamp": 5}},
     cannot("number", "ObjectMeta.metadata.creationTimestamp", "string"), "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": "2024-13-01T00:00:00Z"}},
     'parsing time "2024-13-01T00:00:00Z": month out of range', "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": "2023-02-29T00:00:00Z"}},
     'parsing time "2023-02-29T00:00:00Z": day out of range', "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T24:00:00Z"}},
     'parsing time "2024-05-01T24:00:00Z": hour out of range', "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": BAD_ISO}}, bad_time(BAD_ISO, " 10:00:00Z", "T"),
     "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T10:00:00"}},
     bad_time("2024-05-01T10:00:00", "", "Z07:00"), "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"creationTimestamp": "2024-05-01T10:00:00Zjunk"}},
     'parsing time "2024-05-01T10:00:00Zjunk": extra text: "junk"', "metadata.creationTimestamp"),
    (core.ConfigMap, {"metadata": {"managedFields": [{"time": "yesterday"}]}},
     bad_time("yesterday", "yesterday", "2006"), "metadata.managedFields[0].time"),
    (core.Secret, {"data": {"tls.key": "not base64"}}, "illegal base64 data at input byte 3", "data.tls.key"),
    (core.Secret, {"stringData": {"k": 1}}, cannot("number", "Secret.stringData", "string"), "stringData.k"),
    (meta.Status, {"code": "404"}, cannot("string", "Status.code", "int32"), "code"),
    (meta.Status, {"details": {"causes": [{"field": []}]}},
     cannot("array", "StatusCause.details.causes.field", "string"), "details.causes[0].field"),
    (Probe, {"port": True}, cannot("bool", "Probe.port", "int32"), "port"),
    (Probe, {"port": 1.5}, cannot("number 1.5", "Probe.port", "int32"), "port"),
    (Probe, {"ports": [1, 3000000000]}, cannot("number 3000000000", "Probe.ports", "int32"), "ports[1]"),
    (Probe, {"cpu": "1Qi"}, QUANTITY_FORMAT, "cpu"),
    (Probe, {"cpu": True}, QUANTITY_FORMAT, "cpu"),
    (Probe, {"limits": {"m": "1ki"}}, "unable to parse quantity's suffix", "limits.m"),
    (Probe, {"renewTime": T}, bad_time(T, "Z", ".000000", "2006-01-02T15:04:05.000000Z07:00"), "renewTime"),
    (Probe, {"timeout": "1x"}, 'time: unknown unit "x" in duration "1x"', "timeout"),
    (Probe, {"timeout": "5"}, 'time: missing unit in duration "5"', "timeout"),
    (Probe, {"timeout": 5}, cannot("number", "Probe.timeout", "string"), "timeout"),
    (Probe, {"count": -1}, cannot("number -1", "Probe.count", "uint32"), "count"),
    (Probe, {"subs": {"a": {"name": 1}}}, cannot("number", "Sub.subs.name", "string"), "subs.a.name"),
    # Go saves the first plain type error and keeps going ...
    (core.ConfigMap, {"data": {"k": 1}, "immutable": "x"}, cannot("number", "ConfigMap.data", "string"), "data.k"),
    # ... but an UnmarshalJSON error (here Time's) ends decoding, and is the one reported.
    (core.ConfigMap, {"data": {"k": 1}, "metadata": {"creationTimestamp": "x"}}, bad_time("x", "x", "2006"),
     "metadata.creationTimestamp"),
    # kube-apiserver reads apiVersion and kind before anything else.
    (core.ConfigMap, {"data": {"k": 1}, "kind": 5},
     "couldn't get version/kind; json parse error: " + cannot("number", ".kind", "string"), "kind"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "obj", "message", "path"), [pytest.param(*w, id=w[3]) for w in WRONG_TYPES])
def test_wrong_type(cls: type[Message], obj: dict[str, Any], message: str, path: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode(cls, obj)
    assert (caught.value.message, caught.value.path) == (message, path)


def test_body_that_is_not_an_object() -> None:
    with pytest.raises(DecodeError, match=r"^json: cannot unmarshal array into Go value of type v1\.ConfigMap$"):
        decode(core.ConfigMap, [])


# --- unknown fields: Kubernetes' paths, and dropped from the message ---------------------------------------

UNKNOWN: list[tuple[type[Message], dict[str, Any], list[str]]] = [
    (core.ConfigMap, {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}, []),
    (core.ConfigMap, {"foo": 1, "data": {"k": "v"}, "bar": None}, ["foo", "bar"]),
    (core.ConfigMap, {"status": {"x": 1}}, ["status"]),
    (core.ConfigMap, {"Data": {"k": "v"}, "metadata": {"Name": "x"}}, ["Data", "metadata.Name"]),
    (core.ConfigMap, {"metadata": {"clusterName": "", "kind": "x"}}, ["metadata.clusterName", "metadata.kind"]),
    (core.ConfigMap, {"metadata": {"ownerReferences": [{"uid": "a"}, {"bogus": 1, "uid": "b"}]}},
     ["metadata.ownerReferences[1].bogus"]),
    (core.ConfigMap, {"metadata": {"managedFields": [{"fieldsV1": {"f:x": {}}, "extra": 1}]}},
     ["metadata.managedFields[0].extra"]),
    (core.Namespace, {"spec": {"foo": 1, "finalizers": []}, "status": {"bar": {}}}, ["spec.foo", "status.bar"]),
    (meta.Table, {"rows": [{"cells": [{"any": "json"}], "object": {"anything": 1}}, {"cellz": []}]}, ["rows[1].cellz"]),
    (Probe, {"subs": {"a": {"nope": 1}}}, ["subs.a.nope"]),
    (apps.StatefulSet, {"spec": {"volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                           "spec": {"bogus": 1}}]}},
     ["spec.volumeClaimTemplates[0].spec.bogus"]),
]  # fmt: skip


def pruned(value: Any, unknown: list[str], path: str = "") -> Any:
    """value without the members at the unknown paths."""
    if isinstance(value, dict):
        here = {key: f"{path}.{key}" if path else key for key in value}
        return {key: pruned(item, unknown, here[key]) for key, item in value.items() if here[key] not in unknown}
    if isinstance(value, list):
        return [pruned(item, unknown, f"{path}[{index}]") for index, item in enumerate(value)]
    return value


@pytest.mark.parametrize(("cls", "obj", "paths"), [pytest.param(*u, id=",".join(u[2]) or "none") for u in UNKNOWN])
def test_unknown_fields(cls: type[Message], obj: dict[str, Any], paths: list[str]) -> None:
    result = decode(cls, obj)
    assert result.unknown == paths
    assert result.message == decode(cls, pruned(obj, paths)).message  # dropped: the known fields alone make it


def test_unknown_paths_under_a_prefix() -> None:
    result = decode(core.Namespace, {"kind": "Namespace", "spec": {"foo": 1}}, path="items[3]")
    assert result.unknown == ["items[3].spec.foo"]
    with pytest.raises(DecodeError) as caught:
        decode(core.Namespace, {"metadata": {"name": 1}}, path="items[3]")
    assert caught.value.path == "items[3].metadata.name"
    assert caught.value.message.endswith("ObjectMeta.items.metadata.name of type string")


def test_type_meta_is_unknown_when_not_a_whole_object() -> None:
    assert decode(meta.ObjectMeta, {"kind": "x", "name": "n"}, type_meta=False).unknown == ["kind"]
    # A message with its own kind field keeps it.
    assert decode(meta.OwnerReference, {"kind": "Pod"}).message.kind == "Pod"
