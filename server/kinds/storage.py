"""storage.k8s.io/v1 StorageClass, CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment (with /status), with
kube-apiserver 1.28's defaults (pkg/apis/storage/v1/defaults.go), strategies (pkg/registry/storage/*) and
validation (pkg/apis/storage/validation), worded as kube words it, e.g.

    StorageClass.storage.k8s.io "fast" is invalid: reclaimPolicy: Unsupported value: "Recycle": supported values:
    "Delete", "Retain"

Nothing here provisions or attaches volumes: the objects are what CSI drivers, external provisioners and
attachers read and write. A StorageClass answers its DELETE with the deleted object (ReturnDeletedObject).
"""

from __future__ import annotations

import json

from capstan.api.storage.v1 import storage_pb2
from server.kinds import podwarnings
from server.kinds.shaped import retype
from server.kinds.templates import dict_at, get, immutable, semantically_equal
from server.machinery.codec.quantity import parse_quantity
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _text
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "storage.k8s.io"
RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * (1 << 10)
MAX_ATTACHMENT_METADATA_SIZE = 256 * (1 << 10)
MAX_VOLUME_ERROR_MESSAGE = 1024
CSI_DRIVER_NAME_MAX = 63
CSI_NODE_ID_MAX = 256  # the strategy allows long node IDs (CSINodeValidationOptions.AllowLongNodeID)
TOKEN_MIN_SECONDS, TOKEN_MAX_SECONDS = 600, 1 << 32
IMMUTABLE = "field is immutable"

SC_SCHEMA = ProtoSchema(storage_pb2.StorageClass)
CSI_DRIVER_SCHEMA = ProtoSchema(storage_pb2.CSIDriver)
CSI_NODE_SCHEMA = ProtoSchema(storage_pb2.CSINode)
CAPACITY_SCHEMA = ProtoSchema(storage_pb2.CSIStorageCapacity)
ATTACHMENT_SCHEMA = ProtoSchema(storage_pb2.VolumeAttachment)


def _go_struct(fields: list[tuple[str, object]]) -> GoValue:
    """An internal (tagless) Go struct as encoding/json prints it in a field error: field names, Go's order."""
    return GoValue(json.dumps(dict(fields), ensure_ascii=False, separators=(",", ":")))


def qualified_name_errors(value: str, path: str) -> list[FieldError]:
    """ValidateQualifiedName: one Invalid per problem."""
    return [FieldError.invalid(path, value, m) for m in names.is_qualified_name(value)]


def csi_driver_name_errors(name: str, path: str) -> list[FieldError]:
    """core validation's ValidateCSIDriverName: required, at most 63 characters, a subdomain ignoring case."""
    errs: list[FieldError] = []
    if not name:
        errs.append(FieldError.required(path))
    if len(name) > CSI_DRIVER_NAME_MAX:
        errs.append(FieldError.too_long(path, CSI_DRIVER_NAME_MAX))
    errs.extend(FieldError.invalid(path, name, m) for m in names.is_dns1123_subdomain(name.lower()))
    return errs


# -- StorageClass --------------------------------------------------------------------------------------------------


def default_storage_class(obj: Obj) -> None:
    """SetDefaults_StorageClass."""
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")
    retype(SC_SCHEMA, obj)


def _parameters_errors(params: object, path: str) -> list[FieldError]:
    """validateParameters with empty parameters allowed."""
    params = _dict(params)
    if len(params) > MAX_PARAMETERS:
        return [FieldError.too_long(path, MAX_PARAMETERS)]
    errs = [FieldError.invalid(path, key, "field can not be empty.") for key in params if not key]
    if sum(names.byte_len(k) + names.byte_len(_text(v)) for k, v in params.items()) > MAX_PARAMETERS_SIZE:
        errs.append(FieldError.too_long(path, MAX_PARAMETERS_SIZE))
    return errs


def _topology_term_errors(term: Obj, path: str) -> tuple[dict[str, set[str]], list[FieldError]]:
    """ValidateTopologySelectorTerm: each requirement's values (required, a set) and key; keys unique."""
    errs: list[FieldError] = []
    by_key: dict[str, set[str]] = {}
    for i, requirement in enumerate(_list(term.get("matchLabelExpressions"))):
        requirement = _dict(requirement)
        at = f"{path}.matchLabelExpressions[{i}]"
        key, values = _text(requirement.get("key")), _list(requirement.get("values"))
        seen: set[str] = set()
        if not values:
            errs.append(FieldError.required(f"{at}.values"))
        for j, value in enumerate(values):
            if value in seen:
                errs.append(FieldError.duplicate(f"{at}.values[{j}]", value))
            seen.add(value)
        errs += names.validate_label_name(key, f"{at}.key")
        if key in by_key:
            errs.append(FieldError.duplicate(f"{at}.key", key))
        by_key[key] = seen
    return by_key, errs


