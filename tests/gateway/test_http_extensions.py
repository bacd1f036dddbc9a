"""The admissionregistration.k8s.io, apiregistration.k8s.io, autoscaling (v2 and v1) and storage.k8s.io kinds over
HTTP, through both transports: create, get (JSON and protobuf), list, a Table as kubectl asks for it, a merge
patch, a strategic merge patch by the kinds' merge keys, and delete (StorageClass, CSIDriver, CSINode and
VolumeAttachment answering the object, as kube's registry sets ReturnDeletedObject for them, the others a Success
Status)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from gateway.codecs import protobuf
from tests.gateway.conftest import Server

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


@dataclass(frozen=True)
class Kind:
    collection: str  # URL of the collection
    kind: str
    api_version: str
    body: Obj
    columns: tuple[str, ...]
    returns_object: bool = False

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def webhook_body(name: str) -> Obj:
    return {"metadata": {"name": name}, "webhooks": [{
        "name": f"{name}.example.com", "clientConfig": {"url": "https://hooks.example.com/check"},
        "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}


HPA_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
HPA_COLUMNS = ("Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
STORAGE = "/apis/storage.k8s.io/v1"
KINDS = [
    Kind(f"{ADMISSION}/validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
         "admissionregistration.k8s.io/v1", webhook_body("check"), ("Name", "Webhooks", "Age")),
    Kind(f"{ADMISSION}/mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
         "admissionregistration.k8s.io/v1", webhook_body("inject"), ("Name", "Webhooks", "Age")),
    Kind("/apis/apiregistration.k8s.io/v1/apiservices", "APIService", "apiregistration.k8s.io/v1",
         {"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
             "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
             "service": {"namespace": "kube-system", "name": "metrics-server"}}},
         ("Name", "Service", "Available", "Age")),
    Kind("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", "HorizontalPodAutoscaler",
         "autoscaling/v2", {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": HPA_REF, "maxReplicas": 5}},
         HPA_COLUMNS),
    Kind("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", "HorizontalPodAutoscaler",
         "autoscaling/v1", {"metadata": {"name": "web"}, "spec": {
             "scaleTargetRef": HPA_REF, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}}, HPA_COLUMNS),
    Kind(f"{STORAGE}/storageclasses", "StorageClass", "storage.k8s.io/v1",
         {"metadata": {"name": "fast"}, "provisioner": "example.com/fast"},
         ("Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"),
         returns_object=True),
    Kind(f"{STORAGE}/csidrivers", "CSIDriver", "storage.k8s.io/v1",
         {"metadata": {"name": "csi.example.com"}, "spec": {}},
         ("Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests", "RequiresRepublish",
          "Modes", "Age"), returns_object=True),
    Kind(f"{STORAGE}/csinodes", "CSINode", "storage.k8s.io/v1",
         {"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}},
         ("Name", "Drivers", "Age"), returns_object=True),
    Kind(f"{STORAGE}/namespaces/default/csistoragecapacities", "CSIStorageCapacity", "storage.k8s.io/v1",
         {"metadata": {"name": "capacity"}, "storageClassName": "fast", "capacity": "10Gi"},
         ("Name", "Created At")),  # kube 1.28 prints it with its default table convertor
    Kind(f"{STORAGE}/volumeattachments", "VolumeAttachment", "storage.k8s.io/v1",
         {"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                                               "source": {"persistentVolumeName": "pv-1"}}},
         ("Name", "Attacher", "PV", "Node", "Attached", "Age"), returns_object=True),
]


@pytest.mark.parametrize("kind", [pytest.param(k, id=f"{k.kind}.{k.api_version}") for k in KINDS])
async def test_crud_table_and_delete(server: Server, kind: Kind) -> None:
    created = await server.create(kind.collection, {"apiVersion": kind.api_version, "kind": kind.kind, **kind.body})
    assert (created["apiVersion"], created["kind"], created["metadata"]["name"]) == (
        kind.api_version, kind.kind, kind.name)
    item = f"{kind.collection}/{kind.name}"

    got = await server.request("GET", item)
    assert (got.status, got.json()["metadata"]["uid"]) == (200, created["metadata"]["uid"])
    as_proto = await server.request("GET", item, headers={"Accept": PROTOBUF})
    api_version, proto_kind, raw = protobuf.decode_envelope(as_proto.body)
    assert (as_proto.status, as_proto.content_type, api_version, proto_kind) == (
        200, PROTOBUF, kind.api_version, kind.kind)
    assert kind.name.encode() in raw

    listed = await server.request("GET", kind.collection)
    assert (listed.status, listed.json()["kind"]) == (200, f"{kind.kind}List")
    assert kind.name in [o["metadata"]["name"] for o in listed.json()["items"]]  # beside what the core wrote

    table = await server.request("GET", kind.collection, headers={"Accept": TABLE})
    doc = table.json()
    assert (table.status, doc["kind"]) == (200, "Table")
    assert tuple(c["name"] for c in doc["columnDefinitions"]) == kind.columns
    assert kind.name in [row["cells"][0] for row in doc["rows"]]

    patched = await server.request("PATCH", item, json={"metadata": {"labels": {"tier": "gold"}}}, headers=MERGE)
    assert (patched.status, patched.json()["metadata"]["labels"]) == (200, {"tier": "gold"})
    assert int(patched.json()["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])

    deleted = await server.request("DELETE", item)
    assert deleted.status == 200
    if kind.returns_object:
        assert (deleted.json()["kind"], deleted.json()["metadata"]["name"]) == (kind.kind, kind.name)
    else:
        assert (deleted.json()["kind"], deleted.json()["status"]) == ("Status", "Success")
    gone = await server.request("GET", item)
    assert (gone.status, gone.json()["reason"]) == (404, "NotFound")


async def test_hpa_created_as_v1_reads_as_v2_with_kubes_defaults(server: Server) -> None:
    v1 = next(k for k in KINDS if k.api_version == "autoscaling/v1")
    await server.create(v1.collection, v1.body)
    got = await server.request("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web")
    spec = got.json()["spec"]
    assert (got.status, spec["minReplicas"], spec["metrics"]) == (200, 1, [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}])


@pytest.mark.parametrize(("collection", "body", "patch", "path", "expected"), [
    pytest.param(f"{ADMISSION}/validatingwebhookconfigurations", webhook_body("check"),
                 {"webhooks": [{"name": "check.example.com", "timeoutSeconds": 5}]}, ("webhooks",),
                 [("check.example.com", 5)], id="webhooks by name"),
    pytest.param(f"{STORAGE}/csinodes", KINDS[7].body,
                 {"spec": {"drivers": [{"name": "other.example.com", "nodeID": "n2"}]}}, ("spec", "drivers"),
                 [("other.example.com", "n2"), ("csi.example.com", "n1")], id="csinode drivers by name"),
])
async def test_strategic_merge_patch_merges_by_upstream_key(
    server: Server, collection: str, body: Obj, patch: Obj, path: tuple[str, ...], expected: list[tuple[Any, Any]],
) -> None:
    created = await server.create(collection, body)
    resp = await server.request("PATCH", f"{collection}/{created['metadata']['name']}", json=patch,
                                headers=STRATEGIC)
    assert resp.status == 200, resp.body
    value: Any = resp.json()
    for part in path:
        value = value[part]
    second = "timeoutSeconds" if path == ("webhooks",) else "nodeID"
    assert [(e["name"], e[second]) for e in value] == expected
