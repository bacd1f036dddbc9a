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
    "Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet "
    "will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible "
    "for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeConext will be "
    "passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. "
    "\"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace "
    "\"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an "
    "ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise "
    "\"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for "
    "drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave "
    "pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only "
    "support one mode when deployed on such a cluster and the deployment determines which mode that is, for example "
    "via a command line parameter of the driver.\n\nThis field is immutable."
)
STORAGE_CAPACITY_DESCRIPTION = (
    "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity "
    "that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if "
    "set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new "
    "volumes with late binding will pause until the driver deployment has published some suitable "
    "CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it "
    "can be flipped later when storage capacity information has been published.\n\nThis field was immutable in "
    "Kubernetes <= 1.22 and now is mutable."
)
TOKEN_REQUESTS_DESCRIPTION = (
    "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do "
    "necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. "
    "The CSI driver should parse and validate the following VolumeContext: "
    "\"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    "
    "\"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each "
    "TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, "
    "RequiresRepublish can be used to trigger NodePublishVolume periodically."
)
REPUBLISH_DESCRIPTION = (
    "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any "
    "possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial "
    "NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. "
    "New mount points will not be seen by a running container."
)
MODES_DESCRIPTION = (
    "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is "
    "empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via "
    "the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline "
    "inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver "
    "has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor "
    "more information about implementing this mode, see "
    "https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these "
    "modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable."
)


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

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("storage.k8s.io", "storageclasses"): STORAGE_CLASS_COLUMNS,
    ("storage.k8s.io", "volumeattachments"): VOLUME_ATTACHMENT_COLUMNS,
    ("storage.k8s.io", "csinodes"): CSI_NODE_COLUMNS,
    ("storage.k8s.io", "csidrivers"): CSI_DRIVER_COLUMNS,
}
