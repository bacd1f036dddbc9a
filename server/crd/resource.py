"""A CustomResourceDefinition's served versions as server.registry.resources.Resources: what the core serves for a CRD.

Each served version becomes one Resource under the CRD's accepted names (status.acceptedNames): its
scope, kube's verbs for custom resources, the status subresource when the version asks for it, the
version's schema (server/machinery/schema.py JsonSchema: pruning, defaulting, value validation), printer columns
(columns.py) and selectable fields. All versions share the storage keys (/<group>/<plural>/...), so with
conversion None an object written in one version reads in another with only apiVersion changed; with conversion
Webhook objects are kept at the storage version and every other version converts them through the webhook
(conversion.py, server/objects/conversion.py).

Versions are listed in kube's priority order (version_priority): GA before beta before alpha, higher
numbers first, others last in alphabetical order; discovery's preferred version is the first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from google.protobuf.descriptor import Descriptor

from server.crd import columns, definition
from server.machinery import errors, meta, stored
from server.machinery.crdschema.structural import parse
from server.machinery.schema import JsonSchema
from server.machinery.validation.names import ErrorType, FieldError, GoValue
from server.machinery.values import Obj
from server.objects import render, scale
from server.objects.descriptors import ProtoJsonSchema
from server.registry.resources import Converter, Resource, ScaleRule, Subresource
from server.registry.strategy import Strategy

if TYPE_CHECKING:
    from server.machinery.crdschema.cel import rules as cel_rules

# apiextensions-apiserver's crdHandler serves custom resources with these verbs, in this order.
VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")
_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


@dataclass
class Lifecycle:
    """What a CRD's resources consult at request time: set while the CRD is being deleted."""

    terminating: bool = False


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key (ascending = preferred first): v2 > v1 > v2beta1 > v1beta1 > v1alpha1 > foo."""
    match = _KUBE_VERSION.match(name)
    if match is None:
        return (3, 0, 0, name)
    major, stage, minor = int(match[1]), match[2], int(match[3] or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, name)


def served_versions(crd: Obj) -> list[dict[str, Any]]:
    listed = [v for v in definition.versions(crd) if v.get("served")]
    return sorted(listed, key=lambda v: version_priority(v.get("name") or ""))


def resources(crd: Obj, lifecycle: Lifecycle, message: Descriptor | None = None,
              converter: Converter | None = None) -> list[Resource]:
    """The Resources of every served version, preferred first; `message`: the protobuf message the CRD names
    (capstan.dev/protobuf-message, server/objects/descriptors.py), when it can carry the kind; `converter`:
    the CRD's conversion webhook (conversion.py) when it converts by webhook."""
    return [resource(crd, version, lifecycle, message, converter) for version in served_versions(crd)]


