"""CustomResourceDefinitions through the CoreService: the CRD kind, its controller, and custom resources.

A real core on LMDB, every call over a real gRPC channel (tests/server/conftest.py). Expected answers
are kube-apiserver's: apiextensions-apiserver's validation and condition texts, kube-openapi's messages.
"""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import PROTOBUF, Client, Failed, path, raw, refused

Obj = dict[str, Any]

GROUP = "example.com"
CRDS = path("customresourcedefinitions", group="apiextensions.k8s.io")
WIDGETS = path("widgets", "default", group=GROUP)

SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "replicas": {"type": "integer", "default": 1},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": True},
                "email": {"type": "string", "format": "email"},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string", "nullable": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}, "replicas": {"type": "integer"}}},
    },
}


def crd_body(plural: str = "widgets", kind: str = "Widget", *, group: str = GROUP, schema: Obj | None = None,
             versions: list[Obj] | None = None, **names: Any) -> Obj:
    version = {"name": "v1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": copy.deepcopy(schema or SCHEMA)},
               "subresources": {"status": {}},
               "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                            {"name": "Color", "type": "string", "jsonPath": ".spec.color"}]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind, **names},
                 "versions": versions or [version]},
    }


def widget(object_name: str, /, **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": object_name},
            "spec": {"size": 1, **spec}}


