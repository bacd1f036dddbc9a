"""apiextensions/v1 JSONSchemaProps: an OpenAPI v3 schema whose JSON form is not an object of its proto fields.

The Go type's JSON names are `$schema`, `$ref` and `x-kubernetes-...` (the proto fields are schema, ref,
xKubernetes...), and the types only it uses are JSON values of their own:

    JSON                          any JSON value               {raw: that value's bytes}
    JSONSchemaPropsOrBool         true / false / a schema      {allows, schema}
    JSONSchemaPropsOrArray        a schema / [schemas]         {schema} / {jSONSchemas}
    JSONSchemaPropsOrStringArray  a schema / ["a", "b"]        {schema} / {property}

So the whole schema is one well-known value (server/machinery/codec/wellknown.py registers `WELL_KNOWN_SCHEMA`): decode
turns a JSON schema into the generated message's constructor kwargs, encode prints a message as Go prints
the struct (its fields in declaration order, each omitted when empty, pointers printed when set, map keys
sorted). Fields the Go type does not have are dropped: the transcoder cannot report unknown fields from
inside a well-known value, so a schema's unknown keys are never warned about.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from server.machinery.codec.gojson import Invalid, mismatch

SCHEMA_MESSAGE = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"

# (JSON name, proto field, kind) in the Go struct's order, which is the proto's field order. Kinds:
#   str, bool, float, int: scalars; "strings": []string; "json": a JSON value; "jsons": []JSON;
#   "schema", "schemas", "schema_map": nested schemas; "or_bool", "or_array", "or_strings_map": the union
#   types; "docs": ExternalDocumentation; "rules": x-kubernetes-validations.
# `pointer` scalars are printed whenever set (Go *T); the others only when not zero (omitempty).
_FIELDS: tuple[tuple[str, str, str, bool], ...] = (
    ("id", "id", "str", False),
    ("$schema", "schema", "str", False),
    ("$ref", "ref", "str", True),
    ("description", "description", "str", False),
    ("type", "type", "str", False),
    ("format", "format", "str", False),
    ("title", "title", "str", False),
    ("default", "default", "json", True),
    ("maximum", "maximum", "float", True),
    ("exclusiveMaximum", "exclusiveMaximum", "bool", False),
    ("minimum", "minimum", "float", True),
    ("exclusiveMinimum", "exclusiveMinimum", "bool", False),
    ("maxLength", "maxLength", "int", True),
    ("minLength", "minLength", "int", True),
    ("pattern", "pattern", "str", False),
    ("maxItems", "maxItems", "int", True),
    ("minItems", "minItems", "int", True),
    ("uniqueItems", "uniqueItems", "bool", False),
    ("multipleOf", "multipleOf", "float", True),
    ("enum", "enum", "jsons", False),
    ("maxProperties", "maxProperties", "int", True),
    ("minProperties", "minProperties", "int", True),
    ("required", "required", "strings", False),
    ("items", "items", "or_array", True),
    ("allOf", "allOf", "schemas", False),
    ("oneOf", "oneOf", "schemas", False),
    ("anyOf", "anyOf", "schemas", False),
    ("not", "not", "schema", True),
    ("properties", "properties", "schema_map", False),
    ("additionalProperties", "additionalProperties", "or_bool", True),
    ("patternProperties", "patternProperties", "schema_map", False),
    ("dependencies", "dependencies", "or_strings_map", False),
    ("additionalItems", "additionalItems", "or_bool", True),
    ("definitions", "definitions", "schema_map", False),
    ("externalDocs", "externalDocs", "docs", True),
    ("example", "example", "json", True),
    ("nullable", "nullable", "bool", False),
    ("x-kubernetes-preserve-unknown-fields", "xKubernetesPreserveUnknownFields", "bool", True),
    ("x-kubernetes-embedded-resource", "xKubernetesEmbeddedResource", "bool", False),
    ("x-kubernetes-int-or-string", "xKubernetesIntOrString", "bool", False),
    ("x-kubernetes-list-map-keys", "xKubernetesListMapKeys", "strings", False),
    ("x-kubernetes-list-type", "xKubernetesListType", "str", True),
    ("x-kubernetes-map-type", "xKubernetesMapType", "str", True),
    ("x-kubernetes-validations", "xKubernetesValidations", "rules", False),
)
_BY_JSON = {json_name: (proto, kind) for json_name, proto, kind, _ in _FIELDS}
_RULE_FIELDS = (("rule", "str"), ("message", "str"), ("messageExpression", "str"), ("reason", "str"),
                ("fieldPath", "str"), ("optionalOldSelf", "bool"))
_GO_TYPES = {"str": "string", "bool": "bool", "float": "float64", "int": "int64"}


# --- JSON -> constructor kwargs -------------------------------------------------------------------------------


def decode_schema(value: Any) -> dict[str, Any]:
    """A JSON schema object -> JSONSchemaProps kwargs. Raises gojson.Invalid (its suffix names the key)."""
    if type(value) is not dict:
        raise mismatch(value, "v1.JSONSchemaProps")
    out: dict[str, Any] = {}
    for key, item in value.items():
        known = _BY_JSON.get(key)
        if known is None or item is None:
            continue
        proto, kind = known
        try:
            out[proto] = _DECODERS[kind](item)
        except Invalid as error:
            raise error.at(f".{key}") from None
    return out


def _scalar(kind: str) -> Callable[[Any], Any]:
    go_type = _GO_TYPES[kind]

    def decode(value: Any) -> Any:
        if kind == "float" and type(value) in (int, float):
            return float(value)
        if kind == "int" and type(value) is int:
            return value
        if kind == "int" and type(value) is float:
            raise Invalid(kind=f"number {value!r}", go_type="int64")
        if (kind == "str" and type(value) is str) or (kind == "bool" and type(value) is bool):
            return value
        raise mismatch(value, go_type)

    return decode


def _strings(value: Any) -> list[str]:
    if type(value) is not list:
        raise mismatch(value, "[]string")
    for index, item in enumerate(value):
        if type(item) is not str:
            raise mismatch(item, "string").at(f"[{index}]")
    return list(value)


def _json(value: Any) -> dict[str, bytes]:
    return {"raw": orjson.dumps(value)}


def _jsons(value: Any) -> list[dict[str, bytes]]:
    if type(value) is not list:
        raise mismatch(value, "[]v1.JSON")
    return [_json(item) if item is not None else {} for item in value]


def _schemas(value: Any) -> list[dict[str, Any]]:
    if type(value) is not list:
        raise mismatch(value, "[]v1.JSONSchemaProps")
    out = []
    for index, item in enumerate(value):
        try:
            out.append(decode_schema(item) if item is not None else {})
        except Invalid as error:
            raise error.at(f"[{index}]") from None
    return out


def _schema_map(value: Any) -> dict[str, dict[str, Any]]:
    if type(value) is not dict:
        raise mismatch(value, "map[string]v1.JSONSchemaProps")
    out = {}
    for key, item in value.items():
        try:
            out[key] = decode_schema(item) if item is not None else {}
        except Invalid as error:
            raise error.at(f".{key}") from None
    return out


def _or_bool(value: Any) -> dict[str, Any]:
    if type(value) is bool:
        return {"allows": value}
    if type(value) is dict:
        return {"allows": True, "schema": decode_schema(value)}
    raise Invalid(message="boolean or JSON schema expected")


def _or_array(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        return {"schema": decode_schema(value)}
    if type(value) is list:
        return {"jSONSchemas": _schemas(value)}
    raise Invalid(message="expected JSON object or array for JSONSchemaPropsOrArray")


def _or_strings_map(value: Any) -> dict[str, dict[str, Any]]:
    if type(value) is not dict:
        raise mismatch(value, "v1.JSONSchemaDependencies")
    out: dict[str, dict[str, Any]] = {}
    for key, item in value.items():
        try:
            if type(item) is dict:
                out[key] = {"schema": decode_schema(item)}
            elif type(item) is list:
                out[key] = {"property": _strings(item)}
            else:
                out[key] = {}
        except Invalid as error:
            raise error.at(f".{key}") from None
    return out


def _docs(value: Any) -> dict[str, str]:
    if type(value) is not dict:
        raise mismatch(value, "v1.ExternalDocumentation")
    out = {}
    for key in ("description", "url"):
        item = value.get(key)
        if item is not None:
            out[key] = _scalar("str")(item)
    return out


def _rules(value: Any) -> list[dict[str, Any]]:
    if type(value) is not list:
        raise mismatch(value, "v1.ValidationRules")
    out = []
    for index, item in enumerate(value):
        if type(item) is not dict:
            raise mismatch(item, "v1.ValidationRule").at(f"[{index}]")
        rule: dict[str, Any] = {}
        for key, kind in _RULE_FIELDS:
            if item.get(key) is not None:
                try:
                    rule[key] = _scalar(kind)(item[key])
                except Invalid as error:
                    raise error.at(f"[{index}].{key}") from None
        out.append(rule)
    return out


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "str": _scalar("str"), "bool": _scalar("bool"), "float": _scalar("float"), "int": _scalar("int"),
    "strings": _strings, "json": _json, "jsons": _jsons, "schema": decode_schema, "schemas": _schemas,
    "schema_map": _schema_map, "or_bool": _or_bool, "or_array": _or_array, "or_strings_map": _or_strings_map,
    "docs": _docs, "rules": _rules,
}


# --- message -> JSON ---------------------------------------------------------------------------------------------


def encode_schema(msg: Any) -> dict[str, Any]:
    """A JSONSchemaProps message as Go's encoding/json prints the struct."""
    out: dict[str, Any] = {}
    for json_name, proto, kind, pointer in _FIELDS:
        if kind in ("str", "bool", "float", "int"):
            if not msg.HasField(proto):
                continue
            value = getattr(msg, proto)
            if not pointer and not value:
                continue
            out[json_name] = _number(value) if kind == "float" else value
        elif kind in ("json", "schema", "or_array", "or_bool", "docs"):
            if msg.HasField(proto):
                out[json_name] = _ENCODERS[kind](getattr(msg, proto))
        else:
            value = getattr(msg, proto)
            if len(value):
                out[json_name] = _ENCODERS[kind](value)
    return out


