"""The Kubernetes protobuf envelope and watch framing, byte for byte as kube-apiserver writes them.

An object travels as the magic ``k8s\\x00`` and a runtime.Unknown (protos/capstan/api/runtime):

    Unknown{typeMeta: {apiVersion: 1, kind: 2} = 1, raw = 2, contentEncoding = 3, contentType = 4}

Go's generated marshaller (gogo, NestedMarshalTo) writes every field, even empty: apiVersion and
kind, raw (the object's bare message, even when zero bytes long), and contentEncoding and
contentType as empty strings. So ``v1``/``ConfigMap`` with raw R is, after the magic,

    0a 0f  0a 02 "v1"  12 09 "ConfigMap"   12 len(R) R   1a 00   22 00

A protobuf watch stream is a sequence of frames: a 4-byte big-endian length, then a bare
meta.v1.WatchEvent{type = 1, object = 2: RawExtension{raw = 1}} (no magic, no envelope of its own)
whose raw is the object's complete envelope (the protobuf RawSerializer and LengthDelimitedFramer).

Decoding follows k8s.io/apimachinery's protobuf Serializer.Decode and the gogo-generated
Unknown.Unmarshal, so a bad body fails with the very words kube-apiserver puts in its 400
("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]").
contentEncoding and contentType are read and ignored, as upstream ignores them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from capstan.api.meta.v1 import meta_pb2
from server.machinery.codec import wire

MAGIC = b"k8s\x00"

_LEN = wire.LEN
_EOF = "unexpected EOF"  # io.ErrUnexpectedEOF
_NEGATIVE = "proto: negative length found during unmarshaling"  # ErrInvalidLengthGenerated
_OVERFLOW = "proto: integer overflow"  # ErrIntOverflowGenerated


class EnvelopeError(ValueError):
    """A request body that is not a Kubernetes protobuf envelope; message is kube-apiserver's
    decoder error, which it embeds in "the object provided is unrecognized (must be of type K): ..."."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def encode_envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\x00`` + Unknown{typeMeta{apiVersion, kind}, raw, "", ""}, as client-go and kube-apiserver write it."""
    type_meta = wire.field(1, api_version.encode()) + wire.field(2, kind.encode())
    return b"".join((MAGIC, wire.field(1, type_meta), wire.field(2, raw), b"\x1a\x00\x22\x00"))


