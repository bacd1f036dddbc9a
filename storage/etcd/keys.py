"""Store keys <-> etcd keys: the store's key `k` lives at etcd key root + k.

Example: root b"/registry", key b"/core/pods/ns/p" -> b"/registry/core/pods/ns/p"; listing the
store prefix b"/core/pods/" ranges over [b"/registry/core/pods/", b"/registry/core/pods0").
"""

from __future__ import annotations


def range_end(prefix: bytes) -> bytes:
    """The first key after every key starting with `prefix` (etcd's GetPrefixRangeEnd).

    Trailing 0xff bytes cannot be incremented, so they are dropped first; a prefix of nothing but
    0xff (or empty) has no end: b"\\x00", which etcd reads as "to the end of the keyspace".
    """
    end = bytearray(prefix)
    while end and end[-1] == 0xFF:
        end.pop()
    if not end:
        return b"\x00"
    end[-1] += 1
    return bytes(end)
