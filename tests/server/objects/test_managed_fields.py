"""Server-side apply and managedFields through the CoreService, checked against kube-apiserver's answers.

Expectations follow apimachinery's field manager and structured-merge-diff: Update entries for
create/update/patch with the fields each manager added or changed, Apply entries with the applied
configuration's fields, conflicts worded by NewConflictError, removal of fields a manager stops
applying, and ownership moving on force or on an update.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")
NS = path("namespaces", name="team")
APPLY, MERGE, JSON = core_pb2.PATCH_TYPE_APPLY, core_pb2.PATCH_TYPE_MERGE, core_pb2.PATCH_TYPE_JSON
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def config(data: Obj | None = None, **metadata: Any) -> Obj:
    doc: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", **metadata}}
    if data is not None:
        doc["data"] = data
    return doc


async def apply(client: Client, doc: Any, manager: str = "alpha", p: core_pb2.ResourcePath = A, *,
                raw: bytes | None = None, **options: Any) -> tuple[Obj, bool]:
    options = {"fieldManager": manager, **options} if manager else options
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=p, type=APPLY, patch=raw if raw is not None else orjson.dumps(doc), options=options))
    return orjson.loads(response.object.data), response.created


async def patch(client: Client, kind: core_pb2.PatchType, doc: Any, manager: str, p: core_pb2.ResourcePath = A) -> Obj:
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=p, type=kind, patch=orjson.dumps(doc), options={"fieldManager": manager}))
    return orjson.loads(response.object.data)  # type: ignore[no-any-return]


def owners(obj: Obj) -> list[tuple[str, str, str, Obj]]:
    """(manager, operation, apiVersion, fieldsV1) of each entry, in order, times checked for their form."""
    entries = obj["metadata"].get("managedFields", [])
    for entry in entries:
        assert entry["fieldsType"] == "FieldsV1"
        assert "time" not in entry or TIME.fullmatch(entry["time"]), entry
    return [(e["manager"], e["operation"], e["apiVersion"], e["fieldsV1"]) for e in entries]


@pytest.mark.parametrize(("body", "fields"), [
    pytest.param({"data": {"k": "v"}}, {"f:data": {".": {}, "f:k": {}}}, id="data"),
    pytest.param({"metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}}},
                 {"f:metadata": {"f:annotations": {".": {}, "f:a": {}}, "f:labels": {".": {}, "f:app": {}}}},
                 id="labels and annotations"),
    pytest.param({"metadata": {"finalizers": ["f/one"]}}, {"f:metadata": {"f:finalizers": {".": {}, 'v:"f/one"': {}}}},
                 id="finalizers are a set"),
    pytest.param({}, None, id="nothing but metadata: no entry"),
])
async def test_create_records_an_update_entry(client: Client, body: Obj, fields: Obj | None) -> None:
    doc = {**body, "metadata": {"name": "a", **body.get("metadata", {})}}
    created = await client.create(CM, doc, fieldManager="maker")
    expected = [("maker", "Update", "v1", fields)] if fields is not None else []
    assert owners(created) == expected
    assert await client.get(A) == created


async def test_updates_take_ownership_and_keep_their_own_entry(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}, "data": {"k": "1", "j": "1"}}, fieldManager="maker")
    changed = await patch(client, MERGE, {"data": {"k": "2"}}, "editor")
    assert owners(changed) == [
        ("editor", "Update", "v1", {"f:data": {"f:k": {}}}),
        ("maker", "Update", "v1", {"f:data": {".": {}, "f:j": {}}}),
    ] or owners(changed) == [
        ("maker", "Update", "v1", {"f:data": {".": {}, "f:j": {}}}),
        ("editor", "Update", "v1", {"f:data": {"f:k": {}}}),
    ]
    # A removed field is nobody's; the remover gains nothing from a removal alone.
    removed = await patch(client, JSON, [{"op": "remove", "path": "/data/j"}], "cleaner")
    assert [o[0] for o in owners(removed)] == [o[0] for o in owners(changed)]
    assert {o[0]: o[3] for o in owners(removed)}["maker"] == {"f:data": {}}
    # A write that changes nothing leaves managedFields (and the resourceVersion) alone.
    again = await patch(client, MERGE, {"data": {"k": "2"}}, "someone-else")
    assert again == removed


async def test_apply_creates_then_owns_what_it_applied(client: Client) -> None:
    created, was_created = await apply(client, config({"k": "v"}, labels={"app": "x"}))
    assert was_created
    assert created["data"] == {"k": "v"} and created["metadata"]["labels"] == {"app": "x"}
    assert owners(created) == [
        ("alpha", "Apply", "v1", {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})]
    again, was_created = await apply(client, config({"k": "v"}, labels={"app": "x"}))
    assert (again, was_created) == (created, False)  # the same configuration again: no change at all


async def test_apply_accepts_yaml(client: Client) -> None:
    doc = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
    created, _ = await apply(client, None, raw=doc)
    assert created["data"] == {"k": "v"}


async def test_a_conflict_names_each_field_and_owner(client: Client) -> None:
    await apply(client, config({"k": "v", "j": "1"}), "alpha")
    failed = await refused(apply(client, config({"k": "other", "j": "2"}), "beta"))
    assert failed.status == kube.failure(
        409, "Conflict",
        'Apply failed with 2 conflicts: conflicts with "alpha":\n- .data.j\n- .data.k',
        {"causes": [kube.cause("FieldManagerConflict", 'conflict with "alpha"', ".data.j"),
                    kube.cause("FieldManagerConflict", 'conflict with "alpha"', ".data.k")]})
    one = await refused(apply(client, config({"k": "other"}), "beta"))
    assert one.status["message"] == 'Apply failed with 1 conflict: conflict with "alpha": .data.k'


async def test_a_conflict_with_an_updater_names_its_api_version(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}, "data": {"k": "v"}}, fieldManager="kubectl-create")
    failed = await refused(apply(client, config({"k": "other"})))
    assert failed.status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.k')


async def test_applying_the_same_value_shares_ownership(client: Client) -> None:
    await apply(client, config({"k": "v"}), "alpha")
    shared, _ = await apply(client, config({"k": "v"}), "beta")
    assert sorted(o[0] for o in owners(shared)) == ["alpha", "beta"]
    # alpha drops k: beta still owns it, so it stays.
    kept, _ = await apply(client, config(), "alpha")
    assert kept["data"] == {"k": "v"}
    assert [o[0] for o in owners(kept)] == ["beta"]


async def test_force_moves_ownership(client: Client) -> None:
    await apply(client, config({"k": "v", "j": "1"}), "alpha")
    forced, _ = await apply(client, config({"k": "forced"}), "beta", force=True)
    assert forced["data"] == {"k": "forced", "j": "1"}
    assert {o[0]: o[3] for o in owners(forced)} == {
        "alpha": {"f:data": {"f:j": {}}}, "beta": {"f:data": {"f:k": {}}}}


@pytest.mark.parametrize(("second", "data"), [
    pytest.param(config({"k": "v"}), {"k": "v"}, id="a dropped field goes"),
    pytest.param(config(), {}, id="dropping every field"),
    pytest.param(config({}), {}, id="an empty map is owned, its old keys go"),
])
async def test_fields_a_manager_stops_applying_are_removed(client: Client, second: Obj, data: Obj) -> None:
    await apply(client, config({"k": "v", "gone": "x"}))
    result, _ = await apply(client, second)
    assert result.get("data", {}) == data


async def test_an_update_takes_a_field_from_an_applier_without_conflict(client: Client) -> None:
    await apply(client, config({"k": "v", "j": "1"}), "alpha")
    changed = await patch(client, MERGE, {"data": {"k": "edited"}}, "editor")
    assert {o[0]: o[3] for o in owners(changed)} == {
        "alpha": {"f:data": {"f:j": {}}}, "editor": {"f:data": {"f:k": {}}}}
    # alpha applies again with its old value: editor owns k now, so that is a conflict.
    failed = await refused(apply(client, config({"k": "v", "j": "1"}), "alpha"))
    assert failed.status["details"]["causes"] == [
        kube.cause("FieldManagerConflict", 'conflict with "editor" using v1', ".data.k")]


async def test_status_is_not_owned_through_the_main_resource(client: Client) -> None:
    doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"a": "b"}},
           "status": {"phase": "Terminating"}}
    created, _ = await apply(client, doc, p=NS)
    assert created["status"] == {"phase": "Active"}
    assert owners(created) == [("alpha", "Apply", "v1", {"f:metadata": {"f:labels": {"f:a": {}}}})]


@pytest.mark.parametrize(("doc", "options", "expected"), [
    pytest.param(config({"k": "v"}), {"fieldManager": ""}, kube.invalid_options("PatchOptions", [
        kube.field_required("fieldManager", "is required for apply patch")]), id="no field manager"),
    pytest.param(config({"k": "v"}), {"fieldManager": "x" * 129}, kube.invalid_options("PatchOptions", [
        kube.cause("FieldValueTooLong", "Too long: must have at most 128 bytes", "fieldManager")]),
        id="field manager too long"),
    pytest.param({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}}, {}, kube.bad_request(
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"),
        id="wrong apiVersion"),
    pytest.param({**config(), "metadata": {"name": "a", "managedFields": [{"manager": "x"}]}}, {},
                 kube.bad_request("metadata.managedFields must be nil"), id="managedFields in the configuration"),
    pytest.param(config({"k": "v"}, name="b"), {}, kube.bad_request(
        "the name of the object (b) does not match the name on the URL (a)"), id="another name"),
    pytest.param([1, 2], {}, kube.bad_request(
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go "
        "value of type map[string]interface {}"),
                 id="not an object"),
])
async def test_bad_applies(client: Client, doc: Any, options: Obj, expected: Obj) -> None:
    before = client.revision()
    failed = await refused(apply(client, doc, **({"manager": "alpha"} | options if "fieldManager" not in options
                                                  else {"manager": "", **options})))
    assert failed.status == expected
    assert client.revision() == before


async def test_force_is_only_for_apply(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    failed = await refused(client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=A, type=MERGE, patch=b"{}", options={"force": True})))
    assert failed.status == kube.invalid_options("PatchOptions", [
        kube.field_forbidden("force", "may not be specified for non-apply patch")])


async def test_dry_run_apply_stores_nothing(client: Client) -> None:
    before = client.revision()
    answer, created = await apply(client, config({"k": "v"}), dryRun=["All"])
    assert answer["data"] == {"k": "v"} and created
    assert client.revision() == before
    assert (await refused(client.get(A))).status["code"] == 404


async def test_clearing_managed_fields_with_one_empty_entry(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "a"}, "data": {"k": "v"}}, fieldManager="maker")
    body = {**created, "metadata": {**created["metadata"], "managedFields": [{}]}}
    updated, _ = await client.update(A, body, fieldManager="maker")
    assert "managedFields" not in updated["metadata"]


NS_STATUS = path("namespaces", name="team", subresource="status")
CONDITION = {"type": "NamespaceDeletionContentFailure", "status": "False", "reason": "Fine", "message": "ok"}


async def test_status_patches_and_applies_own_status_through_the_subresource(client: Client) -> None:
    await client.create(path("namespaces"), {"metadata": {"name": "team"}}, fieldManager="maker")
    patched = await patch(client, MERGE, {"status": {"conditions": [CONDITION]}, "metadata": {"labels": {"x": "y"}}},
                          "status-writer", NS_STATUS)
    # lastTransitionTime has no omitempty: Go prints the unset time as null, and it is a field set.
    assert patched["status"]["conditions"] == [{**CONDITION, "lastTransitionTime": None}]
    assert patched["metadata"]["labels"]["x"] == "y"  # namespaceStatusStrategy resets spec only
    entries = {e["manager"]: e for e in patched["metadata"]["managedFields"]}
    assert entries["status-writer"]["subresource"] == "status"
    assert entries["status-writer"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:x": {}}}, "f:status": {
        "f:conditions": {".": {}, 'k:{"type":"NamespaceDeletionContentFailure"}': {
            ".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}}
    applied, _ = await apply(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"},
                                      "status": {"conditions": [{**CONDITION, "message": "applied"}]}},
                             "status-applier", NS_STATUS, force=True)
    assert applied["status"]["conditions"][0]["message"] == "applied"
    owners_by_name = {e["manager"]: e for e in applied["metadata"]["managedFields"]}
    assert owners_by_name["status-applier"]["operation"] == "Apply"
    assert owners_by_name["status-applier"]["subresource"] == "status"


async def test_an_update_of_owned_fields_keeps_the_entry_and_moves_its_time(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "kept"}, "data": {"a": "1", "b": "2"}},
                                  fieldManager="writer")
    created["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"  # an older write, as clients may send
    aged, _ = await client.update(path("configmaps", "default", "kept"), created, fieldManager="writer")
    assert [e["time"] for e in aged["metadata"]["managedFields"]] == ["2020-01-01T00:00:00Z"]
    changed = {**aged, "data": {"a": "changed", "b": "2"}}
    updated, _ = await client.update(path("configmaps", "default", "kept"), changed, fieldManager="writer")
    (entry,) = updated["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
    assert entry["time"] != "2020-01-01T00:00:00Z"


async def test_an_entry_spelled_otherwise_is_printed_again_when_its_manager_writes(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "spelled"}, "data": {"a": "1", "b": "2"}},
                                  fieldManager="writer")
    (entry,) = created["metadata"]["managedFields"]
    entry["fieldsV1"] = {"f:data": {"f:b": {}, "f:a": {}, ".": {}}}  # the same set, keys in another order
    changed = {**created, "data": {"a": "changed", "b": "2"}}
    del changed["metadata"]["resourceVersion"]
    updated, _ = await client.update(path("configmaps", "default", "spelled"), changed, fieldManager="writer")
    (written,) = updated["metadata"]["managedFields"]
    assert list(written["fieldsV1"]["f:data"]) == [".", "f:a", "f:b"]


# What kube-apiserver 1.28.7 recorded for `kubectl create` of the same bodies (its "kubectl-create" manager): a
# map or struct marked atomic is one field (ServiceSpec.selector, autoscaling/v1's CrossVersionObjectReference);
# defaults applied as the body is decoded belong to the request's manager (a CRD's conversion and listKind, the
# DaemonSet template generation annotation apps/v1's conversion adds); generation is set by the kinds whose
# strategy sets it (PriorityClass), not by others (HorizontalPodAutoscaler).
CRD: Obj = {"metadata": {"name": "widgets.example.com"}, "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": True, "storage": True,
                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
KUBE_CREATES = [
    pytest.param(path("services", "default"), {"metadata": {"name": "svc1"}, "spec": {
        "selector": {"a": "b"}, "ports": [{"port": 80, "targetPort": 8080}]}},
                 None, {"f:spec": {"f:internalTrafficPolicy": {}, "f:ports": {
                     ".": {}, 'k:{"port":80,"protocol":"TCP"}': {
                         ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
                     "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}, id="Service: an atomic selector"),
    pytest.param(path("horizontalpodautoscalers", "default", group="autoscaling", version="v1"),
                 {"metadata": {"name": "hpa1"}, "spec": {"scaleTargetRef": {
                     "apiVersion": "apps/v1", "kind": "Deployment", "name": "d2"}, "maxReplicas": 3,
                     "targetCPUUtilizationPercentage": 70}},
                 None, {"f:spec": {"f:maxReplicas": {}, "f:minReplicas": {}, "f:scaleTargetRef": {},
                                   "f:targetCPUUtilizationPercentage": {}}},
                 id="HorizontalPodAutoscaler v1: an atomic scaleTargetRef, no generation"),
    pytest.param(path("priorityclasses", group="scheduling.k8s.io"), {"metadata": {"name": "pc1"}, "value": 1000},
                 1, {"f:preemptionPolicy": {}, "f:value": {}}, id="PriorityClass: generation 1"),
    pytest.param(path("daemonsets", "default", group="apps"), {"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"a": "ds"}}, "template": {"metadata": {"labels": {"a": "ds"}}, "spec": {
            "containers": [{"name": "c", "image": "i"}]}}}},
                 1, {"f:metadata": {"f:annotations": {".": {}, "f:deprecated.daemonset.template.generation": {}}},
                     "f:spec": {"f:revisionHistoryLimit": {}, "f:selector": {}, "f:template": {
                         "f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {
                             "f:containers": {'k:{"name":"c"}': {
                                 ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                                 "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                             "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                             "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}},
                                "f:updateStrategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {},
                                                                         "f:maxUnavailable": {}}, "f:type": {}}}},
                 id="DaemonSet: the template generation annotation"),
    pytest.param(path("customresourcedefinitions", group="apiextensions.k8s.io"), CRD, 1, {"f:spec": {
        "f:conversion": {".": {}, "f:strategy": {}}, "f:group": {}, "f:names": {
            "f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}}, "f:scope": {}, "f:versions": {}}},
                 id="CustomResourceDefinition: decoded defaults"),
]


@pytest.mark.parametrize(("collection", "body", "generation", "fields"), KUBE_CREATES)
async def test_a_create_records_what_kube_records(client: Client, collection: core_pb2.ResourcePath, body: Obj,
                                                  generation: int | None, fields: Obj) -> None:
    group = f"{collection.group}/{collection.version}" if collection.group else collection.version
    created = await client.create(collection, body, fieldManager="kubectl-create")
    entry = next(e for e in created["metadata"]["managedFields"] if e["manager"] == "kubectl-create")
    assert (entry["apiVersion"], entry["fieldsV1"]) == (group, fields)
    assert created["metadata"].get("generation") == generation


async def test_a_crds_status_is_written_by_kube_apiserver(client: Client) -> None:
    # kube-apiserver 1.28.7: the naming and establishing controllers' write, manager "kube-apiserver", with the
    # conditions merged by type (listType=map).
    crds = path("customresourcedefinitions", group="apiextensions.k8s.io")
    await client.create(crds, CRD)
    for _ in range(200):
        crd = await client.get(path("customresourcedefinitions", name="widgets.example.com",
                                    group="apiextensions.k8s.io"))
        status = [e for e in crd["metadata"]["managedFields"] if e.get("subresource") == "status"]
        if status and len((crd.get("status") or {}).get("conditions") or []) == 2:
            break
        await asyncio.sleep(0.02)
    assert [e["manager"] for e in status] == ["kube-apiserver"]
    conditions = status[0]["fieldsV1"]["f:status"]["f:conditions"]
    assert sorted(k for k in conditions if k != ".") == ['k:{"type":"Established"}', 'k:{"type":"NamesAccepted"}']
