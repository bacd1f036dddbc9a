"""Protobuf wire-format primitives, for code that splices encoded messages without decoding them.

Used where bytes are assembled directly (stored objects, list bodies, envelopes, the
OpenAPI v2 protobuf document): written once here.
"""

from __future__ import annotations

from collections.abc import Iterable

LEN = 2  # wire type of length-delimited fields (strings, bytes, messages)
LIST_ITEMS = 2  # the field number of a Kubernetes list message's items
VARINT = 0


def varint(value: int) -> bytes:
    """An unsigned integer in base-128 varint encoding."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(the varint at `pos`, the position after it)."""
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return varint(number << 3 | LEN) + varint(len(payload)) + payload


_HEADS: dict[tuple[int, int], bytes] = {}  # a field's tag and length by (tag, length), for short lengths
_HELD_LENGTH = 1 << 14  # lengths whose varint is one or two bytes: at most this many heads per tag are kept


def repeated(number: int, payloads: Iterable[bytes]) -> bytes:
    """Each payload as length-delimited field `number`, in order, in one bytes: a repeated field's encoding."""
    tag = number << 3 | LEN
    heads = _HEADS
    parts: list[bytes] = []
    append = parts.append
    for payload in payloads:
        n = len(payload)
        head = heads.get((tag, n))
        if head is None:
            head = varint(tag) + varint(n)
            if n < _HELD_LENGTH:
                heads[tag, n] = head
        append(head)
        append(payload)
    return b"".join(parts)