def decode_envelope(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw) of an envelope; either name may be empty, for the caller to default
    from the URL as kube-apiserver does. Raises EnvelopeError."""
    if not body:
        raise EnvelopeError("empty data")
    if not body.startswith(MAGIC):
        raise EnvelopeError(
            f"provided data does not appear to be a protobuf message, expected prefix {_go_bytes(MAGIC)}"
        )
    if len(body) == len(MAGIC):
        raise EnvelopeError("empty body")
    fields = _unmarshal(
        memoryview(body)[len(MAGIC) :], "Unknown", {1: "TypeMeta", 2: "Raw", 3: "ContentEncoding", 4: "ContentType"}
    )
    api_version, kind = "", ""
    for type_meta in fields.get(1, []):  # an embedded message repeated on the wire merges
        names = _unmarshal(type_meta, "TypeMeta", {1: "APIVersion", 2: "Kind"})
        api_version = _text(names[1][-1]) if 1 in names else api_version
        kind = _text(names[2][-1]) if 2 in names else kind
    raw = bytes(fields[2][-1]) if 2 in fields else b""
    return api_version, kind, raw


def encode_watch_frame(event_type: str, envelope: bytes) -> bytes:
    """One frame of a protobuf watch: length, then WatchEvent{type, object{raw: envelope}}."""
    event = wire.field(1, event_type.encode()) + wire.field(2, wire.field(1, envelope))
    return struct.pack(">I", len(event)) + event


def iter_watch_frames(stream: bytes) -> Iterator[tuple[str, bytes]]:
    """(type, envelope) of each frame of a protobuf watch stream; a client's reading, for tests.
    Raises EnvelopeError on a truncated frame."""
    at = 0
    while at < len(stream):
        if len(stream) - at < 4:
            raise EnvelopeError(_EOF)
        (length,) = struct.unpack_from(">I", stream, at)
        at += 4
        if len(stream) - at < length:
            raise EnvelopeError(_EOF)
        event = meta_pb2.WatchEvent.FromString(stream[at : at + length])
        at += length
        yield event.type, event.object.raw


def encode(data: bytes, *, api_version: str, kind: str, pretty: bool = False) -> bytes:
    """The response body for an object the core rendered as its bare protobuf message."""
    del pretty  # kube-apiserver has no pretty protobuf
    return encode_envelope(api_version, kind, data)


def encode_watch_event(event_type: str, data: bytes, *, api_version: str, kind: str) -> bytes:
    return encode_watch_frame(event_type, encode_envelope(api_version, kind, data))


def decode(body: bytes) -> tuple[bytes, str, str]:
    """(raw, apiVersion, kind) of a request body."""
    api_version, kind, raw = decode_envelope(body)
    return raw, api_version, kind


def _unmarshal(data: memoryview, message: str, names: dict[int, str]) -> dict[int, list[memoryview]]:
    """The length-delimited fields of a message whose known fields are all length-delimited, in
    wire order, with the errors of gogo's generated Unmarshal; unknown fields are skipped."""
    fields: dict[int, list[memoryview]] = {}
    at, end = 0, len(data)
    while at < end:
        start = at
        wire, at = _uvarint(data, at)
        number, wire_type = _int32(wire >> 3), wire & 7
        if wire_type == 4:
            raise EnvelopeError(f"proto: {message}: wiretype end group for non-group")
        if number <= 0:
            raise EnvelopeError(
                f"proto: {message}: illegal tag {number} (wire type {wire})"
            )  # sic: gogo prints the whole key
        if number not in names:
            at = start + _skip(data[start:])
            if at > end:
                raise EnvelopeError(_EOF)
            continue
        if wire_type != _LEN:
            raise EnvelopeError(f"proto: wrong wireType = {wire_type} for field {names[number]}")
        length, at = _uvarint(data, at)
        length = _int64(length)
        if length < 0:
            raise EnvelopeError(_NEGATIVE)
        if at + length > end:
            raise EnvelopeError(_EOF)
        fields.setdefault(number, []).append(data[at : at + length])
        at += length
    return fields


def _skip(data: memoryview) -> int:
    """skipGenerated: the length of the unknown field (or group) at the start of data."""
    at, depth = 0, 0
    while at < len(data):
        wire, at = _uvarint(data, at)
        wire_type = wire & 7
        if wire_type == 0:
            _, at = _uvarint(data, at)
        elif wire_type == 1:
            at += 8
        elif wire_type == _LEN:
            length, at = _uvarint(data, at)
            if _int64(length) < 0:
                raise EnvelopeError(_NEGATIVE)
            at += _int64(length)
        elif wire_type == 3:
            depth += 1
        elif wire_type == 4:
            if depth == 0:
                raise EnvelopeError("proto: unexpected end of group")
            depth -= 1
        elif wire_type == 5:
            at += 4
        else:
            raise EnvelopeError(f"proto: illegal wireType {wire_type}")
        if depth == 0:
            return at
    raise EnvelopeError(_EOF)


def _uvarint(data: memoryview, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if shift >= 64:
            raise EnvelopeError(_OVERFLOW)
        if at >= len(data):
            raise EnvelopeError(_EOF)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, at
        shift += 7


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _text(data: memoryview) -> str:
    return bytes(data).decode("utf-8", "replace")  # Go strings hold any bytes; ours must be text


def _go_bytes(data: bytes) -> str:
    """A []byte as Go's %v prints it: [107 56 115 0]."""
    return "[" + " ".join(str(b) for b in data) + "]"
