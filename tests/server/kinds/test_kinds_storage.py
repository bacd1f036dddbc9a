"""The storage.k8s.io/v1 kinds through the CoreService: CRUD and watch per kind, kube-apiserver 1.28's defaults
(pkg/apis/storage/v1/defaults.go), validation Statuses (pkg/apis/storage/validation), VolumeAttachment's /status,
StorageClass's DELETE answering the object, and the Tables (printers.go), "(default)" included.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capstan.api.storage.v1 import storage_pb2
from tests.server import kube
from tests.server.client import PROTOBUF, Client, Obj, path, refused

GROUP = "storage.k8s.io"
NS = "default"
QUALIFIED_NAME = (  # validation.IsQualifiedName's RegexError for the name part
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")

KINDS: dict[str, tuple[str, Obj]] = {
    "storageclasses": ("StorageClass", {"provisioner": "example.com/fast"}),
    "csidrivers": ("CSIDriver", {"spec": {}}),
    "csinodes": ("CSINode", {"spec": {"drivers": [{"name": "example.com", "nodeID": "node-1"}]}}),
    "csistoragecapacities": ("CSIStorageCapacity", {"storageClassName": "fast", "capacity": "10Gi"}),
    "volumeattachments": ("VolumeAttachment", {"spec": {
        "attacher": "example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}}),
}
NAMESPACED = {"csistoragecapacities"}


def at(resource: str, name: str = "", subresource: str = "") -> Any:
    return path(resource, NS if resource in NAMESPACED else "", name, group=GROUP, subresource=subresource)


def body(resource: str, name: str = "web", **top: Any) -> Obj:
    kind, base = KINDS[resource]
    obj: Obj = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name}, **copy.deepcopy(base)}
    obj.update(top)
    return obj


def required(field: str, detail: str = "") -> Obj:
    return kube.cause("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", field)


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


@pytest.mark.parametrize("resource", list(KINDS))
async def test_create_get_list_update_delete_and_watch(client: Client, resource: str) -> None:
    kind, _ = KINDS[resource]
    created = await client.create(at(resource), body(resource))
    m = created["metadata"]
    assert (created["kind"], created["apiVersion"], m["name"]) == (kind, f"{GROUP}/v1", "web")
    assert ("namespace" in m) == (resource in NAMESPACED)
    assert await client.get(at(resource, "web")) == created
    _, items = await client.list(at(resource))
    assert [i["metadata"]["name"] for i in items] == ["web"]
    labeled = copy.deepcopy(created)
    labeled["metadata"]["labels"] = {"tier": "front"}
    updated, _ = await client.update(at(resource, "web"), labeled)
    assert updated["metadata"]["labels"] == {"tier": "front"}
    answer = await client.delete(at(resource, "web"), propagationPolicy="Background")
    # The registry stores of StorageClass, CSIDriver, CSINode and VolumeAttachment set ReturnDeletedObject.
    if resource in ("storageclasses", "csidrivers", "csinodes", "volumeattachments"):
        assert (answer["kind"], answer["metadata"]["name"]) == (kind, "web")
    else:
        assert answer["status"] == "Success"
    events = await client.events(at(resource), lambda e: e[0] == "DELETED", resourceVersion=m["resourceVersion"])
    assert [t for t, _ in events] == ["MODIFIED", "DELETED"]
    failed = await refused(client.get(at(resource, "web")))
    assert failed.status == kube.failure(404, "NotFound", f'{resource}.{GROUP} "web" not found',
                                         kube.details(name="web", group=GROUP, kind=resource))


@pytest.mark.parametrize(("resource", "top", "expected"), [
    pytest.param("storageclasses", {}, {"provisioner": "example.com/fast", "reclaimPolicy": "Delete",
                                        "volumeBindingMode": "Immediate"}, id="storageclass"),
    pytest.param("storageclasses", {"reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
                                    "allowVolumeExpansion": False},
                 {"provisioner": "example.com/fast", "reclaimPolicy": "Retain", "allowVolumeExpansion": False,
                  "volumeBindingMode": "WaitForFirstConsumer"}, id="storageclass set"),
    pytest.param("csidrivers", {}, {"spec": {
        "attachRequired": True, "podInfoOnMount": False, "volumeLifecycleModes": ["Persistent"],
        "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False,
        "seLinuxMount": False}}, id="csidriver"),
    pytest.param("volumeattachments", {"status": {"attached": True}}, {
        "spec": KINDS["volumeattachments"][1]["spec"], "status": {"attached": False}},
        id="volumeattachment status reset on create"),
])
async def test_defaults(client: Client, resource: str, top: Obj, expected: Obj) -> None:
    created = await client.create(at(resource), body(resource, **top))
    assert {k: v for k, v in created.items() if k not in ("apiVersion", "kind", "metadata")} == expected


@pytest.mark.parametrize(("resource", "top", "causes"), [
    pytest.param("storageclasses", {"provisioner": "", "reclaimPolicy": "Recycle",
                                    "volumeBindingMode": "Later"}, [
        required("provisioner"),
        kube.field_not_supported("reclaimPolicy", '"Recycle"', ["Delete", "Retain"]),
        kube.field_not_supported("volumeBindingMode", '"Later"', ["Immediate", "WaitForFirstConsumer"])],
        id="storageclass"),
    pytest.param("storageclasses", {"provisioner": "Example.com/"}, [
        invalid("provisioner", '"example.com/"', "name part must be non-empty"),
        invalid("provisioner", '"example.com/"', "name part " + QUALIFIED_NAME)], id="storageclass provisioner"),
    pytest.param("storageclasses", {"parameters": {"": "x"}}, [
        invalid("parameters", '""', "field can not be empty.")], id="storageclass parameters"),
    pytest.param("storageclasses", {"allowedTopologies": [
        {"matchLabelExpressions": [{"key": "zone", "values": []}, {"key": "zone", "values": ["a", "a"]}]}]}, [
        required("allowedTopologies[0].matchLabelExpressions[0].values"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "a"', "allowedTopologies[0].matchLabelExpressions[1]"
                                                                  ".values[1]"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "zone"',
                   "allowedTopologies[0].matchLabelExpressions[1].key")],
        id="storageclass topologies"),
    pytest.param("csidrivers", {"spec": {"fsGroupPolicy": "Any", "volumeLifecycleModes": ["Forever"],
                                         "tokenRequests": [{"audience": "a", "expirationSeconds": 60},
                                                           {"audience": "a"}]}}, [
        kube.field_not_supported("spec.fsGroupPolicy", '"Any"', ["File", "None", "ReadWriteOnceWithFSType"]),
        invalid("spec.tokenRequests[0].expirationSeconds", "60", "may not specify a duration less than 10 minutes"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "a"', "spec.tokenRequests[1].audience"),
        kube.field_not_supported("spec.volumeLifecycleModes", '"Forever"', ["Persistent", "Ephemeral"])],
        id="csidriver"),
    pytest.param("csinodes", {"spec": {"drivers": [
        {"name": "example.com", "nodeID": "", "topologyKeys": ["zone", "zone"]},
        {"name": "example.com", "nodeID": "n", "allocatable": {"count": -1}}]}}, [
        required("spec.drivers[0].nodeID"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "zone"', "spec.drivers[0]"),
        invalid("spec.drivers[1].allocatable.count", "-1", "must be greater than or equal to 0"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "example.com"', "spec.drivers[1].name")],
        id="csinode"),
    pytest.param("csistoragecapacities", {"storageClassName": "Fast", "capacity": "-1Gi"}, [
        invalid("storageClassName", '"Fast"', kube.DNS1123_SUBDOMAIN),
        invalid("capacity", '"-1Gi"', "must be greater than or equal to 0")], id="csistoragecapacity"),
    pytest.param("volumeattachments", {"spec": {"attacher": "", "nodeName": "node-1", "source": {}}}, [
        required("spec.attacher"),
        required("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
        required("spec.attacher"),
        invalid("spec.attacher", '""', kube.DNS1123_SUBDOMAIN)], id="volumeattachment"),
])
async def test_create_is_refused_with_kubes_status(client: Client, resource: str, top: Obj,
                                                   causes: list[Obj]) -> None:
    kind, _ = KINDS[resource]
    before = client.revision()
    failed = await refused(client.create(at(resource), body(resource, **top)))
    status = kube.invalid(kind, "web", causes, group=GROUP)
    # errors.NewInvalid's message lists each distinct error once; the causes keep them all.
    messages = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in causes))
    joined = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    status["message"] = f'{kind}.{GROUP} "web" is invalid: {joined}'
    assert failed.status == status
    assert client.revision() == before


@pytest.mark.parametrize(("resource", "change", "causes"), [
    pytest.param("storageclasses", {"provisioner": "example.com/slow", "parameters": {"a": "b"},
                                    "reclaimPolicy": "Retain"}, [
        kube.field_forbidden("parameters", "updates to parameters are forbidden."),
        kube.field_forbidden("provisioner", "updates to provisioner are forbidden."),
        kube.field_forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.")], id="storageclass"),
    pytest.param("storageclasses", {"volumeBindingMode": "WaitForFirstConsumer"}, [
        invalid("volumeBindingMode", '"WaitForFirstConsumer"', "field is immutable")], id="storageclass mode"),
    pytest.param("csidrivers", {"spec": {"attachRequired": False, "podInfoOnMount": True}}, [
        invalid("spec.attachedRequired", "false", "field is immutable"),
        invalid("spec.podInfoOnMount", "true", "field is immutable")], id="csidriver"),
    pytest.param("csinodes", {"spec": {"drivers": [{"name": "example.com", "nodeID": "node-2"}]}}, [
        invalid("spec.drivers", '{"Name":"example.com","NodeID":"node-2","TopologyKeys":null,"Allocatable":null}',
                "field is immutable")], id="csinode driver"),
    pytest.param("csistoragecapacities", {"storageClassName": "slow", "nodeTopology": {"matchLabels": {"a": "b"}}}, [
        invalid("nodeTopology", '{"matchLabels":{"a":"b"}}', "field is immutable"),
        invalid("storageClassName", '"slow"', "field is immutable")], id="csistoragecapacity"),
    pytest.param("volumeattachments", {"spec": {
        "attacher": "example.com", "nodeName": "node-2", "source": {"persistentVolumeName": "pv-1"}}}, [
        invalid("spec", '{"attacher":"example.com","nodeName":"node-2","source":{"persistentVolumeName":"pv-1"}}',
                "field is immutable")], id="volumeattachment"),
])
async def test_update_is_refused_with_kubes_status(client: Client, resource: str, change: Obj,
                                                   causes: list[Obj]) -> None:
    kind, _ = KINDS[resource]
    created = await client.create(at(resource), body(resource))
    changed = copy.deepcopy(created)
    for key, value in change.items():
        changed[key] = {**changed[key], **value} if key == "spec" and resource == "csidrivers" else value
    failed = await refused(client.update(at(resource, "web"), changed))
    assert failed.status == kube.invalid(kind, "web", causes, group=GROUP)


async def test_volume_attachment_status_is_written_through_its_subresource_only(client: Client) -> None:
    created = await client.create(at("volumeattachments"), body("volumeattachments"))
    attached = copy.deepcopy(created)
    attached["status"] = {"attached": True, "attachmentMetadata": {"device": "/dev/sdb"}}
    ignored, _ = await client.update(at("volumeattachments", "web"), attached)
    assert ignored["status"] == {"attached": False}
    attached["metadata"]["resourceVersion"] = ignored["metadata"]["resourceVersion"]
    updated, _ = await client.update(at("volumeattachments", "web", "status"), attached)
    assert updated["status"] == {"attached": True, "attachmentMetadata": {"device": "/dev/sdb"}}
    assert updated["spec"] == created["spec"]


async def test_protobuf_answers_decode_with_the_kinds_messages(client: Client) -> None:
    await client.create(at("storageclasses"), body("storageclasses", allowVolumeExpansion=True))
    raw = await client.get_raw(at("storageclasses", "web"), accept=PROTOBUF)
    decoded = storage_pb2.StorageClass.FromString(raw.data)
    assert (decoded.provisioner, decoded.reclaimPolicy, decoded.volumeBindingMode, decoded.allowVolumeExpansion) == (
        "example.com/fast", "Delete", "Immediate", True)
