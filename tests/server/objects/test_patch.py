"""Patch through the CoreService: the three patch forms, preconditions, no-op patches and their errors."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")
JSON, MERGE, STRATEGIC, APPLY = (core_pb2.PATCH_TYPE_JSON, core_pb2.PATCH_TYPE_MERGE,
                                 core_pb2.PATCH_TYPE_STRATEGIC_MERGE, core_pb2.PATCH_TYPE_APPLY)


async def patch(
    client: Client, kind: core_pb2.PatchType, document: Any, p: core_pb2.ResourcePath = A, **options: Any
) -> Obj:
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=p, type=kind, patch=orjson.dumps(document), options=options))
    return orjson.loads(response.object.data)  # type: ignore[no-any-return]


async def create_a(client: Client) -> Obj:
    return await client.create(CM, {"metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["f/one"]},
                                    "data": {"k": "1", "gone": "2"}})


@pytest.mark.parametrize(("kind", "document", "labels", "data", "finalizers"), [
    pytest.param(MERGE, {"metadata": {"labels": {"y": "2", "x": None}}, "data": {"gone": None}},
                 {"y": "2"}, {"k": "1"}, ["f/one"], id="merge: null deletes"),
    pytest.param(MERGE, {"metadata": {"finalizers": ["f/two"]}}, {"x": "1"}, {"k": "1", "gone": "2"}, ["f/two"],
                 id="merge: lists are replaced"),
    pytest.param(STRATEGIC, {"metadata": {"finalizers": ["f/two"]}}, {"x": "1"}, {"k": "1", "gone": "2"},
                 ["f/two", "f/one"], id="strategic: finalizers merge as a set"),
    pytest.param(JSON, [{"op": "add", "path": "/metadata/labels/z", "value": "3"},
                        {"op": "remove", "path": "/data/gone"},
                        {"op": "test", "path": "/data/k", "value": "1"}],
                 {"x": "1", "z": "3"}, {"k": "1"}, ["f/one"], id="json patch"),
])
async def test_patches_apply_to_the_stored_object(
    client: Client, kind: core_pb2.PatchType, document: Any, labels: Obj, data: Obj, finalizers: list[str]
) -> None:
    created = await create_a(client)
    patched = await patch(client, kind, document)
    assert (patched["metadata"]["labels"], patched["data"], patched["metadata"]["finalizers"]) == (
        labels, data, finalizers)
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert await client.get(A) == patched


async def test_a_patch_that_changes_nothing_keeps_the_resource_version(client: Client) -> None:
    created = await create_a(client)
    before = client.revision()
    patched = await patch(client, MERGE, {"data": {"k": "1"}})
    assert patched == created
    assert client.revision() == before


@pytest.mark.parametrize("kind", [MERGE, STRATEGIC])
async def test_a_resource_version_in_a_patch_is_a_precondition(client: Client, kind: core_pb2.PatchType) -> None:
    created = await create_a(client)
    await patch(client, MERGE, {"data": {"k": "2"}})
    failed = await refused(patch(client, kind, {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                                                "data": {"k": "3"}}))
    assert (failed.status["code"], failed.status["reason"]) == (409, "Conflict")
    assert failed.status["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again")


OTHER_UID = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(("kind", "document"), [
    pytest.param(MERGE, {"metadata": {"uid": OTHER_UID}}, id="merge"),
    pytest.param(STRATEGIC, {"metadata": {"uid": OTHER_UID}}, id="strategic"),
    pytest.param(JSON, [{"op": "replace", "path": "/metadata/uid", "value": OTHER_UID}], id="json patch"),
])
async def test_a_patch_changing_the_uid_is_invalid(client: Client, kind: core_pb2.PatchType, document: Any) -> None:
    # A patch has no uid precondition (its UpdatedObjectInfo holds no object): the patched object's uid is refused
    # by ObjectMeta's update validation, as kube-apiserver 1.28 answers it (a PUT body's uid is a precondition:
    # 409, test_update.py).
    await create_a(client)
    before = client.revision()
    failed = await refused(patch(client, kind, document))
    assert failed.status == kube.invalid("ConfigMap", "a", [
        kube.cause("FieldValueInvalid", f'Invalid value: "{OTHER_UID}": field is immutable', "metadata.uid")])
    assert client.revision() == before


@pytest.mark.parametrize(("kind", "document", "code", "reason"), [
    pytest.param(JSON, [{"op": "test", "path": "/data/k", "value": "no"}], 422, "Invalid", id="failed test op"),
    pytest.param(JSON, [{"op": "replace", "path": "/data/missing/deep", "value": "v"}], 422, "Invalid",
                 id="path that does not exist"),
    pytest.param(JSON, {"op": "add"}, 400, "BadRequest", id="json patch that is not a list"),
    pytest.param(MERGE, ["not", "an", "object"], 400, "BadRequest", id="merge patch that is not an object"),
    pytest.param(MERGE, {"data": {"k": 1}}, 422, "Invalid", id="wrong type after patching"),
    pytest.param(APPLY, {"apiVersion": "v1", "kind": "ConfigMap"}, 422, "Invalid",
                 id="server-side apply without a field manager"),
])
async def test_bad_patches(client: Client, kind: core_pb2.PatchType, document: Any, code: int, reason: str) -> None:
    await create_a(client)
    before = client.revision()
    failed = await refused(patch(client, kind, document))
    assert (failed.status["code"], failed.status["reason"]) == (code, reason)
    assert client.revision() == before


@pytest.mark.parametrize(("document", "value", "why"), [
    # kube-apiserver 1.28.7's answers (kubectl patch --type=strategic beside it): the patch as Go prints a map, and
    # the unstructured converter's words for the value it cannot put in the field
    ({"data": {"k": 1}}, "map[data:map[k:1]]", "cannot convert int64 to string"),
    ({"data": {"k": 1.5}}, "map[data:map[k:1.5]]", "unrecognized type: string"),
    ({"data": {"k": True}}, "map[data:map[k:true]]", "unrecognized type: string"),
    ({"data": {"k": {"a": 1}}}, "map[data:map[k:map[a:1]]]", "unrecognized type: string"),
    ({"data": ["x"]}, "map[data:[x]]", "cannot restore map from slice"),
    ({"metadata": {"labels": "x"}}, "map[metadata:map[labels:x]]", "cannot restore map from string"),
    ({"metadata": {"ownerReferences": "x"}}, "map[metadata:map[ownerReferences:x]]",
     "cannot restore slice from string"),
    ({"binaryData": {"b": "!!"}}, "map[binaryData:map[b:!!]]",
     "error decoding from json: illegal base64 data at input byte 0"),
])
async def test_a_strategic_patch_whose_result_the_kind_cannot_hold_is_invalid(
        client: Client, document: Obj, value: str, why: str) -> None:
    await create_a(client)
    before = client.revision()
    failed = await refused(patch(client, STRATEGIC, document))
    detail = f'Invalid value: "{value}": {why}'
    assert failed.status == kube.failure(422, "Invalid", f' "" is invalid: patch: {detail}', {
        "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]})
    assert client.revision() == before


@pytest.mark.parametrize("kind", [MERGE, JSON])
async def test_a_merge_or_json_patch_whose_result_the_kind_cannot_hold_is_invalid(
        client: Client, kind: core_pb2.PatchType) -> None:
    """The value is the patched object's JSON; the reason encoding/json's, as kube's codec decodes the result."""
    await create_a(client)
    document: Any = {"data": {"k": 1}} if kind == MERGE else [{"op": "replace", "path": "/data/k", "value": 1}]
    failed = await refused(patch(client, kind, document))
    assert (failed.status["code"], failed.status["reason"]) == (422, "Invalid")
    (cause,) = failed.status["details"]["causes"]
    assert cause["field"] == "patch" and cause["message"].startswith('Invalid value: "{')
    assert cause["message"].endswith(
        ': json: cannot unmarshal number into Go struct field ConfigMap.data of type string')
    assert failed.status["message"] == f' "" is invalid: patch: {cause["message"]}'