def resource(crd: Obj, version: dict[str, Any], lifecycle: Lifecycle, message: Descriptor | None = None,
             converter: Converter | None = None) -> Resource:
    spec = definition.spec(crd)
    # The names the controller accepted (status.acceptedNames); a fresh status has them empty.
    accepted = dict((crd.get("status") or {}).get("acceptedNames") or {})
    for name in ("plural", "singular", "kind", "listKind"):
        accepted[name] = accepted.get(name) or (spec.get("names") or {}).get(name) or ""
    kind = accepted.get("kind") or ""
    group = spec.get("group") or ""
    plural = accepted.get("plural") or ""
    openapi = definition.schema_of(version)
    openapi_json = orjson.dumps(openapi) if openapi is not None else b""
    schema: JsonSchema
    if message is not None:
        schema = ProtoJsonSchema(message, parse(openapi), openapi=openapi_json)
    else:
        schema = JsonSchema(parse(openapi), preserve_unknown_fields=bool(spec.get("preserveUnknownFields")),
                            openapi=openapi_json)
    subresources = []
    if definition.has_status(version):
        subresources.append(Subresource("status", kind, SUBRESOURCE_VERBS, ("status",)))
    scale_rule = _scale_rule(version)
    cel = _cel(openapi)
    if scale_rule is not None:  # server/objects/scale.py serves it, with the CRD's paths
        subresources.append(scale.subresource(scale_rule, SUBRESOURCE_VERBS))

    return Resource(
        group=group, version=version.get("name") or "", resource=plural, kind=kind, read=_reader(crd, schema),
        singular=accepted.get("singular") or kind.lower(), namespaced=spec.get("scope") == "Namespaced",
        schema=schema, verbs=VERBS, short_names=tuple(accepted.get("shortNames") or ()),
        categories=tuple(accepted.get("categories") or ()), subresources=tuple(subresources),
        field_getters=_selectable(version.get("selectableFields") or []),
        custom_list_kind=accepted.get("listKind") or "", converter=converter,
        storage_group_version=f"{group}/{stored}" if (stored := _storage_version(spec)) else "",
        deprecation_warning=deprecation_warning(crd, version),
        strategy=CustomResourceStrategy(
            columns=columns.columns(version.get("additionalPrinterColumns") or []), tracks_generation=True,
            standard_finalizers=False, unconditional_update=False,
            schema=schema, cel=cel, scale=scale_rule, lifecycle=lifecycle, group=group, plural=plural, kind=kind,
        ),
    )


def deprecation_warning(crd: Obj, version: dict[str, Any]) -> str:
    """The warning every request to a deprecated version carries: its deprecationWarning, else kube's default
    text, which names the most preferred served version that is not deprecated and is preferred to this one."""
    if not version.get("deprecated"):
        return ""
    if version.get("deprecationWarning") is not None:
        return str(version["deprecationWarning"])
    spec = definition.spec(crd)
    group, kind, name = spec.get("group") or "", (spec.get("names") or {}).get("kind") or "", version.get("name") or ""
    message = f"{group}/{name} {kind} is deprecated"
    newer = [str(v.get("name") or "") for v in definition.versions(crd)
             if v.get("served") and not v.get("deprecated")
             and version_priority(str(v.get("name") or "")) < version_priority(name)]
    if newer:
        message += f"; use {group}/{min(newer, key=version_priority)} {kind}"
    return message


def _storage_version(spec: Obj) -> str:
    """The version marked storage (validation allows exactly one), which discovery names for every version."""
    for version in spec.get("versions") or []:
        if isinstance(version, dict) and version.get("storage"):
            return str(version.get("name") or "")
    return ""


