"""The rules a CRD version's openAPIV3Schema must follow, with kube-apiserver's messages.

apiextensions-apiserver checks a schema three ways, all here, in its order:
  * at the root: only certain keywords when /status is enabled, never `nullable`;
  * structural invariants (schema.ValidateStructural): a type at every level unless
    x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields, `items` for arrays, no
    additionalProperties at the root, metadata restricted to name/generateName, nothing but value
    validations under allOf/anyOf/oneOf/not (sorted by message, as upstream sorts them); then defaults,
    which must themselves validate and be pruned;
  * OpenAPI rules (ValidateCustomResourceDefinitionOpenAPISchema), walked property by property: known
    types only, no $ref/id/definitions/..., no uniqueItems, additionalProperties and properties
    exclusive, x-kubernetes-* extensions consistent.

Paths are field.Path's: `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`. Example:

    spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must
    not be empty for specified object fields
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from server.machinery.crdschema import prune, values
from server.machinery.crdschema.structural import parse
from server.machinery.validation.names import FieldError

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
# Keywords the root schema may use when /status is enabled (validation.go allowedFieldsAtRootSchema).
ALLOWED_AT_ROOT = ("description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
                   "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
                   "multipleOf", "required", "items", "properties", "externalDocs", "example",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations")
ALLOWED_AT_ROOT_TEXT = ("[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
                        "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
                        "Properties ExternalDocs Example XPreserveUnknownFields XValidations]")
META_FIELDS = ("metadata", "kind", "apiVersion")
JUNCTORS = ("allOf", "anyOf", "oneOf")
VALIDATION_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")

Schema = Mapping[str, Any]


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def validate_schema(schema: Schema, path: str, *, status_enabled: bool) -> list[FieldError]:
    """Every error of one version's openAPIV3Schema; path names the schema (…schema.openAPIV3Schema)."""
    errs: list[FieldError] = []
    if status_enabled:
        if schema.get("type") and schema["type"] != "object":
            errs.append(FieldError.invalid(f"{path}.type", schema["type"], 'only "object" is allowed as the type at '
                                           "the root of the schema if the status subresource is enabled"))
        elif any(k not in ALLOWED_AT_ROOT for k, v in schema.items() if k != "type" and v not in (None, False, "")):
            errs.append(FieldError.invalid(path, schema, f"only {ALLOWED_AT_ROOT_TEXT} fields are allowed at the "
                                           "root of the schema if the status subresource is enabled"))
    if schema.get("nullable"):
        errs.append(FieldError.forbidden(f"{path}.nullable", "nullable cannot be true at the root"))
    structural = sorted(_invariants(schema, "root", path), key=lambda e: e.message())
    errs.extend(structural)
    if not structural:
        errs.extend(_defaults(schema, path, root=True))
    errs.extend(_openapi(schema, path, root=True, in_meta=False, defaults_forbidden=""))
    return errs


# --- structural invariants (apiextensions-apiserver pkg/apiserver/schema/validation.go) -------------------------


