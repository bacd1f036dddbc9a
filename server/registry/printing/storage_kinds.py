"""Table columns of the storage.k8s.io kinds, as kube-apiserver 1.28's printers (pkg/printers/internalversion/
printers.go: printStorageClass, printVolumeAttachment, printCSINode, printCSIDriver, printCSIStorageCapacity)
print them.

The server prints a default StorageClass's name with " (default)" after it (storageutil.IsDefaultAnnotation:
either the GA or the beta is-default-class annotation set to "true"); kubectl only shows the cell. Cells keep
Go's types: booleans stay booleans, counts are int64.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery.codec.quantity import canonical
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import text_of as _str
from server.registry.printing.columns import AGE, NAME, NAME_DESCRIPTION, name
from server.registry.strategy import Column

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")

# storagev1 SwaggerDoc of each column's field; the printers' own words where they have them.
PROVISIONER_DESCRIPTION = "provisioner indicates the type of the provisioner."
RECLAIM_POLICY_DESCRIPTION = (
    "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. "
    "Defaults to Delete.")
BINDING_MODE_DESCRIPTION = (
    "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, "
    "VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.")
EXPANSION_DESCRIPTION = "allowVolumeExpansion shows whether the storage class allow volume expand."
ATTACHER_DESCRIPTION = (
    "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by "
    "GetPluginName().")
PV_DESCRIPTION = "persistentVolumeName represents the name of the persistent volume to attach."
NODE_DESCRIPTION = "nodeName represents the node that the volume should be attached to."
ATTACHED_DESCRIPTION = (
    "attached indicates the volume is successfully attached. This field must only be set by the entity completing "
    "the attach operation, i.e. the external-attacher.")
DRIVERS_DESCRIPTION = "Drivers indicates the number of CSI drivers registered on the node"
ATTACH_REQUIRED_DESCRIPTION = (
    "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI "
    "ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach "
    "volume interface which checks the volumeattachment status and waits until the volume is attached before "
    "proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the "
    "volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is "
    "enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach "
    "operation will be called.\n\nThis field is immutable.")
POD_INFO_DESCRIPTION = (
    "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, "
    "etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. "
    "Default is false.")
STORAGE_CAPACITY_DESCRIPTION = (
    "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity "
    "that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if "
    "set to true.")
TOKEN_REQUESTS_DESCRIPTION = (
    "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do "
    "necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls.")
REPUBLISH_DESCRIPTION = (
    "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any "
    "possible change in the mounted volume. This field defaults to false.")
MODES_DESCRIPTION = "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."
CLASS_NAME_DESCRIPTION = (
    "The name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the "
    "name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the "
    "CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.")
CAPACITY_DESCRIPTION = (
    "Capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with "
    "topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined "
    "as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that "
    "information is currently unavailable and treated like zero capacity.")


def _bool(value: object, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def storage_class_name(obj: Obj) -> str:
    annotations = _dict(_dict(obj.get("metadata")).get("annotations"))
    default = any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)
    return name(obj) + (" (default)" if default else "")


def _token_requests(obj: Obj) -> str:
    requests = _spec(obj).get("tokenRequests")
    if not isinstance(requests, list):
        return "<unset>"
    return ",".join(_str(_dict(r).get("audience")) for r in requests)


def _modes(obj: Obj) -> str:
    modes = _spec(obj).get("volumeLifecycleModes")
    return ",".join(_str(m) for m in modes) if isinstance(modes, list) and modes else "<none>"


def _capacity(obj: Obj) -> str:
    capacity = obj.get("capacity")
    return canonical(capacity) if isinstance(capacity, str) else "<unset>"


STORAGE_CLASS_COLUMNS = (
    Column("Name", "string", NAME_DESCRIPTION, storage_class_name, format="name"),
    Column("Provisioner", "string", PROVISIONER_DESCRIPTION, lambda obj: _str(obj.get("provisioner"))),
    Column("ReclaimPolicy", "string", RECLAIM_POLICY_DESCRIPTION,
           lambda obj: _str(obj.get("reclaimPolicy")) or "Delete"),
    Column("VolumeBindingMode", "string", BINDING_MODE_DESCRIPTION,
           lambda obj: _str(obj.get("volumeBindingMode")) or "Immediate"),
    Column("AllowVolumeExpansion", "string", EXPANSION_DESCRIPTION,
           lambda obj: _bool(obj.get("allowVolumeExpansion"), False)),
    AGE,
)
VOLUME_ATTACHMENT_COLUMNS = (
    NAME,
    Column("Attacher", "string", ATTACHER_DESCRIPTION, lambda obj: _str(_spec(obj).get("attacher")), format="name"),
    Column("PV", "string", PV_DESCRIPTION,
           lambda obj: _str(_dict(_spec(obj).get("source")).get("persistentVolumeName"))),
    Column("Node", "string", NODE_DESCRIPTION, lambda obj: _str(_spec(obj).get("nodeName"))),
    Column("Attached", "boolean", ATTACHED_DESCRIPTION,
           lambda obj: _bool(_dict(obj.get("status")).get("attached"), False)),
    AGE,
)
CSI_NODE_COLUMNS = (
    NAME,
    Column("Drivers", "integer", DRIVERS_DESCRIPTION,
           lambda obj: len(d) if isinstance(d := _spec(obj).get("drivers"), list) else 0),
    AGE,
)
CSI_DRIVER_COLUMNS = (
    NAME,
    Column("AttachRequired", "boolean", ATTACH_REQUIRED_DESCRIPTION,
           lambda obj: _bool(_spec(obj).get("attachRequired"), True)),
    Column("PodInfoOnMount", "boolean", POD_INFO_DESCRIPTION,
           lambda obj: _bool(_spec(obj).get("podInfoOnMount"), False)),
    Column("StorageCapacity", "boolean", STORAGE_CAPACITY_DESCRIPTION,
           lambda obj: _bool(_spec(obj).get("storageCapacity"), False)),
    Column("TokenRequests", "string", TOKEN_REQUESTS_DESCRIPTION, _token_requests),
    Column("RequiresRepublish", "boolean", REPUBLISH_DESCRIPTION,
           lambda obj: _bool(_spec(obj).get("requiresRepublish"), False)),
    Column("Modes", "string", MODES_DESCRIPTION, _modes),
    AGE,
)
# printCSIStorageCapacity prints no Age.
CSI_STORAGE_CAPACITY_COLUMNS = (
    NAME,
    Column("StorageClassName", "string", CLASS_NAME_DESCRIPTION, lambda obj: _str(obj.get("storageClassName"))),
    Column("Capacity", "string", CAPACITY_DESCRIPTION, _capacity),
)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("storage.k8s.io", "storageclasses"): STORAGE_CLASS_COLUMNS,
    ("storage.k8s.io", "volumeattachments"): VOLUME_ATTACHMENT_COLUMNS,
    ("storage.k8s.io", "csinodes"): CSI_NODE_COLUMNS,
    ("storage.k8s.io", "csidrivers"): CSI_DRIVER_COLUMNS,
    ("storage.k8s.io", "csistoragecapacities"): CSI_STORAGE_CAPACITY_COLUMNS,
}
