"""core/v1 and events.k8s.io/v1 Events share one storage, as in kube-apiserver: an Event written through either API
is read, listed, watched, selected and deleted through both, converted field by field.

Every field selector of both APIs runs against events written through both (kube's ToSelectableFields in
pkg/registry/core/event/strategy.go and AddFieldLabelConversionsForEvent in pkg/apis/events/v1/conversion.go:
events.k8s.io labels select on the core fields; `source` is the source component, else the reporting controller).
"""

from __future__ import annotations

import copy

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

NS = "default"
EVENTS_K8S_IO = "events.k8s.io"
TIME = "2024-05-01T10:00:00.000000Z"

# Written through core/v1: a kubelet's event (source), and a newer one naming a reporting component.
CORE_OLD: Obj = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "core-old"}, "involvedObject": {
    "kind": "Pod", "namespace": NS, "name": "web", "uid": "uid-pod", "apiVersion": "v1", "resourceVersion": "10",
    "fieldPath": "spec.containers{app}"}, "reason": "Pulled", "message": "pulled", "type": "Normal",
    "source": {"component": "kubelet", "host": "node-1"}, "count": 2}
CORE_NEW: Obj = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "core-new"}, "involvedObject": {
    "kind": "Node", "name": "n1"}, "reason": "FailedScheduling", "message": "no fit", "type": "Warning",
    "eventTime": TIME, "reportingComponent": "example.com/scheduler", "reportingInstance": "s-1", "action": "Bind"}
# Written through events.k8s.io/v1.
EVENTS_V1: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ek"}, "regarding": {
    "kind": "Deployment", "namespace": NS, "name": "web", "uid": "uid-deploy", "apiVersion": "apps/v1",
    "resourceVersion": "20"}, "reason": "ScalingReplicaSet", "note": "scaled", "type": "Normal", "eventTime": TIME,
    "reportingController": "example.com/controller", "reportingInstance": "c-1", "action": "Scale"}


def core_at(name: str = "") -> core_pb2.ResourcePath:
    return path("events", NS, name)


def events_at(name: str = "") -> core_pb2.ResourcePath:
    return path("events", NS, name, group=EVENTS_K8S_IO)


@pytest.fixture
async def written(client: Client) -> Client:
    await client.create(core_at(), copy.deepcopy(CORE_OLD))
    await client.create(core_at(), copy.deepcopy(CORE_NEW))
    await client.create(events_at(), copy.deepcopy(EVENTS_V1))
    return client


# (API, field selector, the events it selects, by name in key order)
SELECTORS: list[tuple[str, str, list[str]]] = [
    ("v1", "involvedObject.kind=Deployment", ["ek"]),
    ("v1", "involvedObject.kind=Pod", ["core-old"]),
    ("v1", "involvedObject.namespace=default", ["core-old", "ek"]),
    ("v1", "involvedObject.name=web", ["core-old", "ek"]),
    ("v1", "involvedObject.uid=uid-deploy", ["ek"]),
    ("v1", "involvedObject.apiVersion=apps/v1", ["ek"]),
    ("v1", "involvedObject.resourceVersion=10", ["core-old"]),
    ("v1", "involvedObject.fieldPath=spec.containers{app}", ["core-old"]),
    ("v1", "reason=ScalingReplicaSet", ["ek"]),
    ("v1", "reportingComponent=example.com/controller", ["ek"]),
    ("v1", "reportingComponent=", ["core-old"]),
    ("v1", "source=example.com/controller", ["ek"]),
    ("v1", "source=kubelet", ["core-old"]),
    ("v1", "source=example.com/scheduler", ["core-new"]),
    ("v1", "type=Normal", ["core-old", "ek"]),
    ("v1", "type=Warning,metadata.name=core-new", ["core-new"]),
    ("events.k8s.io", "regarding.kind=Pod", ["core-old"]),
    ("events.k8s.io", "regarding.namespace=default", ["core-old", "ek"]),
    ("events.k8s.io", "regarding.name=n1", ["core-new"]),
    ("events.k8s.io", "regarding.uid=uid-pod", ["core-old"]),
    ("events.k8s.io", "regarding.apiVersion=apps/v1", ["ek"]),
    ("events.k8s.io", "regarding.resourceVersion=20", ["ek"]),
    ("events.k8s.io", "regarding.fieldPath=spec.containers{app}", ["core-old"]),
    ("events.k8s.io", "reason=Pulled", ["core-old"]),
    ("events.k8s.io", "reportingController=example.com/scheduler", ["core-new"]),
    ("events.k8s.io", "source=kubelet", ["core-old"]),
    ("events.k8s.io", "source=example.com/controller", ["ek"]),
    ("events.k8s.io", "type=Warning", ["core-new"]),
    ("events.k8s.io", "metadata.name!=ek,metadata.namespace=default", ["core-new", "core-old"]),
]  # fmt: skip


