"""Update (PUT): optimistic concurrency, immutable fields, no-op writes, subresources and kind rules."""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, raw, refused

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")
SECRETS = path("secrets", "default")
NAMESPACES = path("namespaces")


def named(obj: Obj, name: str) -> bool:
    return bool(obj["metadata"]["name"] == name)


async def create_a(client: Client, **fields: Any) -> Obj:
    return await client.create(CM, {"metadata": {"name": "a"}, **fields})


def with_changes(obj: Obj, **fields: Any) -> Obj:
    out = orjson.loads(orjson.dumps(obj))
    out.update(fields)
    return out  # type: ignore[no-any-return]


# ---------------------------------------------------------------- optimistic concurrency


async def test_update_with_the_current_resource_version_succeeds(client: Client) -> None:
    created = await create_a(client, data={"k": "1"})
    updated, was_created = await client.update(A, with_changes(created, data={"k": "2"}))
    assert not was_created
    assert updated["data"] == {"k": "2"}
    assert updated["metadata"]["resourceVersion"] == str(client.revision())
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert (updated["metadata"]["uid"], updated["metadata"]["creationTimestamp"]) == (
        created["metadata"]["uid"],
        created["metadata"]["creationTimestamp"],
    )
    assert await client.get(A) == updated


async def test_a_stale_resource_version_is_a_conflict(client: Client) -> None:
    created = await create_a(client, data={"k": "1"})
    await client.update(A, with_changes(created, data={"k": "2"}))
    before = client.revision()
    failed = await refused(client.update(A, with_changes(created, data={"k": "3"})))
    assert failed.status == kube.conflict("configmaps", "a", kube.MODIFIED)
    assert client.revision() == before
    assert (await client.get(A))["data"] == {"k": "2"}


async def test_no_resource_version_is_an_unconditional_update(client: Client) -> None:
    await create_a(client, data={"k": "1"})
    await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "2"}})
    updated, _ = await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "3"}})
    assert updated["data"] == {"k": "3"}


async def test_unconditional_updates_that_lose_races_are_retried_with_their_own_body(client: Client) -> None:
    await create_a(client, data={"k": "0"})
    core = client.running.core
    bodies = [{"metadata": {"name": "a"}, "data": {"k": str(i), f"only-{i}": "x"}} for i in range(12)]
    requests = [core_pb2.UpdateRequest(path=A, object=raw(b), options={"fieldManager": f"m{i}"})
                for i, b in enumerate(bodies)]
    answers = await asyncio.gather(*(core.update(r) for r in requests))  # one batch: most lose the compare
    written = [orjson.loads(a.object.data) for a in answers]
    for i, (sent, got) in enumerate(zip(bodies, written, strict=True)):
        assert got["data"] == sent["data"]  # each round wrote its own body, not another round's leftovers
        mine = [e for e in got["metadata"]["managedFields"] if e["manager"] == f"m{i}"]
        assert [e["fieldsV1"]["f:data"].get(f"f:only-{i}") for e in mine] == [{}]
    assert len({w["metadata"]["resourceVersion"] for w in written}) == len(bodies)
    assert (await client.get(A))["data"] in [b["data"] for b in bodies]


async def test_update_of_a_missing_object_is_not_found(client: Client) -> None:
    failed = await refused(client.update(A, {"metadata": {"name": "a"}, "data": {"k": "v"}}))
    assert failed.status == kube.not_found("configmaps", "a")


