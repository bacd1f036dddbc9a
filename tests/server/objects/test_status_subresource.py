"""Writes through /status, of every kind that has it, with every patch type and PUT, against kube-apiserver's
status strategies (each kind's statusStrategy.PrepareForUpdate and GetResetFields in kube-apiserver 1.28).

Built-in status strategies reset spec and keep the request's metadata: an annotation or label added through
/status stays, and its writer owns it. A Deployment's also resets labels; a Pod's keeps its ownerReferences. A
custom resource's status strategy copies the stored object and sets only status: its metadata never changes
there. A write to the main resource never changes status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server.client import Client, Obj, path
from tests.server.crd.test_crds import crd_body, install, widget

NS = "default"
JSON_PATCH, MERGE, STRATEGIC, APPLY = (core_pb2.PATCH_TYPE_JSON, core_pb2.PATCH_TYPE_MERGE,
                                       core_pb2.PATCH_TYPE_STRATEGIC_MERGE, core_pb2.PATCH_TYPE_APPLY)
WRITER = "status-writer"
ADDED = {"added": "yes"}
CONTAINERS = [{"name": "web", "image": "nginx:1.27"}]
TEMPLATE: Obj = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": CONTAINERS}}
JOB_TEMPLATE: Obj = {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}
WORKLOAD: Obj = {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}
CONDITION = {"type": "NamespaceDeletionContentFailure", "status": "False", "reason": "ContentDeleted",
             "lastTransitionTime": "2024-01-02T03:04:05Z"}


def _set(key: str, value: Any) -> Callable[[Obj], None]:
    def change(spec: Obj) -> None:
        spec[key] = value
    return change


def _short_names(spec: Obj) -> None:
    spec["names"]["shortNames"] = ["wdg"]


@dataclass(frozen=True)
class Kind:
    """A kind with /status: where it lives, a valid body, a status change, a spec change, and which of the
    request's labels and annotations its status strategy keeps."""

    resource: str
    body: Obj
    status: Obj | None
    spec: Callable[[Obj], None]
    group: str = ""
    version: str = "v1"
    namespaced: bool = True
    kept: frozenset[str] = field(default=frozenset({"labels", "annotations"}))

    def at(self, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
        return path(self.resource, NS if self.namespaced else "", name, group=self.group, version=self.version,
                    subresource=subresource)


def _named(name: str, **top: Any) -> Obj:
    return {"metadata": {"name": name, "labels": {"kept": "yes"}, "annotations": {"kept": "yes"}}, **top}


def _crd() -> Obj:
    body = crd_body()
    body["metadata"].update(labels={"kept": "yes"}, annotations={"kept": "yes"})
    return body


def _widget() -> Obj:
    body = widget("w")
    body["metadata"].update(labels={"kept": "yes"}, annotations={"kept": "yes"})
    return body


KINDS = [
    Kind("namespaces", _named("ns"), {"conditions": [CONDITION]}, _set("finalizers", ["kubernetes", "a.io/b"]),
         namespaced=False),
    Kind("services", _named("web", spec={"selector": {"app": "web"}, "ports": [{"port": 80}]}),
         {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}, _set("sessionAffinity", "ClientIP")),
    Kind("pods", _named("web", spec={"containers": CONTAINERS}), {"message": "hello"},
         _set("activeDeadlineSeconds", 30)),
    Kind("nodes", _named("node-1"), {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
         _set("unschedulable", True), namespaced=False),
    Kind("persistentvolumes", _named("pv-1", spec={"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                   "hostPath": {"path": "/data"}}),
         {"message": "hello"}, _set("storageClassName", "fast"), namespaced=False),
    Kind("persistentvolumeclaims", _named("data", spec={"accessModes": ["ReadWriteOnce"],
                                                        "resources": {"requests": {"storage": "1Gi"}}}),
         {"phase": "Bound"}, _set("storageClassName", "fast")),
    Kind("resourcequotas", _named("quota", spec={"hard": {"pods": "10"}}), {"used": {"pods": "1"}},
         _set("hard", {"pods": "20"})),
    Kind("replicationcontrollers", _named("web", spec={"template": TEMPLATE}), {"observedGeneration": 1},
         _set("replicas", 3)),
    # deploymentStatusStrategy also resets labels.
    Kind("deployments", _named("web", spec=WORKLOAD), {"observedGeneration": 1}, _set("replicas", 3), "apps",
         kept=frozenset({"annotations"})),
    Kind("replicasets", _named("web", spec=WORKLOAD), {"observedGeneration": 1}, _set("replicas", 3), "apps"),
    Kind("statefulsets", _named("web", spec=WORKLOAD), {"observedGeneration": 1}, _set("replicas", 3), "apps"),
    Kind("daemonsets", _named("web", spec=WORKLOAD), {"observedGeneration": 1}, _set("minReadySeconds", 5), "apps"),
    Kind("jobs", _named("work", spec={"template": JOB_TEMPLATE}), {"active": 1}, _set("activeDeadlineSeconds", 30),
         "batch"),
    Kind("cronjobs", _named("tick", spec={"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": JOB_TEMPLATE}}}), {"lastScheduleTime": "2024-01-02T03:04:05Z"}, _set("suspend", True), "batch"),
    # The CRD controller owns the CRD's status; this only checks what the write does to metadata and spec.
    Kind("customresourcedefinitions", _crd(), None, _short_names, "apiextensions.k8s.io", namespaced=False),
    # A custom resource's status strategy copies the stored object and sets only status.
    Kind("widgets", _widget(), {"ready": True}, _set("size", 2), "example.com", kept=frozenset()),
]
KIND_IDS = [k.resource for k in KINDS]


async def _create(client: Client, kind: Kind) -> Obj:
    body = copy.deepcopy(kind.body)
    if kind.resource == "customresourcedefinitions":
        return await install(client, body)
    if kind.resource == "widgets":
        await install(client)
    return await client.create(kind.at(), body)


def _patch(kind: Kind, patch_type: core_pb2.PatchType, current: Obj) -> Any:
    """A patch that adds a label and an annotation, changes the spec and the status."""
    spec = copy.deepcopy(current["spec"])
    kind.spec(spec)
    status = kind.status or {}
    if patch_type == JSON_PATCH:
        ops: list[Obj] = [{"op": "add", "path": "/metadata/labels/added", "value": "yes"},
                          {"op": "add", "path": "/metadata/annotations/added", "value": "yes"},
                          {"op": "replace", "path": "/spec", "value": spec}]
        if "status" in current:
            ops.extend({"op": "add", "path": f"/status/{k}", "value": v} for k, v in status.items())
        else:
            ops.append({"op": "add", "path": "/status", "value": status})
        return ops
    doc: Obj = {"metadata": {"labels": ADDED, "annotations": ADDED}, "spec": spec, "status": status}
    if patch_type == APPLY:
        doc["metadata"]["name"] = current["metadata"]["name"]
        doc = {"apiVersion": current["apiVersion"], "kind": current["kind"], **doc}
    return doc


def _put_body(kind: Kind, current: Obj) -> Obj:
    body = copy.deepcopy(current)
    body["metadata"]["labels"].update(ADDED)
    body["metadata"]["annotations"].update(ADDED)
    kind.spec(body["spec"])
    body["status"] = {**body.get("status", {}), **(kind.status or {})}
    return body


def _check(kind: Kind, created: Obj, written: Obj) -> None:
    m, before = written["metadata"], created["metadata"]
    for part in ("labels", "annotations"):
        assert m[part] == ({**before[part], **ADDED} if part in kind.kept else before[part]), part
    assert written["spec"] == created["spec"]
    assert m.get("generation") == before.get("generation")
    for key, value in (kind.status or {}).items():
        assert written["status"][key] == value, key
    if kind.resource == "widgets":
        return  # its status strategy keeps the stored metadata whatever the writer sent
    (entry,) = [e for e in m["managedFields"] if e["manager"] == WRITER]
    assert entry["subresource"] == "status"
    owned = entry["fieldsV1"]
    assert "f:spec" not in owned
    for part in ("labels", "annotations"):
        assert ("f:added" in owned.get("f:metadata", {}).get(f"f:{part}", {})) == (part in kind.kept), part


PATCH_TYPES = [pytest.param(JSON_PATCH, id="json"), pytest.param(MERGE, id="merge"),
               pytest.param(STRATEGIC, id="strategic"), pytest.param(APPLY, id="apply")]


@pytest.mark.parametrize("patch_type", PATCH_TYPES)
@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
async def test_a_status_patch_keeps_the_metadata_the_kinds_status_strategy_keeps(
        client: Client, kind: Kind, patch_type: core_pb2.PatchType) -> None:
    if patch_type == STRATEGIC and kind.resource == "widgets":
        pytest.skip("custom resources take no strategic merge patch (415, tested with the CRDs)")
    created = await _create(client, kind)
    name = created["metadata"]["name"]
    options: Obj = {"fieldManager": WRITER, **({"force": True} if patch_type == APPLY else {})}
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=kind.at(name, "status"), type=patch_type, patch=orjson.dumps(_patch(kind, patch_type, created)),
        options=options))
    written = orjson.loads(response.object.data)
    _check(kind, created, written)
    assert await client.get(kind.at(name)) == written


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
async def test_a_status_put_keeps_the_metadata_the_kinds_status_strategy_keeps(client: Client, kind: Kind) -> None:
    created = await _create(client, kind)
    name = created["metadata"]["name"]
    written, _ = await client.update(kind.at(name, "status"), _put_body(kind, created), fieldManager=WRITER)
    _check(kind, created, written)
    assert await client.get(kind.at(name)) == written


