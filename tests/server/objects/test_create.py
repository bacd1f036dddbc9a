"""Create: what the server sets, what it refuses, and how it decodes bodies — as kube-apiserver does.

Sources for the expected answers are named per table; kube.py holds the Status builders.
"""

from __future__ import annotations

import base64
import datetime
import re
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import meta
from tests.server import kube
from tests.server.client import JSON, PROTOBUF, Client, Obj, path, raw, refused

CM = path("configmaps", "default")
SECRETS = path("secrets", "default")
NAMESPACES = path("namespaces")
KINDS = {"configmaps": "ConfigMap", "secrets": "Secret", "namespaces": "Namespace"}
# apimachinery's util/rand alphabet for generated names: no vowels, no confusable 0/1/3.
GENERATED = re.compile(r"[bcdfghjklmnpqrstvwxz2456789]{5}")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def cm(name: str, **fields: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def target(resource: str) -> core_pb2.ResourcePath:
    return NAMESPACES if resource == "namespaces" else path(resource, "default")


# ---------------------------------------------------------------- server-set fields


async def test_create_sets_uid_creation_timestamp_and_resource_version(client: Client) -> None:
    before = client.revision()
    created = await client.create(CM, cm("a", data={"k": "v"}))
    m = created["metadata"]
    assert (created["kind"], created["apiVersion"], m["name"], m["namespace"]) == ("ConfigMap", "v1", "a", "default")
    assert str(uuid.UUID(m["uid"])) == m["uid"]
    assert RFC3339.fullmatch(m["creationTimestamp"])
    stamped = datetime.datetime.strptime(m["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    assert abs((datetime.datetime.now(datetime.UTC) - stamped).total_seconds()) < 5
    assert m["resourceVersion"] == str(before + 1) == str(client.revision())
    assert created["data"] == {"k": "v"}
    assert await client.get(path("configmaps", "default", "a")) == created


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("uid", "11111111-2222-3333-4444-555555555555"),
        ("creationTimestamp", "2001-02-03T04:05:06Z"),
        ("deletionTimestamp", "2001-02-03T04:05:06Z"),
        ("deletionGracePeriodSeconds", 30),
        ("selfLink", "/api/v1/namespaces/default/configmaps/a"),
    ],
)
async def test_client_values_of_system_fields_are_wiped(client: Client, field: str, value: object) -> None:
    # rest.WipeObjectMetaSystemFields in the create handler.
    created = await client.create(CM, {"metadata": {"name": "a", field: value}})
    assert created["metadata"].get(field) != value
    assert "deletionTimestamp" not in created["metadata"]
    assert "deletionGracePeriodSeconds" not in created["metadata"]


@pytest.mark.parametrize("rv", ["", "0", "abc"])
async def test_a_resource_version_that_is_not_a_positive_number_is_ignored(client: Client, rv: str) -> None:
    # etcd3 store.Create refuses only a version that parses to non-zero (ObjectResourceVersion).
    created = await client.create(CM, {"metadata": {"name": "a", "resourceVersion": rv}})
    assert created["metadata"]["resourceVersion"] == str(client.revision())


RV_REFUSED = kube.failure(500, "", "resourceVersion should not be set on objects to be created")


# A numeric resourceVersion is refused by kube's etcd3 store.Create (errors.New(...), a plain error that
# ErrorToAPIStatus answers as 500 with StatusReasonUnknown ""), after validation and admission and before the
# name is looked up. DryRunnableStorage.Create never calls it: a dry run answers AlreadyExists for a taken name,
# else the object as admitted, with the version it came with (client-go's dry-run clients send objects they read).
@pytest.mark.parametrize(("name", "data", "dry_run", "expected"), [
    ("a", {"k": "v"}, False, RV_REFUSED),
    ("taken", {"k": "v"}, False, RV_REFUSED),
    ("a", {"k": "v"}, True, "7"),
    ("taken", {"k": "v"}, True, kube.already_exists("configmaps", "taken")),
    ("a", {"bad key": "v"}, True, "Invalid"),
    ("a", {"bad key": "v"}, False, "Invalid"),
], ids=["stored create refused", "refused before the name is looked up", "dry run answers it",
        "dry run: a taken name first", "dry run: validation first", "validation first"])
async def test_a_numeric_resource_version_on_create(client: Client, name: str, data: Obj, dry_run: bool,
                                                    expected: object) -> None:
    await client.create(CM, cm("taken"))
    before = client.revision()
    body = {"metadata": {"name": name, "resourceVersion": "7"}, "data": data}
    options = {"dryRun": ["All"]} if dry_run else {}
    if expected == "7":
        created = await client.create(CM, body, **options)
        assert (created["metadata"]["resourceVersion"], created["data"]) == ("7", data)
        assert (await refused(client.get(path("configmaps", "default", name)))).status["reason"] == "NotFound"
    else:
        failed = await refused(client.create(CM, body, **options))
        if expected == "Invalid":
            assert (failed.status["code"], failed.status["reason"]) == (422, "Invalid")
        else:
            assert failed.status == expected
    assert client.revision() == before


async def test_status_is_ignored_on_create_for_kinds_with_a_status_subresource(client: Client) -> None:
    # namespaceStrategy.PrepareForCreate: status = {phase: Active}.
    created = await client.create(NAMESPACES, {"metadata": {"name": "ns"}, "status": {"phase": "Terminating"}})
    assert created["status"] == {"phase": "Active"}


async def test_body_namespace_must_match_the_request_namespace(client: Client) -> None:
    # rest.EnsureObjectNamespaceMatchesRequestNamespace.
    failed = await refused(client.create(CM, {"metadata": {"name": "a", "namespace": "kube-system"}}))
    assert failed.status == kube.bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_an_empty_body_namespace_takes_the_request_namespace(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "a", "namespace": ""}})
    assert created["metadata"]["namespace"] == "default"