LEASES = path("leases", "default", group="coordination.k8s.io")
PDBS = path("poddisruptionbudgets", "default", group="policy")
UNVERSIONED = kube.cause("FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                         "metadata.resourceVersion")

# (collection, a new object, the resourceVersion an update gives, its answer: None when it is written, else the
# resource and group of kube's 422). "0" reads as no resourceVersion, as kube's versioner parses it. A kind whose
# strategy does not AllowUnconditionalUpdate wants one (kube's test-cmd replaces a Node with "0").
UNCONDITIONAL: list[tuple[str, core_pb2.ResourcePath, Obj, str | None, tuple[str, str] | None]] = [
    ("configmap, none", CM, {"metadata": {"name": "a"}}, None, None),
    ("configmap, 0", CM, {"metadata": {"name": "a"}}, "0", None),
    ("node, 0", path("nodes"), {"metadata": {"name": "a"}}, "0", None),
    ("lease, none", LEASES, {"metadata": {"name": "a"}}, None, ("leases", "coordination.k8s.io")),
    ("lease, 0", LEASES, {"metadata": {"name": "a"}}, "0", ("leases", "coordination.k8s.io")),
    ("pdb, none", PDBS, {"metadata": {"name": "a"}, "spec": {"minAvailable": 1}}, None,
     ("poddisruptionbudgets", "policy")),
    ("apiservice, none", path("apiservices", group="apiregistration.k8s.io"),
     {"metadata": {"name": "v1.example.com"}, "spec": {"group": "example.com", "version": "v1",
                                                       "groupPriorityMinimum": 100, "versionPriority": 10}},
     None, ("apiservices", "apiregistration.k8s.io")),
]


@pytest.mark.parametrize(("collection", "obj", "version", "refusal"), [u[1:] for u in UNCONDITIONAL],
                         ids=[u[0] for u in UNCONDITIONAL])
async def test_an_update_without_a_resource_version(client: Client, collection: core_pb2.ResourcePath, obj: Obj,
                                                    version: str | None, refusal: tuple[str, str] | None) -> None:
    created = await client.create(collection, obj)
    name = obj["metadata"]["name"]
    sent = with_changes(created, metadata={"name": name, "labels": {"x": "y"}}
                        | ({"resourceVersion": version} if version is not None else {}))
    item = core_pb2.ResourcePath()
    item.CopyFrom(collection)
    item.name = name
    if refusal is None:
        updated, _ = await client.update(item, sent)
        assert updated["metadata"]["labels"] == {"x": "y"}
        assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        return
    failed = await refused(client.update(item, sent))
    assert failed.status == kube.invalid(refusal[0], name, [UNVERSIONED], group=refusal[1])
    assert await client.get(item) == created


# ---------------------------------------------------------------- identity fields


async def test_the_body_name_must_match_the_url_name(client: Client) -> None:
    # handlers.checkName.
    await create_a(client)
    await client.create(CM, {"metadata": {"name": "b"}})
    failed = await refused(client.update(A, {"metadata": {"name": "b"}, "data": {"k": "v"}}))
    assert failed.status == kube.bad_request("the name of the object (b) does not match the name on the URL (a)")


async def test_the_body_namespace_must_match_the_url_namespace(client: Client) -> None:
    # The update handler's rest.EnsureObjectNamespaceMatchesRequestNamespace (kube-rs's replace example
    # documents the answer: "the namespace of the provided object does not match the namespace sent on the request").
    await create_a(client)
    failed = await refused(client.update(A, {"metadata": {"name": "a", "namespace": "kube-system"}}))
    assert failed.status == kube.bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_a_different_uid_fails_the_uid_precondition(client: Client) -> None:
    # A PUT body's uid is a precondition (rest.defaultUpdatedObjectInfo.Preconditions); etcd3's GuaranteedUpdate
    # checks it before validation and storeerr.InterpretUpdateError answers NewConflict with the StorageError
    # text, e.g. `Operation cannot be fulfilled on endpoints "x": StorageError: invalid object, Code: 4,
    # Key: /registry/..., ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ...`.
    created = await create_a(client)
    other = "00000000-0000-4000-8000-000000000000"
    body = with_changes(created)
    body["metadata"]["uid"] = other
    before = client.revision()
    failed = await refused(client.update(A, body))
    message = failed.status.pop("message", "")
    expected = kube.conflict("configmaps", "a", "")
    expected.pop("message")
    assert failed.status == expected
    storage_error = re.escape('Operation cannot be fulfilled on configmaps "a": ') + (
        r"StorageError: invalid object, Code: 4, Key: \S+, ResourceVersion: 0, AdditionalErrorMsg: "
    )
    uid = created["metadata"]["uid"]
    assert re.fullmatch(
        storage_error + re.escape(f"Precondition failed: UID in precondition: {other}, UID in object meta: {uid}"),
        message,
    ), message
    assert client.revision() == before


@pytest.mark.parametrize("stale", [False, True])
async def test_the_uid_precondition_is_checked_before_the_resource_version(client: Client, stale: bool) -> None:
    # etcd3's GuaranteedUpdate checks the preconditions before tryUpdate compares the resourceVersion (kube-apiserver
    # 1.28.7 answers a PUT with both a stale resourceVersion and another uid with the uid's 409).
    created = await create_a(client)
    if stale:
        await client.update(A, with_changes(created, data={"k": "moved"}))
    body = with_changes(created, data={"k": "v"})
    body["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000"
    failed = await refused(client.update(A, body))
    assert failed.status["code"] == 409
    assert "Precondition failed: UID in precondition: 00000000-0000-4000-8000-000000000000" in failed.status["message"]


async def test_an_omitted_uid_keeps_the_stored_one(client: Client) -> None:
    created = await create_a(client)
    updated, _ = await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


async def test_creation_timestamp_is_silently_kept(client: Client) -> None:
    created = await create_a(client)
    body = with_changes(created, data={"k": "v"})
    body["metadata"]["creationTimestamp"] = "2001-02-03T04:05:06Z"
    updated, _ = await client.update(A, body)
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert updated["data"] == {"k": "v"}


# ---------------------------------------------------------------- no-op writes


@pytest.mark.parametrize(
    "change",
    [
        "none",
        "resourceVersion omitted",
        "creationTimestamp changed",
        "unknown field added",
    ],
)
async def test_a_write_that_changes_nothing_keeps_the_resource_version_and_emits_no_event(
    client: Client, change: str
) -> None:
    created = await create_a(client, metadata={"name": "a", "labels": {"x": "y"}}, data={"k": "v"})
    body = with_changes(created)
    if change == "resourceVersion omitted":
        del body["metadata"]["resourceVersion"]
    elif change == "creationTimestamp changed":
        body["metadata"]["creationTimestamp"] = "2001-02-03T04:05:06Z"
    elif change == "unknown field added":
        body["bogus"] = 1
    before = client.revision()
    same, _ = await client.update(A, body)
    assert same == created
    assert client.revision() == before
    await client.create(CM, {"metadata": {"name": "sentinel"}})
    events = await client.events(
        CM, lambda e: named(e[1], "sentinel"), resourceVersion=created["metadata"]["resourceVersion"]
    )
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "sentinel")]


