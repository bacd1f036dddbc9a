"""Request bodies: bytes in JSON, YAML or protobuf -> the object as the kind's schema types it.

fieldValidation decides what unknown and duplicate fields do, as in kube-apiserver:
Strict fails the request (400), Warn (the default) answers with one warning per
field, Ignore drops them silently. Unknown fields never reach the store. The words and
their order are kube 1.28's (test/integration/apiserver/field_validation_test.go):

    built-in kind, JSON   strict decoding error: duplicate field "metadata.name", unknown field
                          "spec.unknown1", duplicate field "spec.paused"      (document order; a field
                          both unknown and repeated is reported once, as unknown)
    custom resource, JSON the repeated fields first, then the unknown ones: metadata's, then the pruned
                          ones sorted
    YAML                  strict decoding error: yaml: unmarshal errors:\n  line 5: key "name" already
                          set in map, unknown field "spec.unknown1"     (as warnings: one per line)

YAML is read here rather than in the gateway, so that the keys it repeats reach fieldValidation.

A body may also come as JSON text (RawObject.json, PatchRequest.patch_text) from clients that speak proto3
JSON, such as grpcurl: from_text turns it into the JSON bytes every other path reads, once, as the call
arrives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.codec import depth, goscan, unstructured, yamlread
from server.machinery.codec.errors import EncodeError
from server.machinery.codec.gojson import type_meta_problem
from server.machinery.gofmt import go_quote
from server.machinery.schema import JsonSchema, SchemaError
from server.machinery.values import Obj
from server.registry.resources import Resource

_KEY = re.compile(rb'"\s*:')  # at least one match per JSON key; more when a string holds `":`


_TEXT_ENCODINGS = (core_pb2.ENCODING_UNSPECIFIED, core_pb2.ENCODING_JSON, core_pb2.ENCODING_JSON_TEXT)


def bytes_form(raw: core_pb2.RawObject) -> core_pb2.RawObject:
    """The object `raw` carries with its JSON text as bytes: RawObject{ENCODING_JSON, data} for a json
    (with ENCODING_JSON_TEXT, or no encoding, or ENCODING_JSON); `raw` itself when it holds no text.
    400 when it holds both json and data, or json under ENCODING_PROTOBUF or ENCODING_YAML."""
    if not raw.json and raw.encoding != core_pb2.ENCODING_JSON_TEXT:
        return raw
    if raw.data and raw.json:
        raise errors.bad_request("the object is given twice: a RawObject holds it in data or in json, not both")
    if raw.data:
        raise errors.bad_request("with ENCODING_JSON_TEXT the object is RawObject.json, but data is set instead")
    if raw.encoding not in _TEXT_ENCODINGS:
        raise errors.bad_request(f"RawObject.json holds JSON text, but the encoding is "
                                 f"{core_pb2.Encoding.Name(raw.encoding)}: use ENCODING_JSON_TEXT")
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=raw.json.encode())


def from_text(request: object) -> None:
    """A request's body given as text, in place as bytes: a Create's or Update's RawObject.json, a Patch's
    patch_text. 400 as bytes_form, or for a patch given both as bytes and as text."""
    if isinstance(request, core_pb2.CreateRequest | core_pb2.UpdateRequest) and request.HasField("object"):
        raw = bytes_form(request.object)
        if raw is not request.object:
            request.object.CopyFrom(raw)
    elif isinstance(request, core_pb2.PatchRequest) and request.patch_text:
        if request.patch:
            raise errors.bad_request("the patch is given twice: a PatchRequest holds it in patch or in "
                                     "patch_text, not both")
        request.patch = request.patch_text.encode()
        request.ClearField("patch_text")


def decode(resource: Resource, raw: core_pb2.RawObject, field_validation: str) -> tuple[Obj, list[str]]:
    """(the normalized object, warnings). Raises ApiError 400 for malformed or mistyped bodies."""
    raw = bytes_form(raw)
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
        except EncodeError as err:  # a client's message with no JSON form (a RawExtension that is not JSON)
            raise _cannot_handle(resource, err.message) from None
        except UnicodeDecodeError:
            # A map key that is not UTF-8 (upb refuses it as a str). Go's protobuf keeps the bytes and its
            # validation refuses most such keys; Capstan refuses them all while decoding: a deliberate 400.
            raise _cannot_handle(resource, "proto: a map key is not valid UTF-8") from None
        return typed(resource, obj, field_validation)
    if raw.encoding == core_pb2.ENCODING_YAML:
        obj, repeated = _parse_yaml(resource, raw.data)
        answer = typed(resource, obj, field_validation, yaml_duplicates=repeated)
    else:
        obj = _parse_json(resource, raw.data)
        answer = typed(resource, obj, field_validation, keys=keys(raw.data, obj))
    _says_api_version(resource, obj)
    return answer


def typed(resource: Resource, obj: Obj, field_validation: str, *, keys: Sequence[Key] = (),
          yaml_duplicates: Sequence[str] = ()) -> tuple[Obj, list[str]]:
    """An object (a request body, or the result of a patch) typed by its kind's schema, with
    fieldValidation applied to its unknown fields and to the fields its body repeats: keys is
    the JSON body's keys in document order (empty when none repeats), yaml_duplicates yaml.v2's
    words for the keys a YAML body repeats."""
    _check_type(resource, obj)
    normalized, unknown = _normalize(resource, obj)
    if field_validation == "Ignore" or not (unknown or keys or yaml_duplicates):
        return normalized, []
    if yaml_duplicates:
        warnings = [*yaml_duplicates, *_unknown(unknown)]
        errors_ = [yamlread.Document(None, tuple(yaml_duplicates)).strict_error, *_unknown(unknown)]
    else:
        warnings = errors_ = _problems(resource, unknown, keys)
    if not warnings:
        return normalized, []
    if field_validation == "Strict":
        raise _cannot_handle(resource, "strict decoding error: " + ", ".join(errors_))
    return normalized, warnings


def patched(resource: Resource, obj: Obj, field_validation: str, *, problems: Sequence[str], shown: Callable[[], str],
            by_text: bool) -> tuple[Obj, list[str]]:
    """The result of a JSON, merge or strategic merge patch typed by its kind's schema, as kube's
    patchers check it: the patch body's own problems first, then the result's unknown fields, in the
    order of its sorted-key JSON (by_text: sorted as text, as the strategic patcher sorts them).
    Strict fails with kube's 422 on the field "patch", whose value is shown() (the patched JSON, or
    the strategic patch as Go prints a map). So does a result the schema cannot hold, whatever the
    fieldValidation, in the decoder's words (the strategic patcher's in the unstructured converter's)."""
    _check_type(resource, obj)
    try:
        normalized, unknown = _normalize_or_raise(resource, obj)
    except SchemaError as err:
        text = str(err)
        if by_text:
            text = unstructured.from_decode_error(text, _at_path(obj, err.path)) or text
        raise _patch_invalid(shown(), text) from None
    if field_validation == "Ignore":
        return normalized, []
    found = sorted(_unknown(unknown)) if by_text else _unknown(sorted(unknown, key=_path_key))
    warnings = [*problems, *found]
    if warnings and field_validation == "Strict":
        raise _patch_invalid(shown(), "strict decoding error: " + ", ".join(warnings))
    return normalized, warnings