# ---------------------------------------------------------------- names


async def test_name_or_generate_name_is_required(client: Client) -> None:
    failed = await refused(client.create(CM, {"metadata": {}}))
    assert failed.status == kube.invalid(
        "ConfigMap", "", [kube.field_required("metadata.name", "name or generateName is required")]
    )


async def test_generate_name_appends_five_random_characters(client: Client) -> None:
    first = await client.create(CM, {"metadata": {"generateName": "gen-"}})
    second = await client.create(CM, {"metadata": {"generateName": "gen-"}})
    for created in (first, second):
        name = created["metadata"]["name"]
        assert name.startswith("gen-") and GENERATED.fullmatch(name[4:]), name
        assert created["metadata"]["generateName"] == "gen-"
    assert first["metadata"]["name"] != second["metadata"]["name"]


async def test_a_name_wins_over_generate_name(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "fixed", "generateName": "gen-"}})
    assert created["metadata"]["name"] == "fixed"


def suffixes(*values: str) -> Iterator[str]:
    yield from values
    while True:
        yield values[-1]


async def test_a_generated_name_that_is_taken_is_generated_again(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The randomness is replaced by a known sequence; everything else is the real server.
    await client.create(CM, cm("gen-taken"))
    names = suffixes("taken", "taken", "fresh")
    monkeypatch.setattr(meta, "generate_name", lambda prefix: prefix + next(names))
    created = await client.create(CM, {"metadata": {"generateName": "gen-"}})
    assert created["metadata"]["name"] == "gen-fresh"


async def test_a_generated_name_that_stays_taken_is_a_conflict(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # Store.createWithGenerateNameRetry gives up after 8 attempts with rest.CheckGeneratedNameError's
    # errors.NewGenerateNameConflict(resource, name, 1).
    await client.create(CM, cm("gen-taken"))
    monkeypatch.setattr(meta, "generate_name", lambda prefix: prefix + "taken")
    before = client.revision()
    failed = await refused(client.create(CM, {"metadata": {"generateName": "gen-"}}))
    assert failed.status == kube.failure(
        409,
        "AlreadyExists",
        'configmaps "gen-taken" already exists, the server was not able to generate a unique name for the object',
        kube.details(name="gen-taken", kind="configmaps", retryAfterSeconds=1),
    )
    assert client.revision() == before


async def test_a_taken_name_is_already_exists(client: Client) -> None:
    await client.create(CM, cm("a"))
    before = client.revision()
    failed = await refused(client.create(CM, cm("a")))
    assert failed.status == kube.already_exists("configmaps", "a")
    assert client.revision() == before


async def test_a_name_held_by_an_object_being_deleted_says_so(client: Client) -> None:
    # Store.create: AlreadyExists on an object with a deletionTimestamp is prefixed "object is being deleted: ".
    await client.create(CM, {"metadata": {"name": "a", "finalizers": ["example.com/hold"]}})
    await client.delete(path("configmaps", "default", "a"))
    failed = await refused(client.create(CM, cm("a")))
    assert failed.status == kube.already_exists("configmaps", "a", prefix="object is being deleted: ")


def _name_errors(value: str, *details: str) -> list[Obj]:
    return [kube.field_invalid("metadata.name", value, d) for d in details]


INVALID_NAMES: list[tuple[str, str, list[Obj]]] = [
    # resource, name, causes (ValidateObjectMeta with NameIsDNSSubdomain, or NameIsDNSLabel for namespaces)
    ("configmaps", "Foo", _name_errors("Foo", kube.DNS1123_SUBDOMAIN)),
    ("configmaps", "a_b", _name_errors("a_b", kube.DNS1123_SUBDOMAIN)),
    ("configmaps", "-a", _name_errors("-a", kube.DNS1123_SUBDOMAIN)),
    ("configmaps", "a-", _name_errors("a-", kube.DNS1123_SUBDOMAIN)),
    ("configmaps", "a..b", _name_errors("a..b", kube.DNS1123_SUBDOMAIN)),
    ("configmaps", "a" * 254, _name_errors("a" * 254, "must be no more than 253 characters")),
    ("secrets", "Sec", _name_errors("Sec", kube.DNS1123_SUBDOMAIN)),
    ("namespaces", "Foo", _name_errors("Foo", kube.DNS1123_LABEL)),
    ("namespaces", "a.b", _name_errors("a.b", "must not contain dots")),
    ("namespaces", "a_b", _name_errors("a_b", kube.DNS1123_LABEL)),
]


@pytest.mark.parametrize(("resource", "name", "causes"), INVALID_NAMES, ids=lambda v: str(v)[:20])
async def test_invalid_names_are_refused_with_kubernetes_messages(
    client: Client, resource: str, name: str, causes: list[Obj]
) -> None:
    before = client.revision()
    failed = await refused(client.create(target(resource), {"metadata": {"name": name}}))
    assert failed.status == kube.invalid(KINDS[resource], name, causes)
    assert client.revision() == before


@pytest.mark.parametrize(
    ("resource", "name"),
    [("configmaps", "a.b"), ("configmaps", "a" * 253), ("secrets", "0-x.y"), ("namespaces", "a" * 63)],
    ids=lambda v: str(v)[:20],
)
async def test_valid_names_are_accepted(client: Client, resource: str, name: str) -> None:
    created = await client.create(target(resource), {"metadata": {"name": name}})
    assert created["metadata"]["name"] == name


async def test_an_invalid_generate_name_is_reported_with_the_generated_name(client: Client) -> None:
    # ValidateObjectMeta checks generateName (trailing dash masked) and the generated name.
    failed = await refused(client.create(CM, {"metadata": {"generateName": "Bad-"}}))
    name = failed.status.get("details", {}).get("name", "")
    assert name.startswith("Bad-") and GENERATED.fullmatch(name[4:]), failed.status
    assert failed.status == kube.invalid(
        "ConfigMap",
        name,
        [
            kube.field_invalid("metadata.generateName", "Bad-", kube.DNS1123_SUBDOMAIN),
            kube.field_invalid("metadata.name", name, kube.DNS1123_SUBDOMAIN),
        ],
    )


# ---------------------------------------------------------------- kind-specific defaulting


async def test_secret_string_data_is_merged_into_data_and_type_defaults_to_opaque(client: Client) -> None:
    # v1 Convert_v1_Secret_To_core_Secret: stringData overwrites data; SetDefaults_Secret: type Opaque.
    body = {
        "metadata": {"name": "s"},
        "data": {"kept": base64.b64encode(b"old").decode(), "both": base64.b64encode(b"from-data").decode()},
        "stringData": {"both": "from-string-data", "plain": "hello"},
    }
    created = await client.create(SECRETS, body)
    assert created["type"] == "Opaque"
    assert "stringData" not in created
    decoded = {k: base64.b64decode(v) for k, v in created["data"].items()}
    assert decoded == {"kept": b"old", "both": b"from-string-data", "plain": b"hello"}
    assert await client.get(path("secrets", "default", "s")) == created


async def test_secret_type_is_kept_when_given(client: Client) -> None:
    created = await client.create(SECRETS, {"metadata": {"name": "s"}, "type": "example.com/custom"})
    assert created["type"] == "example.com/custom"


# ---------------------------------------------------------------- field validation


UNKNOWN = {"metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": True}


@pytest.mark.parametrize(
    ("options", "warnings"),
    [
        ({}, ['unknown field "extra"', 'unknown field "metadata.bogus"']),
        ({"fieldValidation": "Warn"}, ['unknown field "extra"', 'unknown field "metadata.bogus"']),
        ({"fieldValidation": "Ignore"}, []),
    ],
    ids=["default", "Warn", "Ignore"],
)
async def test_unknown_fields_warn_or_are_dropped(client: Client, options: Obj, warnings: list[str]) -> None:
    resp = await client.create_response(CM, raw(UNKNOWN), **options)
    assert sorted(resp.warnings) == warnings
    created = orjson.loads(resp.object.data)
    assert "extra" not in created and "bogus" not in created["metadata"]
    assert created["data"] == {"k": "v"}


async def test_unknown_fields_with_strict_validation_are_a_bad_request(client: Client) -> None:
    # createHandler: a strict decoding error goes through transformDecodeError, so the message is
    # `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"`
    # (as kubectl shows it: "Error from server (BadRequest): ... cannot be handled as a ...: strict decoding error").
    before = client.revision()
    body = {"metadata": {"name": "a"}, "extra": True}
    failed = await refused(client.create(CM, body, fieldValidation="Strict"))
    assert failed.status == kube.bad_request(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"'
    )
    assert client.revision() == before


async def test_duplicate_fields_warn(client: Client) -> None:
    body = core_pb2.RawObject(encoding=JSON, data=b'{"metadata":{"name":"a"},"data":{"k":"1"},"data":{"k":"2"}}')
    resp = await client.create_response(CM, body)
    assert list(resp.warnings) == ['duplicate field "data"']
    assert orjson.loads(resp.object.data)["data"] == {"k": "2"}


async def test_an_invalid_field_validation_value_is_invalid(client: Client) -> None:
    # ValidateCreateOptions: NotSupported over sets.List(allowedFieldValidationValues).
    failed = await refused(client.create(CM, cm("a"), fieldValidation="Loud"))
    assert failed.status == kube.invalid_options(
        "CreateOptions",
        [kube.field_not_supported("fieldValidation", '"Loud"', ["", "Ignore", "Strict", "Warn"])],
    )


WRONG_TYPES: list[tuple[Obj, str]] = [
    # Go's json.UnmarshalTypeError through transformDecodeError.
    ({"data": {"k": 1}}, "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
    ({"data": "x"}, "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string"),
    ({"immutable": "yes"}, "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool"),
    (
        {"metadata": {"name": "a", "labels": ["x"]}},
        "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
    ),
]


@pytest.mark.parametrize(("fields", "detail"), WRONG_TYPES, ids=["data-value", "data", "immutable", "labels"])
@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
async def test_wrong_json_types_are_a_bad_request_at_every_validation_level(
    client: Client, fields: Obj, detail: str, validation: str
) -> None:
    failed = await refused(client.create(CM, {"metadata": {"name": "a"}, **fields}, fieldValidation=validation))
    assert failed.status == kube.bad_request(f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {detail}')


# ---------------------------------------------------------------- dry run


async def test_dry_run_create_answers_the_object_and_stores_nothing(client: Client) -> None:
    before = client.revision()
    created = await client.create(CM, cm("a", data={"k": "v"}), dryRun=["All"])
    m = created["metadata"]
    assert (m["name"], m["namespace"], created["data"]) == ("a", "default", {"k": "v"})
    assert str(uuid.UUID(m["uid"])) == m["uid"] and RFC3339.fullmatch(m["creationTimestamp"])
    assert client.revision() == before
    failed = await refused(client.get(path("configmaps", "default", "a")))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_dry_run_create_still_validates(client: Client) -> None:
    failed = await refused(client.create(CM, {"metadata": {"name": "Bad"}}, dryRun=["All"]))
    assert failed.status == kube.invalid("ConfigMap", "Bad", _name_errors("Bad", kube.DNS1123_SUBDOMAIN))


async def test_dry_run_create_of_a_taken_name_is_already_exists(client: Client) -> None:
    await client.create(CM, cm("a"))
    failed = await refused(client.create(CM, cm("a"), dryRun=["All"]))
    assert failed.status == kube.already_exists("configmaps", "a")


@pytest.mark.parametrize(("values", "rendered"), [
    (["Bogus"], '[]string{"Bogus"}'), (["All", "x"], '[]string{"All", "x"}')])
async def test_an_invalid_dry_run_value_is_invalid(client: Client, values: list[str], rendered: str) -> None:
    # ValidateDryRun: field.NotSupported(dryRun, []string, ["All"]); 1.28's ErrorBody prints the slice as %#v.
    failed = await refused(client.create(CM, cm("a"), dryRun=values))
    assert failed.status == kube.invalid_options(
        "CreateOptions", [kube.field_not_supported("dryRun", rendered, ["All"])]
    )


# ---------------------------------------------------------------- protobuf


async def test_protobuf_accept_answers_the_kinds_message(client: Client) -> None:
    resp = await client.create_response(CM, raw(cm("a", data={"k": "v"})), accept=PROTOBUF)
    assert resp.object.encoding == PROTOBUF
    created = core_v1.ConfigMap.FromString(resp.object.data)
    assert (created.metadata.name, created.metadata.namespace, dict(created.data)) == ("a", "default", {"k": "v"})
    assert created.metadata.resourceVersion == str(client.revision())
    fetched = core_v1.ConfigMap.FromString(
        (await client.get_raw(path("configmaps", "default", "a"), accept=PROTOBUF)).data
    )
    assert fetched == created


async def test_a_protobuf_body_creates_the_same_object_as_json(client: Client) -> None:
    message = core_v1.ConfigMap()
    message.metadata.name = "from-proto"
    message.metadata.labels["app"] = "x"
    message.data["k"] = "v"
    message.binaryData["b"] = b"\x00\x01"
    message.immutable = True
    body = core_pb2.RawObject(encoding=PROTOBUF, data=message.SerializeToString())
    from_proto = orjson.loads((await client.create_response(CM, body)).object.data)
    from_json = await client.create(
        CM,
        {
            "metadata": {"name": "from-json", "labels": {"app": "x"}},
            "data": {"k": "v"},
            "binaryData": {"b": base64.b64encode(b"\x00\x01").decode()},
            "immutable": True,
        },
    )
    server_set = ("name", "uid", "creationTimestamp", "resourceVersion")
    for obj in (from_proto, from_json):
        for field in server_set:
            obj["metadata"].pop(field)
        for entry in obj["metadata"]["managedFields"]:
            entry.pop("time")  # the server's clock, which may tick between the two creates
    assert from_proto == from_json
