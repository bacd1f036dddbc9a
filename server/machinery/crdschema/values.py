"""OpenAPI value validation of a custom resource, with kube-apiserver's words.

kube-apiserver validates a custom resource with kube-openapi's schema validator and turns each result into a
field error (apiextensions-apiserver's kubeOpenAPIResultToFieldErrors). The causes clients see:

    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
    spec.name: Required value
    spec.color: Unsupported value: "pink": supported values: "red", "blue"
    spec.name: Too long: may not be longer than 5
    spec.items: Too many: 4: must have at most 3 items
    spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1
    spec.host: Invalid value: "a b": spec.host in body should match '^[a-z.]+$'
    spec.email: Invalid value: "x": spec.email in body must be of type email: "x"

A type error names the JSON type of the value ("string", "integer", "number", "boolean", "array",
"object", "null"), not the value. Paths join property names with dots and add list indices in brackets
(`spec.items[0].name`); map values follow their key (`spec.labels.app`). A value of the wrong type is not
checked further. List-type set and map lists must not repeat items or keys (kube's
ValidateListSetsAndMaps), and embedded resources need apiVersion and kind.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from server.machinery.crdschema import formats
from server.machinery.crdschema.structural import Structural
from server.machinery.validation.names import ErrorType, FieldError, go_quote, is_dns1123_subdomain

IN_BODY = "in body"


def validate(obj: dict[str, Any], schema: Structural) -> list[FieldError]:
    """The field errors of a whole object (its metadata is ObjectMeta's business, not the schema's)."""
    errs: list[FieldError] = []
    body = {k: v for k, v in obj.items() if k != "metadata"}
    _property_counts(body, schema, "", errs)
    for key, value in body.items():
        prop = schema.properties.get(key)
        if prop is not None:
            _validate(value, prop, key, errs)
    _required(body, schema, "", errs)
    return errs


def validate_value(value: Any, schema: Structural, path: str) -> list[FieldError]:
    """The field errors of one value (a default, say) found at path."""
    errs: list[FieldError] = []
    _validate(value, schema, path, errs)
    return errs


def json_type(value: Any) -> str:
    """The JSON type name kube-openapi reports for a value; whole floats count as integers, as Go's
    unstructured JSON decodes them."""
    kind = type(value)
    if kind is str:
        return "string"
    if kind is bool:
        return "boolean"
    if kind is int or (kind is float and value.is_integer()):
        return "integer"
    if kind is float:
        return "number"
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    return "null"


def _matches_type(actual: str, schema: Structural) -> bool:
    if actual == "null":
        return schema.nullable or (not schema.type and not schema.int_or_string)
    if schema.int_or_string:
        return actual in ("integer", "string")
    wanted = schema.type
    return not wanted or wanted == actual or (wanted == "number" and actual == "integer")


def _validate(value: Any, schema: Structural, path: str, errs: list[FieldError]) -> None:
    actual = json_type(value)
    if not _matches_type(actual, schema):
        wanted = "integer,string" if schema.int_or_string else schema.type
        errs.append(FieldError(ErrorType.TYPE_INVALID, path, actual,
                               f"{path} {IN_BODY} must be of type {wanted}: {go_quote(actual)}"))
        return
    if actual == "null":
        return
    if not schema.scalar_checks and not schema.junctors and actual not in ("array", "object"):
        return  # a scalar whose type is all there is to check: most of an object
    if schema.enum is not None and not any(_equal(value, allowed) for allowed in schema.enum):
        errs.append(FieldError.not_supported(path, value, [_enum_text(v) for v in schema.enum]))
    if actual == "string":
        _string(value, schema, path, errs)
    elif actual in ("integer", "number"):
        _number(value, schema, path, errs)
    elif actual == "array":
        _array(value, schema, path, errs)
    elif actual == "object":
        _object(value, schema, path, errs)
    if schema.junctors:
        _junctors(value, schema, path, errs)


def _string(value: str, schema: Structural, path: str, errs: list[FieldError]) -> None:
    length = len(value)  # kube-openapi counts runes
    if schema.max_length is not None and length > schema.max_length:
        errs.append(FieldError.too_long_max_length(path, schema.max_length))
    if schema.min_length is not None and length < schema.min_length:
        errs.append(FieldError.invalid(
            path, value, f"{path} {IN_BODY} should be at least {schema.min_length} chars long"))
    if schema.compiled is not None and not schema.compiled.search(value):
        errs.append(FieldError.invalid(path, value, f"{path} {IN_BODY} should match '{schema.pattern}'"))
    if schema.format and not formats.check(schema.format, value):
        errs.append(FieldError(ErrorType.TYPE_INVALID, path, value,
                               f"{path} {IN_BODY} must be of type {schema.format}: {go_quote(value)}"))


def _number(value: float, schema: Structural, path: str, errs: list[FieldError]) -> None:
    shown = _go_number(value)
    if schema.maximum is not None:
        bound = schema.maximum
        if value > bound or (schema.exclusive_maximum and value == bound):
            words = "less than" if schema.exclusive_maximum else "less than or equal to"
            errs.append(FieldError.invalid(path, shown, f"{path} {IN_BODY} should be {words} {_go_number(bound)}"))
    if schema.minimum is not None:
        bound = schema.minimum
        if value < bound or (schema.exclusive_minimum and value == bound):
            words = "greater than" if schema.exclusive_minimum else "greater than or equal to"
            errs.append(FieldError.invalid(path, shown, f"{path} {IN_BODY} should be {words} {_go_number(bound)}"))
    factor = schema.multiple_of
    if factor is not None and factor > 0:
        quotient = value / factor
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            errs.append(FieldError.invalid(
                path, shown, f"{path} {IN_BODY} should be a multiple of {_go_number(factor)}"))


def _array(value: list[Any], schema: Structural, path: str, errs: list[FieldError]) -> None:
    size = len(value)
    if schema.max_items is not None and size > schema.max_items:
        errs.append(_too_many(path, size, schema.max_items))
    if schema.min_items is not None and size < schema.min_items:
        errs.append(FieldError.invalid(path, size, f"{path} {IN_BODY} should have at least {schema.min_items} items"))
    if schema.unique_items and _has_duplicates(value):
        errs.append(FieldError.invalid(path, "", f"{path} {IN_BODY} shouldn't contain duplicates"))
    items = schema.items
    if items is not None:
        for index, item in enumerate(value):
            _validate(item, items, f"{path}[{index}]", errs)
    if schema.list_type in ("set", "map"):
        _list_set_or_map(value, schema, path, errs)


def _object(value: dict[str, Any], schema: Structural, path: str, errs: list[FieldError]) -> None:
    """In kube-openapi's objectValidator's order: the property counts, the values under additionalProperties,
    the properties, then the required ones that are missing."""
    _property_counts(value, schema, path, errs)
    if schema.additional is not None:
        for key, item in value.items():
            if key not in schema.properties:
                _validate(item, schema.additional, f"{path}.{key}", errs)
    for key, item in value.items():
        child = schema.properties.get(key)
        if child is not None:
            _validate(item, child, f"{path}.{key}", errs)
    _required(value, schema, path, errs)
    if schema.embedded:
        _embedded(value, path, errs)


def _property_counts(value: dict[str, Any], schema: Structural, path: str, errs: list[FieldError]) -> None:
    count = len(value)
    if schema.min_properties is not None and count < schema.min_properties:
        errs.append(FieldError.invalid(
            path, schema.min_properties, f"{path} {IN_BODY} should have at least {schema.min_properties} properties"))
    if schema.max_properties is not None and count > schema.max_properties:
        errs.append(_too_many(path, count, schema.max_properties))


def _required(value: dict[str, Any], schema: Structural, path: str, errs: list[FieldError]) -> None:
    for name in schema.required:
        if name not in value:
            errs.append(FieldError.required(f"{path}.{name}" if path else name))


def _junctors(value: Any, schema: Structural, path: str, errs: list[FieldError]) -> None:
    """allOf, anyOf, oneOf and not: value validations only (a structural schema declares no fields there)."""
    for sub in schema.all_of:
        _nested(value, sub, path, errs)
    int_or_string = schema.int_or_string and len(schema.any_of) == 2
    if schema.any_of and not int_or_string and not any(_passes(value, sub, path) for sub in schema.any_of):
        errs.append(FieldError.invalid(path, "", f"{path} must validate at least one schema (anyOf)"))
    if schema.one_of and sum(_passes(value, sub, path) for sub in schema.one_of) != 1:
        errs.append(FieldError.invalid(path, "", f"{path} must validate one and only one schema (oneOf)"))
    if schema.not_ is not None and _passes(value, schema.not_, path):
        errs.append(FieldError.invalid(path, "", f"{path} must not validate the schema (not)"))


def _nested(value: Any, schema: Structural, path: str, errs: list[FieldError]) -> None:
    """A junctor's schema: its type may be empty (then any value); otherwise as a full schema."""
    _validate(value, schema, path, errs)


