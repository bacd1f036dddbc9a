"""How one object revision is stored: its JSON and protobuf renderings, made once at write time.

Reads never transcode: a GET, a LIST page or a watch event splices the
resourceVersion (which is the store's revision, never stored inside the object)
into bytes rendered when the object was written — as kube-apiserver caches the
serializations of watch events.

Value layout: VERSION (1 byte) | json_len, head_len, tail_len (3 x u32 big-endian)
| json | proto_meta_head | proto_meta_tail | proto_rest

- json: the object without kind, apiVersion and metadata.resourceVersion, with
  "metadata" as its first key and never empty (it always holds the name), so it
  starts with b'{"metadata":{'; the version goes after metadata's uid, where kube prints it (render_json).
- proto: the kind's message without metadata.resourceVersion, split so the
  version (ObjectMeta field 6) is inserted in field order: head holds ObjectMeta's
  fields 1-5, tail fields 7 and up, rest the object's fields after metadata.
  Empty for kinds without a protobuf schema.

A value of a resource whose versions convert by call-out (a CRD's conversion
webhook) also names the apiVersion it was written at, as etcd's copy of the
object does in kube, so that it is converted from that version after the
storage version changes: VERSION is then WRITTEN and the value ends with
| api_version | len(api_version) (u16 big-endian).
"""

from __future__ import annotations

import struct

from server.machinery.codec.wire import read_varint, varint

VERSION = 1
WRITTEN = 2  # the layout of VERSION, then the apiVersion written at
HEADER = struct.Struct(">BIII")
WRITTEN_LENGTH = struct.Struct(">H")
JSON_PREFIX = b'{"metadata":{'
RESOURCE_VERSION_FIELD = 6  # ObjectMeta.resourceVersion


def pack(json: bytes, proto: bytes, written_at: str = "") -> bytes:
    """The stored value for an object rendered as `json` and `proto` (both without resourceVersion);
    `written_at`: the apiVersion the object is stored at, where its resource converts by call-out."""
    if not json.startswith(JSON_PREFIX):
        raise ValueError("stored JSON must start with a non-empty metadata object")
    head = tail = rest = b""
    if proto:
        head, tail, rest = _split(proto)
    if not written_at:
        return HEADER.pack(VERSION, len(json), len(head), len(tail)) + json + head + tail + rest
    named = written_at.encode()  # a group is at most 253 bytes, a version 63
    return (HEADER.pack(WRITTEN, len(json), len(head), len(tail)) + json + head + tail + rest
            + named + WRITTEN_LENGTH.pack(len(named)))


def written_at(value: bytes) -> str:
    """The apiVersion a value names as written at; "" when it names none."""
    if value[0] != WRITTEN:
        return ""
    end = len(value) - WRITTEN_LENGTH.size
    return value[end - WRITTEN_LENGTH.unpack_from(value, end)[0]:end].decode()


def _end(value: bytes) -> int:
    """Where the renderings end (before the written-at trailer, if any)."""
    if value[0] != WRITTEN:
        return len(value)
    end = len(value) - WRITTEN_LENGTH.size
    return end - int(WRITTEN_LENGTH.unpack_from(value, end)[0])


def json_of(value: bytes) -> bytes:
    """Just the JSON rendering (without resourceVersion)."""
    _, json_len, _, _ = HEADER.unpack_from(value)
    return value[HEADER.size : HEADER.size + json_len]


def render_json(value: bytes, resource_version: str, type_prefix: bytes = b"") -> bytes:
    """The object's JSON with its resourceVersion where kube prints it, after metadata's uid (ObjectMeta's field
    order: name, generateName, namespace, selfLink, uid, resourceVersion, generation, ...); first in metadata for an
    object without a uid. `type_prefix` is e.g. b'"kind":"ConfigMap","apiVersion":"v1",'."""
    _, json_len, _, _ = HEADER.unpack_from(value)
    start, stop = HEADER.size, HEADER.size + json_len  # the JSON, read in place
    rv = resource_version.encode()
    uid = value.find(_UID_KEY, start + 13, stop)
    # metadata's own uid, not a nested object's key: nothing opens between metadata's start and it
    if uid != -1 and value.find(b"{", start + 13, uid) == -1 and value.find(b"[", start + 13, uid) == -1:
        end = value.find(b'"', uid + len(_UID_KEY), stop) + 1  # a uid holds no quote
        if end:
            return b"".join((b"{", type_prefix, value[start + 1:end], b',"resourceVersion":"', rv, b'"',
                             value[end:stop]))
    return b"".join((b"{", type_prefix, b'"metadata":{"resourceVersion":"', rv, b'",', value[start + 13:stop]))


_UID_KEY = b'"uid":"'


def render_proto(value: bytes, resource_version: str) -> bytes:
    """The kind's protobuf message bytes with metadata.resourceVersion set (a LIST calls this per item)."""
    _, json_len, head_len, tail_len = HEADER.unpack_from(value)
    rest_at = HEADER.size + json_len + head_len + tail_len
    return _framed_metadata(value, json_len, head_len, tail_len, resource_version) + value[rest_at:_end(value)]


def framed_metadata(value: bytes, resource_version: str) -> bytes | None:
    """ObjectMeta with metadata.resourceVersion set, framed as field 1 (its tag and length before it), as the
    kind's message holds it; which is also the whole of a meta.k8s.io PartialObjectMetadata message. None for a
    value without a protobuf rendering."""
    _, json_len, head_len, tail_len = HEADER.unpack_from(value)
    if _end(value) == HEADER.size + json_len:
        return None
    return _framed_metadata(value, json_len, head_len, tail_len, resource_version)


def _framed_metadata(value: bytes, json_len: int, head_len: int, tail_len: int, resource_version: str) -> bytes:
    head_at = HEADER.size + json_len
    tail_at = head_at + head_len
    rv = resource_version.encode()
    field = bytes((RESOURCE_VERSION_FIELD << 3 | 2,)) + varint(len(rv)) + rv
    meta = (value[head_at:tail_at], field, value[tail_at:tail_at + tail_len])
    return b"".join((b"\x0a", varint(head_len + len(field) + tail_len), *meta))


def _split(proto: bytes) -> tuple[bytes, bytes, bytes]:
    """(meta head, meta tail, rest) of a message whose first field is ObjectMeta (field 1)."""
    if not proto or proto[0] != 0x0A:
        raise ValueError("the object's protobuf must start with metadata (field 1)")
    length, at = read_varint(proto, 1)
    meta, rest = proto[at : at + length], proto[at + length :]
    pos, end = 0, len(meta)
    while pos < end:
        tag = meta[pos]  # fields 1-15 have a one-byte tag
        if tag >> 3 > RESOURCE_VERSION_FIELD:
            break
        if tag >> 3 == RESOURCE_VERSION_FIELD:
            raise ValueError("the stored protobuf must not carry a resourceVersion")
        if tag & 7 == 2 and meta[pos + 1] < 0x80:  # a string shorter than 128 bytes: name, namespace, uid
            pos += 2 + meta[pos + 1]
        else:
            pos = _skip(meta, pos + 1, tag & 7)
    return meta[:pos], meta[pos:], rest


def _skip(data: bytes, pos: int, wire_type: int) -> int:
    if wire_type == 0:
        return read_varint(data, pos)[1]
    if wire_type == 1:
        return pos + 8
    if wire_type == 2:
        length, pos = read_varint(data, pos)
        return pos + length
    if wire_type == 5:
        return pos + 4
    raise ValueError(f"unsupported protobuf wire type {wire_type}")
