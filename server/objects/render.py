"""Objects to and from stored values, and stored values to response bytes.

A write renders the object once (JSON and, for kinds with a schema, protobuf);
reads splice in the resourceVersion. See server/machinery/stored.py for the value layout.
An answer asked for as ENCODING_JSON_TEXT is rendered as JSON and turned into text
last (as_text), so the byte path every other client takes costs nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias, TypeVar

import orjson
from google.protobuf.message import Message

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import stored
from server.machinery.bounded import Bounded
from server.machinery.meta import canonical
from server.machinery.protofields import is_repeated
from server.machinery.values import Obj
from server.registry.resources import Resource
from storage import KeyValue

Encoding: TypeAlias = core_pb2.Encoding
JSON: Encoding = core_pb2.ENCODING_JSON
PROTOBUF: Encoding = core_pb2.ENCODING_PROTOBUF
JSON_TEXT: Encoding = core_pb2.ENCODING_JSON_TEXT


def to_value(resource: Resource, obj: Obj) -> bytes:
    """The stored value of a normalized object (its metadata.resourceVersion is dropped)."""
    obj = canonical(obj)
    obj["metadata"].pop("resourceVersion", None)
    schema = resource.schema
    if resource.stored_as is not None:
        obj, schema = canonical(resource.stored_as.to_storage(obj)), resource.stored_as.schema
    proto = schema.to_proto(obj) if schema.proto_message else b""
    return stored.pack(go_json(obj), proto, written_at(resource))


def written_at(resource: Resource) -> str:
    """The apiVersion a value of `resource` names as written at: the storage version's, where the resource
    converts by call-out (server/objects/conversion.py); "" for every other resource."""
    converter = resource.converter
    if converter is None:
        return ""
    return f"{resource.group}/{converter.storage_version}" if resource.group else converter.storage_version


def go_json(obj: object) -> bytes:
    """Compact JSON as Go's encoding/json writes it: <, > and & escaped (\\u003c ...), as kube-apiserver sends.

    Safe on the encoded bytes: outside strings JSON has none of the three characters.
    """
    return orjson.dumps(obj).replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def load(value: bytes) -> Obj:
    """The object a stored value holds, without resourceVersion, kind and apiVersion."""
    obj: Obj = orjson.loads(stored.json_of(value))
    return obj


def load_as(resource: Resource, value: bytes) -> Obj:
    """The object a stored value holds, in `resource`'s own form (a resource stored as another converts it): what
    an update or a patch starts from and validates against. Selection and Tables read the stored form (load)."""
    obj = load(value)
    return obj if resource.stored_as is None else canonical(resource.stored_as.from_storage(obj))


def _readable(resource: Resource, value: bytes) -> bytes:
    """The stored value as `resource` renders it: converted from another resource's form, then its read hook."""
    if resource.stored_as is not None:
        obj = load_as(resource, value)
        value = stored.pack(go_json(obj), resource.schema.to_proto(obj) if resource.schema.proto_message else b"")
    return value if resource.read is None else resource.read(value)


def encoding_for(resource: Resource, accept: Encoding) -> Encoding:
    """PROTOBUF when asked and the kind has a schema; JSON otherwise (as for custom resources)."""
    return PROTOBUF if accept == PROTOBUF and resource.schema.proto_message else JSON


def type_prefix(resource: Resource) -> bytes:
    return b'"kind":"' + resource.kind.encode() + b'","apiVersion":"' + resource.api_version.encode() + b'",'


def object_bytes(resource: Resource, value: bytes, resource_version: str, encoding: Encoding) -> bytes:
    """One object as a response carries it: JSON with kind and apiVersion, or the bare protobuf message."""
    value = _readable(resource, value)
    if encoding == PROTOBUF:
        return stored.render_proto(value, resource_version)
    return stored.render_json(value, resource_version, type_prefix(resource))


def item_bytes(resource: Resource, value: bytes, resource_version: str, encoding: Encoding, typed: bool) -> bytes:
    """A list item: like object_bytes, but JSON items of built-in kinds carry no kind/apiVersion."""
    value = _readable(resource, value)
    if encoding == PROTOBUF:
        return stored.render_proto(value, resource_version)
    return stored.render_json(value, resource_version, type_prefix(resource) if typed else b"")


MAX_BYTES = 32 << 20  # of renderings one core keeps


def _rendering_weight(_: object, data: bytes) -> int:
    return len(data)