async def established(client: Client, name: str, *, timeout: float = 2.0) -> Obj:
    """The CRD once Established is True (fails the test after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        crd = await client.get(path("customresourcedefinitions", name=name, group="apiextensions.k8s.io"))
        if any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"].get("conditions") or []):
            return crd
        assert time.monotonic() < deadline, crd["status"]
        await asyncio.sleep(0.01)


async def settled(client: Client, crd: Obj, *, timeout: float = 5.0) -> None:
    """Once the CRD's group versions have their Available APIServices (kube's crdRegistration writes them soon
    after the CRD is served): no controller writes anything for the CRD after that."""
    deadline = time.monotonic() + timeout
    group = crd["spec"]["group"]
    for version in (v["name"] for v in crd["spec"]["versions"] if v.get("served")):
        name = f"{version}.{group}"
        while True:
            try:
                found = await client.get(path("apiservices", name=name, group="apiregistration.k8s.io"))
            except Failed:
                found = {}
            conditions = (found.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"no Available APIService {name}"
            await asyncio.sleep(0.01)


async def install(client: Client, body: Obj | None = None) -> Obj:
    body = body or crd_body()
    await client.create(CRDS, body)
    return await established(client, body["metadata"]["name"])


def invalid_causes(failed: Failed) -> list[tuple[str, str, str]]:
    return [(c["reason"], c.get("field", ""), c["message"]) for c in failed.status["details"]["causes"]]


# --- the CRD and its controller --------------------------------------------------------------------------------


async def test_a_crd_is_established_and_served_promptly(client: Client) -> None:
    started = time.monotonic()
    created = await client.create(CRDS, crd_body(shortNames=["wd"], categories=["all"]))
    # conditions: a nil slice without omitempty, printed null as kube-apiserver prints it.
    assert created["status"] == {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                                 "storedVersions": ["v1"]}
    assert created["spec"]["names"] == {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                                        "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]}
    assert created["spec"]["conversion"] == {"strategy": "None"}
    crd = await established(client, "widgets.example.com")
    await client.list(WIDGETS)  # served: the list answers
    assert time.monotonic() - started < 5.0  # served promptly, not after a resync; the speed is bench's to measure
    conditions = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in crd["status"]["conditions"]]
    assert conditions == [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted"},
    ]
    assert crd["status"]["acceptedNames"] == created["spec"]["names"]
    assert crd["status"]["storedVersions"] == ["v1"]
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    widgets = next(r for r in discovered.resources if r.resource == "widgets")
    assert (widgets.group, widgets.version, widgets.kind, list(widgets.short_names), list(widgets.categories),
            widgets.proto_message, [s.name for s in widgets.subresources]) == (
        GROUP, "v1", "Widget", ["wd"], ["all"], "", ["status"])
    assert [c.name for c in widgets.columns] == ["Name", "Size", "Color"]
    assert orjson.loads(widgets.json_schema) == SCHEMA


async def test_discover_answers_unchanged_while_nothing_changed(client: Client) -> None:
    first = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    again = await client.call(client.stub.Discover, core_pb2.DiscoverRequest(known_generation=first.generation))
    assert (again.unchanged, len(again.resources)) == (True, 0)
    await install(client)
    after = await client.call(client.stub.Discover, core_pb2.DiscoverRequest(known_generation=first.generation))
    assert not after.unchanged and after.generation > first.generation
    assert any(r.resource == "widgets" for r in after.resources)


def _with(body: Obj, change: Any) -> Obj:
    body = copy.deepcopy(body)
    change(body)
    return body


def _field(spec_path: str, value: Any) -> Any:
    def change(body: Obj) -> None:
        *parents, last = spec_path.split(".")
        node: Any = body
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return change


def _schema_change(change: Any) -> Any:
    def apply(body: Obj) -> None:
        change(body["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return apply


DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
           "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
           "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
ROOT = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(("change", "expected"), [
    (_field("metadata.name", "gadgets.example.com"),
     [("FieldValueInvalid", "metadata.name",
       'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group')]),
    (lambda b: (_field("spec.group", "example")(b), _field("metadata.name", "widgets.example")(b)),
     [("FieldValueInvalid", "spec.group", 'Invalid value: "example": should be a domain with at least one dot')]),
    (_field("spec.scope", "Global"),
     [("FieldValueNotSupported", "spec.scope",
       'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')]),
    (_field("spec.versions.0.storage", False),
     [("FieldValueInvalid", "spec.versions",
       'Invalid value: [{"additionalPrinterColumns":[{"jsonPath":".spec.size","name":"Size","type":"integer"},'
       '{"jsonPath":".spec.color","name":"Color","type":"string"}],"name":"v1","schema":{"openAPIV3Schema":'
       + orjson.dumps(SCHEMA, option=orjson.OPT_SORT_KEYS).decode()
       + '},"served":true,"storage":false,"subresources":{"status":{}}}]: must have exactly one version marked '
       "as storage version"),
      ("FieldValueInvalid", "status.storedVersions",
       "Invalid value: []string(nil): must have at least one stored version")]),
    (lambda b: b["spec"].pop("versions"),  # as kube-apiserver 1.28.7 prints the nil slices
     [("FieldValueInvalid", "spec.versions", "Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): "
       "must have exactly one version marked as storage version"),
      ("FieldValueInvalid", "status.storedVersions",
       "Invalid value: []string(nil): must have at least one stored version")]),
    (_field("spec.names.kind", "Widget_X"),
     [("FieldValueInvalid", "spec.names.singular", f'Invalid value: "widget_x": {DNS1035}'),
      ("FieldValueInvalid", "spec.names.kind",
       f'Invalid value: "Widget_X": may have mixed case, but should otherwise match: {DNS1035}'),
      ("FieldValueInvalid", "spec.names.listKind",
       f'Invalid value: "Widget_XList": may have mixed case, but should otherwise match: {DNS1035}')]),
    (_field("spec.names.listKind", "Widget"),
     [("FieldValueInvalid", "spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the same')]),
    (_field("spec.versions.0.schema", {}),
     [("FieldValueRequired", f"{ROOT}", "Required value")]),
    (_schema_change(lambda s: s["properties"]["spec"]["properties"]["size"].pop("type")),
     [("FieldValueRequired", f"{ROOT}.properties[spec].properties[size].type",
       "Required value: must not be empty for specified object fields")]),
    (_schema_change(lambda s: s["properties"]["spec"].update(additionalProperties={"type": "string"})),
     [("FieldValueForbidden", f"{ROOT}.properties[spec].additionalProperties",
       "Forbidden: additionalProperties and properties are mutual exclusive")]),
    (_schema_change(lambda s: s["properties"]["spec"]["properties"]["tags"].update(uniqueItems=True)),
     [("FieldValueForbidden", f"{ROOT}.properties[spec].properties[tags].uniqueItems",
       "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]),
    (_schema_change(lambda s: s["properties"]["spec"]["properties"]["size"].update(type="int")),
     [("FieldValueNotSupported", f"{ROOT}.properties[spec].properties[size].type",
       'Unsupported value: "int": supported values: "array", "boolean", "integer", "number", "object", "string"')]),
    (_schema_change(lambda s: s["properties"]["spec"]["properties"]["free"].update(
        {"x-kubernetes-preserve-unknown-fields": False})),
     [("FieldValueInvalid", f"{ROOT}.properties[spec].properties[free].x-kubernetes-preserve-unknown-fields",
       "Invalid value: false: must be true or undefined")]),
    (_schema_change(lambda s: s["properties"]["spec"]["properties"]["size"].update(default="big")),
     [("FieldValueTypeInvalid", f"{ROOT}.properties[spec].properties[size].default",
       'Invalid value: "string": in body must be of type integer: "string"')]),
    (_field("spec.conversion", {"strategy": "Webhook"}),
     [("FieldValueRequired", "spec.conversion.webhookClientConfig",
       "Required value: required when strategy is set to Webhook"),
      ("FieldValueRequired", "spec.conversion.conversionReviewVersions", "Required value")]),
])
async def test_crd_validation(client: Client, change: Any, expected: list[tuple[str, str, str]]) -> None:
    failed = await refused(client.create(CRDS, _with(crd_body(), change)))
    assert failed.status["code"] == 422, failed.status
    assert invalid_causes(failed) == expected


async def test_group_and_plural_never_change(client: Client) -> None:
    crd = await install(client)
    crd["spec"]["names"]["plural"] = "gizmos"
    failed = await refused(client.update(path("customresourcedefinitions", name="widgets.example.com",
                                              group="apiextensions.k8s.io"), crd))
    assert invalid_causes(failed) == [
        ("FieldValueInvalid", "spec.names.plural", 'Invalid value: "gizmos": field is immutable')]


async def test_a_name_already_served_in_the_group_is_not_accepted(client: Client) -> None:
    await install(client, crd_body(shortNames=["wd"]))
    await client.create(CRDS, crd_body("gadgets", "Gadget", shortNames=["wd"]))
    deadline = time.monotonic() + 2
    while True:
        crd = await client.get(path("customresourcedefinitions", name="gadgets.example.com",
                                    group="apiextensions.k8s.io"))
        conditions = {c["type"]: c for c in crd["status"].get("conditions") or []}
        if "NamesAccepted" in conditions or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert (conditions["NamesAccepted"]["status"], conditions["NamesAccepted"]["reason"],
            conditions["NamesAccepted"]["message"]) == ("False", "ShortNamesConflict", '"wd" is already in use')
    assert (conditions["Established"]["status"], conditions["Established"]["reason"]) == ("False", "NotAccepted")
    assert "shortNames" not in crd["status"]["acceptedNames"]


# --- custom resources ----------------------------------------------------------------------------------------


async def test_unknown_fields_are_pruned_as_field_validation_says(client: Client) -> None:
    await install(client)
    body = widget("warned", extra=1, labels={"a": "b"})
    body["metadata"]["bogus"] = True
    created = await client.create_response(WIDGETS, raw(body))
    # kube's order: metadata's unknown fields, then the pruned ones (field_validation_test.go)
    assert list(created.warnings) == ['unknown field "metadata.bogus"', 'unknown field "spec.extra"']
    assert orjson.loads(created.object.data)["spec"] == {"size": 1, "labels": {"a": "b"}, "replicas": 1}
    ignored = await client.create_response(WIDGETS, raw(widget("ignored", extra=1)), fieldValidation="Ignore")
    assert list(ignored.warnings) == []
    failed = await refused(client.create(WIDGETS, widget("strict", extra=1), fieldValidation="Strict"))
    assert (failed.status["code"], failed.status["message"]) == (
        400, 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field '
             '"spec.extra"')


@pytest.mark.parametrize(("spec", "expected"), [
    ({"size": "big"}, [("FieldValueTypeInvalid", "spec.size",
                        'Invalid value: "string": spec.size in body must be of type integer: "string"')]),
    ({"size": 1.5}, [("FieldValueTypeInvalid", "spec.size",
                      'Invalid value: "number": spec.size in body must be of type integer: "number"')]),
    ({"size": 0}, [("FieldValueInvalid", "spec.size",
                    "Invalid value: 0: spec.size in body should be greater than or equal to 1")]),
    ({"size": 11}, [("FieldValueInvalid", "spec.size",
                     "Invalid value: 11: spec.size in body should be less than or equal to 10")]),
    ({"color": "pink"}, [("FieldValueNotSupported", "spec.color",
                          'Unsupported value: "pink": supported values: "red", "blue"')]),
    ({"name": "toolong"}, [("FieldValueTooLong", "spec.name", "Too long: may not be longer than 5")]),
    ({"name": "a"}, [("FieldValueInvalid", "spec.name",
                      'Invalid value: "a": spec.name in body should be at least 2 chars long')]),
    ({"name": "AB"}, [("FieldValueInvalid", "spec.name",
                       "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'")]),
    ({"port": True}, [("FieldValueTypeInvalid", "spec.port",
                       'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"')]),
    ({"email": "nope"}, [("FieldValueTypeInvalid", "spec.email",
                          'Invalid value: "nope": spec.email in body must be of type email: "nope"')]),
    ({"tags": ["a", "b", "c"]}, [("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items")]),
    ({"tags": ["a", "a"]}, [("FieldValueDuplicate", "spec.tags[1]", 'Duplicate value: "a"')]),
    ({"ports": [{"name": "x"}, {"name": "x", "port": 1}]},
     [("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"x"}')]),
    ({"ports": [{"port": 1}]}, [("FieldValueRequired", "spec.ports[0].name", "Required value")]),
    ({"labels": {"a": 1}}, [("FieldValueTypeInvalid", "spec.labels.a",
                             'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"')]),
    ({"template": {"kind": "Pod"}}, [("FieldValueRequired", "spec.template.apiVersion",
                                      "Required value: must not be empty")]),
    ({"tags": [None]}, [("FieldValueTypeInvalid", "spec.tags[0]",
                         'Invalid value: "null": spec.tags[0] in body must be of type string: "null"')]),
])
async def test_custom_resource_validation(client: Client, spec: Obj, expected: list[tuple[str, str, str]]) -> None:
    await install(client)
    failed = await refused(client.create(WIDGETS, widget("bad", **spec)))
    assert failed.status["code"] == 422, failed.status
    assert invalid_causes(failed) == expected
    first = expected[0]
    assert failed.status["message"] == f'Widget.example.com "bad" is invalid: {first[1]}: {first[2]}'


BAD_TYPE_META: list[tuple[str, bytes, int, str]] = [
    ("no kind", b'{"apiVersion":"example.com/v1","metadata":{"name":"q"}}', 400,
     "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in "
     '\'{"apiVersion":"example.com/v1","metadata":{"name":"q"}}\' ({"apiVersion":"example.com/v1" ...)'),
    ("null", b"null", 400, "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing "
     "in 'null' (6e756c6c)"),
    ("no apiVersion", b'{"kind":"Widget","metadata":{"name":"q"}}', 400,
     "the API version in the data () does not match the expected API version (example.com/v1)"),
    ("another version", b'{"kind":"Widget","apiVersion":"example.com/v2","metadata":{"name":"q"}}', 400,
     "the API version in the data (example.com/v2) does not match the expected API version (example.com/v1)"),
    ("another kind", b'{"kind":"Gadget","apiVersion":"example.com/v1","metadata":{"name":"Q_"}}', 422,
     'Gadget.example.com "Q_" is invalid: kind: Invalid value: "Gadget": must be Widget'),
]


# As kube-apiserver 1.28 answers them: a custom resource's body is decoded as unstructured, which keeps the kind
# and apiVersion it says, so it must say them; another kind is its validation's (ValidateTypeMeta, alone).
@pytest.mark.parametrize(("body", "code", "message"), [b[1:] for b in BAD_TYPE_META], ids=[b[0] for b in BAD_TYPE_META])
@pytest.mark.parametrize("verb", ["create", "update"])
async def test_a_custom_resource_body_says_its_kind(client: Client, verb: str, body: bytes, code: int,
                                                     message: str) -> None:
    await install(client)
    made = await client.create(WIDGETS, widget("q", size=1))
    request: Any
    if verb == "create":
        request = client.call(client.stub.Create, core_pb2.CreateRequest(path=WIDGETS, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=body)))
    else:
        if b'"Q_"' in body:  # with its resourceVersion: an update without one is refused before validation
            version = made["metadata"]["resourceVersion"]
            body = body.replace(b'"Q_"', b'"q","resourceVersion":"' + version.encode() + b'"')
            message = message.replace('"Q_"', '"q"')
        request = client.call(client.stub.Update, core_pb2.UpdateRequest(
            path=path("widgets", "default", "q", group=GROUP), object=core_pb2.RawObject(
                encoding=core_pb2.ENCODING_JSON, data=body)))
    failed = await refused(request)
    assert (failed.status["code"], failed.status["message"]) == (code, message)
    if code == 422:
        assert failed.status["details"]["kind"] == "Gadget"


@pytest.mark.parametrize(("body", "detail"), [
    ({"apiVersion": "example.com/v1", "metadata": {"name": 1}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"),
    ({"apiVersion": "example.com/v1", "metadata": {"name": "m", "labels": {"a": 1}}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"),
    ({"metadata": {"name": "m", "labels": {"a": 1}}},  # decoding fails before the apiVersion is looked at
     "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"),
])
async def test_a_custom_resources_metadata_is_decoded_on_its_own(client: Client, body: Obj, detail: str) -> None:
    """As kube's unstructured objects: the metadata map is decoded into ObjectMeta alone, so Go's field path starts
    inside it, and the version named is the one the body said."""
    await install(client)
    failed = await refused(client.call(client.stub.Create, core_pb2.CreateRequest(path=WIDGETS, object=raw(
        {"kind": "Widget", **body}))))
    version = "v1" if "apiVersion" in body else ""
    assert failed.status["message"] == f'Widget in version "{version}" cannot be handled as a Widget: {detail}'


async def test_required_and_accepted_values(client: Client) -> None:
    await install(client)
    body = widget("ok", port="http", note=None, free={"anything": [1, {"x": None}]},
                  template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
                  email="a@example.com", tags=["a", "b"])
    created = await client.create(WIDGETS, body)
    assert created["spec"]["note"] is None  # nullable: kept
    assert created["spec"]["free"] == {"anything": [1, {"x": None}]}
    assert created["spec"]["template"]["spec"] == {"x": 1}
    failed = await refused(client.create(WIDGETS, {**widget("nosize"), "spec": {}}))
    assert invalid_causes(failed) == [("FieldValueRequired", "spec.size", "Required value")]
    # kube-openapi's order: an object's properties are judged before its missing required ones
    failed = await refused(client.create(WIDGETS, {**widget("both"), "spec": {"color": "pink"}}))
    assert invalid_causes(failed) == [
        ("FieldValueNotSupported", "spec.color", 'Unsupported value: "pink": supported values: "red", "blue"'),
        ("FieldValueRequired", "spec.size", "Required value")]


@pytest.mark.parametrize("version", [None, "0"], ids=["none", "0"])
async def test_a_custom_resource_update_needs_a_resource_version(client: Client, version: str | None) -> None:
    """customResourceStrategy does not AllowUnconditionalUpdate: a PUT without a resourceVersion (or with "0")
    is kube's 422; the status subresource's alike; a /scale without one is not (it keeps the stored one)."""
    await install(client)
    created = await client.create(WIDGETS, widget("u"))
    sent = copy.deepcopy(created)
    sent["spec"]["size"] = 2
    if version is None:
        del sent["metadata"]["resourceVersion"]
    else:
        sent["metadata"]["resourceVersion"] = version
    for subresource in ("", "status"):
        at = path("widgets", "default", "u", group=GROUP, subresource=subresource)
        failed = await refused(client.update(at, sent))
        assert failed.status["message"] == ('widgets.example.com "u" is invalid: metadata.resourceVersion: Invalid '
                                            "value: 0x0: must be specified for an update")
        assert invalid_causes(failed) == [("FieldValueInvalid", "metadata.resourceVersion",
                                           "Invalid value: 0x0: must be specified for an update")]
    assert await client.get(path("widgets", "default", "u", group=GROUP)) == created


async def test_defaults_on_create_update_and_read(client: Client) -> None:
    await install(client)
    created = await client.create(WIDGETS, widget("d", replicas=None))  # a non-nullable null is defaulted
    assert created["spec"] == {"size": 1, "replicas": 1}
    created["spec"].pop("replicas")
    updated, _ = await client.update(path("widgets", "default", "d", group=GROUP), created)
    assert updated["spec"] == {"size": 1, "replicas": 1}
    # a default added later shows on reads of objects stored before it
    await client.create(WIDGETS, widget("old", color="red"))
    crd = await client.get(path("customresourcedefinitions", name="widgets.example.com", group="apiextensions.k8s.io"))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]["default"] = (
        "blue")
    await client.update(path("customresourcedefinitions", name="widgets.example.com", group="apiextensions.k8s.io"),
                        crd)
    deadline = time.monotonic() + 2
    while True:
        old = await client.get(path("widgets", "default", "old", group=GROUP))
        new = await client.create(WIDGETS, widget(f"new{int(time.monotonic() * 1000)}"))
        if new["spec"].get("color") == "blue" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    assert new["spec"]["color"] == "blue"  # the new schema applies to later writes
    assert old["spec"]["color"] == "red"
    _, items = await client.list(WIDGETS)
    assert {i["metadata"]["name"]: i["spec"].get("color") for i in items}["d"] == "blue"  # defaulted on read


async def test_status_subresource_and_generation(client: Client) -> None:
    await install(client)
    one = path("widgets", "default", "s", group=GROUP)
    created = await client.create(WIDGETS, {**widget("s"), "status": {"ready": True}})
    assert "status" not in created and created["metadata"]["generation"] == 1
    created["status"] = {"ready": True}
    with_status, _ = await client.update(path("widgets", "default", "s", group=GROUP, subresource="status"),
                                         {**created, "spec": {"size": 9}})
    assert (with_status["spec"], with_status["status"], with_status["metadata"]["generation"]) == (
        {"size": 1, "replicas": 1}, {"ready": True}, 1)
    main, _ = await client.update(one, {**with_status, "spec": {"size": 2}, "status": {"ready": False}})
    assert (main["spec"]["size"], main["status"], main["metadata"]["generation"]) == (2, {"ready": True}, 2)
    labelled = {**main, "metadata": {**main["metadata"], "labels": {"a": "b"}}}
    relabelled, _ = await client.update(one, labelled)
    assert relabelled["metadata"]["generation"] == 2


async def test_table_uses_the_printer_columns(client: Client) -> None:
    await install(client)
    await client.create(WIDGETS, widget("t", color="red"))
    view = core_pb2.ViewOptions(view=core_pb2.VIEW_TABLE)
    response = await client.call(client.stub.List, core_pb2.ListRequest(path=WIDGETS, view=view))
    table = orjson.loads(response.converted.data)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Color"]
    assert table["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .spec.size")
    assert table["rows"][0]["cells"] == ["t", 1, "red"]


async def test_strategic_merge_patch_is_refused(client: Client) -> None:
    await install(client)
    await client.create(WIDGETS, widget("p"))
    request = core_pb2.PatchRequest(path=path("widgets", "default", "p", group=GROUP),
                                    type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE, patch=b'{"spec":{"size":2}}')
    failed = await refused(client.call(client.stub.Patch, request))
    assert (failed.status["code"], failed.status["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"))
    merged = core_pb2.PatchRequest(path=path("widgets", "default", "p", group=GROUP),
                                   type=core_pb2.PATCH_TYPE_MERGE, patch=b'{"spec":{"size":2}}')
    response = await client.call(client.stub.Patch, merged)
    assert orjson.loads(response.object.data)["spec"]["size"] == 2


async def test_server_side_apply_uses_list_types_from_the_schema(client: Client) -> None:
    await install(client)
    target = path("widgets", "default", "a", group=GROUP)

    async def apply(manager: str, spec: Obj) -> Obj:
        body = orjson.dumps({**widget("a"), "spec": spec})
        request = core_pb2.PatchRequest(path=target, type=core_pb2.PATCH_TYPE_APPLY, patch=body,
                                        options={"fieldManager": manager})
        response = await client.call(client.stub.Patch, request)
        return orjson.loads(response.object.data)  # type: ignore[no-any-return]

    await apply("one", {"size": 1, "ports": [{"name": "a", "port": 1}], "tags": ["x"]})
    merged = await apply("two", {"size": 1, "ports": [{"name": "b", "port": 2}], "tags": ["y"]})
    assert merged["spec"]["ports"] == [{"name": "a", "port": 1}, {"name": "b", "port": 2}]  # map list: merged
    assert merged["spec"]["tags"] == ["x", "y"]  # set: merged
    fields = {e["manager"]: e["fieldsV1"] for e in merged["metadata"]["managedFields"]}
    assert fields["two"]["f:spec"]["f:ports"] == {'k:{"name":"b"}': {".": {}, "f:name": {}, "f:port": {}}}
    failed = await refused(apply("two", {"size": 3}))
    assert failed.status["code"] == 409
    assert failed.status["message"] == 'Apply failed with 1 conflict: conflict with "one": .spec.size'


async def test_versions_with_conversion_none_rewrite_only_api_version(client: Client) -> None:
    v1 = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}
    v2 = {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": SCHEMA}}
    await install(client, crd_body(versions=[v1, v2]))
    await client.create(WIDGETS, widget("c", color="red"))
    as_v2 = await client.get(path("widgets", "default", "c", group=GROUP, version="v2"))
    assert (as_v2["apiVersion"], as_v2["spec"]["color"]) == ("example.com/v2", "red")
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    assert [r.version for r in discovered.resources if r.resource == "widgets"] == ["v2", "v1"]  # preferred first


async def test_deleting_a_crd_deletes_its_objects_then_itself(client: Client) -> None:
    await install(client)
    await client.create(WIDGETS, widget("w1"))
    held = {**widget("held"), "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    await client.create(path("widgets", "kube-system", group=GROUP), held)
    crd_path = path("customresourcedefinitions", name="widgets.example.com", group="apiextensions.k8s.io")
    marked = await client.delete(crd_path)
    assert marked["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    terminating = next(c for c in marked["status"]["conditions"] if c["type"] == "Terminating")
    assert (terminating["reason"], terminating["message"]) == (
        "InstanceDeletionPending", "CustomResourceDefinition marked for deletion; CustomResource deletion will "
        "begin soon")
    deadline = time.monotonic() + 2
    while await client.names(path("widgets", group=GROUP)) != ["held"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    failed = await refused(client.create(WIDGETS, widget("late")))
    assert (failed.status["code"], failed.status["message"]) == (
        405, "create not allowed while custom resource definition is terminating")
    crd = await client.get(crd_path)
    terminating = next(c for c in crd["status"]["conditions"] if c["type"] == "Terminating")
    assert (terminating["status"], terminating["reason"]) == ("True", "InstanceDeletionInProgress")
    leftover = await client.get(path("widgets", "kube-system", "held", group=GROUP))
    leftover["metadata"]["finalizers"] = []
    await client.update(path("widgets", "kube-system", "held", group=GROUP), leftover)
    deadline = time.monotonic() + 3
    while True:
        try:
            await client.get(crd_path)
        except Failed as gone:
            assert gone.status["code"] == 404
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    failed = await refused(client.list(WIDGETS))
    assert failed.status["code"] == 404


async def test_field_selectors_on_selectable_fields(client: Client) -> None:
    body = crd_body()
    body["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.color"}]
    await install(client, body)
    await client.create(WIDGETS, widget("r", color="red"))
    await client.create(WIDGETS, widget("b", color="blue"))
    assert await client.names(WIDGETS, fieldSelector="spec.color=red") == ["r"]


async def test_custom_resources_are_served_again_after_a_restart(tmp_path: Path) -> None:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    first = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{first.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), first)  # type: ignore[no-untyped-call]
            await install(client)
            await client.create(WIDGETS, widget("kept"))
    finally:
        await first.stop()
    second = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{second.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), second)  # type: ignore[no-untyped-call]
            assert await client.names(WIDGETS) == ["kept"]  # served as soon as the core answers
    finally:
        await second.stop()
        await store.close()


async def test_scale_subresource_reads_and_writes_the_crd_paths(client: Client) -> None:
    body = crd_body()
    body["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["selector"] = {
        "type": "string"}
    await install(client, body)
    created = await client.create(WIDGETS, widget("sc", replicas=2))
    current = await client.get(path("widgets", "default", "sc", group=GROUP))
    current["status"] = {"replicas": 1, "selector": "app=sc"}
    await client.update(path("widgets", "default", "sc", group=GROUP, subresource="status"), current)
    scale_path = path("widgets", "default", "sc", group=GROUP, subresource="scale")
    scale = await client.get(scale_path)
    assert (scale["kind"], scale["apiVersion"], scale["spec"], scale["status"]) == (
        "Scale", "autoscaling/v1", {"replicas": 2}, {"replicas": 1, "selector": "app=sc"})
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    scale["spec"]["replicas"] = 5
    written, _ = await client.update(scale_path, scale)
    assert written["spec"] == {"replicas": 5}
    stored = await client.get(path("widgets", "default", "sc", group=GROUP))
    assert (stored["spec"]["replicas"], stored["spec"]["size"], stored["metadata"]["generation"]) == (5, 1, 2)
    request = core_pb2.PatchRequest(path=scale_path, type=core_pb2.PATCH_TYPE_MERGE, patch=b'{"spec":{"replicas":7}}')
    patched = orjson.loads((await client.call(client.stub.Patch, request)).object.data)
    assert patched["spec"]["replicas"] == 7
    failed = await refused(client.update(scale_path, {**patched, "spec": {"replicas": -1}}))
    assert invalid_causes(failed) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")]
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    widgets = next(r for r in discovered.resources if r.resource == "widgets")
    scale_sub = next(s for s in widgets.subresources if s.name == "scale")
    assert (scale_sub.group, scale_sub.version, scale_sub.kind) == ("autoscaling", "v1", "Scale")


# --- beyond Kubernetes: custom resources in protobuf -----------------------------------------------------------


def gadget_descriptors(package: str) -> descriptor_pb2.FileDescriptorSet:
    """A file defining <package>.Gadget {metadata = 1: ObjectMeta, spec = 2: GadgetSpec {size, color}}, as
    `protoc --include_imports --descriptor_set_out` writes it (the meta/v1 file it imports comes first)."""
    meta_file = descriptor_pb2.FileDescriptorProto.FromString(meta_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(name=f"{package.replace('.', '/')}/gadget.proto", package=package,
                                              syntax="proto2", dependency=[meta_file.name])
    F = descriptor_pb2.FieldDescriptorProto
    gadget = file.message_type.add(name="Gadget")
    gadget.field.add(name="metadata", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                     type_name=".k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    gadget.field.add(name="spec", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
                     type_name=f".{package}.GadgetSpec")
    spec = file.message_type.add(name="GadgetSpec")
    spec.field.add(name="size", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_INT64)
    spec.field.add(name="color", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    return descriptor_pb2.FileDescriptorSet(file=[meta_file, file])


async def test_a_crd_naming_a_registered_message_is_served_in_protobuf(client: Client) -> None:
    package = f"gadgets{int(time.monotonic() * 1e6)}.v1"
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "minimum": 1}, "color": {"type": "string", "default": "red"}}}}}
    body = crd_body("gadgets", "Gadget", schema=schema)
    body["metadata"]["annotations"] = {"capstan.dev/protobuf-message": f"{package}.Gadget"}
    await client.create(CRDS, body)
    crd_path = path("customresourcedefinitions", name="gadgets.example.com", group="apiextensions.k8s.io")
    deadline = time.monotonic() + 2
    while True:
        conditions = {c["type"]: c for c in (await client.get(crd_path))["status"].get("conditions") or []}
        if "ProtobufServed" in conditions or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert (conditions["ProtobufServed"]["status"], conditions["ProtobufServed"]["message"]) == (
        "False", f"{package}.Gadget is not registered (CoreService.RegisterDescriptors)")

    answer = await client.call(client.stub.RegisterDescriptors,
                                core_pb2.RegisterDescriptorsRequest(descriptors=gadget_descriptors(package)))
    assert f"{package}.Gadget" in answer.messages
    gadgets = path("gadgets", "default", group=GROUP)
    deadline = time.monotonic() + 2
    while True:
        discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
        served = next((r for r in discovered.resources if r.resource == "gadgets"), None)
        if (served is not None and served.proto_message) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert served is not None and served.proto_message == f"{package}.Gadget"

    created = await client.create(gadgets, {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                                            "metadata": {"name": "g"}, "spec": {"size": 2}})
    assert created["spec"] == {"size": 2, "color": "red"}  # the CRD's schema still defaults
    as_proto = await client.get_raw(path("gadgets", "default", "g", group=GROUP), accept=PROTOBUF)
    assert as_proto.encoding == PROTOBUF
    gadget_class = message_factory.GetMessageClass(
        descriptor_pool.Default().FindMessageTypeByName(f"{package}.Gadget"))
    decoded: Any = gadget_class.FromString(as_proto.data)
    assert (decoded.metadata.name, decoded.spec.size, decoded.spec.color) == ("g", 2, "red")
    assert decoded.metadata.resourceVersion == created["metadata"]["resourceVersion"]

    sent: Any = gadget_class()
    sent.metadata.name = "from-proto"
    sent.spec.size = 5
    response = await client.create_response(gadgets, core_pb2.RawObject(encoding=PROTOBUF,
                                                                         data=sent.SerializeToString()))
    assert orjson.loads(response.object.data)["spec"] == {"size": 5, "color": "red"}
    failed = await refused(client.create(gadgets, {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                                                   "metadata": {"name": "bad"}, "spec": {"size": 0}}))
    assert failed.status["code"] == 422  # and validates
    smp = core_pb2.PatchRequest(path=path("gadgets", "default", "g", group=GROUP),
                                type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE, patch=b"{}")
    assert (await refused(client.call(client.stub.Patch, smp))).status["code"] == 415
