"""Facts about the Kubernetes Go types that their protobuf messages cannot carry: which fields are
required, how lists merge, which structs are atomic.

Kubernetes writes these as Go markers (`+listType=map`, `+patchStrategy=merge`, `json:"uid"` without
omitempty) and publishes them in its OpenAPI documents as `required`, `x-kubernetes-list-type`,
`x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key` and
`x-kubernetes-map-type`. One table serves every reader: the gateway's OpenAPI documents print it, and
strategic merge patch and server-side apply merge lists by it.

Keys are protobuf message full names and JSON field names (equal to the proto field names here). Every
entry was checked against kube-apiserver's published OpenAPI v3 document for api/v1
(kubernetes/kubernetes api/openapi-spec/v3/api__v1_openapi.json). A message or field missing here has
no such marker upstream: a list without a list type, a struct without a map type, nothing required.

Example: ObjectMeta.ownerReferences is a list keyed by uid, so a strategic merge patch of
    {"metadata": {"ownerReferences": [{"uid": "b", ...}]}}
against [{"uid": "a"}] yields [{"uid": "a"}, {"uid": "b"}] rather than replacing the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class FieldHint:
    """How a field merges.

    list_type: "atomic" (replaced whole), "set" (scalars, merged by value) or "map" (objects, merged by
        list_map_keys); "" when Kubernetes declares none.
    patch_strategy: strategic merge patch's strategy for the field, e.g. "merge" or "retainKeys".
    patch_merge_key: the element field a "merge" list of objects is matched by; "" for lists of scalars.
    """

    list_type: str = ""
    list_map_keys: tuple[str, ...] = ()
    patch_strategy: str = ""
    patch_merge_key: str = ""
    map_type: str = ""  # a map field's +mapType: "atomic" when the map is replaced whole, not merged by key


@dataclass(frozen=True, slots=True)
class MessageHint:
    """required: fields Go always serializes (no omitempty, not +optional), in Go struct order.
    map_type: "atomic" when the struct is replaced whole rather than merged field by field."""

    required: tuple[str, ...] = ()
    map_type: str = ""


CORE_V1 = "k8s.io.api.core.v1."
META_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1."
APPS_V1 = "k8s.io.api.apps.v1."
BATCH_V1 = "k8s.io.api.batch.v1."
EVENTS_V1 = "k8s.io.api.events.v1."
RBAC_V1 = "k8s.io.api.rbac.v1."
AUTOSCALING_V1 = "k8s.io.api.autoscaling.v1."
AUTOSCALING_V2 = "k8s.io.api.autoscaling.v2."
ADMISSION_V1 = "k8s.io.api.admissionregistration.v1."
ADMISSION_POLICY_VERSIONS = ("k8s.io.api.admissionregistration.v1beta1.", "k8s.io.api.admissionregistration.v1alpha1.")
APIREG_V1 = "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1."
POLICY_V1 = "k8s.io.api.policy.v1."
CERTIFICATES_V1 = "k8s.io.api.certificates.v1."
FLOWCONTROL_V1BETA2 = "k8s.io.api.flowcontrol.v1beta2."
FLOWCONTROL_V1BETA3 = "k8s.io.api.flowcontrol.v1beta3."
STORAGE_V1 = "k8s.io.api.storage.v1."

ATOMIC = FieldHint(list_type="atomic")
ATOMIC_MAP = FieldHint(map_type="atomic")


def _keyed(*keys: str, strategy: str = "merge") -> FieldHint:
    """A list of objects merged by keys (listType=map), and by keys[0] in a strategic merge patch."""
    return FieldHint(list_type="map", list_map_keys=keys, patch_strategy=strategy, patch_merge_key=keys[0])


BY_TYPE = _keyed("type")  # status.conditions, node addresses
BY_NAME = _keyed("name")

FIELDS: Mapping[tuple[str, str], FieldHint] = MappingProxyType({
    (META_V1 + "ObjectMeta", "finalizers"): FieldHint(list_type="set", patch_strategy="merge"),
    (META_V1 + "ObjectMeta", "ownerReferences"): FieldHint(
        list_type="map", list_map_keys=("uid",), patch_strategy="merge", patch_merge_key="uid"),
    (META_V1 + "ObjectMeta", "managedFields"): ATOMIC,
    (CORE_V1 + "PodSpec", "nodeSelector"): ATOMIC_MAP,
    (CORE_V1 + "ReplicationControllerSpec", "selector"): ATOMIC_MAP,
    (CORE_V1 + "ServiceSpec", "selector"): ATOMIC_MAP,
    ("k8s.io.api.node.v1.Scheduling", "nodeSelector"): ATOMIC_MAP,
    (META_V1 + "Status", "details"): ATOMIC,  # upstream marks the (struct) field so; printed as it is
    (META_V1 + "StatusDetails", "causes"): ATOMIC,
    (META_V1 + "DeleteOptions", "dryRun"): ATOMIC,
    (META_V1 + "APIResourceList", "resources"): ATOMIC,
    (META_V1 + "APIResource", "categories"): ATOMIC,
    (META_V1 + "APIResource", "shortNames"): ATOMIC,
    (META_V1 + "LabelSelector", "matchExpressions"): ATOMIC,
    (META_V1 + "LabelSelectorRequirement", "values"): ATOMIC,
    (CORE_V1 + "NamespaceSpec", "finalizers"): ATOMIC,
    (CORE_V1 + "NamespaceStatus", "conditions"): FieldHint(
        list_type="map", list_map_keys=("type",), patch_strategy="merge", patch_merge_key="type"),
    # core, apps, batch and rbac, from the markers of k8s.io/api v1 types.go.
    # Volumes
    (CORE_V1 + "RBDVolumeSource", "monitors"): ATOMIC,
    (CORE_V1 + "RBDPersistentVolumeSource", "monitors"): ATOMIC,
    (CORE_V1 + "CephFSVolumeSource", "monitors"): ATOMIC,
    (CORE_V1 + "CephFSPersistentVolumeSource", "monitors"): ATOMIC,
    (CORE_V1 + "SecretVolumeSource", "items"): ATOMIC,
    (CORE_V1 + "SecretProjection", "items"): ATOMIC,
    (CORE_V1 + "ConfigMapVolumeSource", "items"): ATOMIC,
    (CORE_V1 + "ConfigMapProjection", "items"): ATOMIC,
    (CORE_V1 + "DownwardAPIVolumeSource", "items"): ATOMIC,
    (CORE_V1 + "DownwardAPIProjection", "items"): ATOMIC,
    (CORE_V1 + "ProjectedVolumeSource", "sources"): ATOMIC,
    (CORE_V1 + "ISCSIVolumeSource", "portals"): ATOMIC,
    (CORE_V1 + "ISCSIPersistentVolumeSource", "portals"): ATOMIC,
    (CORE_V1 + "FCVolumeSource", "targetWWNs"): ATOMIC,
    (CORE_V1 + "FCVolumeSource", "wwids"): ATOMIC,
    # Containers (EphemeralContainerCommon repeats Container's markers)
    (CORE_V1 + "Container", "command"): ATOMIC,
    (CORE_V1 + "Container", "args"): ATOMIC,
    (CORE_V1 + "Container", "ports"): _keyed("containerPort", "protocol"),
    (CORE_V1 + "Container", "envFrom"): ATOMIC,
    (CORE_V1 + "Container", "env"): BY_NAME,
    (CORE_V1 + "Container", "resizePolicy"): ATOMIC,
    (CORE_V1 + "Container", "volumeMounts"): _keyed("mountPath"),
    (CORE_V1 + "Container", "volumeDevices"): _keyed("devicePath"),
    (CORE_V1 + "EphemeralContainerCommon", "command"): ATOMIC,
    (CORE_V1 + "EphemeralContainerCommon", "args"): ATOMIC,
    (CORE_V1 + "EphemeralContainerCommon", "ports"): _keyed("containerPort", "protocol"),
    (CORE_V1 + "EphemeralContainerCommon", "envFrom"): ATOMIC,
    (CORE_V1 + "EphemeralContainerCommon", "env"): BY_NAME,
    (CORE_V1 + "EphemeralContainerCommon", "resizePolicy"): ATOMIC,
    (CORE_V1 + "EphemeralContainerCommon", "volumeMounts"): _keyed("mountPath"),
    (CORE_V1 + "EphemeralContainerCommon", "volumeDevices"): _keyed("devicePath"),
    (CORE_V1 + "ResourceRequirements", "claims"): FieldHint(list_type="map", list_map_keys=("name",)),
    (CORE_V1 + "HTTPGetAction", "httpHeaders"): ATOMIC,
    (CORE_V1 + "ExecAction", "command"): ATOMIC,
    (CORE_V1 + "Capabilities", "add"): ATOMIC,
    (CORE_V1 + "Capabilities", "drop"): ATOMIC,
    (CORE_V1 + "ContainerStatus", "volumeMounts"): _keyed("mountPath"),
    (CORE_V1 + "LinuxContainerUser", "supplementalGroups"): ATOMIC,
    # Scheduling
    (CORE_V1 + "NodeSelector", "nodeSelectorTerms"): ATOMIC,
    (CORE_V1 + "NodeSelectorTerm", "matchExpressions"): ATOMIC,
    (CORE_V1 + "NodeSelectorTerm", "matchFields"): ATOMIC,
    (CORE_V1 + "NodeSelectorRequirement", "values"): ATOMIC,
    (CORE_V1 + "TopologySelectorTerm", "matchLabelExpressions"): ATOMIC,
    (CORE_V1 + "TopologySelectorLabelRequirement", "values"): ATOMIC,
    (CORE_V1 + "PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution"): ATOMIC,
    (CORE_V1 + "PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): ATOMIC,
    (CORE_V1 + "PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"): ATOMIC,
    (CORE_V1 + "PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): ATOMIC,
    (CORE_V1 + "NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): ATOMIC,
    (CORE_V1 + "PodAffinityTerm", "namespaces"): ATOMIC,
    (CORE_V1 + "PodAffinityTerm", "matchLabelKeys"): ATOMIC,
    (CORE_V1 + "PodAffinityTerm", "mismatchLabelKeys"): ATOMIC,
    (CORE_V1 + "TopologySpreadConstraint", "matchLabelKeys"): ATOMIC,
    # Pods
    (CORE_V1 + "PodSpec", "volumes"): _keyed("name", strategy="merge,retainKeys"),
    (CORE_V1 + "PodSpec", "initContainers"): BY_NAME,
    (CORE_V1 + "PodSpec", "containers"): BY_NAME,
    (CORE_V1 + "PodSpec", "ephemeralContainers"): BY_NAME,
    (CORE_V1 + "PodSpec", "imagePullSecrets"): BY_NAME,
    (CORE_V1 + "PodSpec", "tolerations"): ATOMIC,
    (CORE_V1 + "PodSpec", "hostAliases"): _keyed("ip"),
    (CORE_V1 + "PodSpec", "readinessGates"): ATOMIC,
    (CORE_V1 + "PodSpec", "topologySpreadConstraints"): _keyed("topologyKey", "whenUnsatisfiable"),
    (CORE_V1 + "PodSpec", "schedulingGates"): BY_NAME,
    (CORE_V1 + "PodSpec", "resourceClaims"): _keyed("name", strategy="merge,retainKeys"),
    (CORE_V1 + "HostAlias", "hostnames"): ATOMIC,
    (CORE_V1 + "PodSecurityContext", "supplementalGroups"): ATOMIC,
    (CORE_V1 + "PodSecurityContext", "sysctls"): ATOMIC,
    (CORE_V1 + "PodDNSConfig", "nameservers"): ATOMIC,
    (CORE_V1 + "PodDNSConfig", "searches"): ATOMIC,
    (CORE_V1 + "PodDNSConfig", "options"): ATOMIC,
    (CORE_V1 + "PodStatus", "conditions"): BY_TYPE,
    # hostIPs is atomic for server-side apply yet keyed by ip for strategic merge patch, as upstream marks it.
    (CORE_V1 + "PodStatus", "hostIPs"): FieldHint(list_type="atomic", patch_strategy="merge", patch_merge_key="ip"),
    (CORE_V1 + "PodStatus", "podIPs"): _keyed("ip"),
    (CORE_V1 + "PodStatus", "initContainerStatuses"): ATOMIC,
    (CORE_V1 + "PodStatus", "containerStatuses"): ATOMIC,
    (CORE_V1 + "PodStatus", "ephemeralContainerStatuses"): ATOMIC,
    (CORE_V1 + "PodStatus", "resourceClaimStatuses"): _keyed("name", strategy="merge,retainKeys"),
    (CORE_V1 + "ReplicationControllerStatus", "conditions"): BY_TYPE,
    # Services, endpoints, service accounts
    (CORE_V1 + "ServiceSpec", "ports"): _keyed("port", "protocol"),
    (CORE_V1 + "ServiceSpec", "clusterIPs"): ATOMIC,
    (CORE_V1 + "ServiceSpec", "externalIPs"): ATOMIC,
    (CORE_V1 + "ServiceSpec", "loadBalancerSourceRanges"): ATOMIC,
    (CORE_V1 + "ServiceSpec", "ipFamilies"): ATOMIC,
    (CORE_V1 + "ServiceStatus", "conditions"): BY_TYPE,
    (CORE_V1 + "LoadBalancerStatus", "ingress"): ATOMIC,
    (CORE_V1 + "LoadBalancerIngress", "ports"): ATOMIC,
    (CORE_V1 + "Endpoints", "subsets"): ATOMIC,
    (CORE_V1 + "EndpointSubset", "addresses"): ATOMIC,
    (CORE_V1 + "EndpointSubset", "notReadyAddresses"): ATOMIC,
    (CORE_V1 + "EndpointSubset", "ports"): ATOMIC,
    (CORE_V1 + "ServiceAccount", "secrets"): BY_NAME,
    (CORE_V1 + "ServiceAccount", "imagePullSecrets"): ATOMIC,
    # Nodes
    (CORE_V1 + "NodeSpec", "podCIDRs"): FieldHint(list_type="set", patch_strategy="merge"),
    (CORE_V1 + "NodeSpec", "taints"): ATOMIC,
    (CORE_V1 + "NodeStatus", "conditions"): BY_TYPE,
    (CORE_V1 + "NodeStatus", "addresses"): BY_TYPE,
    (CORE_V1 + "NodeStatus", "images"): ATOMIC,
    (CORE_V1 + "NodeStatus", "volumesInUse"): ATOMIC,
    (CORE_V1 + "NodeStatus", "volumesAttached"): ATOMIC,
    (CORE_V1 + "NodeStatus", "runtimeHandlers"): ATOMIC,
    (CORE_V1 + "ContainerImage", "names"): ATOMIC,
    # Storage, quotas and limits
    (CORE_V1 + "PersistentVolumeSpec", "accessModes"): ATOMIC,
    (CORE_V1 + "PersistentVolumeSpec", "mountOptions"): ATOMIC,
    (CORE_V1 + "PersistentVolumeClaimSpec", "accessModes"): ATOMIC,
    (CORE_V1 + "PersistentVolumeClaimStatus", "accessModes"): ATOMIC,
    (CORE_V1 + "PersistentVolumeClaimStatus", "conditions"): BY_TYPE,
    (CORE_V1 + "LimitRangeSpec", "limits"): ATOMIC,
    (CORE_V1 + "ResourceQuotaSpec", "scopes"): ATOMIC,
    (CORE_V1 + "ScopeSelector", "matchExpressions"): ATOMIC,
    (CORE_V1 + "ScopedResourceSelectorRequirement", "values"): ATOMIC,
    # apps/v1
    (APPS_V1 + "StatefulSetSpec", "volumeClaimTemplates"): ATOMIC,
    (APPS_V1 + "StatefulSetStatus", "conditions"): BY_TYPE,
    (APPS_V1 + "DeploymentSpec", "strategy"): FieldHint(patch_strategy="retainKeys"),
    (APPS_V1 + "DeploymentStatus", "conditions"): BY_TYPE,
    (APPS_V1 + "DaemonSetStatus", "conditions"): BY_TYPE,
    (APPS_V1 + "ReplicaSetStatus", "conditions"): BY_TYPE,
    # batch/v1; Job conditions are atomic for server-side apply yet merged by type in a strategic merge patch.
    (BATCH_V1 + "JobStatus", "conditions"): FieldHint(
        list_type="atomic", patch_strategy="merge", patch_merge_key="type"),
    (BATCH_V1 + "UncountedTerminatedPods", "succeeded"): FieldHint(list_type="set"),
    ("k8s.io.api.discovery.v1.Endpoint", "addresses"): FieldHint(list_type="set"),
    (STORAGE_V1 + "CSIDriverSpec", "volumeLifecycleModes"): FieldHint(list_type="set"),
    (CORE_V1 + "ComponentStatus", "conditions"): BY_TYPE,
    ("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus", "conditions"):
        FieldHint(list_type="map", list_map_keys=("type",)),
    **{(version + rule, name): FieldHint(list_type="set")
       for version in (FLOWCONTROL_V1BETA2, FLOWCONTROL_V1BETA3)
       for rule, names in (("ResourcePolicyRule", ("verbs", "apiGroups", "resources", "namespaces")),
                           ("NonResourcePolicyRule", ("verbs", "nonResourceURLs")))
       for name in names},
    (BATCH_V1 + "UncountedTerminatedPods", "failed"): FieldHint(list_type="set"),
    (BATCH_V1 + "PodFailurePolicy", "rules"): ATOMIC,
    (BATCH_V1 + "PodFailurePolicyRule", "onPodConditions"): ATOMIC,
    (BATCH_V1 + "PodFailurePolicyOnExitCodesRequirement", "values"): FieldHint(list_type="set"),
    (BATCH_V1 + "SuccessPolicy", "rules"): ATOMIC,
    (BATCH_V1 + "CronJobStatus", "active"): ATOMIC,
    # rbac.authorization.k8s.io/v1
    (RBAC_V1 + "PolicyRule", "verbs"): ATOMIC,
    (RBAC_V1 + "PolicyRule", "apiGroups"): ATOMIC,
    (RBAC_V1 + "PolicyRule", "resources"): ATOMIC,
    (RBAC_V1 + "PolicyRule", "resourceNames"): ATOMIC,
    (RBAC_V1 + "PolicyRule", "nonResourceURLs"): ATOMIC,
    (RBAC_V1 + "Role", "rules"): ATOMIC,
    (RBAC_V1 + "ClusterRole", "rules"): ATOMIC,
    (RBAC_V1 + "AggregationRule", "clusterRoleSelectors"): ATOMIC,
    (RBAC_V1 + "RoleBinding", "subjects"): ATOMIC,
    (RBAC_V1 + "ClusterRoleBinding", "subjects"): ATOMIC,
    # admissionregistration, apiregistration, autoscaling, certificates, flowcontrol, policy and storage, from the
    # patchMergeKey/patchStrategy and listType markers of their types.go. The other
    # groups served (networking, discovery, scheduling, node) declare no merge key: their lists are replaced whole.
    (ADMISSION_V1 + "ValidatingWebhookConfiguration", "webhooks"): BY_NAME,
    (ADMISSION_V1 + "MutatingWebhookConfiguration", "webhooks"): BY_NAME,
    (ADMISSION_V1 + "ValidatingWebhook", "matchConditions"): BY_NAME,
    (ADMISSION_V1 + "MutatingWebhook", "matchConditions"): BY_NAME,
    (APIREG_V1 + "APIServiceStatus", "conditions"): BY_TYPE,
    (AUTOSCALING_V2 + "HorizontalPodAutoscalerStatus", "conditions"): BY_TYPE,
    (POLICY_V1 + "PodDisruptionBudgetStatus", "conditions"): BY_TYPE,
    # A map for server-side apply but no patch strategy: a strategic merge patch replaces the list.
    (CERTIFICATES_V1 + "CertificateSigningRequestStatus", "conditions"): FieldHint(
        list_type="map", list_map_keys=("type",)),
    (FLOWCONTROL_V1BETA3 + "FlowSchemaStatus", "conditions"): BY_TYPE,
    (FLOWCONTROL_V1BETA3 + "PriorityLevelConfigurationStatus", "conditions"): BY_TYPE,
    (FLOWCONTROL_V1BETA2 + "FlowSchemaStatus", "conditions"): BY_TYPE,
    (FLOWCONTROL_V1BETA2 + "PriorityLevelConfigurationStatus", "conditions"): BY_TYPE,
    # CSINodeSpec.drivers carries patchStrategy=merge by name without a list type.
    (STORAGE_V1 + "CSINodeSpec", "drivers"): FieldHint(patch_strategy="merge", patch_merge_key="name"),
    # ValidatingAdmissionPolicy and its binding (admissionregistration v1beta1 and v1alpha1 types.go).
    **{(version + message, name): hint for version in ADMISSION_POLICY_VERSIONS for message, name, hint in (
        ("ValidatingAdmissionPolicySpec", "validations", ATOMIC),
        ("ValidatingAdmissionPolicySpec", "auditAnnotations", ATOMIC),
        ("ValidatingAdmissionPolicySpec", "matchConditions", BY_NAME),
        ("ValidatingAdmissionPolicySpec", "variables", BY_NAME),
        ("ValidatingAdmissionPolicyStatus", "conditions", FieldHint(list_type="map", list_map_keys=("type",))),
        ("TypeChecking", "expressionWarnings", ATOMIC),
        ("MatchResources", "resourceRules", ATOMIC),
        ("MatchResources", "excludeResourceRules", ATOMIC),
        ("NamedRuleWithOperations", "resourceNames", ATOMIC),
        ("ValidatingAdmissionPolicyBindingSpec", "validationActions", FieldHint(list_type="set")),
    )},
})

MESSAGES: Mapping[str, MessageHint] = MappingProxyType({
    META_V1 + "OwnerReference": MessageHint(required=("apiVersion", "kind", "name", "uid"), map_type="atomic"),
    META_V1 + "WatchEvent": MessageHint(required=("type", "object")),
    META_V1 + "APIResourceList": MessageHint(required=("groupVersion", "resources")),
    META_V1 + "APIResource": MessageHint(required=("name", "singularName", "namespaced", "kind", "verbs")),
    META_V1 + "LabelSelector": MessageHint(map_type="atomic"),
    AUTOSCALING_V1 + "CrossVersionObjectReference": MessageHint(required=("kind", "name"), map_type="atomic"),
    "k8s.io.api.discovery.v1.EndpointPort": MessageHint(map_type="atomic"),
    META_V1 + "LabelSelectorRequirement": MessageHint(required=("key", "operator")),
    META_V1 + "Condition": MessageHint(required=("type", "status", "lastTransitionTime", "reason", "message")),
    CORE_V1 + "NamespaceCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "NamespaceList": MessageHint(required=("items",)),
    CORE_V1 + "ConfigMapList": MessageHint(required=("items",)),
    CORE_V1 + "SecretList": MessageHint(required=("items",)),
    # core, apps, batch and rbac (Go tags and markers of k8s.io/api v1 types.go): atomic structs, required fields.
    CORE_V1 + "ObjectReference": MessageHint(map_type="atomic"),
    CORE_V1 + "LocalObjectReference": MessageHint(map_type="atomic"),
    CORE_V1 + "TypedLocalObjectReference": MessageHint(required=("kind", "name"), map_type="atomic"),
    CORE_V1 + "TypedObjectReference": MessageHint(required=("kind", "name")),
    CORE_V1 + "SecretReference": MessageHint(map_type="atomic"),
    CORE_V1 + "Volume": MessageHint(required=("name",)),
    CORE_V1 + "PersistentVolumeClaimVolumeSource": MessageHint(required=("claimName",)),
    CORE_V1 + "HostPathVolumeSource": MessageHint(required=("path",)),
    CORE_V1 + "GlusterfsVolumeSource": MessageHint(required=("endpoints", "path")),
    CORE_V1 + "GlusterfsPersistentVolumeSource": MessageHint(required=("endpoints", "path")),
    CORE_V1 + "RBDVolumeSource": MessageHint(required=("monitors", "image")),
    CORE_V1 + "RBDPersistentVolumeSource": MessageHint(required=("monitors", "image")),
    CORE_V1 + "CinderVolumeSource": MessageHint(required=("volumeID",)),
    CORE_V1 + "CinderPersistentVolumeSource": MessageHint(required=("volumeID",)),
    CORE_V1 + "CephFSVolumeSource": MessageHint(required=("monitors",)),
    CORE_V1 + "CephFSPersistentVolumeSource": MessageHint(required=("monitors",)),
    CORE_V1 + "GCEPersistentDiskVolumeSource": MessageHint(required=("pdName",)),
    CORE_V1 + "QuobyteVolumeSource": MessageHint(required=("registry", "volume")),
    CORE_V1 + "FlexPersistentVolumeSource": MessageHint(required=("driver",)),
    CORE_V1 + "FlexVolumeSource": MessageHint(required=("driver",)),
    CORE_V1 + "AWSElasticBlockStoreVolumeSource": MessageHint(required=("volumeID",)),
    CORE_V1 + "GitRepoVolumeSource": MessageHint(required=("repository",)),
    CORE_V1 + "NFSVolumeSource": MessageHint(required=("server", "path")),
    CORE_V1 + "ISCSIVolumeSource": MessageHint(required=("targetPortal", "iqn", "lun")),
    CORE_V1 + "ISCSIPersistentVolumeSource": MessageHint(required=("targetPortal", "iqn", "lun")),
    CORE_V1 + "AzureFileVolumeSource": MessageHint(required=("secretName", "shareName")),
    CORE_V1 + "AzureFilePersistentVolumeSource": MessageHint(required=("secretName", "shareName")),
    CORE_V1 + "VsphereVirtualDiskVolumeSource": MessageHint(required=("volumePath",)),
    CORE_V1 + "PhotonPersistentDiskVolumeSource": MessageHint(required=("pdID",)),
    CORE_V1 + "AzureDiskVolumeSource": MessageHint(required=("diskName", "diskURI")),
    CORE_V1 + "PortworxVolumeSource": MessageHint(required=("volumeID",)),
    CORE_V1 + "ScaleIOVolumeSource": MessageHint(required=("gateway", "system", "secretRef")),
    CORE_V1 + "ScaleIOPersistentVolumeSource": MessageHint(required=("gateway", "system", "secretRef")),
    CORE_V1 + "ServiceAccountTokenProjection": MessageHint(required=("path",)),
    CORE_V1 + "ClusterTrustBundleProjection": MessageHint(required=("path",)),
    CORE_V1 + "KeyToPath": MessageHint(required=("key", "path")),
    CORE_V1 + "LocalVolumeSource": MessageHint(required=("path",)),
    CORE_V1 + "CSIPersistentVolumeSource": MessageHint(required=("driver", "volumeHandle")),
    CORE_V1 + "CSIVolumeSource": MessageHint(required=("driver",)),
    CORE_V1 + "PersistentVolumeClaimTemplate": MessageHint(required=("spec",)),
    CORE_V1 + "DownwardAPIVolumeFile": MessageHint(required=("path",)),
    CORE_V1 + "ContainerPort": MessageHint(required=("containerPort",)),
    CORE_V1 + "VolumeMount": MessageHint(required=("name", "mountPath")),
    CORE_V1 + "VolumeDevice": MessageHint(required=("name", "devicePath")),
    CORE_V1 + "EnvVar": MessageHint(required=("name",)),
    CORE_V1 + "ObjectFieldSelector": MessageHint(required=("fieldPath",), map_type="atomic"),
    CORE_V1 + "ResourceFieldSelector": MessageHint(required=("resource",), map_type="atomic"),
    CORE_V1 + "ConfigMapKeySelector": MessageHint(required=("key",), map_type="atomic"),
    CORE_V1 + "SecretKeySelector": MessageHint(required=("key",), map_type="atomic"),
    CORE_V1 + "HTTPHeader": MessageHint(required=("name", "value")),
    CORE_V1 + "HTTPGetAction": MessageHint(required=("port",)),
    CORE_V1 + "TCPSocketAction": MessageHint(required=("port",)),
    CORE_V1 + "GRPCAction": MessageHint(required=("port",)),
    CORE_V1 + "SleepAction": MessageHint(required=("seconds",)),
    CORE_V1 + "ContainerResizePolicy": MessageHint(required=("resourceName", "restartPolicy")),
    CORE_V1 + "ResourceClaim": MessageHint(required=("name",)),
    CORE_V1 + "Container": MessageHint(required=("name",)),
    CORE_V1 + "EphemeralContainerCommon": MessageHint(required=("name",)),
    CORE_V1 + "ContainerStateTerminated": MessageHint(required=("exitCode",)),
    CORE_V1 + "ContainerStatus": MessageHint(required=("name", "ready", "restartCount", "image", "imageID")),
    CORE_V1 + "LinuxContainerUser": MessageHint(required=("uid", "gid")),
    CORE_V1 + "PodCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "VolumeMountStatus": MessageHint(required=("name", "mountPath")),
    CORE_V1 + "NodeSelector": MessageHint(required=("nodeSelectorTerms",), map_type="atomic"),
    CORE_V1 + "NodeSelectorTerm": MessageHint(map_type="atomic"),
    CORE_V1 + "NodeSelectorRequirement": MessageHint(required=("key", "operator")),
    CORE_V1 + "TopologySelectorTerm": MessageHint(map_type="atomic"),
    CORE_V1 + "TopologySelectorLabelRequirement": MessageHint(required=("key", "values")),
    CORE_V1 + "WeightedPodAffinityTerm": MessageHint(required=("weight", "podAffinityTerm")),
    CORE_V1 + "PodAffinityTerm": MessageHint(required=("topologyKey",)),
    CORE_V1 + "PreferredSchedulingTerm": MessageHint(required=("weight", "preference")),
    CORE_V1 + "Taint": MessageHint(required=("key", "effect")),
    CORE_V1 + "PodReadinessGate": MessageHint(required=("conditionType",)),
    CORE_V1 + "PodSpec": MessageHint(required=("containers",)),
    CORE_V1 + "PodResourceClaim": MessageHint(required=("name",)),
    CORE_V1 + "PodResourceClaimStatus": MessageHint(required=("name",)),
    CORE_V1 + "PodOS": MessageHint(required=("name",)),
    CORE_V1 + "PodSchedulingGate": MessageHint(required=("name",)),
    CORE_V1 + "TopologySpreadConstraint": MessageHint(required=("maxSkew", "topologyKey", "whenUnsatisfiable")),
    CORE_V1 + "HostAlias": MessageHint(required=("ip",)),
    CORE_V1 + "SeccompProfile": MessageHint(required=("type",)),
    CORE_V1 + "AppArmorProfile": MessageHint(required=("type",)),
    CORE_V1 + "Sysctl": MessageHint(required=("name", "value")),
    CORE_V1 + "PodIP": MessageHint(required=("ip",)),
    CORE_V1 + "HostIP": MessageHint(required=("ip",)),
    CORE_V1 + "Binding": MessageHint(required=("target",)),
    CORE_V1 + "ReplicationControllerStatus": MessageHint(required=("replicas",)),
    CORE_V1 + "ReplicationControllerCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "ServicePort": MessageHint(required=("port",)),
    CORE_V1 + "PortStatus": MessageHint(required=("port", "protocol")),
    CORE_V1 + "EndpointAddress": MessageHint(required=("ip",), map_type="atomic"),
    CORE_V1 + "EndpointPort": MessageHint(required=("port",), map_type="atomic"),
    CORE_V1 + "ConfigMapNodeConfigSource": MessageHint(required=("namespace", "name", "kubeletConfigKey")),
    CORE_V1 + "DaemonEndpoint": MessageHint(required=("Port",)),
    CORE_V1 + "NodeSystemInfo": MessageHint(required=(
        "machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion", "kubeletVersion",
        "kubeProxyVersion", "operatingSystem", "architecture")),
    CORE_V1 + "AttachedVolume": MessageHint(required=("name", "devicePath")),
    CORE_V1 + "NodeCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "NodeAddress": MessageHint(required=("type", "address")),
    CORE_V1 + "Event": MessageHint(required=("metadata", "involvedObject")),
    CORE_V1 + "LimitRangeItem": MessageHint(required=("type",)),
    CORE_V1 + "LimitRangeSpec": MessageHint(required=("limits",)),
    CORE_V1 + "ScopeSelector": MessageHint(map_type="atomic"),
    CORE_V1 + "ScopedResourceSelectorRequirement": MessageHint(required=("scopeName", "operator")),
    CORE_V1 + "ModifyVolumeStatus": MessageHint(required=("status",)),
    CORE_V1 + "PersistentVolumeClaimCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "PodList": MessageHint(required=("items",)),
    CORE_V1 + "ReplicationControllerList": MessageHint(required=("items",)),
    CORE_V1 + "ServiceList": MessageHint(required=("items",)),
    CORE_V1 + "ServiceAccountList": MessageHint(required=("items",)),
    CORE_V1 + "EndpointsList": MessageHint(required=("items",)),
    CORE_V1 + "NodeList": MessageHint(required=("items",)),
    CORE_V1 + "EventList": MessageHint(required=("items",)),
    CORE_V1 + "LimitRangeList": MessageHint(required=("items",)),
    CORE_V1 + "ResourceQuotaList": MessageHint(required=("items",)),
    CORE_V1 + "PersistentVolumeList": MessageHint(required=("items",)),
    CORE_V1 + "PersistentVolumeClaimList": MessageHint(required=("items",)),
    APPS_V1 + "StatefulSetSpec": MessageHint(required=("selector", "template", "serviceName")),
    APPS_V1 + "StatefulSetStatus": MessageHint(required=("replicas",)),
    APPS_V1 + "StatefulSetCondition": MessageHint(required=("type", "status")),
    APPS_V1 + "DeploymentSpec": MessageHint(required=("selector", "template")),
    APPS_V1 + "DeploymentCondition": MessageHint(required=("type", "status")),
    APPS_V1 + "DaemonSetSpec": MessageHint(required=("selector", "template")),
    APPS_V1 + "DaemonSetStatus": MessageHint(
        required=("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")),
    APPS_V1 + "DaemonSetCondition": MessageHint(required=("type", "status")),
    APPS_V1 + "ReplicaSetSpec": MessageHint(required=("selector",)),
    APPS_V1 + "ReplicaSetStatus": MessageHint(required=("replicas",)),
    APPS_V1 + "ReplicaSetCondition": MessageHint(required=("type", "status")),
    APPS_V1 + "ControllerRevision": MessageHint(required=("revision",)),
    APPS_V1 + "StatefulSetList": MessageHint(required=("items",)),
    APPS_V1 + "DeploymentList": MessageHint(required=("items",)),
    APPS_V1 + "DaemonSetList": MessageHint(required=("items",)),
    APPS_V1 + "ReplicaSetList": MessageHint(required=("items",)),
    APPS_V1 + "ControllerRevisionList": MessageHint(required=("items",)),
    BATCH_V1 + "PodFailurePolicyOnExitCodesRequirement": MessageHint(required=("operator", "values")),
    BATCH_V1 + "PodFailurePolicyOnPodConditionsPattern": MessageHint(required=("type", "status")),
    BATCH_V1 + "PodFailurePolicyRule": MessageHint(required=("action",)),
    BATCH_V1 + "PodFailurePolicy": MessageHint(required=("rules",)),
    BATCH_V1 + "SuccessPolicy": MessageHint(required=("rules",)),
    BATCH_V1 + "JobSpec": MessageHint(required=("template",)),
    BATCH_V1 + "JobCondition": MessageHint(required=("type", "status")),
    BATCH_V1 + "CronJobSpec": MessageHint(required=("schedule", "jobTemplate")),
    BATCH_V1 + "JobList": MessageHint(required=("items",)),
    BATCH_V1 + "CronJobList": MessageHint(required=("items",)),
    EVENTS_V1 + "Event": MessageHint(required=("eventTime",)),
    EVENTS_V1 + "EventSeries": MessageHint(required=("count", "lastObservedTime")),
    EVENTS_V1 + "EventList": MessageHint(required=("items",)),
    RBAC_V1 + "PolicyRule": MessageHint(required=("verbs",)),
    RBAC_V1 + "Subject": MessageHint(required=("kind", "name"), map_type="atomic"),
    RBAC_V1 + "RoleRef": MessageHint(required=("apiGroup", "kind", "name"), map_type="atomic"),
    RBAC_V1 + "RoleBinding": MessageHint(required=("roleRef",)),
    RBAC_V1 + "ClusterRoleBinding": MessageHint(required=("roleRef",)),
    RBAC_V1 + "RoleList": MessageHint(required=("items",)),
    RBAC_V1 + "RoleBindingList": MessageHint(required=("items",)),
    RBAC_V1 + "ClusterRoleList": MessageHint(required=("items",)),
    RBAC_V1 + "ClusterRoleBindingList": MessageHint(required=("items",)),
    AUTOSCALING_V1 + "ScaleStatus": MessageHint(required=("replicas",)),
    "k8s.io.api.coordination.v1.LeaseList": MessageHint(required=("items",)),
    **{version + message: hint for version in ADMISSION_POLICY_VERSIONS for message, hint in (
        ("MatchResources", MessageHint(map_type="atomic")),
        ("NamedRuleWithOperations", MessageHint(map_type="atomic")),
        ("ParamKind", MessageHint(map_type="atomic")),
        ("ParamRef", MessageHint(map_type="atomic")),
        ("Variable", MessageHint(required=("name", "expression"), map_type="atomic")),
        ("Validation", MessageHint(required=("expression",))),
        ("AuditAnnotation", MessageHint(required=("key", "valueExpression"))),
        ("ExpressionWarning", MessageHint(required=("fieldRef", "warning"))),
        ("ValidatingAdmissionPolicyList", MessageHint(required=("items",))),
        ("ValidatingAdmissionPolicyBindingList", MessageHint(required=("items",))),
    )},
})


# Fields Go always prints though kube does not require them (a value, not a pointer, without omitempty, marked
# +optional): openapi-gen gives their zero value ("", 0, false) as their OpenAPI default, as it does a required
# field's. By protobuf message, the JSON names of its own fields. Checked against kube 1.28.7's published v3
# documents.
ALWAYS_PRINTED: Mapping[str, frozenset[str]] = MappingProxyType({
    ADMISSION_V1 + "MatchCondition": frozenset({"expression", "name"}),
    ADMISSION_V1 + "MutatingWebhook": frozenset({"name"}),
    ADMISSION_V1 + "ServiceReference": frozenset({"name", "namespace"}),
    ADMISSION_V1 + "ValidatingWebhook": frozenset({"name"}),
    APPS_V1 + "StatefulSetOrdinals": frozenset({"start"}),
    APPS_V1 + "StatefulSetStatus": frozenset({"availableReplicas"}),
    "k8s.io.api.authorization.v1.SubjectAccessReviewStatus": frozenset({"allowed"}),
    "k8s.io.api.authorization.v1.SubjectRulesReviewStatus": frozenset({"incomplete"}),
    AUTOSCALING_V1 + "CrossVersionObjectReference": frozenset({"kind", "name"}),
    AUTOSCALING_V1 + "HorizontalPodAutoscalerSpec": frozenset({"maxReplicas"}),
    AUTOSCALING_V1 + "HorizontalPodAutoscalerStatus": frozenset({"currentReplicas", "desiredReplicas"}),
    AUTOSCALING_V2 + "ContainerResourceMetricSource": frozenset({"container", "name"}),
    AUTOSCALING_V2 + "ContainerResourceMetricStatus": frozenset({"container", "name"}),
    AUTOSCALING_V2 + "CrossVersionObjectReference": frozenset({"kind", "name"}),
    AUTOSCALING_V2 + "HPAScalingPolicy": frozenset({"periodSeconds", "type", "value"}),
    AUTOSCALING_V2 + "HorizontalPodAutoscalerCondition": frozenset({"status", "type"}),
    AUTOSCALING_V2 + "HorizontalPodAutoscalerSpec": frozenset({"maxReplicas"}),
    AUTOSCALING_V2 + "HorizontalPodAutoscalerStatus": frozenset({"desiredReplicas"}),
    AUTOSCALING_V2 + "MetricIdentifier": frozenset({"name"}),
    AUTOSCALING_V2 + "MetricSpec": frozenset({"type"}),
    AUTOSCALING_V2 + "MetricStatus": frozenset({"type"}),
    AUTOSCALING_V2 + "MetricTarget": frozenset({"type"}),
    AUTOSCALING_V2 + "ResourceMetricSource": frozenset({"name"}),
    AUTOSCALING_V2 + "ResourceMetricStatus": frozenset({"name"}),
    CERTIFICATES_V1 + "CertificateSigningRequestCondition": frozenset({"status", "type"}),
    CERTIFICATES_V1 + "CertificateSigningRequestSpec": frozenset({"signerName"}),
    CORE_V1 + "ComponentCondition": frozenset({"status", "type"}),
    CORE_V1 + "EphemeralContainerCommon": frozenset({"name"}),
    CORE_V1 + "Event": frozenset({"reportingComponent", "reportingInstance"}),
    CORE_V1 + "GRPCAction": frozenset({"service"}),
    "k8s.io.api.discovery.v1.EndpointSlice": frozenset({"addressType"}),
    "k8s.io.api.discovery.v1.ForZone": frozenset({"name"}),
    FLOWCONTROL_V1BETA2 + "FlowDistinguisherMethod": frozenset({"type"}),
    FLOWCONTROL_V1BETA2 + "FlowSchemaSpec": frozenset({"matchingPrecedence"}),
    FLOWCONTROL_V1BETA2 + "GroupSubject": frozenset({"name"}),
    FLOWCONTROL_V1BETA2 + "LimitResponse": frozenset({"type"}),
    FLOWCONTROL_V1BETA2 + "LimitedPriorityLevelConfiguration": frozenset({"assuredConcurrencyShares"}),
    FLOWCONTROL_V1BETA2 + "PriorityLevelConfigurationReference": frozenset({"name"}),
    FLOWCONTROL_V1BETA2 + "PriorityLevelConfigurationSpec": frozenset({"type"}),
    FLOWCONTROL_V1BETA2 + "QueuingConfiguration": frozenset({"handSize", "queueLengthLimit", "queues"}),
    FLOWCONTROL_V1BETA2 + "ServiceAccountSubject": frozenset({"name", "namespace"}),
    FLOWCONTROL_V1BETA2 + "Subject": frozenset({"kind"}),
    FLOWCONTROL_V1BETA2 + "UserSubject": frozenset({"name"}),
    FLOWCONTROL_V1BETA3 + "FlowDistinguisherMethod": frozenset({"type"}),
    FLOWCONTROL_V1BETA3 + "FlowSchemaSpec": frozenset({"matchingPrecedence"}),
    FLOWCONTROL_V1BETA3 + "GroupSubject": frozenset({"name"}),
    FLOWCONTROL_V1BETA3 + "LimitResponse": frozenset({"type"}),
    FLOWCONTROL_V1BETA3 + "LimitedPriorityLevelConfiguration": frozenset({"nominalConcurrencyShares"}),
    FLOWCONTROL_V1BETA3 + "PriorityLevelConfigurationReference": frozenset({"name"}),
    FLOWCONTROL_V1BETA3 + "PriorityLevelConfigurationSpec": frozenset({"type"}),
    FLOWCONTROL_V1BETA3 + "QueuingConfiguration": frozenset({"handSize", "queueLengthLimit", "queues"}),
    FLOWCONTROL_V1BETA3 + "ServiceAccountSubject": frozenset({"name", "namespace"}),
    FLOWCONTROL_V1BETA3 + "Subject": frozenset({"kind"}),
    FLOWCONTROL_V1BETA3 + "UserSubject": frozenset({"name"}),
    "k8s.io.api.networking.v1.IPBlock": frozenset({"cidr"}),
    "k8s.io.api.networking.v1.IngressClassParametersReference": frozenset({"kind", "name"}),
    "k8s.io.api.networking.v1.IngressPortStatus": frozenset({"port", "protocol"}),
    "k8s.io.api.networking.v1.IngressServiceBackend": frozenset({"name"}),
    "k8s.io.api.node.v1.RuntimeClass": frozenset({"handler"}),
    POLICY_V1 + "PodDisruptionBudgetStatus": frozenset({
        "currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods"}),
    "k8s.io.api.scheduling.v1.PriorityClass": frozenset({"value"}),
    STORAGE_V1 + "CSINodeDriver": frozenset({"name", "nodeID"}),
    STORAGE_V1 + "CSIStorageCapacity": frozenset({"storageClassName"}),
    STORAGE_V1 + "StorageClass": frozenset({"provisioner"}),
    STORAGE_V1 + "TokenRequest": frozenset({"audience"}),
    STORAGE_V1 + "VolumeAttachmentSpec": frozenset({"attacher", "nodeName"}),
    STORAGE_V1 + "VolumeAttachmentStatus": frozenset({"attached"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition": frozenset({
        "jsonPath", "name", "type"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceConversion": frozenset({"strategy"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition": frozenset({
        "status", "type"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames": frozenset({
        "kind", "plural"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec": frozenset({
        "group", "scope"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion": frozenset({
        "name", "served", "storage"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceScale": frozenset({
        "specReplicasPath", "statusReplicasPath"}),
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.ServiceReference": frozenset({"name", "namespace"}),
    APIREG_V1 + "APIServiceCondition": frozenset({"status", "type"}),
    APIREG_V1 + "APIServiceSpec": frozenset({"groupPriorityMinimum", "versionPriority"}),
})

# Defaults kube's Go types declare with a +default marker, and one Capstan's protobuf cannot tell: kube's OpenAPI
# gives ObjectMeta.creationTimestamp, a Time value rather than a pointer, the default {}.
DECLARED_DEFAULTS: Mapping[tuple[str, str], object] = MappingProxyType({
    (CORE_V1 + "ContainerPort", "protocol"): "TCP",
    (CORE_V1 + "ServicePort", "protocol"): "TCP",
    (META_V1 + "ObjectMeta", "creationTimestamp"): {},
})

NO_FIELD_HINT = FieldHint()
NO_MESSAGE_HINT = MessageHint()


def field_hint(message: str, field: str) -> FieldHint:
    return FIELDS.get((message, field), NO_FIELD_HINT)


def message_hint(message: str) -> MessageHint:
    return MESSAGES.get(message, NO_MESSAGE_HINT)
