"""Delete: the Success Status or the deleted object (kind by kind), preconditions, finalizers and
deletionTimestamp, each kind's default propagation, dry run and bad options."""

from __future__ import annotations

import asyncio
import copy
import time

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds import BUILTIN
from tests.server import kube
from tests.server.client import Client, Obj, path, refused
from tests.server.crd.test_crds import WIDGETS, crd_body, established, install, settled, widget
from tests.server.kinds import test_kinds_certificates as certificate_kinds
from tests.server.kinds import test_kinds_corev1 as core_kinds
from tests.server.kinds import test_kinds_extensions as extension_kinds
from tests.server.kinds import test_kinds_flowcontrol as flowcontrol_kinds
from tests.server.kinds import test_kinds_platform as platform_kinds
from tests.server.kinds import test_kinds_storage as storage_kinds
from tests.server.kinds import test_kinds_workloads as workload_kinds

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")
HOLD = "example.com/hold"
ALSO = "example.com/also"


async def create_a(client: Client, *finalizers: str) -> Obj:
    metadata: Obj = {"name": "a"}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return await client.create(CM, {"metadata": metadata, "data": {"k": "v"}})


def named(obj: Obj, name: str) -> bool:
    return bool(obj["metadata"]["name"] == name)


# ---------------------------------------------------------------- completed deletes


async def test_a_completed_delete_answers_the_success_status(client: Client) -> None:
    # Store.finalizeDelete: Status{Success, Details{name, group, kind: <resource>, uid}}.
    created = await create_a(client)
    before = client.revision()
    answer = await client.delete(A)
    assert answer == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert client.revision() == before + 1
    failed = await refused(client.get(A))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_a_delete_is_one_deleted_event_carrying_the_last_state(client: Client) -> None:
    created = await create_a(client)
    await client.delete(A)
    events = await client.events(CM, lambda e: True, resourceVersion=created["metadata"]["resourceVersion"])
    assert [t for t, _ in events] == ["DELETED"]
    assert events[0][1]["data"] == {"k": "v"} and events[0][1]["metadata"]["uid"] == created["metadata"]["uid"]


async def test_deleting_a_missing_object_is_not_found(client: Client) -> None:
    failed = await refused(client.delete(A))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_a_background_propagation_policy_deletes_at_once(client: Client) -> None:
    await create_a(client)
    answer = await client.delete(A, propagationPolicy="Background")
    assert answer["status"] == "Success"
    await refused(client.get(A))


# ---------------------------------------------------------------- what each kind answers