async def test_patching_a_missing_object_is_not_found(client: Client) -> None:
    failed = await refused(patch(client, MERGE, {"data": {"k": "1"}}))
    assert (failed.status["code"], failed.status["message"]) == (404, 'configmaps "a" not found')


async def test_dry_run_patch_changes_nothing(client: Client) -> None:
    created = await create_a(client)
    before = client.revision()
    patched = await patch(client, MERGE, {"data": {"k": "dry"}}, dryRun=["All"])
    assert patched["data"]["k"] == "dry"
    assert client.revision() == before
    assert await client.get(A) == created


@pytest.mark.parametrize("writers", [16, 200])
async def test_concurrent_patches_without_a_precondition_all_apply(client: Client, writers: int) -> None:
    """A patch carries no precondition, so a lost race is retried against the object as it now is for as long
    as it takes (kube-apiserver's GuaranteedUpdate has no retry limit; the request's deadline bounds it):
    however many writers race on one object, none is answered 409 and none is lost."""
    await create_a(client)
    results = await asyncio.gather(*(patch(client, MERGE, {"data": {f"w{i}": str(i)}}) for i in range(writers)),
                                   return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    data = (await client.get(A))["data"]
    assert {k: v for k, v in data.items() if k.startswith("w")} == {f"w{i}": str(i) for i in range(writers)}


LEASE = path("leases", "default", group="coordination.k8s.io")


# A kind whose strategy refuses an update without a resourceVersion (a Lease) is still patched and applied without
# one: the patch applies to the stored object, whose version it keeps, as kube's patcher does.
@pytest.mark.parametrize(("kind", "document"), [
    (MERGE, {"metadata": {"labels": {"x": "y"}}}),
    (STRATEGIC, {"metadata": {"labels": {"x": "y"}}}),
    (JSON, [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]),
    (APPLY, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "labels": {"x": "y"}}}),
])
async def test_a_kind_refusing_unconditional_updates_is_patched_without_a_version(
        client: Client, kind: core_pb2.PatchType, document: Any) -> None:
    created = await client.create(LEASE, {"metadata": {"name": "l"}})
    options = {"fieldManager": "test"} if kind == APPLY else {}
    patched = await patch(client, kind, document, path("leases", "default", "l", group="coordination.k8s.io"),
                          **options)
    assert patched["metadata"]["labels"] == {"x": "y"}
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
