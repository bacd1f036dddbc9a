"""How keys, revisions and history are laid out in the LMDB environment.

Four named databases (all keys compare bytewise):

  kv    key -> HEADER(create_revision, mod_revision, version) + value
        The latest state of every live key: gets and lists at the current
        revision are one lookup or one ordered scan.
  log   REV(revision) -> RECORD(op, create_revision, version, prev_revision, key) + value
        One entry per successful write: the history watches replay and old
        reads use. Fixed-width big-endian revisions, so byte order is revision order
        (as etcd's revision keys). prev_revision points at the log entry holding
        the previous value (0: none), so a watch event carries it without a copy.
  idx   key -> REV(revision) + op   (sorted duplicates)
        Every revision at which a key was written, for reads at a past revision:
        the key's newest duplicate <= R says what it was at R.
  meta  b"revision"      -> REV: the current revision (1 in a new store)
        b"compacted"     -> REV: reads below it raise Compacted (0: never compacted)
        b"compact_done"  -> REV: how far the physical removal has got (<= compacted)

Compaction to C removes, for every key, the log and idx entries superseded at
or before C, and the key's newest entry <= C if that is a tombstone — exactly
what reads at C or later can no longer see (etcd's rule).
"""

from __future__ import annotations

import struct
from typing import Final

KV_DB: Final = b"kv"
LOG_DB: Final = b"log"
IDX_DB: Final = b"idx"
META_DB: Final = b"meta"

META_REVISION: Final = b"revision"
META_COMPACTED: Final = b"compacted"
META_COMPACT_DONE: Final = b"compact_done"

OP_PUT: Final = 1
OP_DELETE: Final = 2

REV = struct.Struct(">Q")
HEADER = struct.Struct(">QQQ")  # create_revision, mod_revision, version
RECORD = struct.Struct(">BQQQH")  # op, create_revision, version, prev_revision, key length
IDX_PUT: Final = b"\x01"
IDX_DELETE: Final = b"\x02"


def rev(revision: int) -> bytes:
    return REV.pack(revision)


def unrev(data: bytes) -> int:
    value: int = REV.unpack_from(data)[0]
    return value


def idx_entry(revision: int, op: int) -> bytes:
    return REV.pack(revision) + (IDX_PUT if op == OP_PUT else IDX_DELETE)


def record(op: int, create_revision: int, version: int, prev_revision: int, key: bytes, value: bytes) -> bytes:
    return RECORD.pack(op, create_revision, version, prev_revision, len(key)) + key + value


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key under `prefix` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
