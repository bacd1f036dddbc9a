"""core/v1 kinds beyond config: ServiceAccount, Service, Endpoints, Pod, PodTemplate, Node, Event,
PersistentVolume, PersistentVolumeClaim, ResourceQuota, LimitRange and ReplicationController (with /scale).

Pods live in server/kinds/pods.py (with the PodSpec rules in podspec.py), PodTemplates in podtemplates.py,
Services and Endpoints in services.py; the smaller kinds are here. Defaults are kube-apiserver's SetDefaults_*
(pkg/apis/core/v1/defaults.go) and each strategy's PrepareForCreate; validation is the part of
pkg/apis/core/validation users hit most, worded as kube words it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from capstan.api.core.v1 import core_pb2 as core_v1
from server.kinds import podspec, podwarnings, proxy
from server.kinds.componentstatuses import COMPONENT_STATUSES
from server.kinds.pods import BINDINGS, PODS
from server.kinds.podtemplates import POD_TEMPLATES
from server.kinds.services import ENDPOINTS, services
from server.kinds.shaped import retype
from server.machinery import meta
from server.machinery.codec.quantity import QuantityError, parse_quantity
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.objects import scale
from server.registry.resources import Handlers, Resource, ScaleRule, Subresource
from server.registry.strategy import Declared

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
LIMIT_TYPES = ("Container", "PersistentVolumeClaim", "Pod")


def _status_of(kind: str) -> Subresource:
    """The kind's statusStrategy resets spec only: metadata changes through /status are kept."""
    return Subresource("status", kind, ("get", "patch", "update"), ("status",), metadata_reset=())


def _typed(schema: ProtoSchema, default: Callable[[Obj], None]) -> Callable[[Obj], None]:
    """A defaulting hook that types the object again afterwards (see server/kinds/shaped.py)."""

    def hook(obj: Obj) -> None:
        default(obj)
        retype(schema, obj)

    return hook


def _new_status(schema: ProtoSchema, status: Callable[[], Obj]) -> Callable[[Obj, Obj | None], None]:
    """PrepareForCreate of kinds whose new objects start from a fixed status."""

    def hook(obj: Obj, old: Obj | None) -> None:
        if old is None:
            obj["status"] = status()
            retype(schema, obj)

    return hook


def _spec(obj: Obj) -> Obj:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


# --- Node --------------------------------------------------------------------------------------------------------

NODE_SCHEMA = ProtoSchema(core_v1.Node)