def _passes(value: Any, schema: Structural, path: str) -> bool:
    found: list[FieldError] = []
    _nested(value, schema, path, found)
    return not found


def _list_set_or_map(value: list[Any], schema: Structural, path: str, errs: list[FieldError]) -> None:
    seen: set[bytes] = set()
    for index, item in enumerate(value):
        if schema.list_type == "map":
            if not isinstance(item, dict):
                continue
            key_value: Any = {k: item.get(k) for k in schema.list_map_keys if k in item}
        else:
            key_value = item
        identity = orjson.dumps(key_value, option=orjson.OPT_SORT_KEYS)
        if identity in seen:
            errs.append(FieldError.duplicate(f"{path}[{index}]", key_value))
        seen.add(identity)


def _embedded(value: dict[str, Any], path: str, errs: list[FieldError]) -> None:
    for key in ("apiVersion", "kind"):
        if key not in value:
            errs.append(FieldError.required(f"{path}.{key}", "must not be empty"))
        elif not isinstance(value[key], str):
            errs.append(FieldError.invalid(f"{path}.{key}", value[key], "must be a string"))
        elif not value[key]:
            errs.append(FieldError.invalid(f"{path}.{key}", "", "must not be empty"))
    metadata = value.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"]:
        name = metadata["name"]
        errs.extend(FieldError.invalid(f"{path}.metadata.name", name, m) for m in is_dns1123_subdomain(name))


def _too_many(path: str, actual: int, limit: int) -> FieldError:
    detail = f"must have at most {limit} {'item' if limit == 1 else 'items'}"
    return FieldError(ErrorType.TOO_MANY, path, actual, detail)


def _go_number(value: float) -> int | float:
    """Go's %v of a JSON number: 1 for 1.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _has_duplicates(items: list[Any]) -> bool:
    keys = [orjson.dumps(item, option=orjson.OPT_SORT_KEYS) for item in items]
    return len(set(keys)) != len(keys)


def _enum_text(value: Any) -> str:
    """An allowed value as kube lists it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()