async def test_a_real_change_emits_one_modified_event(client: Client) -> None:
    created = await create_a(client, data={"k": "1"})
    updated, _ = await client.update(A, with_changes(created, data={"k": "2"}))
    events = await client.events(CM, lambda e: True, resourceVersion=created["metadata"]["resourceVersion"])
    assert events == [("MODIFIED", updated)]


# ---------------------------------------------------------------- field validation and dry run


async def test_unknown_fields_warn_on_update(client: Client) -> None:
    created = await create_a(client)
    resp = await client.update_response(A, raw(with_changes(created, extra=1, data={"k": "v"})))
    assert list(resp.warnings) == ['unknown field "extra"']


async def test_dry_run_update_answers_the_result_and_changes_nothing(client: Client) -> None:
    created = await create_a(client, data={"k": "1"})
    before = client.revision()
    answered, _ = await client.update(A, with_changes(created, data={"k": "2"}), dryRun=["All"])
    assert answered["data"] == {"k": "2"}
    assert answered["metadata"]["uid"] == created["metadata"]["uid"]
    assert client.revision() == before
    assert await client.get(A) == created


async def test_dry_run_update_still_checks_the_resource_version(client: Client) -> None:
    created = await create_a(client, data={"k": "1"})
    await client.update(A, with_changes(created, data={"k": "2"}))
    failed = await refused(client.update(A, with_changes(created, data={"k": "3"}), dryRun=["All"]))
    assert failed.status == kube.conflict("configmaps", "a", kube.MODIFIED)