def default_node(obj: Obj) -> None:
    """SetDefaults_NodeStatus: allocatable is the capacity unless given. A new Node keeps its status (kubelets
    register with one). The v1 NodeSpec's conversions: podCIDR is authoritative when it and podCIDRs[0] differ
    or podCIDRs is empty, and podCIDR is podCIDRs[0]."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        single, cidrs = spec.get("podCIDR"), spec.get("podCIDRs") or []
        if single and (not cidrs or cidrs[0] != single):
            spec["podCIDRs"] = [single]
        elif cidrs and not single:
            spec["podCIDR"] = cidrs[0]
    status = obj.get("status")
    if isinstance(status, dict) and "allocatable" not in status and "capacity" in status:
        status["allocatable"] = dict(status["capacity"])
    for field in ("capacity", "allocatable"):
        if isinstance(status, dict) and isinstance(status.get(field), dict):
            status[field] = podspec.round_up_resource_list(status[field])


def validate_node(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs = _node_taint_errors(_spec(obj).get("taints") or [])
    errs.extend(_pod_cidr_errors(_spec(obj).get("podCIDRs") or []))
    if old is not None:
        cidrs = _spec(old).get("podCIDRs") or []
        if cidrs and _spec(obj).get("podCIDRs") != cidrs:
            errs.append(FieldError.forbidden(
                "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"))
    return errs


def _node_taint_errors(taints: list[Obj]) -> list[FieldError]:
    """validateNodeTaints, which ValidateNode calls with the path metadata.taints (kube's, though the taints are
    the spec's)."""
    errs: list[FieldError] = []
    unique: set[tuple[str, str]] = set()
    for index, taint in enumerate(taints):
        path = f"metadata.taints[{index}]"
        key, value, effect = taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")
        errs.extend(names.validate_label_name(key, f"{path}.key"))
        problems = names.is_label_value(value)
        if problems:
            errs.append(FieldError.invalid(f"{path}.value", value, ";".join(problems)))
        if not effect:
            errs.append(FieldError.required(f"{path}.effect"))
        elif effect not in podspec.TAINT_EFFECTS:
            errs.append(FieldError.not_supported(f"{path}.effect", effect, podspec.TAINT_EFFECTS))
        if (effect, key) in unique:
            shown = GoValue(f"core.Taint{{Key:{names.go_quote(key)}, Value:{names.go_quote(value)}, "
                            f"Effect:{names.go_quote(effect)}, TimeAdded:<nil>}}")
            duplicate = FieldError.duplicate(path, shown)
            errs.append(replace(duplicate, detail="taints must be unique by key and effect pair"))
            continue
        unique.add((effect, key))
    return errs


def _pod_cidr_errors(cidrs: list[str]) -> list[FieldError]:
    """ValidateNode's podCIDRs (podCIDR is podCIDRs[0] by then): each a CIDR, at most one of each family, none
    repeated."""
    errs: list[FieldError] = []
    families: list[int] = []
    for index, cidr in enumerate(cidrs):
        family = _cidr_family(cidr)
        if family is None:
            errs.append(FieldError.invalid(f"spec.podCIDRs[{index}]", names.go_string_slice(cidrs),
                                           "must be valid CIDR"))
        else:
            families.append(family)
    if len(cidrs) > 1:
        if len(cidrs) > 2 or len(families) != 2 or families[0] == families[1]:
            errs.append(FieldError.invalid("spec.podCIDRs", names.go_string_slice(cidrs),
                                           "may specify no more than one CIDR for each IP family"))
        seen: set[str] = set()
        for index, cidr in enumerate(cidrs):
            if cidr in seen:
                errs.append(FieldError.duplicate(f"spec.podCIDRs[{index}]", cidr))
            seen.add(cidr)
    return errs


def _cidr_family(cidr: str) -> int | None:
    """netutils.ParseCIDRSloppy's answer: the network's IP version, None when it is no CIDR."""
    address, slash, bits = cidr.partition("/")
    if not slash or not (bits.isascii() and bits.isdigit()) or not podspec.is_ip_sloppy(address):
        return None
    version = 6 if ":" in address else 4
    return version if int(bits) <= (128 if version == 6 else 32) else None


@dataclass(frozen=True, kw_only=True, eq=False)
class NodeStrategy(Declared):
    """The Node's rules: a new Node keeps the status it registers with (nodeStrategy.PrepareForCreate keeps
    it), unlike other kinds with /status."""

    def reset_status(self, new: Obj, old: Obj | None) -> None:
        if old is not None:
            super().reset_status(new, old)


def node_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """nodeStrategy.WarningsOnCreate/OnUpdate (fieldIsDeprecatedWarnings), on every write: spec.configSource
    (which kube keeps only on an update of a Node that has one) and spec.externalID."""
    out = []
    if old is not None and _spec(obj).get("configSource") is not None and _spec(old).get("configSource") is not None:
        out.append("spec.configSource: the feature is removed")
    if _spec(obj).get("externalID"):
        out.append("spec.externalID: this field is deprecated, and is unused by Kubernetes")
    return out


NODES = Resource(
    group="", version="v1", resource="nodes", kind="Node", singular="node", namespaced=False,
    schema=NODE_SCHEMA,
    short_names=("no",),
    subresources=(_status_of("Node"), replace(proxy.NODE_PROXY, handlers=Handlers(connect=proxy.node))),
    field_getters={"spec.unschedulable": lambda o: "true" if _spec(o).get("unschedulable") else "false"},
    strategy=NodeStrategy(defaults=_typed(NODE_SCHEMA, default_node), validation=validate_node,
                          warnings=node_warnings),
)


# --- Event -------------------------------------------------------------------------------------------------------


def _involved(obj: Obj, field: str) -> str:
    value = obj.get("involvedObject")
    return str(value.get(field, "")) if isinstance(value, dict) else ""


def _involved_getter(field: str) -> Callable[[Obj], str]:
    return lambda obj: _involved(obj, field)


def _event_source(obj: Obj) -> str:
    source = obj.get("source")
    component = source.get("component", "") if isinstance(source, dict) else ""
    return str(component or obj.get("reportingComponent", ""))


def validate_event(obj: Obj, old: Obj | None) -> list[FieldError]:
    """legacyValidateEvent: an event (without eventTime) sits in its object's namespace."""
    namespace = meta.meta(obj).get("namespace", "")
    involved = _involved(obj, "namespace")
    if obj.get("eventTime"):
        errs = []
        if not obj.get("reportingComponent"):
            errs.append(FieldError.required("reportingComponent"))
        if not obj.get("reportingInstance"):
            errs.append(FieldError.required("reportingInstance"))
        if not obj.get("action"):
            errs.append(FieldError.required("action"))
        return errs
    if (involved and involved != namespace) or (not involved and namespace not in ("", "default")):
        return [FieldError.invalid("involvedObject.namespace", involved, "does not match event.namespace")]
    return []


EVENTS = Resource(
    group="", version="v1", resource="events", kind="Event", singular="event", namespaced=True,
    schema=ProtoSchema(core_v1.Event),
    short_names=("ev",),
    field_getters={
        **{f"involvedObject.{f}": _involved_getter(f) for f in (
            "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": lambda o: str(o.get("reason", "")),
        "reportingComponent": lambda o: str(o.get("reportingComponent", "")),
        "source": _event_source,
        "type": lambda o: str(o.get("type", "")),
    },
    strategy=Declared(
        garbage_collection="Unsupported",  # eventStrategy: deleting an event never waits on or orphans dependents
        validation=validate_event,
    ),
)


# --- ServiceAccount ----------------------------------------------------------------------------------------------

SERVICE_ACCOUNTS = Resource(
    group="", version="v1", resource="serviceaccounts", kind="ServiceAccount", singular="serviceaccount",
    namespaced=True, schema=ProtoSchema(core_v1.ServiceAccount),
    short_names=("sa",),
    strategy=Declared(returns_deleted_object=True),
)


# --- PersistentVolume and PersistentVolumeClaim ------------------------------------------------------------------

PV_SCHEMA = ProtoSchema(core_v1.PersistentVolume)
PVC_SCHEMA = ProtoSchema(core_v1.PersistentVolumeClaim)
PV_SOURCES = (  # in the order kube's ValidatePersistentVolumeSpec meets them
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd", "quobyte",
    "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume", "photonPersistentDisk",
    "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi",
)  # fmt: skip


def default_pv(obj: Obj) -> None:
    """SetDefaults_PersistentVolume and the sources' defaults."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if isinstance(spec.get("capacity"), dict):
        spec["capacity"] = podspec.round_up_resource_list(spec["capacity"])
    podspec.default_volume({**spec, "emptyDir": None})  # the sources' defaults (hostPath, rbd, ...), in place
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def validate_pv(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = _spec(obj)
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(FieldError.required("spec.accessModes"))
    errs.extend(_access_mode_errors(modes))
    given = spec.get("capacity")
    capacity = given or {}
    if not capacity:
        errs.append(FieldError.required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:  # one error, naming the whole list as Go prints it
        errs.append(FieldError.not_supported("spec.capacity", _go_resource_list(given), ("storage",)))
    for name, value in capacity.items():
        errs.extend(_positive_quantity(value, f"spec.capacity[{name}]", basic=True))
    sources = [s for s in PV_SOURCES if s in spec]
    if not sources:
        errs.append(FieldError.required("spec", "must specify a volume type"))
    elif len(sources) > 1:
        errs.append(FieldError.forbidden(f"spec.{sources[1]}", "may not specify more than 1 volume type"))
    policy = spec.get("persistentVolumeReclaimPolicy", "")
    if policy not in RECLAIM_POLICIES:
        errs.append(FieldError.not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    return errs


def default_pvc(obj: Obj) -> None:
    """SetDefaults_PersistentVolumeClaimSpec (volumeMode Filesystem) and SetDefaults_PersistentVolumeClaim."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        podspec.default_claim_spec(spec)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


PVC_IMMUTABLE = "spec is immutable after creation except resources.requests for bound claims"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def storage_request(spec: Obj) -> object:
    return ((spec.get("resources") or {}).get("requests") or {}).get("storage")


def compare_requests(new: object, old: object) -> int:
    """Quantity.Cmp of two storage requests (a missing one is zero); 0 when either cannot be read (validation
    reports that on its own)."""
    try:
        return parse_quantity(str(new or "0")).compare(parse_quantity(str(old or "0")))
    except QuantityError:
        return 0


def _positive_quantity(value: object, path: str, *, basic: bool = False) -> list[FieldError]:
    """ValidatePositiveQuantityValue, after validateBasicResource's check of its integer value where `basic`."""
    try:
        quantity = parse_quantity(str(value))
    except QuantityError:
        return []  # refused as it was decoded
    errs = []
    if basic and quantity.sign() < 0:
        whole = quantity.round_up(0)
        errs.append(FieldError.invalid(path, whole.coefficient * 10 ** whole.exponent,
                                       "must be a valid resource quantity"))
    if quantity.sign() <= 0:
        errs.append(FieldError.invalid(path, str(quantity), "must be greater than zero"))
    return errs


def _access_mode_errors(modes: list[object]) -> list[FieldError]:
    """Each mode a supported one, and ReadWriteOncePod alone (a PV's and a PVC's access modes alike)."""
    errs = [FieldError.not_supported("spec.accessModes", m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and any(m in ACCESS_MODES and m != "ReadWriteOncePod" for m in modes):
        errs.append(FieldError.forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes"))
    return errs


def validate_pvc(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = _spec(obj)
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(FieldError.required("spec.accessModes", "at least 1 access mode is required"))
    errs.extend(_access_mode_errors(modes))
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        errs.append(FieldError.required("spec.resources[storage]"))
    else:  # at resources[storage], not requests, as kube reports it
        errs.extend(_positive_quantity(requests["storage"], "spec.resources[storage]"))
    mode = spec.get("volumeMode", "")
    if mode not in VOLUME_MODES:
        errs.append(FieldError.not_supported("spec.volumeMode", mode, VOLUME_MODES))
    if old is not None:
        errs.extend(_validate_pvc_update(obj, old))
    return errs


def _validate_pvc_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidatePersistentVolumeClaimUpdate (kube 1.28): the spec is fixed but for a volumeName set once, a class
    named where none was (the retroactive default class), and, once the claim is Bound, its storage request, which
    may grow and never shrink."""
    errs: list[FieldError] = []
    new_spec, old_spec = dict(_spec(obj)), dict(_spec(old))
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    if (BETA_STORAGE_CLASS not in old_annotations and old_spec.get("storageClassName") is None
            and new_spec.get("storageClassName") is not None):
        old_spec["storageClassName"] = new_spec["storageClassName"]
    if (obj.get("status") or {}).get("phase") == "Bound" and (new_spec.get("resources") or {}).get("requests"):
        resources = dict(new_spec["resources"])
        requests = dict(resources["requests"])
        requests["storage"] = storage_request(old_spec)
        resources["requests"] = requests
        new_spec["resources"] = resources
    for candidate in (new_spec, old_spec):
        for key in [k for k, v in candidate.items() if v is None]:
            del candidate[key]
    if new_spec != old_spec:
        errs.append(FieldError.forbidden("spec", PVC_IMMUTABLE))
    if compare_requests(storage_request(_spec(obj)), storage_request(_spec(old))) < 0:
        errs.append(FieldError.forbidden("spec.resources.requests.storage",
                                         "field can not be less than previous value"))
    if _spec(obj).get("volumeMode") != _spec(old).get("volumeMode"):
        errs.append(FieldError.invalid("volumeMode", _spec(obj).get("volumeMode"), "field is immutable"))
    return errs


BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
BETA_STORAGE_CLASS_WARNING = (f'metadata.annotations[{BETA_STORAGE_CLASS}]: deprecated since v1.8; use '
                              '"storageClassName" attribute instead')


def storage_class_of(obj: Obj) -> str:
    """A claim's or a volume's class, as GetPersistentVolumeClaimClass and GetPersistentVolumeClass read it: the
    beta annotation when it is there (even empty), else spec.storageClassName, else ""."""
    annotations = meta.meta(obj).get("annotations") or {}
    if BETA_STORAGE_CLASS in annotations:
        return str(annotations[BETA_STORAGE_CLASS])
    return str(_spec(obj).get("storageClassName") or "")
# (volume source field, message), in GetWarningsForPersistentVolume's order.
PV_DEPRECATED_SOURCES = (
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)


def pv_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """persistentvolumeStrategy.WarningsOnCreate/OnUpdate (every write): the beta storage class annotation,
    deprecated node labels in the required node affinity, deprecated volume sources."""
    out = [BETA_STORAGE_CLASS_WARNING] if BETA_STORAGE_CLASS in (meta.meta(obj).get("annotations") or {}) else []
    spec = obj.get("spec") or {}
    terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
    for i, term in enumerate(terms):
        out += podwarnings.node_selector_term_warnings(term, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]")
    return out + [f"spec.{field}: {message}" for field, message in PV_DEPRECATED_SOURCES
                  if spec.get(field) is not None]


def pvc_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """persistentvolumeclaimStrategy.WarningsOnCreate/OnUpdate (every write): the beta storage class annotation,
    fractional storage requests and limits."""
    out = [BETA_STORAGE_CLASS_WARNING] if BETA_STORAGE_CLASS in (meta.meta(obj).get("annotations") or {}) else []
    return out + podwarnings.claim_spec_warnings(obj.get("spec"), "spec")


PERSISTENT_VOLUMES = Resource(
    group="", version="v1", resource="persistentvolumes", kind="PersistentVolume", singular="persistentvolume",
    namespaced=False, schema=PV_SCHEMA,
    short_names=("pv",),
    subresources=(_status_of("PersistentVolume"),),
    strategy=Declared(
        returns_deleted_object=True, defaults=_typed(PV_SCHEMA, default_pv),
        # PrepareForCreate, then the defaults kube applies to what it reads back (phase Pending). No
        # lastPhaseTransitionTime: PersistentVolumeLastPhaseTransitionTime is an alpha gate, off, in kube 1.28.
        prepare=_new_status(PV_SCHEMA, lambda: {"phase": "Pending"}),
        validation=validate_pv, warnings=pv_warnings,
    ),
)

PERSISTENT_VOLUME_CLAIMS = Resource(
    group="", version="v1", resource="persistentvolumeclaims", kind="PersistentVolumeClaim",
    singular="persistentvolumeclaim", namespaced=True, schema=PVC_SCHEMA,
    short_names=("pvc",),
    subresources=(_status_of("PersistentVolumeClaim"),),
    strategy=Declared(
        returns_deleted_object=True, defaults=_typed(PVC_SCHEMA, default_pvc),
        prepare=_new_status(PVC_SCHEMA, lambda: {"phase": "Pending"}), validation=validate_pvc,
        warnings=pvc_warnings,
    ),
)


# --- ResourceQuota and LimitRange --------------------------------------------------------------------------------

QUOTA_SCHEMA = ProtoSchema(core_v1.ResourceQuota)
LIMIT_RANGE_SCHEMA = ProtoSchema(core_v1.LimitRange)


def default_quota(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec.get("hard"), dict):
        spec["hard"] = podspec.round_up_resource_list(spec["hard"])


def _non_negative(values: dict[str, str], path: str) -> list[FieldError]:
    return [FieldError.invalid(f"{path}[{k}]", v, "must be greater than or equal to 0")
            for k, v in values.items() if parse_quantity(v).sign() < 0]


# pkg/apis/core/helper: the resource names kube knows, and those its quota tracks.
_STANDARD_QUOTA = frozenset((
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas",
    "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers",
))
_STANDARD_RESOURCES = _STANDARD_QUOTA | {"storage"}
_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity")
_POD_QUOTA = frozenset(("pods", "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"))
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("NotTerminating", "Terminating"))


def _hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _quota_name_errors(name: str, path: str) -> list[FieldError]:
    """ValidateResourceQuotaResourceName: a qualified name; without a prefix, a resource kube knows, and (told
    besides whatever came before) one it tracks."""
    errs = [FieldError.invalid(path, name, m) for m in names.is_qualified_name(name)]
    if "/" not in name:
        if not errs and name not in _STANDARD_RESOURCES and not _hugepages(name):
            errs.append(FieldError.invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_QUOTA and not _hugepages(name):
            errs.append(FieldError.invalid(path, name, "must be a standard resource for quota"))
    return errs


def _scopes_errors(spec: Obj) -> list[FieldError]:
    """validateResourceQuotaScopes, the scopes shown as Go prints the []core.ResourceQuotaScope."""
    scopes = [str(s) for s in spec.get("scopes") or []]
    if not scopes:
        return []
    shown = GoValue("[]core.ResourceQuotaScope{" + ", ".join(names.go_quote(s) for s in scopes) + "}")
    hard = sorted(spec.get("hard") or {})
    errs = []
    for scope in scopes:
        if scope not in _QUOTA_SCOPES:
            errs.append(FieldError.invalid("spec.scopes", shown, "unsupported scope"))
        for name in hard:
            if name in _STANDARD_QUOTA and not (name == "pods" if scope == "BestEffort"
                                                else name in _POD_QUOTA or scope not in _QUOTA_SCOPES):
                errs.append(FieldError.invalid("spec.scopes", shown, "unsupported scope applied to resource"))
    errs.extend(FieldError.invalid("spec.scopes", shown, "conflicting scopes")
                for pair in _CONFLICTING_SCOPES if all(s in scopes for s in pair))
    return errs


def validate_quota(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = _spec(obj)
    errs: list[FieldError] = []
    for name, value in (spec.get("hard") or {}).items():
        errs.extend(_quota_name_errors(str(name), f"spec.hard[{name}]"))
        errs.extend(_non_negative({name: value}, "spec.hard"))
    return errs + _scopes_errors(spec)


def default_limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default is its max, its defaultRequest its default, else
    its min."""
    for item in _spec(obj).get("limits") or []:
        for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            if isinstance(item.get(field), dict):
                item[field] = podspec.round_up_resource_list(item[field])
        if item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        request = item.setdefault("defaultRequest", {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in (item.get("min") or {}).items():
            request.setdefault(name, value)


def validate_limit_range(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for index, item in enumerate(_spec(obj).get("limits") or []):
        kind = item.get("type", "")
        errs.extend(_limit_type_errors(kind, f"spec.limits[{index}].type"))
        if kind in seen:
            errs.append(FieldError.duplicate(f"spec.limits[{index}].type", kind))
        seen.add(kind)
        for field in ("max", "min", "default", "defaultRequest"):
            errs.extend(_non_negative(item.get(field) or {}, f"spec.limits[{index}].{field}"))
        errs.extend(_limit_bounds(item, f"spec.limits[{index}]"))
    return errs


def _go_resource_list(resources: object) -> GoValue:
    """%#v of a core.ResourceList: nil when absent, else its quantities by name (a map prints sorted)."""
    if not isinstance(resources, dict):
        return GoValue("core.ResourceList(nil)")
    entries = []
    for name in sorted(resources):
        value = resources[name]
        try:
            printed = _go_quantity(str(value)).text
        except QuantityError:
            printed = "resource.Quantity{}"
        entries.append(f"{names.go_quote(name)}:{printed}")
    return GoValue("core.ResourceList{" + ", ".join(entries) + "}")


def _limit_type_errors(kind: str, field: str) -> list[FieldError]:
    """validateLimitRangeTypeName: a qualified name, one of the standard types unless it has a domain prefix."""
    problems = names.is_qualified_name(kind)
    if problems:
        return [FieldError.invalid(field, kind, problem) for problem in problems]
    if "/" not in kind and kind not in LIMIT_TYPES:
        return [FieldError.invalid(field, kind, "must be a standard limit type or fully qualified")]
    return []


def _go_quantity(text: str) -> GoValue:
    """%#v of a resource.Quantity as field.ErrorBody prints it (its String has a pointer receiver, so the struct
    is printed): the int64Amount ParseQuantity made, and the string it kept when the input was canonical."""
    q = parse_quantity(text)
    return GoValue(f"resource.Quantity{{i:resource.int64Amount{{value:{q.coefficient}, scale:{q.exponent}}}, "
                   f"d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{names.go_quote(q.text)}, "
                   f"Format:{names.go_quote(q.format)}}}")


def _limit_bounds(item: Obj, path: str) -> list[FieldError]:
    """ValidateLimitRange's comparisons of an item's min, max, default, defaultRequest and maxLimitRequestRatio,
    per resource, in kube's order (its resources in Go's set order, which varies; here the item's)."""
    errs: list[FieldError] = []
    parts = {field: {str(k): str(v) for k, v in (item.get(field) or {}).items()}
             for field in ("min", "max", "default", "defaultRequest", "maxLimitRequestRatio")}
    if item.get("type") == "Pod":
        errs.extend(FieldError.forbidden(f"{path}.{field}", "may not be specified when `type` is 'Pod'")
                    for field in ("default", "defaultRequest") if parts[field])
        parts["default"], parts["defaultRequest"] = {}, {}
    if item.get("type") == "PersistentVolumeClaim" and "storage" not in parts["min"] and "storage" not in parts["max"]:
        errs.append(FieldError.required(f"{path}.limits", "either minimum or maximum storage value is required, but "
                                                          "neither was provided"))
    keys = list(dict.fromkeys(k for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
                              for k in parts[field]))

    def above(a: str, b: str) -> bool:
        return parse_quantity(a).compare(parse_quantity(b)) > 0

    for key in keys:
        low, high = parts["min"].get(key), parts["max"].get(key)
        default, request = parts["default"].get(key), parts["defaultRequest"].get(key)
        ratio = parts["maxLimitRequestRatio"].get(key)
        # (greater, lesser, the field reported, the value shown, the message), in kube's order: an error when
        # both are given and the first is the greater
        rules = (
            (low, high, "min", low, "min value {a} is greater than max value {b}"),
            (low, request, "defaultRequest", request, "min value {a} is greater than default request value {b}"),
            (request, high, "defaultRequest", request, "default request value {a} is greater than max value {b}"),
            (request, default, "defaultRequest", request,
             "default request value {a} is greater than default limit value {b}"),
            (low, default, "default", low, "min value {a} is greater than default value {b}"),
            (default, high, "default", high, "default value {a} is greater than max value {b}"),
            ("1" if ratio else None, ratio, "maxLimitRequestRatio", ratio, "ratio {b} is less than 1"),
        )
        for greater, lesser, field, value, message in rules:
            if greater and lesser and value and above(greater, lesser):
                errs.append(FieldError.invalid(f"{path}.{field}[{key}]", _go_quantity(value), message.format(
                    a=parse_quantity(greater), b=parse_quantity(lesser))))
    return errs


RESOURCE_QUOTAS = Resource(
    group="", version="v1", resource="resourcequotas", kind="ResourceQuota", singular="resourcequota",
    namespaced=True, schema=QUOTA_SCHEMA,
    short_names=("quota",),
    subresources=(_status_of("ResourceQuota"),),
    strategy=Declared(
        returns_deleted_object=True, defaults=_typed(QUOTA_SCHEMA, default_quota),
        prepare=_new_status(QUOTA_SCHEMA, dict), validation=validate_quota,
    ),
)

LIMIT_RANGES = Resource(
    group="", version="v1", resource="limitranges", kind="LimitRange", singular="limitrange", namespaced=True,
    schema=LIMIT_RANGE_SCHEMA,
    short_names=("limits",),
    strategy=Declared(defaults=_typed(LIMIT_RANGE_SCHEMA, default_limit_range), validation=validate_limit_range),
)


# --- ReplicationController ---------------------------------------------------------------------------------------

RC_SCHEMA = ProtoSchema(core_v1.ReplicationController)


def default_rc(obj: Obj) -> None:
    """SetDefaults_ReplicationController (selector and labels from the template's labels, one replica) and the
    template's PodSpec defaults."""
    spec = obj.setdefault("spec", {})
    template = spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        m = meta.meta(obj)
        if not m.get("labels"):
            m["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    if isinstance(template, dict):
        podspec.default_pod_spec(template.setdefault("spec", {}))


def validate_rc(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateReplicationControllerSpec."""
    spec = _spec(obj)
    errs: list[FieldError] = []
    replicas = spec.get("replicas", 0)
    if isinstance(replicas, int) and replicas < 0:
        errs.append(FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector") or {}
    if not selector:
        errs.append(FieldError.required("spec.selector"))
    else:
        errs.extend(names.validate_labels(selector, "spec.selector"))
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(FieldError.required("spec.template"))
        return errs
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errs.append(FieldError.invalid("spec.template.metadata.labels", names.go_string_map(labels),
                                       "`selector` does not match template `labels`"))
    tspec = template.get("spec") or {}
    errs.extend(podspec.validate_pod_spec(tspec, "spec.template.spec"))
    policy = tspec.get("restartPolicy")
    if policy and policy != "Always":
        errs.append(FieldError.not_supported("spec.template.spec.restartPolicy", policy, ("Always",)))
    return errs


def rc_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """rcStrategy.WarningsOnCreate/OnUpdate: on create a name its pods' names cannot take and the template's
    warnings; on update, when the generation rose, the warnings of the stored template (kube's WarningsOnUpdate
    hands GetWarningsForPodTemplate the old controller's template as the one to check)."""
    if old is None:
        return podwarnings.name_warnings(meta.meta(obj).get("name"), podwarnings.POD_NAMES) + \
            podwarnings.template_warnings((obj.get("spec") or {}).get("template"), "spec.template")
    if not podwarnings.generation_changed(obj, old):
        return []
    return podwarnings.template_warnings((old.get("spec") or {}).get("template"), "spec.template")


REPLICATION_CONTROLLERS = Resource(
    group="", version="v1", resource="replicationcontrollers", kind="ReplicationController",
    singular="replicationcontroller", namespaced=True, schema=RC_SCHEMA,
    short_names=("rc",),
    categories=("all",),
    # spec.selector is a plain label map
    subresources=(_status_of("ReplicationController"), scale.subresource(
        ScaleRule(selector="Set", missing=("autoscaling", "replicationcontrollers/scale")))),
    field_getters={"status.replicas": lambda o: str((o.get("status") or {}).get("replicas", 0))},
    strategy=Declared(
        tracks_generation=True, defaults=_typed(RC_SCHEMA, default_rc),
        garbage_collection="OrphanDependents",  # rcStrategy: core/v1 keeps its pods by default, for compatibility
        prepare=_new_status(RC_SCHEMA, lambda: {"replicas": 0}),  # replicas has no omitempty
        validation=validate_rc, warnings=rc_warnings,
    ),
)

# Services allocating from the default range; each core replaces it with its own (server/startup/app.py).
SERVICES, _ = services()

KINDS: tuple[Resource, ...] = (
    SERVICE_ACCOUNTS, SERVICES, ENDPOINTS, PODS, POD_TEMPLATES, NODES, EVENTS, PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS, RESOURCE_QUOTAS, LIMIT_RANGES, REPLICATION_CONTROLLERS, BINDINGS, COMPONENT_STATUSES,
)