def _invariants(s: Schema, level: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = s.get("type") or ""
    items = s.get("items")
    if kind == "array" and items is None:
        errs.append(FieldError.required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        errs.extend(_invariants(items, "item", f"{path}.items"))
    for name, prop in sorted((s.get("properties") or {}).items()):
        errs.extend(_invariants(prop, "field", key(f"{path}.properties", name)))
    additional = s.get("additionalProperties")
    if additional is not None:
        if level == "root":
            errs.append(FieldError.forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(additional, dict):
            errs.extend(_invariants(additional, "field", f"{path}.additionalProperties"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        errs.append(FieldError.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True,
                                       "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(FieldError.invalid(f"{path}.x-kubernetes-embedded-resource", True,
                                       "must be false if x-kubernetes-int-or-string is true"))
    skip_any_of = _int_or_string_any_of(s.get("anyOf"))
    all_of = s.get("allOf") or []
    skip_first = bool(all_of) and isinstance(all_of[0], dict) and _int_or_string_any_of(all_of[0].get("anyOf"))
    errs.extend(_value_validation(s, path, skip_any_of=skip_any_of, skip_first_all_of=skip_first))
    if embedded and kind != "object":
        if not kind:
            errs.append(FieldError.required(f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(FieldError.invalid(f"{path}.type", kind,
                                           "must be object if x-kubernetes-embedded-resource is true"))
    elif not kind and not int_or_string and not preserve:
        where = {"root": "at the root", "item": "for specified array items", "field": "for specified object fields"}
        errs.append(FieldError.required(f"{path}.type", f"must not be empty {where[level]}"))
    if embedded and additional is not None:
        errs.append(FieldError.forbidden(f"{path}.additionalProperties",
                                         "must not be used if x-kubernetes-embedded-resource is set"))
    if level == "root" and kind and kind != "object":
        errs.append(FieldError.invalid(f"{path}.type", kind, "must be object at the root"))
    check_meta = level == "root" or embedded
    properties = s.get("properties") or {}
    for name in ("kind", "apiVersion"):
        if name in properties and check_meta and (properties[name].get("type") or "") != "string":
            errs.append(FieldError.invalid(f"{key(f'{path}.properties', name)}.type",
                                           properties[name].get("type") or "", "must be string"))
    if "metadata" in properties:
        errs.extend(_metadata(properties["metadata"], check_meta, level, key(f"{path}.properties", "metadata")))
    if embedded and not preserve and not properties:
        errs.append(FieldError.required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource "
                                        "is true without x-kubernetes-preserve-unknown-fields"))
    return errs


def _int_or_string_any_of(any_of: object) -> bool:
    return (isinstance(any_of, list) and len(any_of) == 2
            and any_of == [{"type": "integer"}, {"type": "string"}])


def _metadata(s: Schema, check_meta: bool, level: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if check_meta and (s.get("type") or "") != "object":
        errs.append(FieldError.invalid(f"{path}.type", s.get("type") or "", "must be object"))
    if level == "root":
        rest = {k: v for k, v in s.items() if k not in ("type", "default", "properties")}
        props = set((s.get("properties") or {}).keys())
        if rest or not props <= {"name", "generateName"}:
            errs.append(FieldError.forbidden(path, "must not specify anything other than name and generateName, "
                                             "but metadata is implicitly specified"))
    return errs


def _value_validation(s: Schema, path: str, *, skip_any_of: bool, skip_first_all_of: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in JUNCTORS:
        for index, nested in enumerate(s.get(name) or []):
            if (name == "anyOf" and skip_any_of) or (name == "allOf" and index == 0 and skip_first_all_of):
                continue
            errs.extend(_nested(nested, f"{path}.{name}[{index}]"))
    if isinstance(s.get("not"), dict):
        errs.extend(_nested(s["not"], f"{path}.not"))
    pattern = s.get("pattern")
    if pattern:
        try:
            re.compile(pattern)
        except re.error as err:
            errs.append(FieldError.invalid(f"{path}.pattern", pattern,
                                           f"must be a valid regular expression, but isn't: {err}"))
    return errs


# What a schema under allOf/anyOf/oneOf/not may not say (validateNestedValueValidation).
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(s: Any, path: str) -> list[FieldError]:
    if not isinstance(s, dict):
        return []
    errs = _value_validation(s, path, skip_any_of=False, skip_first_all_of=False)
    if isinstance(s.get("items"), dict):
        errs.extend(_nested(s["items"], f"{path}.items"))
    for name, prop in sorted((s.get("properties") or {}).items()):
        errs.extend(_nested(prop, key(f"{path}.properties", name)))
    for name, detail in _NESTED_FORBIDDEN:
        if s.get(name) not in (None, False, "", []):
            errs.append(FieldError.forbidden(f"{path}.{name}", detail))
    if "metadata" in (s.get("properties") or {}):
        errs.append(FieldError.forbidden(key(f"{path}.properties", "metadata"),
                                         "must not be specified in a nested context"))
    return errs


# --- defaults (structuraldefaulting.ValidateDefaults) ---------------------------------------------------------


def _defaults(s: Schema, path: str, *, root: bool) -> list[FieldError]:
    """Each default must be valid for its schema and have nothing pruning would drop."""
    errs: list[FieldError] = []
    if "default" in s and s["default"] is not None and not root:
        node = parse(s)
        assert node is not None
        for e in values.validate_value(s["default"], node, ""):
            inner = "." + e.field if e.field and not e.field.startswith("[") else e.field
            errs.append(FieldError(e.type, f"{path}.default{inner}", e.value, e.detail.lstrip(" ")))
        unknown: list[str] = []
        prune.coerce(s["default"], node, "", unknown)
        if unknown:
            errs.append(FieldError.invalid(f"{path}.default", s["default"],
                                           "must not have unknown fields, got: " + ", ".join(unknown)))
    for name, prop in sorted((s.get("properties") or {}).items()):
        errs.extend(_defaults(prop, key(f"{path}.properties", name), root=False))
    if isinstance(s.get("items"), dict):
        errs.extend(_defaults(s["items"], f"{path}.items", root=False))
    if isinstance(s.get("additionalProperties"), dict):
        errs.extend(_defaults(s["additionalProperties"], f"{path}.additionalProperties", root=False))
    return errs


# --- OpenAPI rules (ValidateCustomResourceDefinitionOpenAPISchema) -------------------------------------------


def _openapi(s: Schema, path: str, *, root: bool, in_meta: bool, defaults_forbidden: str) -> list[FieldError]:
    errs = _standard(s, path, in_meta=in_meta, defaults_forbidden=defaults_forbidden)
    if s.get("uniqueItems"):
        errs.append(FieldError.forbidden(f"{path}.uniqueItems",
                                         "uniqueItems cannot be set to true since the runtime complexity becomes "
                                         "quadratic"))
    additional = s.get("additionalProperties")
    properties = s.get("properties") or {}
    if additional is not None:
        if properties and (additional is False or isinstance(additional, dict)):
            errs.append(FieldError.forbidden(f"{path}.additionalProperties",
                                             "additionalProperties and properties are mutual exclusive"))
        if isinstance(additional, dict):
            forbidden = "inside additionalProperties applying to object metadata" if in_meta else defaults_forbidden
            errs.extend(_openapi(additional, f"{path}.additionalProperties", root=False, in_meta=in_meta,
                                 defaults_forbidden=forbidden))
    for name, prop in sorted(properties.items()):
        sub_meta, forbidden = in_meta, defaults_forbidden
        if (root or s.get("x-kubernetes-embedded-resource")) and name in META_FIELDS:
            sub_meta = True
            if root:
                forbidden = f"in top-level {name}"
        errs.extend(_openapi(prop, key(f"{path}.properties", name), root=False, in_meta=sub_meta,
                             defaults_forbidden=forbidden))
    if isinstance(s.get("not"), dict):
        errs.extend(_openapi(s["not"], f"{path}.not", root=False, in_meta=in_meta,
                             defaults_forbidden=defaults_forbidden))
    for name in JUNCTORS:
        for index, nested in enumerate(s.get(name) or []):
            errs.extend(_openapi(nested, f"{path}.{name}[{index}]", root=False, in_meta=in_meta,
                                 defaults_forbidden=defaults_forbidden))
    items = s.get("items")
    if isinstance(items, dict):
        errs.extend(_openapi(items, f"{path}.items", root=False, in_meta=in_meta,
                             defaults_forbidden=defaults_forbidden))
    errs.extend(_extensions(s, path))
    return errs


def _standard(s: Schema, path: str, *, in_meta: bool, defaults_forbidden: str) -> list[FieldError]:
    """specStandardValidatorV3.validate."""
    errs: list[FieldError] = []
    kind = s.get("type") or ""
    if kind and kind not in OPENAPI_TYPES:
        if kind == "null":
            errs.append(FieldError.forbidden(f"{path}.type", "type cannot be set to null, use nullable as an "
                                             "alternative"))
        else:
            errs.append(FieldError.not_supported(f"{path}.type", kind, OPENAPI_TYPES))
    if s.get("default") is not None and defaults_forbidden:
        errs.append(FieldError.forbidden(f"{path}.default", f"must not be set {defaults_forbidden}"))
    for name, detail in (("id", "id is not supported"), ("additionalItems", "additionalItems is not supported"),
                         ("patternProperties", "patternProperties is not supported"),
                         ("definitions", "definitions is not supported"),
                         ("dependencies", "dependencies is not supported"), ("$ref", "$ref is not supported")):
        if s.get(name) not in (None, "", {}):
            errs.append(FieldError.forbidden(f"{path}.{name}", detail))
    if isinstance(s.get("items"), list):
        errs.append(FieldError.forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if in_meta and s.get("x-kubernetes-embedded-resource"):
        errs.append(FieldError.forbidden(f"{path}.x-kubernetes-embedded-resource",
                                         "must not be used inside of resource meta"))
    return errs


def _extensions(s: Schema, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = s.get("type") or ""
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(FieldError.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False,
                                       "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None:
        if kind != "object":
            detail = "must be object if x-kubernetes-map-type is specified"
            errs.append(FieldError.required(f"{path}.type", detail) if not kind
                        else FieldError.invalid(f"{path}.type", kind, detail))
        if map_type not in ("atomic", "granular"):
            errs.append(FieldError.not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular")))
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items") if isinstance(s.get("items"), dict) else None
    if list_type is not None and kind != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        errs.append(FieldError.required(f"{path}.type", detail) if not kind
                    else FieldError.invalid(f"{path}.type", kind, detail))
    elif list_type == "set" and items is not None:
        if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errs.append(FieldError.invalid(f"{path}.items.x-kubernetes-list-type", items.get("x-kubernetes-list-type"),
                                           "must be atomic as item of a list with x-kubernetes-list-type=set"))
        if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errs.append(FieldError.invalid(f"{path}.items.x-kubernetes-map-type", list_type,
                                           "must be atomic as item of a list with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(FieldError.not_supported(f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")))
    map_keys = s.get("x-kubernetes-list-map-keys") or []
    if map_keys:
        if list_type is None:
            errs.append(FieldError.required(f"{path}.x-kubernetes-list-type",
                                            "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif list_type != "map":
            errs.append(FieldError.invalid(f"{path}.x-kubernetes-list-type", list_type,
                                           "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        errs.extend(_map_list(s, items, map_keys, path))
    if list_type in ("set", "map") and items is not None:
        if items.get("nullable"):
            errs.append(FieldError.forbidden(f"{path}.items.nullable",
                                             f"cannot be nullable when x-kubernetes-list-type is {list_type}"))
        if list_type == "map":
            required = set(items.get("required") or ())
            for name in map_keys:
                prop = (items.get("properties") or {}).get(name)
                if prop is None:
                    continue
                where = key(f"{path}.items.properties", name)
                if name not in required and prop.get("default") is None:
                    errs.append(FieldError.required(f"{where}.default", "this property is in "
                                                    "x-kubernetes-list-map-keys, so it must have a default or be a "
                                                    "required property"))
                if prop.get("nullable"):
                    errs.append(FieldError.forbidden(f"{where}.nullable", "this property is in "
                                                     "x-kubernetes-list-map-keys, so it cannot be nullable"))
    for index, rule in enumerate(s.get("x-kubernetes-validations") or []):
        where = f"{path}.x-kubernetes-validations[{index}]"
        if not (rule.get("rule") or "").strip():
            errs.append(FieldError.required(f"{where}.rule", "rule is not specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in VALIDATION_REASONS:
            errs.append(FieldError.not_supported(f"{where}.reason", reason, VALIDATION_REASONS))
    return errs


def _map_list(s: Schema, items: Schema | None, map_keys: list[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not map_keys:
        errs.append(FieldError.required(f"{path}.x-kubernetes-list-map-keys",
                                        "must not be empty if x-kubernetes-list-type is map"))
    if s.get("items") is None:
        errs.append(FieldError.required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
    elif items is None:
        errs.append(FieldError.invalid(f"{path}.items", s.get("items"),
                                       "must only have a single schema if x-kubernetes-list-type is map"))
    if items is not None and items.get("type") != "object":
        errs.append(FieldError.invalid(f"{path}.items.type", items.get("type") or "",
                                       "must be object if parent array's x-kubernetes-list-type is map"))
    if items is not None and items.get("type") == "object":
        seen: set[str] = set()
        for name in map_keys:
            prop = (items.get("properties") or {}).get(name)
            if prop is not None:
                if prop.get("type") in ("array", "object"):
                    errs.append(FieldError.invalid(f"{key(f'{path}.items.properties', name)}.type", items.get("type"),
                                                   "must be a scalar type if parent array's x-kubernetes-list-type "
                                                   "is map"))
            else:
                errs.append(FieldError.invalid(f"{path}.x-kubernetes-list-map-keys", map_keys,
                                               "entries must all be names of item properties"))
            if name in seen:
                errs.append(FieldError.invalid(f"{path}.x-kubernetes-list-map-keys", map_keys,
                                               "must not contain duplicate entries"))
            seen.add(name)
    return errs