def _patch_invalid(shown: str, why: str) -> errors.ApiError:
    """kube's patchers' NewInvalid on the field "patch" (no kind, no name)."""
    detail = f"Invalid value: {go_quote(shown)}: {why}"
    return errors.ApiError(errors.status(422, "Invalid", f' "" is invalid: patch: {detail}',
                                         causes=[errors.Cause("FieldValueInvalid", detail, "patch")]))


def _at_path(obj: object, path: str) -> object:
    """The value at a field path ("spec.template.spec.containers[0].name") of a JSON object; None past its end."""
    value = obj
    for part in _PATH_PART.finditer(path):
        key, index = part.group(1), part.group(2)
        if index is not None:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        else:
            value = value.get(key) if isinstance(value, dict) else None
    return value


def _path_key(path: str) -> list[tuple[int, str, int]]:
    """A field path's place in JSON whose keys are sorted at every level: "a.b[2].c" -> a, b, [2], c."""
    out: list[tuple[int, str, int]] = []
    for part in _PATH_PART.finditer(path):
        key, index = part.group(1), part.group(2)
        out.append((1, "", int(index)) if index is not None else (0, key or "", 0))
    return out


_PATH_PART = re.compile(r"([^.\[]+)|\[(\d+)\]")


def normalize(resource: Resource, obj: Obj) -> tuple[Obj, list[str]]:
    """The object typed by its kind's schema and the paths of its unknown fields, in kube's order."""
    _check_type(resource, obj)
    return _normalize(resource, obj)