class Renderings:
    """Objects rendered once for every reader (as kube-apiserver's cachingObject and watch cache do):
    watch events for all watchers, and the items of lists that are read again and again.

    Keyed by (apiVersion, kind, storage key, revision, encoding, old, typed): at one revision a key
    has one value, rendered as the new object or as the old one (`old`: a DELETED, or a watcher's
    selector no longer matching), with or without kind/apiVersion (`typed`; JSON list items of
    built-in kinds go without). Bounded in entries and in bytes (objects may be 1.5 MiB each: a count alone
    would let 16,384 large ones hold gigabytes); the least recently added go first.
    """

    def __init__(self, size: int = 16384, max_bytes: int = MAX_BYTES) -> None:
        self._cache: Bounded[tuple[str, str, bytes, int, int, bool, bool], bytes] = Bounded(
            size, max_bytes=max_bytes, weight=_rendering_weight)

    @property
    def held_bytes(self) -> int:
        """What the renderings held weigh."""
        return self._cache.bytes

    def clear(self) -> None:
        """Forget every rendering (a custom resource's schema changed: reads may default differently)."""
        self._cache.clear()

    def event(self, resource: Resource, key: bytes, value: bytes, revision: int, encoding: Encoding, *,
              old: bool) -> bytes:
        return self._get(resource, key, value, revision, encoding, old, True)

    def item(self, resource: Resource, key: bytes, value: bytes, revision: int, encoding: Encoding,
             typed: bool) -> bytes:
        return self._get(resource, key, value, revision, encoding, False, typed or encoding == PROTOBUF)

    def items(self, resource: Resource, kvs: Sequence[KeyValue], encoding: Encoding, typed: bool) -> list[bytes]:
        """item() of each of `kvs` at its mod_revision, in order: a slice of a list in one call, the lookups
        of what is already rendered (all of it, for a list read again) made inline."""
        typed = typed or encoding == PROTOBUF
        api_version, kind, code = resource.api_version, resource.kind, int(encoding)
        get = self._cache.getter
        out: list[bytes] = []
        append = out.append
        for key, value, _, revision, _ in kvs:
            data = get((api_version, kind, key, revision, code, False, typed))
            append(data if data is not None else self._get(resource, key, value, revision, encoding, False, typed))
        return out

    def held(self, resource: Resource, kvs: Sequence[KeyValue], encoding: Encoding,
             typed: bool) -> list[bytes] | None:
        """items() of `kvs` when every one is rendered already (their values are not read), else None."""
        typed = typed or encoding == PROTOBUF
        api_version, kind, code = resource.api_version, resource.kind, int(encoding)
        get = self._cache.getter
        out: list[bytes] = []
        append = out.append
        for key, _, _, revision, _ in kvs:
            data = get((api_version, kind, key, revision, code, False, typed))
            if data is None:
                return None
            append(data)
        return out

    def _get(self, resource: Resource, key: bytes, value: bytes, revision: int, encoding: Encoding, old: bool,
             typed: bool) -> bytes:
        entry = (resource.api_version, resource.kind, key, revision, int(encoding), old, typed)
        data = self._cache.get(entry)
        if data is None:
            data = item_bytes(resource, value, str(revision), encoding, typed)
            self._cache.put(entry, data)
        return data


def raw(resource: Resource, value: bytes, resource_version: str, accept: Encoding) -> core_pb2.RawObject:
    found = core_pb2.RawObject()
    raw_into(found, resource, value, resource_version, accept)
    return found


def raw_into(target: core_pb2.RawObject, resource: Resource, value: bytes, resource_version: str,
             accept: Encoding) -> None:
    """raw, set into a response message's own object: a third of the time of building one and copying it in."""
    encoding = encoding_for(resource, accept)
    target.encoding = encoding
    target.data = object_bytes(resource, value, resource_version, encoding)


def raw_unstored(resource: Resource, obj: Obj, accept: Encoding, revision: int = 0) -> core_pb2.RawObject:
    """An object that was not stored (dry run), with resourceVersion `revision` (0: none): a create's keeps
    the one it was sent with, an update's the live object's, as kube-apiserver answers dry runs."""
    encoding = encoding_for(resource, accept)
    obj = canonical(obj)
    if revision:
        obj["metadata"]["resourceVersion"] = str(revision)
    else:
        obj["metadata"].pop("resourceVersion", None)
    if encoding == PROTOBUF:
        return core_pb2.RawObject(encoding=encoding, data=resource.schema.to_proto(obj))
    data = b"{" + type_prefix(resource) + go_json(obj)[1:]
    return core_pb2.RawObject(encoding=encoding, data=data)


Answer = TypeVar("Answer")


def as_text(answer: Answer) -> Answer:
    """`answer` with its JSON objects as text, for a request whose accept is ENCODING_JSON_TEXT: every JSON
    RawObject becomes {encoding: ENCODING_JSON_TEXT, json} and a JSON ListResponse's items its json_items, at
    any depth (a Delete's object, a DeleteCollection's list, each watch event). Objects in protobuf stay bytes.

    Changes `answer` in place and returns it, except a WatchResponse, which may be shared with other watchers
    (server/objects/watch.py): that one is copied first."""
    if isinstance(answer, core_pb2.WatchResponse):
        copy = core_pb2.WatchResponse()
        copy.CopyFrom(answer)
        answer = copy  # type: ignore[assignment]  # the same type as the argument's
    if isinstance(answer, Message):
        _texts(answer)
    return answer


def _texts(message: Message) -> None:
    if isinstance(message, core_pb2.RawObject):
        if message.encoding == JSON:
            message.json = message.data.decode()
            message.encoding = JSON_TEXT
            message.ClearField("data")
        return
    if isinstance(message, core_pb2.ListResponse) and message.encoding == JSON:
        message.json_items.extend(item.decode() for item in message.items)
        message.ClearField("items")
        message.encoding = JSON_TEXT
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.file is not core_pb2.DESCRIPTOR:
            continue  # Kubernetes messages (ListMeta, a Delete's Status) hold no RawObject
        for item in value if is_repeated(field) else (value,):
            _texts(item)