def _number(value: float) -> int | float:
    """Go prints float64 5 as 5."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _encode_json(msg: Any) -> Any:
    return orjson.loads(msg.raw) if msg.raw else None


def _encode_or_array(msg: Any) -> Any:
    if len(msg.jSONSchemas):
        return [encode_schema(item) for item in msg.jSONSchemas]
    return encode_schema(msg.schema) if msg.HasField("schema") else None


def _encode_or_bool(msg: Any) -> Any:
    return encode_schema(msg.schema) if msg.HasField("schema") else msg.allows


def _encode_or_strings_map(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted(value):
        item = value[key]
        if len(item.property):
            out[key] = list(item.property)
        else:
            out[key] = encode_schema(item.schema) if item.HasField("schema") else None
    return out


def _encode_docs(msg: Any) -> dict[str, str]:
    return {key: getattr(msg, key) for key in ("description", "url") if getattr(msg, key)}


def _encode_rules(value: Any) -> list[dict[str, Any]]:
    out = []
    for rule in value:
        item: dict[str, Any] = {"rule": rule.rule}
        for key, _ in _RULE_FIELDS[1:]:
            if rule.HasField(key) and (getattr(rule, key) or key in ("reason", "optionalOldSelf")):
                item[key] = getattr(rule, key)
        out.append(item)
    return out


_ENCODERS: dict[str, Callable[[Any], Any]] = {
    "json": _encode_json,
    "jsons": lambda value: [_encode_json(item) for item in value],
    "strings": list,
    "schema": encode_schema,
    "schemas": lambda value: [encode_schema(item) for item in value],
    "schema_map": lambda value: {key: encode_schema(value[key]) for key in sorted(value)},
    "or_array": _encode_or_array,
    "or_bool": _encode_or_bool,
    "or_strings_map": _encode_or_strings_map,
    "docs": _encode_docs,
    "rules": _encode_rules,
}