def _normalize(resource: Resource, obj: Obj) -> tuple[Obj, list[str]]:
    try:
        return _normalize_or_raise(resource, obj)
    except SchemaError as err:
        if not isinstance(resource.schema, JsonSchema):
            raise _cannot_handle(resource, str(err)) from None
        # A custom resource is unstructured: its metadata is decoded into ObjectMeta on its own (Go's field path
        # starts inside it), and the version named is the one its body said.
        said = obj.get("apiVersion")
        version = said.rsplit("/", 1)[-1] if isinstance(said, str) else ""
        detail = _METADATA_FIELD.sub(r"\1", str(err))
        raise errors.bad_request(f'{resource.kind} in version "{version}" cannot be handled as a {resource.kind}: '
                                 f"{detail}") from None


_METADATA_FIELD = re.compile(r"(Go struct field \w+\.)metadata\.")


def _normalize_or_raise(resource: Resource, obj: Obj) -> tuple[Obj, list[str]]:
    """_normalize, raising the SchemaError of an object the schema cannot hold."""
    normalized, unknown = resource.schema.normalize(obj)
    if isinstance(resource.schema, JsonSchema):
        # apiextensions' schema coercer: metadata's unknown fields, then the pruned ones, sorted.
        meta = [path for path in unknown if path.startswith("metadata.")]
        unknown = meta + sorted(path for path in unknown if not path.startswith("metadata."))
    return normalized, unknown


def _unknown(paths: Iterable[str]) -> list[str]:
    return [f'unknown field "{path}"' for path in paths]


def _problems(resource: Resource, unknown: list[str], keys: Sequence[Key]) -> list[str]:
    """The strict decoding errors of a JSON body, in kube's order."""
    if isinstance(resource.schema, JsonSchema):  # the unstructured decoder's duplicates, then the coercer's unknowns
        return [f'duplicate field "{path}"' for path, again in keys if again] + _unknown(unknown)
    # kjson's strict decoding into the Go type: each problem where the decoder meets it.
    out: list[str] = []
    pending = dict.fromkeys(unknown)
    for path, again in keys:
        if path in pending:
            if not again:
                out.append(f'unknown field "{path}"')
                del pending[path]
        elif again and not _within(path, unknown):
            out.append(f'duplicate field "{path}"')
    return out + _unknown(pending)


def _within(path: str, unknown: Iterable[str]) -> bool:
    """Whether path is an unknown field or inside one (the decoder skips an unknown field's value)."""
    return any(path == u or path.startswith((u + ".", u + "[")) for u in unknown)


def _parse_json(resource: Resource, data: bytes, original: bytes | None = None) -> Obj:
    """A JSON body (or a YAML body's conversion, `original` being the YAML) as an object, or kube's 400 for a
    body its json serializer refuses while looking for the kind (Interpret: Go's json.Unmarshal into
    {apiVersion, kind}): malformed JSON in Go's words, a document that is no object, an apiVersion or kind that
    is no string; or one nested past depth.MAX_DEPTH. A null document is an empty object, as Go decodes it."""
    try:
        obj = goscan.loads(data)
    except goscan.Refused as err:
        raise _interpret_error(resource, err.message, original or data) from None
    except orjson.JSONDecodeError as err:
        if str(err).startswith(_ORJSON_TOO_DEEP):  # deeper than orjson reads: the same refusal as below
            bracket = err.doc[err.pos:err.pos + 1] if err.doc[err.pos:err.pos + 1] in ("[", "{") else "["
            raise _interpret_error(resource, f"invalid character {bracket!r} exceeded max depth",
                                   original or data) from None
        raise _cannot_handle(resource, f"json parse error: {err}") from None
    problem = depth.exceeded_in(data, obj)
    if problem is not None:
        raise _interpret_error(resource, problem, original or data)
    problem = type_meta_problem(obj)
    if problem is not None:
        raise _interpret_error(resource, problem, original or data)
    # a custom resource's body is decoded as unstructured, which keeps what it says: it must say its kind (a
    # built-in kind's is the endpoint's); kube quotes the body as sent
    if isinstance(resource.schema, JsonSchema) and not (obj or {}).get("kind"):
        sent = original or data
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {resource.kind}): Object "
                                 f"'Kind' is missing in '{sent.decode('utf-8', 'replace')}' ({_summarize(sent)})")
    return obj if obj is not None else {}