@pytest.mark.parametrize(("api", "selector", "names"), SELECTORS, ids=[f"{a} {s}" for a, s, _ in SELECTORS])
async def test_field_selectors_see_events_written_through_either_api(
        written: Client, api: str, selector: str, names: list[str]) -> None:
    at = core_at() if api == "v1" else events_at()
    assert await written.names(at, fieldSelector=selector) == names


@pytest.mark.parametrize(("api", "selector", "label"), [
    ("v1", "regarding.kind=Pod", "regarding.kind"),
    ("v1", "reportingController=x", "reportingController"),
    ("events.k8s.io", "involvedObject.kind=Pod", "involvedObject.kind"),
    ("events.k8s.io", "reportingComponent=x", "reportingComponent"),
    ("events.k8s.io", "note=x", "note"),
])  # fmt: skip
async def test_each_api_takes_only_its_own_field_labels(client: Client, api: str, selector: str, label: str) -> None:
    at = core_at() if api == "v1" else events_at()
    failed = await refused(client.list(at, fieldSelector=selector))
    assert failed.status == kube.bad_request(f"field label not supported: {label}")


async def test_an_event_reads_converted_through_the_other_api(written: Client) -> None:
    old = await written.get(events_at("core-old"))
    assert (old["apiVersion"], old["regarding"], old["note"], old["deprecatedSource"], old["deprecatedCount"]) == (
        "events.k8s.io/v1", CORE_OLD["involvedObject"], "pulled", {"component": "kubelet", "host": "node-1"}, 2)
    assert "involvedObject" not in old and "message" not in old
    ek = await written.get(core_at("ek"))
    assert (ek["apiVersion"], ek["involvedObject"], ek["message"], ek["reportingComponent"], ek["source"]) == (
        "v1", EVENTS_V1["regarding"], "scaled", "example.com/controller", {})
    assert ek["metadata"]["uid"] == (await written.get(events_at("ek")))["metadata"]["uid"]
    assert await written.names(events_at()) == await written.names(core_at()) == ["core-new", "core-old", "ek"]


async def test_an_update_through_events_k8s_io_validates_against_the_converted_object(written: Client) -> None:
    ek = await written.get(events_at("ek"))
    ek["note"] = "changed"
    failed = await refused(written.update(events_at("ek"), ek))
    immutable = kube.field_invalid("message", "changed", "field is immutable")
    # the kind of the internal object, a core Event: no group (kube-apiserver 1.28.7 answers so)
    assert failed.status == kube.invalid("Event", "ek", [immutable])
    ek = await written.get(events_at("ek"))
    ek["metadata"]["labels"] = {"seen": "yes"}
    updated, _ = await written.update(events_at("ek"), ek)
    assert updated["note"] == "scaled"
    assert (await written.get(core_at("ek")))["metadata"]["labels"] == {"seen": "yes"}


async def test_watch_and_delete_across_apis(client: Client) -> None:
    first = await client.create(core_at(), copy.deepcopy(CORE_OLD))
    await client.create(events_at(), copy.deepcopy(EVENTS_V1))
    events = await client.events(events_at(), lambda e: e[1]["metadata"]["name"] == "ek",
                                 resourceVersion=first["metadata"]["resourceVersion"])
    assert [(kind, obj["apiVersion"], obj["regarding"]["kind"]) for kind, obj in events] == [
        ("ADDED", "events.k8s.io/v1", "Deployment")]
    await client.delete(events_at("core-old"))
    failed = await refused(client.get(core_at("core-old")))
    assert failed.status == kube.not_found("events", "core-old")
    await client.delete_collection(core_at())
    assert await client.names(events_at()) == []