# Every built-in kind: (group, resource) -> (answer, default propagation). The answer is kube-apiserver 1.28's
# for a delete that completes: "object" where the kind's registry store sets ReturnDeletedObject
# (pkg/registry/core/{pod,service,serviceaccount,persistentvolume,persistentvolumeclaim,podtemplate,
# resourcequota,namespace}/storage), else the Success Status; "marked" where the kind's own REST Delete always
# marks first (namespaces, then ReturnDeletedObject on the final delete; CRDs, with their cleanup finalizer).
# The propagation is the strategy's DefaultGarbageCollectionPolicy for the served version (the store's default
# is DeleteDependents): ReplicationControllers (core/v1) and Jobs (batch/v1) orphan, events support none.
DELETES: dict[tuple[str, str], tuple[str, str]] = {
    ("", "namespaces"): ("marked", "DeleteDependents"),
    ("", "configmaps"): ("status", "DeleteDependents"),
    ("", "secrets"): ("status", "DeleteDependents"),
    ("", "serviceaccounts"): ("object", "DeleteDependents"),
    ("", "services"): ("object", "DeleteDependents"),
    ("", "endpoints"): ("status", "DeleteDependents"),
    ("", "pods"): ("object", "DeleteDependents"),
    ("", "podtemplates"): ("object", "DeleteDependents"),
    ("", "nodes"): ("status", "DeleteDependents"),
    ("", "events"): ("status", "Unsupported"),
    ("", "persistentvolumes"): ("object", "DeleteDependents"),
    ("", "persistentvolumeclaims"): ("object", "DeleteDependents"),
    ("", "resourcequotas"): ("object", "DeleteDependents"),
    ("", "limitranges"): ("status", "DeleteDependents"),
    ("", "replicationcontrollers"): ("status", "OrphanDependents"),
    ("apps", "deployments"): ("status", "DeleteDependents"),
    ("apps", "replicasets"): ("status", "DeleteDependents"),
    ("apps", "statefulsets"): ("status", "DeleteDependents"),
    ("apps", "daemonsets"): ("status", "DeleteDependents"),
    ("apps", "controllerrevisions"): ("status", "DeleteDependents"),
    ("events.k8s.io", "events"): ("status", "Unsupported"),
    ("batch", "jobs"): ("status", "OrphanDependents"),
    ("batch", "cronjobs"): ("status", "DeleteDependents"),
    ("rbac.authorization.k8s.io", "roles"): ("status", "DeleteDependents"),
    ("rbac.authorization.k8s.io", "clusterroles"): ("status", "DeleteDependents"),
    ("rbac.authorization.k8s.io", "rolebindings"): ("status", "DeleteDependents"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ("status", "DeleteDependents"),
    ("coordination.k8s.io", "leases"): ("status", "DeleteDependents"),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("marked", "DeleteDependents"),
    ("storage.k8s.io", "storageclasses"): ("object", "DeleteDependents"),
    ("storage.k8s.io", "volumeattachments"): ("object", "DeleteDependents"),
    ("storage.k8s.io", "csidrivers"): ("object", "DeleteDependents"),
    ("storage.k8s.io", "csinodes"): ("object", "DeleteDependents"),
    ("storage.k8s.io", "csistoragecapacities"): ("status", "DeleteDependents"),
    ("certificates.k8s.io", "certificatesigningrequests"): ("status", "DeleteDependents"),
    ("networking.k8s.io", "ingresses"): ("status", "DeleteDependents"),
    ("networking.k8s.io", "ingressclasses"): ("status", "DeleteDependents"),
    ("networking.k8s.io", "networkpolicies"): ("status", "DeleteDependents"),
    ("policy", "poddisruptionbudgets"): ("status", "DeleteDependents"),
    ("scheduling.k8s.io", "priorityclasses"): ("status", "DeleteDependents"),
    ("node.k8s.io", "runtimeclasses"): ("status", "DeleteDependents"),
    ("discovery.k8s.io", "endpointslices"): ("status", "DeleteDependents"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): ("status", "DeleteDependents"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): ("status", "DeleteDependents"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ("status", "DeleteDependents"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ("status", "DeleteDependents"),
    ("apiregistration.k8s.io", "apiservices"): ("status", "DeleteDependents"),
    ("autoscaling", "horizontalpodautoscalers"): ("status", "DeleteDependents"),
}
KIND_IDS = [f"{g or 'core'}/{r}" for g, r in DELETES]


def kind_body(group: str, resource: str) -> tuple[core_pb2.ResourcePath, Obj]:
    """Where to create a minimal valid object of the kind, and the object (named by its metadata.name)."""
    builtin = next(r for r in BUILTIN if (r.group, r.resource) == (group, resource))
    namespace = "default" if builtin.namespaced else ""
    bodies: dict[tuple[str, str], Obj] = {("", r): o for r, _, o in core_kinds.KINDS}
    bodies.update({(g, r): workload_kinds.body(r) for r, (g, _, _) in workload_kinds.KINDS.items()})
    bodies.update({(storage_kinds.GROUP, r): storage_kinds.body(r) for r in storage_kinds.KINDS})
    bodies[(certificate_kinds.GROUP, "certificatesigningrequests")] = certificate_kinds.body("web")
    bodies.update({(g, r): platform_kinds.body(r) for r, (g, _, _) in platform_kinds.KINDS.items()})
    bodies.update({(flowcontrol_kinds.GROUP, r): flowcontrol_kinds.body(r) for r in flowcontrol_kinds.KINDS})
    bodies.update({(g, r): extension_kinds.body(r) for r, (g, _, _, _) in extension_kinds.KINDS.items()})
    bodies.update({
        ("", "namespaces"): {"metadata": {"name": "gone"}},
        ("", "configmaps"): {"metadata": {"name": "a"}, "data": {"k": "v"}},
        ("", "secrets"): {"metadata": {"name": "a"}, "stringData": {"k": "v"}},
        ("", "podtemplates"): {"metadata": {"name": "web"}, "template": {
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
        ("apiextensions.k8s.io", "customresourcedefinitions"): crd_body(),
    })
    return path(resource, namespace, group=group, version=builtin.version), copy.deepcopy(bodies[(group, resource)])


def test_the_table_has_every_builtin_kind_as_registered() -> None:
    registered = {(r.group, r.resource): (r.strategy.returns_deleted_object, r.strategy.garbage_collection)
                  for r in BUILTIN if "delete" in r.verbs}  # reviews are answered, never stored: nothing to delete
    expected = {k: (answer == "object" or k == ("", "namespaces"), gc) for k, (answer, gc) in DELETES.items()}
    assert registered == expected


@pytest.mark.parametrize(("group", "resource"), list(DELETES), ids=KIND_IDS)
async def test_what_a_delete_answers_kind_by_kind(client: Client, group: str, resource: str) -> None:
    # Store.finalizeDelete: the deleted object (at its deletion's revision) with ReturnDeletedObject, else
    # Status{Success, details{name, group, kind: <resource>, uid}}; HTTP 200 either way.
    answer_kind, _ = DELETES[(group, resource)]
    at, body = kind_body(group, resource)
    created = await client.create_unprotected(at, body)
    name = created["metadata"]["name"]
    one = path(at.resource, at.namespace, name, group=group, version=at.version)
    answer = await client.delete(one, propagationPolicy="Background")
    if answer_kind == "status":
        details = {"name": name, "kind": resource, "uid": created["metadata"]["uid"]}
        expected = {"group": group, **details} if group else details
        assert answer == {"metadata": {}, "status": "Success", "details": expected}
    else:
        m = answer["metadata"]
        assert (answer["kind"], m["uid"]) == (created["kind"], created["metadata"]["uid"])
        assert ("deletionTimestamp" in m) == (answer_kind == "marked")
        if answer_kind == "object":  # a marked one's controller may write after the mark
            assert m["resourceVersion"] == str(client.revision())
    if answer_kind != "marked":
        await refused(client.get(one))


async def _judged(client: Client, at: core_pb2.ResourcePath, condition: str = "Available",
                  timeout: float = 5.0) -> None:
    """Once a controller has written the object's `condition` (True or not): the availability controller's
    Available on an APIService, priority and fairness's Dangling on a FlowSchema."""
    deadline = time.monotonic() + timeout
    while not any(c["type"] == condition
                  for c in ((await client.get(at)).get("status") or {}).get("conditions") or []):
        assert time.monotonic() < deadline, f"the {condition} condition was never written"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(("group", "resource"), list(DELETES), ids=KIND_IDS)
async def test_a_dry_run_delete_answers_as_the_kind_does_and_stores_nothing(
    client: Client, group: str, resource: str
) -> None:
    answer_kind, _ = DELETES[(group, resource)]
    at, body = kind_body(group, resource)
    created = await client.create_unprotected(at, body)
    one = path(at.resource, at.namespace, created["metadata"]["name"], group=group, version=at.version)
    if resource == "customresourcedefinitions":  # the CRD's controllers' writes are over
        await settled(client, await established(client, created["metadata"]["name"]))
    if resource == "apiservices":  # the availability controller's status write is over
        await _judged(client, one)
    if resource == "flowschemas":  # so is priority and fairness's
        await _judged(client, one, "Dangling")
    stored = await client.get(one)
    before = client.revision()
    answer = await client.delete(one, dryRun=["All"], propagationPolicy="Background")
    if answer_kind == "status":
        assert answer["status"] == "Success"
    else:  # the object as stored (marked, for kinds that mark), at its current resourceVersion
        assert answer["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
        assert ("deletionTimestamp" in answer["metadata"]) == (answer_kind == "marked")
    if answer_kind == "object":
        assert answer == stored
    assert client.revision() == before
    assert await client.get(one) == stored


@pytest.mark.parametrize(("group", "resource"), list(DELETES), ids=KIND_IDS)
async def test_a_delete_without_options_follows_the_kinds_default_propagation(
    client: Client, group: str, resource: str
) -> None:
    # deletionFinalizersForGarbageCollection: with no option, OrphanDependents kinds get the `orphan` finalizer
    # (and stay until the collector removes it); the others are deleted at once and their dependents later.
    await client.running.garbage_collector.stop()  # the apiserver's side alone: nothing removes the finalizer
    answer_kind, policy = DELETES[(group, resource)]
    at, body = kind_body(group, resource)
    created = await client.create_unprotected(at, body)
    one = path(at.resource, at.namespace, created["metadata"]["name"], group=group, version=at.version)
    answer = await client.delete(one)
    if policy == "OrphanDependents":
        assert answer["metadata"]["finalizers"] == ["orphan"] and "deletionTimestamp" in answer["metadata"]
        assert await client.get(one) == answer
    elif answer_kind != "marked":
        assert "orphan" not in (answer.get("metadata") or {}).get("finalizers", [])
        await refused(client.get(one))


@pytest.mark.parametrize(("group", "resource"), [k for k, v in DELETES.items() if v[0] != "marked"],
                         ids=[i for i, v in zip(KIND_IDS, DELETES.values(), strict=True) if v[0] != "marked"])
async def test_foreground_deletion_waits_except_where_the_kind_supports_no_propagation(
    client: Client, group: str, resource: str
) -> None:
    # A policy of Unsupported (events) adds no collector finalizer whatever the options ask.
    await client.running.garbage_collector.stop()
    _, policy = DELETES[(group, resource)]
    at, body = kind_body(group, resource)
    created = await client.create_unprotected(at, body)
    one = path(at.resource, at.namespace, created["metadata"]["name"], group=group, version=at.version)
    answer = await client.delete(one, propagationPolicy="Foreground")
    if policy == "Unsupported":
        assert answer["status"] == "Success"
        await refused(client.get(one))
    else:
        assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]


async def test_a_custom_resource_delete_answers_the_success_status(client: Client) -> None:
    # customresource.NewStorage sets no ReturnDeletedObject, and its strategy no GC policy.
    await install(client)
    created = await client.create(WIDGETS, widget("w"))
    answer = await client.delete(path("widgets", "default", "w", group="example.com"))
    assert answer == {"metadata": {}, "status": "Success",
                      "details": {"name": "w", "group": "example.com", "kind": "widgets",
                                  "uid": created["metadata"]["uid"]}}


async def test_a_pending_graceful_delete_answers_the_pod_unchanged(client: Client) -> None:
    # rest.BeforeDelete's pendingGraceful: finalizeDelete of the stored object, no write.
    pod = core_kinds.pod(nodeName="node-1")
    await client.create(path("pods", "default"), pod)
    marked = await client.delete(path("pods", "default", "web"))
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    before = client.revision()
    again = await client.delete(path("pods", "default", "web"))
    assert again == marked
    assert client.revision() == before


async def test_deletecollection_lists_what_it_read_whatever_the_kind_answers(client: Client) -> None:
    # Store.DeleteCollection answers the list it deleted from, not each Delete's answer.
    created = await client.create(path("serviceaccounts", "default"), {"metadata": {"name": "robot"}})
    deleted = await client.delete_collection(path("serviceaccounts", "default"))
    assert deleted.kind == "ServiceAccountList"
    items = [orjson.loads(i) for i in deleted.items]
    robot = next(i for i in items if i["metadata"]["name"] == "robot")
    assert robot == {k: v for k, v in created.items() if k not in ("kind", "apiVersion")}


# ---------------------------------------------------------------- preconditions


async def test_matching_preconditions_delete(client: Client) -> None:
    created = await create_a(client)
    m = created["metadata"]
    answer = await client.delete(A, preconditions={"uid": m["uid"], "resourceVersion": m["resourceVersion"]})
    assert answer["status"] == "Success"


async def test_a_uid_precondition_that_does_not_match_is_a_conflict(client: Client) -> None:
    # rest.BeforeDelete checks preconditions first: NewConflict(GroupResource{Resource: gvk.Kind}, ...), so the
    # kind, not the resource, names the object (seen from kube-apiserver: `Operation cannot be fulfilled on Pod
    # "web-...": the UID in the precondition (...) does not match the UID in record (...). The object might have
    # been deleted and then recreated`).
    created = await create_a(client)
    other = "00000000-0000-4000-8000-000000000000"
    before = client.revision()
    failed = await refused(client.delete(A, preconditions={"uid": other}))
    detail = (
        f"the UID in the precondition ({other}) does not match the UID in record ({created['metadata']['uid']}). "
        "The object might have been deleted and then recreated"
    )
    assert failed.status == kube.conflict("ConfigMap", "a", detail)
    assert client.revision() == before
    assert await client.get(A) == created


async def test_a_resource_version_precondition_that_does_not_match_is_a_conflict(client: Client) -> None:
    created = await create_a(client)
    updated, _ = await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "w"}})
    stale = created["metadata"]["resourceVersion"]
    failed = await refused(client.delete(A, preconditions={"resourceVersion": stale}))
    detail = (
        f"the ResourceVersion in the precondition ({stale}) does not match the ResourceVersion in record "
        f"({updated['metadata']['resourceVersion']}). The object might have been modified"
    )
    assert failed.status == kube.conflict("ConfigMap", "a", detail)
    assert await client.get(A) == updated


# ---------------------------------------------------------------- finalizers


async def test_an_object_with_finalizers_is_marked_and_returned(client: Client) -> None:
    created = await create_a(client, HOLD)
    answer = await client.delete(A)
    m = answer["metadata"]
    assert m["deletionGracePeriodSeconds"] == 0
    assert m["deletionTimestamp"] >= created["metadata"]["creationTimestamp"]
    assert m["finalizers"] == [HOLD]
    assert m["resourceVersion"] == str(client.revision())
    assert await client.get(A) == answer
    events = await client.events(CM, lambda e: True, resourceVersion=created["metadata"]["resourceVersion"])
    assert events == [("MODIFIED", answer)]


async def test_deleting_an_object_already_being_deleted_changes_nothing(client: Client) -> None:
    await create_a(client, HOLD)
    marked = await client.delete(A)
    before = client.revision()
    again = await client.delete(A)
    assert again == marked
    assert client.revision() == before


async def test_removing_the_last_finalizer_deletes_the_object(client: Client) -> None:
    created = await create_a(client, HOLD, ALSO)
    marked = await client.delete(A)
    one_left = dict(marked, metadata={**marked["metadata"], "finalizers": [ALSO]})
    still, _ = await client.update(A, one_left)
    assert still["metadata"]["finalizers"] == [ALSO]
    assert still["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert await client.get(A) == still
    none_left = dict(still, metadata={k: v for k, v in still["metadata"].items() if k != "finalizers"})
    await client.update(A, none_left)
    failed = await refused(client.get(A))
    assert failed.status == kube.not_found("configmaps", "a")
    events = await client.events(
        CM, lambda e: e[0] == "DELETED", resourceVersion=created["metadata"]["resourceVersion"]
    )
    assert [t for t, _ in events] == ["MODIFIED", "MODIFIED", "DELETED"]


async def test_a_deletion_timestamp_can_never_be_unset(client: Client) -> None:
    await create_a(client, HOLD)
    marked = await client.delete(A)
    body = dict(marked, metadata={k: v for k, v in marked["metadata"].items() if not k.startswith("deletion")})
    body["data"] = {"k": "changed"}
    updated, _ = await client.update(A, body)
    assert updated["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert updated["metadata"]["deletionGracePeriodSeconds"] == 0
    assert updated["data"] == {"k": "changed"}


async def test_no_finalizer_can_be_added_to_an_object_being_deleted(client: Client) -> None:
    # ValidateObjectMetaUpdate -> ValidateNoNewFinalizers: field.Forbidden with %#v of the new ones.
    await create_a(client, HOLD)
    marked = await client.delete(A)
    body = dict(marked, metadata={**marked["metadata"], "finalizers": [HOLD, ALSO]})
    before = client.revision()
    failed = await refused(client.update(A, body))
    assert failed.status == kube.invalid(
        "ConfigMap",
        "a",
        [
            kube.field_forbidden(
                "metadata.finalizers",
                'no new finalizers can be added if the object is being deleted, found new finalizers []string{"'
                + ALSO
                + '"}',
            )
        ],
    )
    assert client.revision() == before


async def test_finalizers_may_be_added_before_deletion(client: Client) -> None:
    created = await create_a(client)
    body = dict(created, metadata={**created["metadata"], "finalizers": [HOLD]})
    updated, _ = await client.update(A, body)
    assert updated["metadata"]["finalizers"] == [HOLD]


# ---------------------------------------------------------------- dry run and options


async def test_dry_run_delete_answers_success_and_deletes_nothing(client: Client) -> None:
    created = await create_a(client)
    before = client.revision()
    answer = await client.delete(A, dryRun=["All"])
    assert answer == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert client.revision() == before
    assert await client.get(A) == created


async def test_dry_run_delete_of_a_held_object_answers_it_marked_and_stores_nothing(client: Client) -> None:
    created = await create_a(client, HOLD)
    before = client.revision()
    answer = await client.delete(A, dryRun=["All"])
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0 and "deletionTimestamp" in answer["metadata"]
    assert client.revision() == before
    assert await client.get(A) == created


async def test_dry_run_delete_still_checks_preconditions(client: Client) -> None:
    created = await create_a(client)
    other = "00000000-0000-4000-8000-000000000000"
    failed = await refused(client.delete(A, dryRun=["All"], preconditions={"uid": other}))
    assert failed.status["code"] == 409
    assert await client.get(A) == created


@pytest.mark.parametrize(
    ("options", "causes"),
    [
        # ValidateDeleteOptions: propagationPolicy NotSupported lists Foreground, Background, Orphan and "nil".
        (
            {"propagationPolicy": "Bogus"},
            [kube.field_not_supported("propagationPolicy", '"Bogus"', ["Foreground", "Background", "Orphan", "nil"])],
        ),
        ({"dryRun": ["Bogus"]}, [kube.field_not_supported("dryRun", '[]string{"Bogus"}', ["All"])]),
    ],
    ids=["propagationPolicy", "dryRun"],
)
async def test_invalid_delete_options_are_invalid(client: Client, options: Obj, causes: list[Obj]) -> None:
    created = await create_a(client)
    before = client.revision()
    failed = await refused(client.delete(A, **options))
    assert failed.status == kube.invalid_options("DeleteOptions", causes)
    assert client.revision() == before
    assert await client.get(A) == created
