"""core/v1 Namespace, ConfigMap and Secret: their registry entries and kind-specific rules."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass

from capstan.api.core.v1 import core_pb2 as core_v1
from server.machinery import errors, meta
from server.machinery.codec import goscan
from server.machinery.codec.gojson import json_kind
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

# Every key of a map, each followed by "/", when all are valid config keys: at most 253 of the key characters
# ("/" is not one) and none "." or starting with "..".
_VALID_KEYS = re.compile(r"(?:(?!\.(?:/|\.))[-._a-zA-Z0-9]{1,253}/)*")
MAX_DATA_BYTES = 1024 * 1024  # ConfigMap and Secret payloads (corev1.MaxSecretSize)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_FINALIZER = "kubernetes"
IMMUTABLE_DETAIL = "field is immutable when `immutable` is set"


def _data_keys(obj: Obj, fields: tuple[str, ...], binary: frozenset[str], size_field: str) -> list[FieldError]:
    """The payload's keys and size as ValidateConfigMap/ValidateSecret check them: each key IsConfigMapKey, none in
    two of `fields`, and the keys' and values' bytes at most MAX_DATA_BYTES (the fields in `binary` hold base64,
    counted decoded; the others UTF-8), a size over it reported on `size_field`."""
    present = [data for field in fields if (data := obj.get(field))]
    if len(present) == 1 and type(data := present[0]) is dict:
        # One map, so no key repeats: when every key is valid (the keys are checked in one match; a key holding
        # the separator adds one, and the count tells) and the size is surely under the bound (a character is at
        # most 4 bytes, base64 longer than what it decodes to), nothing is wrong.
        joined = "/".join(data) + "/"
        valid = joined.count("/") == len(data) and _VALID_KEYS.fullmatch(joined)
        if valid and len(joined) - len(data) + 4 * sum(map(len, data.values())) <= MAX_DATA_BYTES:
            return []
    elif not present:
        return []
    errs: list[FieldError] = []
    total = 0
    for at, field in enumerate(fields):
        later = [(other, obj.get(other) or {}) for other in fields[at + 1:]]
        for key, value in (obj.get(field) or {}).items():
            problems = names.is_config_map_key(key)
            if problems:
                errs.extend(FieldError.invalid(f"{field}[{key}]", key, problem) for problem in problems)
            # reported on the earlier field's key, naming the later field (data[k]: "... present in binaryData")
            repeated = next((other for other, keys in later if key in keys), None)
            if repeated is not None:
                errs.append(FieldError.invalid(f"{field}[{key}]", key, f"duplicate of key present in {repeated}"))
            total += len(key.encode()) + _payload_bytes(value, field in binary)
    if total > MAX_DATA_BYTES:
        errs.append(FieldError.too_long(size_field, MAX_DATA_BYTES))
    return errs


def _payload_bytes(value: object, binary: bool) -> int:
    if not isinstance(value, str):
        return 0
    if binary:
        try:
            return len(base64.b64decode(value, validate=True))
        except ValueError:
            return len(value)  # refused as base64 by the decoder already
    return len(value.encode())


def _immutable(new: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[FieldError]:
    """ValidateConfigMapUpdate/ValidateSecretUpdate: `immutable` itself first, then each payload field."""
    if old is None or not old.get("immutable"):
        return []
    errs = [] if new.get("immutable") else [FieldError.forbidden("immutable", IMMUTABLE_DETAIL)]
    errs.extend(FieldError.forbidden(f, IMMUTABLE_DETAIL) for f in fields if new.get(f) != old.get(f))
    return errs


# A ConfigMap reports its size on field.NewPath(""), which prints as "[]"; a Secret on data.
_BINARY_CONFIG = frozenset({"binaryData"})
_BINARY_SECRET = frozenset({"data"})


def validate_config_map(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _data_keys(obj, ("data", "binaryData"), _BINARY_CONFIG, "[]") + _immutable(obj, old, ("data", "binaryData"))


def default_secret(obj: Obj) -> None:
    """stringData is write-only: merged into data (base64) and dropped, as decoding does in kube-apiserver
    (so the writer owns those data keys); type defaults to Opaque."""
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(value.encode()).decode()
    if not obj.get("type"):
        obj["type"] = "Opaque"


def validate_secret(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs = _data_keys(obj, ("data",), _BINARY_SECRET, "data") + _secret_type_errors(obj)
    errs += _immutable(obj, old, ("data",))
    if old is not None and obj.get("type") != old.get("type"):
        errs.append(FieldError.invalid("type", obj.get("type"), "field is immutable"))
    return errs


# The keys each built-in Secret type needs (ValidateSecret): one of these must be present (all are reported missing).
_NEEDED_KEYS = {
    "kubernetes.io/tls": (("tls.crt",), ("tls.key",)),
    "kubernetes.io/basic-auth": (("username", "password"),),
    "kubernetes.io/ssh-auth": (("ssh-privatekey",),),
}
_JSON_KEYS = {"kubernetes.io/dockercfg": ".dockercfg", "kubernetes.io/dockerconfigjson": ".dockerconfigjson"}


def _secret_type_errors(obj: Obj) -> list[FieldError]:
    """What a built-in type asks of a Secret's data and annotations, in kube's words."""
    kind = obj.get("type") or ""
    data = obj.get("data") or {}
    if kind == "kubernetes.io/service-account-token":
        if not (meta.meta(obj).get("annotations") or {}).get("kubernetes.io/service-account.name"):
            return [FieldError.required("metadata.annotations[kubernetes.io/service-account.name]")]
        return []
    if kind in _JSON_KEYS:
        key = _JSON_KEYS[kind]
        if key not in data:
            return [FieldError.required(f"data[{key}]")]
        problem = _json_object_problem(base64.b64decode(data[key] or ""))
        return [FieldError.invalid(f"data[{key}]", "<secret contents redacted>", problem)] if problem else []
    if kind == "kubernetes.io/ssh-auth":  # present and non-empty
        return [] if data.get("ssh-privatekey") else [FieldError.required("data[ssh-privatekey]")]
    errs: list[FieldError] = []
    for alternatives in _NEEDED_KEYS.get(kind, ()):
        if not any(key in data for key in alternatives):
            errs.extend(FieldError.required(f"data[{key}]") for key in alternatives)
    return errs


def _json_object_problem(raw: bytes) -> str:
    """Why encoding/json would not read `raw` into a map ("" when it would), in its words."""
    problem = goscan.syntax_error(raw)
    if problem is not None:
        return problem
    value = json.loads(raw.decode("utf-8", "replace"))
    if value is None or isinstance(value, dict):
        return ""
    return f"json: cannot unmarshal {json_kind(value)} into Go value of type map[string]interface {{}}"


def default_namespace(obj: Obj) -> None:
    """SetDefaults_Namespace: the `kubernetes.io/metadata.name` label always names the namespace."""
    m = meta.meta(obj)
    labels = m.get("labels")
    if not isinstance(labels, dict):
        labels = m["labels"] = {}
    labels[NAMESPACE_NAME_LABEL] = m.get("name", "")


def prepare_namespace(obj: Obj, old: Obj | None) -> None:
    """Create: phase Active and the `kubernetes` finalizer. Update: spec and status only via subresources."""
    default_namespace(obj)  # a generated name is only known now
    if old is None:
        finalizers = obj.setdefault("spec", {}).setdefault("finalizers", [])
        if NAMESPACE_FINALIZER not in finalizers:
            finalizers.append(NAMESPACE_FINALIZER)
        obj["status"] = {"phase": "Active"}
    else:
        if "spec" in old:
            obj["spec"] = old["spec"]
        else:
            obj.pop("spec", None)


def validate_namespace(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateNamespaceStatusUpdate: the phase follows deletionTimestamp."""
    if old is None:
        return []
    phase = (obj.get("status") or {}).get("phase", "")
    deleting = bool(meta.meta(obj).get("deletionTimestamp"))
    if not deleting and phase and phase != "Active":
        return [FieldError.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")]
    if deleting and phase != "Terminating":
        return [FieldError.invalid(
            "status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAMESPACE_PURGING = (
    "The system is ensuring all content is removed from this namespace.  "
    "Upon completion, this namespace will automatically be purged by the system."
)


@dataclass(frozen=True, kw_only=True, eq=False)
class NamespaceStrategy(Declared):
    """The Namespace's rules, its deletion rules among them (namespaces' own REST delete): the system
    namespaces never go; a delete marks the namespace Terminating, and spec.finalizers (the namespace
    controller's, removed through /finalize) hold it besides metadata.finalizers; deleting it again while it
    is held answers 409 with NAMESPACE_PURGING; precondition conflicts are worded against the resource."""

    def admit_delete(self, name: str) -> None:
        """NamespaceLifecycle: the system namespaces may not be deleted."""
        if name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")

    def holds_deletion(self, obj: Obj) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def redelete_conflict(self) -> str:
        return NAMESPACE_PURGING

    def legacy_preconditions(self) -> bool:
        return True


def _status_phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def _type(obj: Obj) -> str:
    return str(obj.get("type", ""))


NAMESPACES = Resource(
    group="", version="v1", resource="namespaces", kind="Namespace", singular="namespace", namespaced=False,
    schema=ProtoSchema(core_v1.Namespace),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    short_names=("ns",),
    subresources=(
        Subresource("status", "Namespace", ("get", "patch", "update"), ("status",), metadata_reset=()),
        Subresource("finalize", "Namespace", ("update",), ("spec", "finalizers"), metadata_reset=()),
    ),
    field_getters={"status.phase": _status_phase},
    strategy=NamespaceStrategy(
        name_rule=names.name_is_dns_label, defaults=default_namespace, prepare=prepare_namespace,
        validation=validate_namespace, returns_deleted_object=True, deleted_object_documented=False,
    ),
)

CONFIG_MAPS = Resource(
    group="", version="v1", resource="configmaps", kind="ConfigMap", singular="configmap", namespaced=True,
    schema=ProtoSchema(core_v1.ConfigMap),
    short_names=("cm",),
    strategy=Declared(validation=validate_config_map),
)

SECRETS = Resource(
    group="", version="v1", resource="secrets", kind="Secret", singular="secret", namespaced=True,
    schema=ProtoSchema(core_v1.Secret),
    field_getters={"type": _type},
    strategy=Declared(defaults=default_secret, validation=validate_secret),
)

KINDS = (NAMESPACES, CONFIG_MAPS, SECRETS)
