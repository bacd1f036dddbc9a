"""Request bodies: bytes in JSON or protobuf -> the object as the kind's schema types it.

fieldValidation decides what unknown and duplicate fields do, as in kube-apiserver:
Strict fails the request (400), Warn (the default) answers with one warning per
field, Ignore drops them silently. Unknown fields never reach the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import orjson

from capstan.core.v1 import core_pb2
from server import errors
from server.codec.gojson import json_kind
from server.registry import Obj, Resource
from server.schema import SchemaError

_KEY = re.compile(rb'"\s*:')  # at least one match per JSON key; more when a string holds `":`


def decode(resource: Resource, raw: core_pb2.RawObject, field_validation: str) -> tuple[Obj, list[str]]:
    """(the normalized object, warnings). Raises ApiError 400 for malformed or mistyped bodies."""
    problems: list[str] = []
    if raw.encoding == core_pb2.ENCODING_PROTOBUF:
        if not resource.schema.proto_message:
            raise errors.ApiError(errors.status(
                415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml", with_details=False))
        try:
            obj = resource.schema.from_proto(raw.data)
        except SchemaError as err:
            raise _cannot_handle(resource, str(err)) from None
    else:
        obj = _parse_json(resource, raw.data)
        problems.extend(f'duplicate field "{path}"' for path in _duplicates(raw.data, obj))
    return typed(resource, obj, field_validation, problems)


def typed(resource: Resource, obj: Obj, field_validation: str, problems: list[str] | None = None
          ) -> tuple[Obj, list[str]]:
    """An object (a request body, or the result of a patch) typed by its kind's schema, with
    fieldValidation applied to its unknown (and, for bodies, duplicate) fields."""
    problems = list(problems or ())
    _check_type(resource, obj)
    try:
        normalized, unknown = resource.schema.normalize(obj)
    except SchemaError as err:
        raise _cannot_handle(resource, str(err)) from None
    problems.extend(f'unknown field "{path}"' for path in unknown)
    if not problems or field_validation == "Ignore":
        return normalized, []
    if field_validation == "Strict":
        raise _cannot_handle(resource, "strict decoding error: " + ", ".join(problems))
    return normalized, problems


def _parse_json(resource: Resource, data: bytes) -> Obj:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise _cannot_handle(resource, f"json parse error: {err}") from None
    if not isinstance(obj, dict):
        raise _cannot_handle(resource, f"json: cannot unmarshal {json_kind(obj)} into Go value of type struct")
    return obj


def _check_type(resource: Resource, obj: Obj) -> None:
    """A body naming another kind or group/version is refused, as kube-apiserver refuses it."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind not in (None, "") and kind != resource.kind:
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; json parse error: kind {kind!r} is not {resource.kind!r}"
        )
    if api_version not in (None, "") and api_version != resource.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({resource.api_version})"
        )


def _cannot_handle(resource: Resource, detail: str) -> errors.ApiError:
    return errors.bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: {detail}'
    )


def _duplicates(data: bytes, obj: Obj) -> list[str]:
    """Paths of keys that appear twice in one JSON object. Cheap unless the body might have some."""
    keys = _count_keys(obj)
    # Compact JSON (what clients send) has exactly one `":` per key unless a string holds one: a count
    # in C settles most bodies; otherwise the regex (which allows spaces before the colon) decides.
    if data.count(b'":') == keys or len(_KEY.findall(data)) == keys:
        return []
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                found.append(key)
            out[key] = value
        return out

    json.loads(data, object_pairs_hook=pairs)
    return found


def _count_keys(value: object) -> int:
    """Keys in every object nested in `value`."""
    items: Iterable[object]
    if type(value) is dict:
        count, items = len(value), value.values()
    elif type(value) is list:
        count, items = 0, value
    else:
        return 0
    for item in items:
        if type(item) is dict or type(item) is list:
            count += _count_keys(item)
    return count