@dataclass(frozen=True, kw_only=True, eq=False)
class CustomResourceStrategy(Strategy):
    """A custom resource's rules (apiextensions-apiserver's customResourceStrategy): no create while its CRD is
    terminating; validation by the version's structural schema, its x-kubernetes-validations (CEL) and, with
    /scale, the replica paths; the generation tracked; the CRD's printer columns."""

    schema: JsonSchema
    cel: cel_rules.Node | None
    scale: ScaleRule | None
    lifecycle: Lifecycle
    group: str
    plural: str
    kind: str

    def prepare_for_create(self, obj: Obj) -> None:
        if self.lifecycle.terminating:
            raise errors.ApiError(errors.status(
                405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating",
                group=self.group, kind=self.plural))

    def validate_type_meta(self, obj: Obj) -> list[FieldError]:
        """ValidateTypeMeta: a kind the body says must be the resource's (a JSON or YAML body must say one, which
        decoding checked, as it checked the apiVersion; a protobuf body's is its envelope's)."""
        kind = obj.get("kind")
        return [] if kind in (None, "", self.kind) else [FieldError.invalid("kind", kind, f"must be {self.kind}")]

    def validate(self, obj: Obj) -> list[FieldError]:
        return self._errors(obj, None)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self._errors(new, old)

    def _errors(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        errs = self.schema.validate(obj)
        if self.cel is not None:
            errs.extend(_cel_errors(self.cel, obj, old, errs))
        if self.scale is not None:
            errs.extend(_replicas_errors(obj, self.scale.spec_replicas))
            errs.extend(_replicas_errors(obj, self.scale.status_replicas))
        return errs


def _cel(openapi: Obj | None) -> cel_rules.Node | None:
    """The version's compiled x-kubernetes-validations. The rules' modules are imported with the first CRD
    served (and the CEL engine with the first rule, server/machinery/crdschema/cel/engine.py), not at start."""
    if openapi is None:
        return None
    from server.machinery.crdschema.cel import rules as cel_rules

    return cel_rules.compile_schema(openapi, "").root


def _cel_errors(root: cel_rules.Node, obj: Obj, old: Obj | None, schema_errs: list[FieldError]
                ) -> list[FieldError]:
    """x-kubernetes-validations, unless the schema found a wrong type (hasBlockingErr): then kube says why not."""
    if any(e.type in (ErrorType.TYPE_INVALID, ErrorType.NOT_SUPPORTED) for e in schema_errs):
        return [FieldError.invalid("<nil>", GoValue('"null"'), "some validation rules were not checked because the "
                                   "object was invalid; correct the existing errors to complete validation")]
    from server.machinery.crdschema.cel import rules as cel_rules

    return cel_rules.validate(root, obj, old)


def _reader(crd: Obj, schema: JsonSchema) -> Callable[[bytes], bytes] | None:
    """Defaulting (and pruning) on read, when it can change anything: the version's schema has defaults, the
    CRD changed since it was created (a later schema may add defaults or drop fields), or its versions'
    schemas differ (an object written in one version is read in another)."""
    schemas = {orjson.dumps(definition.schema_of(v), option=orjson.OPT_SORT_KEYS) for v in definition.versions(crd)}
    changed = int((crd.get("metadata") or {}).get("generation") or 1) > 1
    if not (schema.has_defaults or changed or len(schemas) > 1) or schema.structural is None:
        return None

    def read(value: bytes) -> bytes:
        obj = render.load(value)
        new = schema.default(obj)
        if new == obj:
            return value
        proto = schema.to_proto(new) if schema.proto_message else b""
        return stored.pack(render.go_json(meta.canonical(new)), proto, stored.written_at(value))

    return read


def _scale_rule(version: dict[str, Any]) -> ScaleRule | None:
    scale = (version.get("subresources") or {}).get("scale")
    if not isinstance(scale, dict):
        return None

    def parts(json_path: str) -> tuple[str, ...]:
        return tuple(p for p in json_path.lstrip(".").split(".") if p)

    return ScaleRule(selector="String", spec_replicas=parts(scale.get("specReplicasPath") or ""),
                     status_replicas=parts(scale.get("statusReplicasPath") or ""),
                     label_selector=parts(scale.get("labelSelectorPath") or ""))


def _replicas_errors(obj: Obj, path: tuple[str, ...]) -> list[FieldError]:
    """ValidateScaleSpec / ValidateScaleStatus: a replica count the Scale can carry (an int32, not negative)."""
    value: object = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    where = "." + ".".join(path)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return []
    if value < 0:
        return [FieldError.invalid(where, value, "should be a non-negative integer")]
    if value > 2**31 - 1:
        return [FieldError.invalid(where, value, f"should be less than or equal to {2**31 - 1}")]
    return []


def _selectable(fields: list[dict[str, Any]]) -> dict[str, Callable[[Obj], str]]:
    """selectableFields: name (the path without its leading dot) -> the value as a field selector sees it."""
    out: dict[str, Callable[[Obj], str]] = {}
    for entry in fields:
        json_path = entry.get("jsonPath") or ""
        parts = tuple(json_path.lstrip(".").split("."))
        out[".".join(parts)] = _getter(parts)
    return out


def _getter(parts: tuple[str, ...]) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        value: object = obj
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return get