@pytest.mark.parametrize(("version", "why"), [
    ("abc", 'parsing "abc": invalid syntax'),
    ("-1", 'parsing "-1": invalid syntax'),
    ("١٢", 'parsing "١٢": invalid syntax'),  # digits, but not ASCII ones
    ("18446744073709551616", 'parsing "18446744073709551616": value out of range'),
])
async def test_a_resource_version_that_is_no_number_is_a_bad_request(client: Client, version: str, why: str) -> None:
    """kube's versioner parses the precondition with strconv.ParseUint and answers its error as a 500; here
    the same words as the client's 400."""
    created = await create_a(client, data={"k": "1"})
    changed = with_changes(created, data={"k": "2"})
    changed["metadata"]["resourceVersion"] = version
    failed = await refused(client.update(A, changed))
    assert failed.status == kube.bad_request(f"strconv.ParseUint: {why}")
    assert await client.get(A) == created


async def test_an_invalid_dry_run_on_update_is_invalid(client: Client) -> None:
    created = await create_a(client)
    failed = await refused(client.update(A, created, dryRun=["Bogus"]))
    assert failed.status == kube.invalid_options(
        "UpdateOptions", [kube.field_not_supported("dryRun", '[]string{"Bogus"}', ["All"])]
    )


# ---------------------------------------------------------------- ConfigMap and Secret rules


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


IMMUTABLE_CM_CHANGES: list[tuple[str, Obj, list[Obj]]] = [
    # core validation ValidateConfigMapUpdate: immutable, then data, then binaryData.
    ("data", {"data": {"k": "changed"}}, [kube.field_forbidden("data", kube.IMMUTABLE_WHEN_SET)]),
    (
        "binaryData",
        {"binaryData": {"b": b64("changed")}},
        [kube.field_forbidden("binaryData", kube.IMMUTABLE_WHEN_SET)],
    ),
    ("unset immutable", {"immutable": False}, [kube.field_forbidden("immutable", kube.IMMUTABLE_WHEN_SET)]),
    (
        "unset immutable and change data",
        {"immutable": False, "data": {"k": "changed"}},
        [
            kube.field_forbidden("immutable", kube.IMMUTABLE_WHEN_SET),
            kube.field_forbidden("data", kube.IMMUTABLE_WHEN_SET),
        ],
    ),
]


@pytest.mark.parametrize(
    ("change", "causes"), [c[1:] for c in IMMUTABLE_CM_CHANGES], ids=[c[0] for c in IMMUTABLE_CM_CHANGES]
)
async def test_an_immutable_config_map_refuses_data_changes(client: Client, change: Obj, causes: list[Obj]) -> None:
    created = await create_a(client, data={"k": "v"}, binaryData={"b": b64("x")}, immutable=True)
    before = client.revision()
    failed = await refused(client.update(A, with_changes(created, **change)))
    assert failed.status == kube.invalid("ConfigMap", "a", causes)
    assert client.revision() == before


async def test_an_immutable_config_map_still_takes_metadata_changes(client: Client) -> None:
    created = await create_a(client, data={"k": "v"}, immutable=True)
    body = with_changes(created)
    body["metadata"]["labels"] = {"new": "label"}
    updated, _ = await client.update(A, body)
    assert (updated["metadata"]["labels"], updated["data"], updated["immutable"]) == (
        {"new": "label"},
        {"k": "v"},
        True,
    )


async def test_a_mutable_config_map_may_become_immutable(client: Client) -> None:
    created = await create_a(client, data={"k": "v"})
    updated, _ = await client.update(A, with_changes(created, immutable=True, data={"k": "w"}))
    assert (updated["immutable"], updated["data"]) == (True, {"k": "w"})


async def test_a_secret_type_is_immutable(client: Client) -> None:
    # ValidateSecretUpdate: ValidateImmutableField(type) -> field.Invalid(type, new, "field is immutable").
    created = await client.create(SECRETS, {"metadata": {"name": "s"}, "type": "example.com/one"})
    failed = await refused(
        client.update(path("secrets", "default", "s"), with_changes(created, type="example.com/two"))
    )
    assert failed.status == kube.invalid(
        "Secret", "s", [kube.field_invalid("type", "example.com/two", "field is immutable")]
    )


async def test_an_omitted_secret_type_defaults_and_so_must_match(client: Client) -> None:
    created = await client.create(SECRETS, {"metadata": {"name": "s"}})
    assert created["type"] == "Opaque"
    body = with_changes(created, data={"k": b64("v")})
    del body["type"]
    updated, _ = await client.update(path("secrets", "default", "s"), body)
    assert updated["type"] == "Opaque"