def _allowed_topologies_errors(terms: object) -> list[FieldError]:
    """validateAllowedTopologies. Upstream compares each term with those before it in a list that starts with one
    empty map per term, so an empty term is always reported as a duplicate."""
    terms = _list(terms)
    seen: list[dict[str, set[str]]] = [{} for _ in terms]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        by_key, term_errs = _topology_term_errors(_dict(term), f"allowedTopologies[{i}]")
        errs += term_errs
        errs.extend(FieldError.duplicate(f"allowedTopologies[{i}].matchLabelExpressions", "")
                    for earlier in seen if earlier == by_key)
        seen.append(by_key)
    return errs


def validate_storage_class(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateStorageClass, then on update ValidateStorageClassUpdate: what may not change."""
    errs: list[FieldError] = []
    provisioner = _text(obj.get("provisioner"))
    if not provisioner:
        errs.append(FieldError.required("provisioner"))
    else:
        errs += qualified_name_errors(provisioner.lower(), "provisioner")
    errs += _parameters_errors(obj.get("parameters"), "parameters")
    policy = _text(obj.get("reclaimPolicy"))
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(FieldError.not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(FieldError.required("volumeBindingMode"))
    elif mode not in BINDING_MODES:
        errs.append(FieldError.not_supported("volumeBindingMode", mode, BINDING_MODES))
    errs += _allowed_topologies_errors(obj.get("allowedTopologies"))
    if old is not None:
        if _dict(obj.get("parameters")) != _dict(old.get("parameters")):
            errs.append(FieldError.forbidden("parameters", "updates to parameters are forbidden."))
        if _text(obj.get("provisioner")) != _text(old.get("provisioner")):
            errs.append(FieldError.forbidden("provisioner", "updates to provisioner are forbidden."))
        if _text(obj.get("reclaimPolicy")) != _text(old.get("reclaimPolicy")):
            errs.append(FieldError.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        errs += immutable(obj.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode")
    return errs


# -- CSIDriver -----------------------------------------------------------------------------------------------------


def default_csi_driver(obj: Obj) -> None:
    """SetDefaults_CSIDriver, with SELinuxMountReadWriteOncePod on (beta in 1.28)."""
    spec = dict_at(obj, "spec")
    for field, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                         ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                         ("seLinuxMount", False)):
        if spec.get(field) is None:
            spec[field] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    retype(CSI_DRIVER_SCHEMA, obj)


def _token_requests_errors(requests: object) -> list[FieldError]:
    """validateTokenRequests: audiences unique, expirations between 10 minutes and 2^32 seconds."""
    errs: list[FieldError] = []
    audiences: set[str] = set()
    for i, request in enumerate(_list(requests)):
        request, at = _dict(request), f"spec.tokenRequests[{i}]"
        audience = _text(request.get("audience"))
        if audience in audiences:
            errs.append(FieldError.duplicate(f"{at}.audience", audience))
            continue
        audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if not isinstance(seconds, int):
            continue
        if seconds < TOKEN_MIN_SECONDS:
            errs.append(FieldError.invalid(f"{at}.expirationSeconds", seconds,
                                           "may not specify a duration less than 10 minutes"))
        if seconds > TOKEN_MAX_SECONDS:
            errs.append(FieldError.invalid(f"{at}.expirationSeconds", seconds,
                                           "may not specify a duration larger than 2^32 seconds"))
    return errs


def validate_csi_driver(obj: Obj, old: Obj | None) -> list[FieldError]:
    """validateCSIDriverSpec (note upstream's path spec.attachedRequired), and on update the fields 1.28 keeps
    immutable: attachRequired, fsGroupPolicy, podInfoOnMount and volumeLifecycleModes."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    for field, path in (("attachRequired", "spec.attachedRequired"), ("podInfoOnMount", "spec.podInfoOnMount"),
                        ("storageCapacity", "spec.storageCapacity")):
        if spec.get(field) is None:
            errs.append(FieldError.required(path))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        errs.append(FieldError.not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
    errs += _token_requests_errors(spec.get("tokenRequests"))
    errs.extend(FieldError.not_supported("spec.volumeLifecycleModes", mode, LIFECYCLE_MODES)
                for mode in _list(spec.get("volumeLifecycleModes")) if mode not in LIFECYCLE_MODES)
    if spec.get("seLinuxMount") is None:
        errs.append(FieldError.required("spec.seLinuxMount"))
    if old is not None:
        old_spec = _dict(old.get("spec"))
        for field, path in (("attachRequired", "spec.attachedRequired"), ("fsGroupPolicy", "spec.fsGroupPolicy"),
                            ("podInfoOnMount", "spec.podInfoOnMount"),
                            ("volumeLifecycleModes", "spec.volumeLifecycleModes")):
            errs += immutable(spec.get(field), old_spec.get(field), path)
    return errs


# -- CSINode -------------------------------------------------------------------------------------------------------


def _csi_node_driver_errors(driver: Obj, path: str, seen: set[str]) -> list[FieldError]:
    """validateCSINodeDriver."""
    name, node_id = _text(driver.get("name")), _text(driver.get("nodeID"))
    errs = csi_driver_name_errors(name, f"{path}.name")
    if not node_id:
        errs.append(FieldError.required(f"{path}.nodeID"))
    if len(node_id) > CSI_NODE_ID_MAX:
        errs.append(FieldError.invalid(f"{path}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX} characters or less"))
    count = get(driver, "allocatable", "count")
    if isinstance(count, int) and count < 0:
        errs.append(FieldError.invalid(f"{path}.allocatable.count", count, "must be greater than or equal to 0"))
    if name in seen:
        errs.append(FieldError.duplicate(f"{path}.name", name))
    seen.add(name)
    keys: set[str] = set()
    for key in _list(driver.get("topologyKeys")):
        key = _text(key)
        if not key:
            errs.append(FieldError.required(path))
        if key in keys:
            errs.append(FieldError.duplicate(path, key))
        keys.add(key)
        errs += qualified_name_errors(key, path)
    return errs


def _internal_driver(driver: Obj) -> GoValue:
    """storage.CSINodeDriver as a field error prints it (the internal type has no JSON tags)."""
    count = get(driver, "allocatable", "count")
    allocatable = None if not isinstance(driver.get("allocatable"), dict) else {"Count": count}
    return _go_struct([("Name", _text(driver.get("name"))), ("NodeID", _text(driver.get("nodeID"))),
                       ("TopologyKeys", driver.get("topologyKeys") or None), ("Allocatable", allocatable)])


def validate_csi_node(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateCSINode, and on update: a driver already listed may not change."""
    drivers = [_dict(d) for d in _list(get(obj, "spec", "drivers"))]
    seen: set[str] = set()
    errs = [e for i, d in enumerate(drivers) for e in _csi_node_driver_errors(d, f"spec.drivers[{i}]", seen)]
    if old is not None:
        for old_driver in (_dict(d) for d in _list(get(old, "spec", "drivers"))):
            for driver in drivers:
                if driver.get("name") == old_driver.get("name") and not semantically_equal(driver, old_driver):
                    errs.append(FieldError.invalid("spec.drivers", _internal_driver(driver), IMMUTABLE))
    return errs


# -- CSIStorageCapacity --------------------------------------------------------------------------------------------


def validate_csi_storage_capacity(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateCSIStorageCapacity, then on update ValidateCSIStorageCapacityUpdate: nodeTopology and
    storageClassName may not change."""
    topology = obj.get("nodeTopology")
    errs = labels.validate_label_selector(topology, "nodeTopology") if isinstance(topology, dict) else []
    class_name = _text(obj.get("storageClassName"))
    errs.extend(FieldError.invalid("storageClassName", class_name, m)
                for m in names.name_is_dns_subdomain(class_name, False))
    capacity = obj.get("capacity")
    if isinstance(capacity, str) and parse_quantity(capacity).sign() < 0:
        errs.append(FieldError.invalid("capacity", capacity, "must be greater than or equal to 0"))
    if old is not None:
        if not semantically_equal(obj.get("nodeTopology"), old.get("nodeTopology")):
            errs.append(FieldError.invalid("nodeTopology", obj.get("nodeTopology"), IMMUTABLE))
        if _text(obj.get("storageClassName")) != _text(old.get("storageClassName")):
            errs.append(FieldError.invalid("storageClassName", _text(obj.get("storageClassName")), IMMUTABLE))
    return errs


# -- VolumeAttachment ----------------------------------------------------------------------------------------------

EXACTLY_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def new_attachment_status(obj: Obj, old: Obj | None) -> None:
    """PrepareForCreate resets status (VolumeAttachmentStatus{}, which prints `attached: false`)."""
    if old is None:
        obj["status"] = {"attached": False}
        retype(ATTACHMENT_SCHEMA, obj)


def _source_errors(source: Obj) -> list[FieldError]:
    """validateVolumeAttachmentSource."""
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        return [FieldError.required("spec.source", EXACTLY_ONE_SOURCE)]
    if inline is not None and pv is not None:
        return [FieldError.forbidden("spec.source", EXACTLY_ONE_SOURCE)]
    if pv is not None and not pv:
        return [FieldError.required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")]
    return []


def _volume_error_errors(error: object, path: str) -> list[FieldError]:
    if isinstance(error, dict) and len(_text(error.get("message"))) > MAX_VOLUME_ERROR_MESSAGE:
        return [FieldError.too_long(f"{path}.message", MAX_ATTACHMENT_METADATA_SIZE)]  # upstream's limit, as is
    return []


def validate_volume_attachment(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateVolumeAttachment (+ ValidateVolumeAttachmentUpdate: spec may not change), then
    ValidateVolumeAttachmentV1's checks of the attacher and PersistentVolume names."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    attacher, node = _text(spec.get("attacher")), _text(spec.get("nodeName"))
    errs: list[FieldError] = []
    if not attacher:
        errs.append(FieldError.required("spec.attacher"))
    source = _dict(spec.get("source"))
    errs += _source_errors(source)
    errs.extend(FieldError.invalid("spec.nodeName", node, m) for m in names.name_is_dns_subdomain(node, False))
    metadata = _dict(status.get("attachmentMetadata"))
    if sum(names.byte_len(k) + names.byte_len(_text(v)) for k, v in metadata.items()) > MAX_ATTACHMENT_METADATA_SIZE:
        errs.append(FieldError.too_long("status.attachmentMetadata", MAX_ATTACHMENT_METADATA_SIZE))
    errs += _volume_error_errors(status.get("attachError"), "status.attachError")
    errs += _volume_error_errors(status.get("detachError"), "status.detachError")
    if old is not None and not semantically_equal(spec, old.get("spec")):
        errs.append(FieldError.invalid("spec", spec, IMMUTABLE))
    errs += csi_driver_name_errors(attacher, "spec.attacher")
    pv = source.get("persistentVolumeName")
    if isinstance(pv, str):
        errs.extend(FieldError.invalid("spec.source.persistentVolumeName", pv, m)
                    for m in names.name_is_dns_subdomain(pv, False))
    return errs


def storage_class_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """storageClassStrategy.WarningsOnCreate/OnUpdate (GetWarningsForStorageClass), on every write: deprecated node
    labels among allowedTopologies' matchLabelExpressions."""
    out: list[str] = []
    for i, topology in enumerate(_list(obj.get("allowedTopologies"))):
        for j, expression in enumerate(_list(_dict(topology).get("matchLabelExpressions"))):
            message = podwarnings.DEPRECATED_NODE_LABELS.get(_text(_dict(expression).get("key")))
            if message is not None:
                out.append(f"allowedTopologies[{i}].matchLabelExpressions[{j}].key: {message}")
    return out


def csi_storage_capacity_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """csiStorageCapacityStrategy.WarningsOnCreate/OnUpdate (GetWarningsForCSIStorageCapacity), on every write:
    deprecated node labels in nodeTopology."""
    return podwarnings.label_selector_warnings(obj.get("nodeTopology"), "nodeTopology")


STORAGE_CLASSES = Resource(
    group=GROUP, version="v1", resource="storageclasses", kind="StorageClass", singular="storageclass",
    namespaced=False, schema=SC_SCHEMA, short_names=("sc",),
    strategy=Declared(returns_deleted_object=True, defaults=default_storage_class, validation=validate_storage_class,
                      warnings=storage_class_warnings),
)
CSI_DRIVERS = Resource(
    group=GROUP, version="v1", resource="csidrivers", kind="CSIDriver", singular="csidriver", namespaced=False,
    schema=CSI_DRIVER_SCHEMA,
    strategy=Declared(returns_deleted_object=True, defaults=default_csi_driver, validation=validate_csi_driver,
                      unconditional_update=False),
)
CSI_NODES = Resource(
    group=GROUP, version="v1", resource="csinodes", kind="CSINode", singular="csinode", namespaced=False,
    schema=CSI_NODE_SCHEMA,
    strategy=Declared(returns_deleted_object=True, validation=validate_csi_node, unconditional_update=False),
)
CSI_STORAGE_CAPACITIES = Resource(
    group=GROUP, version="v1", resource="csistoragecapacities", kind="CSIStorageCapacity",
    singular="csistoragecapacity", namespaced=True, schema=CAPACITY_SCHEMA,
    strategy=Declared(validation=validate_csi_storage_capacity, warnings=csi_storage_capacity_warnings,
                      unconditional_update=False),
)
VOLUME_ATTACHMENTS = Resource(
    group=GROUP, version="v1", resource="volumeattachments", kind="VolumeAttachment", singular="volumeattachment",
    namespaced=False, schema=ATTACHMENT_SCHEMA,
    # volumeAttachmentStatusStrategy keeps the request's metadata and resets spec.
    subresources=(Subresource("status", "VolumeAttachment", ("get", "patch", "update"), ("status",),
                              metadata_reset=()),),
    strategy=Declared(returns_deleted_object=True, prepare=new_attachment_status,
                      validation=validate_volume_attachment, unconditional_update=False),
)

KINDS = (STORAGE_CLASSES, VOLUME_ATTACHMENTS, CSI_DRIVERS, CSI_NODES, CSI_STORAGE_CAPACITIES)
