"""A Swagger 2.0 document in gnostic's protobuf encoding: what kubectl reads from /openapi/v2.

client-go asks /openapi/v2 for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and decodes
the body as gnostic's openapi.v2.Document (github.com/google/gnostic, openapiv2/OpenAPIv2.proto), the
message kube-openapi makes with openapi_v2.ParseDocument. Only the fields the swagger.py documents use
are written; the field numbers below are OpenAPIv2.proto's. As in gnostic, a map becomes repeated
(name, value) pairs, a vendor extension or default value an Any holding the value as YAML text (JSON
here, which YAML parsers read as well), and parameters and responses the oneof arm their "in" names.

Encoding is proto3's: empty strings and false are left out; a message field is written when present,
even if empty. Named pairs come in key order, as gnostic keeps the order of Go's sorted JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from server.machinery.codec import wire

Doc = Mapping[str, Any]

_LEN, _VARINT = wire.LEN, wire.VARINT
_METHODS = (("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8))


def _message(field: int, data: bytes) -> bytes:
    return wire.varint(field << 3 | _LEN) + wire.varint(len(data)) + data


def _string(field: int, text: str) -> bytes:
    return _message(field, text.encode()) if text else b""


def _strings(field: int, texts: Iterable[str]) -> bytes:
    return b"".join(_message(field, text.encode()) for text in texts)


def _bool(field: int, flag: bool) -> bytes:
    return wire.varint(field << 3 | _VARINT) + b"\x01" if flag else b""


def _any(value: Any) -> bytes:
    """openapi.v2.Any{yaml = 2}."""
    return _string(2, orjson.dumps(value).decode() + "\n")


def _named(field: int, name: str, value: bytes) -> bytes:
    """One Named* pair (name = 1, value = 2) as repeated field `field`."""
    return _message(field, _string(1, name) + _message(2, value))


def _extensions(field: int, doc: Doc) -> bytes:
    return b"".join(_named(field, key, _any(value)) for key, value in sorted(doc.items()) if key.startswith("x-"))


def document(doc: Doc) -> bytes:
    """openapi.v2.Document: swagger = 1, info = 2, paths = 8, definitions = 9, security = 12,
    security_definitions = 13."""
    info = _string(1, doc["info"]["title"]) + _string(2, doc["info"]["version"])
    paths = b"".join(_named(2, path, _path_item(item)) for path, item in sorted(doc["paths"].items()))
    definitions = b"".join(_named(1, name, schema(s)) for name, s in sorted(doc["definitions"].items()))
    # SecurityRequirement{additional_properties = 1: NamedStringArray{name, value: StringArray{value = 1}}}
    security = b"".join(_message(12, b"".join(_named(1, name, _strings(1, scopes))
                                              for name, scopes in sorted(requirement.items())))
                        for requirement in doc.get("security", ()))
    # SecurityDefinitions{additional_properties = 1: NamedSecurityDefinitionsItem{name, value:
    # SecurityDefinitionsItem{api_key_security = 2: ApiKeySecurity{type = 1, name = 2, in = 3, description = 4}}}}
    schemes = b"".join(_named(1, name, _message(2, _string(1, d["type"]) + _string(2, d["name"]) + _string(3, d["in"])
                                                + _string(4, d.get("description", ""))))
                       for name, d in sorted(doc.get("securityDefinitions", {}).items()) if d.get("type") == "apiKey")
    return (_string(1, doc["swagger"]) + _message(2, info) + _message(8, paths) + _message(9, definitions) + security
            + (_message(13, schemes) if schemes else b""))


def _path_item(item: Doc) -> bytes:
    """PathItem: get = 2 ... patch = 8, parameters = 9."""
    out = b"".join(_message(number, _operation(item[method])) for method, number in _METHODS if method in item)
    return out + b"".join(_message(9, _parameter(p)) for p in item.get("parameters", ()))


def _operation(op: Doc) -> bytes:
    """Operation: tags = 1, description = 3, operation_id = 5, produces = 6, consumes = 7, parameters = 8,
    responses = 9, vendor_extension = 13."""
    responses = b"".join(_named(1, code, _message(1, _response(r))) for code, r in sorted(op["responses"].items()))
    parameters = b"".join(_message(8, _parameter(p)) for p in op.get("parameters", ()))
    return (_strings(1, op.get("tags", ())) + _string(3, op.get("description", ""))
            + _string(5, op.get("operationId", "")) + _strings(6, op.get("produces", ()))
            + _strings(7, op.get("consumes", ())) + parameters + _message(9, responses) + _extensions(13, op))


def _response(response: Doc) -> bytes:
    """Response: description = 1, schema = 2 (SchemaItem: schema = 1)."""
    out = _string(1, response["description"])
    if "schema" in response:
        out += _message(2, _message(1, schema(response["schema"])))
    return out


def _parameter(param: Doc) -> bytes:
    """ParametersItem{parameter = 1}: Parameter{body_parameter = 1 | non_body_parameter = 2}."""
    if param["in"] == "body":
        body = (_string(1, param.get("description", "")) + _string(2, param["name"]) + _string(3, "body")
                + _bool(4, bool(param.get("required"))) + _message(5, schema(param["schema"])))
        return _message(1, _message(1, body))
    common = (_bool(1, bool(param.get("required"))) + _string(2, param["in"])
              + _string(3, param.get("description", "")) + _string(4, param["name"]))
    if param["in"] == "path":  # PathParameterSubSchema: type = 5, format = 6, unique_items = 19
        sub = 4, common + _string(5, param.get("type", "")) + _string(6, param.get("format", "")) + _bool(
            19, bool(param.get("uniqueItems")))
    elif param["in"] == "query":  # QueryParameterSubSchema: type = 6, format = 7, unique_items = 20
        sub = 3, common + _string(6, param.get("type", "")) + _string(7, param.get("format", "")) + _bool(
            20, bool(param.get("uniqueItems")))
    else:
        raise ValueError(f"parameters in {param['in']!r} are not encoded")
    return _message(1, _message(2, _message(*sub)))


def schema(s: Doc) -> bytes:
    """Schema: _ref = 1, format = 2, description = 4, default = 5, required = 19,
    additional_properties = 21, type = 22, items = 23, all_of = 24, properties = 25, vendor_extension = 31."""
    out = _string(1, s.get("$ref", "")) + _string(2, s.get("format", "")) + _string(4, s.get("description", ""))
    if "default" in s:
        out += _message(5, _any(s["default"]))
    out += _strings(19, s.get("required", ()))
    additional = s.get("additionalProperties")
    if isinstance(additional, Mapping):
        out += _message(21, _message(1, schema(additional)))
    elif isinstance(additional, bool):
        out += _message(21, _bool(2, additional))
    if "type" in s:
        out += _message(22, _strings(1, [s["type"]]))
    if "items" in s:
        out += _message(23, _message(1, schema(s["items"])))
    out += b"".join(_message(24, schema(sub)) for sub in s.get("allOf", ()))
    if "properties" in s:
        out += _message(25, b"".join(_named(1, name, schema(p)) for name, p in sorted(s["properties"].items())))
    return out + _extensions(31, s)