def _says_api_version(resource: Resource, obj: Obj) -> None:
    """A custom resource's body must say its apiVersion (a built-in's is defaulted from the endpoint): the
    create and update handlers' check, after the body decoded."""
    if isinstance(resource.schema, JsonSchema) and not obj.get("apiVersion"):
        raise errors.bad_request(f"the API version in the data () does not match the expected API version "
                                 f"({resource.api_version})")



def _parse_yaml(resource: Resource, data: bytes) -> tuple[Obj, tuple[str, ...]]:
    """A YAML body as YAMLToJSON converts it (keys sorted, as the JSON that kube then decodes has
    them) and yaml.v2's words for the keys it repeats."""
    try:
        document = yamlread.read(data)
        converted = yamlread.to_json(document.value)
    except yamlread.YAMLError as err:
        # The gateway's words when it could not type a body (kube's transformDecodeError).
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {resource.kind}): "
                                 f"{err.message} ({_summarize(data)})") from None
    return _parse_json(resource, converted, data), document.duplicates


_ORJSON_TOO_DEEP = "depth limit exceeded"


def _interpret_error(resource: Resource, problem: str, data: bytes) -> errors.ApiError:
    """kube's answer to a body its json serializer cannot find the kind of (Interpret fails), in
    transformDecodeError's words."""
    return errors.bad_request(f"the object provided is unrecognized (must be of type {resource.kind}): "
                              f"couldn't get version/kind; json parse error: {problem} ({_summarize(data)})")


def _summarize(body: bytes, max_length: int = 30) -> str:
    """kube-apiserver's summarizeData: JSON-looking text as is, anything else as hex, cut at 30 bytes."""
    if not body:
        return "<empty>"
    cut = body[:max_length]
    text = cut.decode("utf-8", "replace") if body[:1] == b"{" else cut.hex()
    return text + " ..." if len(body) > max_length else text


def _check_type(resource: Resource, obj: Obj) -> None:
    """A body naming another kind or group/version is refused, as kube-apiserver refuses it."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    # (a custom resource keeps the kind its body says, which its strategy's validate_type_meta refuses: a 422)
    if kind not in (None, "") and kind != resource.kind and not isinstance(resource.schema, JsonSchema):
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


# A JSON body's key as kjson's strict decoder names it ("spec.template.spec.containers[0].name") and
# whether it repeats a key of the same object.
Key = tuple[str, bool]


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's members as written, repetitions included."""


def keys(data: bytes, obj: object) -> list[Key]:
    """Every key of a JSON body in document order, when it repeats one (else empty: nothing to report).
    obj is the body as parsed; the check is cheap unless the body might repeat a key."""
    if repeats_no_key(data, obj):
        return []
    out: list[Key] = []
    _walk(json.loads(data, object_pairs_hook=_Pairs), "", out)
    return out if any(again for _, again in out) else []


def repeats_no_key(data: bytes, obj: object) -> bool:
    """True when the JSON body `data`, parsed as `obj`, surely repeats no key of an object. The regex finds every
    key (a space may come before its colon), and more where a string holds `":`: as many as the object has keys
    means none repeats. (A count of `":` alone misses a key spaced from its colon, and so may match the keys of
    a body that repeats one.)"""
    return len(_KEY.findall(data)) == _count_keys(obj)


def _walk(value: Any, path: str, out: list[Key]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, item in value:
            here = f"{path}.{key}" if path else key
            out.append((here, key in seen))
            seen.add(key)
            _walk(item, here, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", out)


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