async def test_an_immutable_secret_refuses_data_changes(client: Client) -> None:
    created = await client.create(SECRETS, {"metadata": {"name": "s"}, "data": {"k": b64("v")}, "immutable": True})
    failed = await refused(client.update(path("secrets", "default", "s"), with_changes(created, data={"k": b64("w")})))
    assert failed.status == kube.invalid("Secret", "s", [kube.field_forbidden("data", kube.IMMUTABLE_WHEN_SET)])


async def test_secret_string_data_is_merged_on_update(client: Client) -> None:
    created = await client.create(SECRETS, {"metadata": {"name": "s"}, "data": {"k": b64("v")}})
    updated, _ = await client.update(path("secrets", "default", "s"), with_changes(created, stringData={"n": "new"}))
    assert updated["data"] == {"k": b64("v"), "n": b64("new")}
    assert "stringData" not in updated


# ---------------------------------------------------------------- namespaces and their subresources


async def namespace(client: Client, name: str = "ns") -> Obj:
    return await client.create(NAMESPACES, {"metadata": {"name": name}})


CONDITION = {
    "type": "NamespaceDeletionContentFailure",
    "status": "False",
    "lastTransitionTime": "2024-01-02T03:04:05Z",
    "reason": "ContentDeleted",
}


async def test_the_namespace_resource_ignores_status_and_spec_changes(client: Client) -> None:
    # namespaceStrategy.PrepareForUpdate keeps spec.finalizers and status.
    created = await namespace(client)
    body = with_changes(created, spec={"finalizers": ["example.com/x"]}, status={"conditions": [CONDITION]})
    body["metadata"]["labels"]["team"] = "a"
    updated, _ = await client.update(path("namespaces", name="ns"), body)
    assert updated["spec"] == {"finalizers": ["kubernetes"]}
    assert updated["status"] == {"phase": "Active"}
    assert updated["metadata"]["labels"] == {"kubernetes.io/metadata.name": "ns", "team": "a"}


async def test_the_status_subresource_changes_only_status(client: Client) -> None:
    # namespaceStatusStrategy.PrepareForUpdate keeps spec.
    created = await namespace(client)
    body = with_changes(created, spec={"finalizers": []}, status={"phase": "Active", "conditions": [CONDITION]})
    updated, _ = await client.update(path("namespaces", name="ns", subresource="status"), body)
    assert updated["spec"] == {"finalizers": ["kubernetes"]}
    assert updated["status"] == {"phase": "Active", "conditions": [CONDITION]}
    assert await client.get(path("namespaces", name="ns")) == updated


async def test_the_status_subresource_refuses_terminating_on_a_live_namespace(client: Client) -> None:
    # ValidateNamespaceStatusUpdate: phase may only be Active while deletionTimestamp is empty.
    created = await namespace(client)
    body = with_changes(created, status={"phase": "Terminating"})
    failed = await refused(client.update(path("namespaces", name="ns", subresource="status"), body))
    assert failed.status == kube.invalid(
        "Namespace",
        "ns",
        [kube.field_invalid("status.Phase", "Terminating", "may only be 'Active' if `deletionTimestamp` is empty")],
    )


async def test_the_finalize_subresource_changes_spec_finalizers_not_status(client: Client) -> None:
    # namespaceFinalizeStrategy.PrepareForUpdate keeps status.
    created = await namespace(client)
    body = with_changes(
        created, spec={"finalizers": ["kubernetes", "example.com/x"]}, status={"conditions": [CONDITION]}
    )
    updated, _ = await client.update(path("namespaces", name="ns", subresource="finalize"), body)
    assert updated["spec"] == {"finalizers": ["kubernetes", "example.com/x"]}
    assert updated["status"] == {"phase": "Active"}


async def test_an_update_that_changes_nothing_through_a_subresource_is_a_no_op(client: Client) -> None:
    created = await namespace(client)
    before = client.revision()
    same, _ = await client.update(path("namespaces", name="ns", subresource="status"), created)
    assert same == created
    assert client.revision() == before