@pytest.mark.parametrize("kind", [k for k in KINDS if k.status is not None], ids=lambda k: k.resource)
async def test_a_write_to_the_main_resource_leaves_status_alone(client: Client, kind: Kind) -> None:
    created = await _create(client, kind)
    name = created["metadata"]["name"]
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=kind.at(name), type=MERGE, patch=orjson.dumps({"metadata": {"annotations": ADDED},
                                                           "status": kind.status})))
    written = orjson.loads(response.object.data)
    assert written["metadata"]["annotations"] == {**created["metadata"]["annotations"], **ADDED}
    assert written.get("status") == created.get("status")


async def test_pod_status_keeps_the_stored_owner_references(client: Client) -> None:
    # podStatusStrategy: old kubelets corrupted ownerReferences, so /status never changes them.
    pods = next(k for k in KINDS if k.resource == "pods")
    await _create(client, pods)
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "0c1d5a7e-0000-4000-8000-000000000001"}
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=pods.at("web", "status"), type=MERGE,
        patch=orjson.dumps({"metadata": {"ownerReferences": [owner], "annotations": ADDED}})))
    written = orjson.loads(response.object.data)
    assert "ownerReferences" not in written["metadata"]
    assert written["metadata"]["annotations"] == {"kept": "yes", **ADDED}


async def test_namespace_finalize_keeps_the_requests_metadata(client: Client) -> None:
    # namespaceFinalizeStrategy resets status only.
    created = await client.create(path("namespaces"), _named("ns"))
    body = copy.deepcopy(created)
    body["metadata"]["labels"].update(ADDED)
    body["spec"]["finalizers"] = []
    written, _ = await client.update(path("namespaces", name="ns", subresource="finalize"), body)
    assert written["metadata"]["labels"] == {**created["metadata"]["labels"], **ADDED}
    assert written["spec"] == {}
