"""Reads at one snapshot: the latest state from `kv`, past states from `idx` + `log`.

Every function takes an open read transaction and returns plain values; the
caller opens and closes the transaction within one synchronous call, so no read
transaction ever spans an `await` (the map may only grow when none is open).
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from storage.lmdb import layout
from storage.lmdb.env import Databases
from storage.types import Event, EventType, KeyValue

HEADER_SIZE = layout.HEADER.size
RECORD_SIZE = layout.RECORD.size


def revision(txn: Any, dbs: Databases) -> int:
    """The snapshot's current revision."""
    return layout.unrev(txn.get(layout.META_REVISION, db=dbs.meta))


def compacted(txn: Any, dbs: Databases) -> int:
    """The snapshot's compacted revision: reads below it raise Compacted."""
    return layout.unrev(txn.get(layout.META_COMPACTED, db=dbs.meta))


def latest(txn: Any, dbs: Databases, key: bytes) -> KeyValue | None:
    data = txn.get(key, db=dbs.kv)
    if data is None:
        return None
    create, mod, version = layout.HEADER.unpack_from(data)
    return KeyValue(key, data[HEADER_SIZE:], create, mod, version)


def _entry(txn: Any, dbs: Databases, revision: int) -> tuple[int, KeyValue, int]:
    """(op, the key as written at `revision`, prev_revision) from the log."""
    data = txn.get(layout.rev(revision), db=dbs.log)
    op, create, version, prev, keylen = layout.RECORD.unpack_from(data)
    key = bytes(data[RECORD_SIZE : RECORD_SIZE + keylen])  # bytes() copies a buffer read, returns bytes as they are
    return op, KeyValue(key, bytes(data[RECORD_SIZE + keylen :]), create, revision, version), prev


def _newest_at(cursor: Any, key: bytes, revision: int) -> bytes | None:
    """The idx entry of `key` with the greatest revision <= `revision` (cursor on key)."""
    if cursor.set_range_dup(key, layout.rev(revision + 1)):
        return cursor.value() if cursor.prev_dup() else None
    cursor.set_key(key)
    cursor.last_dup()
    value: bytes = cursor.value()
    return value if layout.unrev(value) <= revision else None


def at(txn: Any, dbs: Databases, key: bytes, revision: int) -> KeyValue | None:
    cursor = txn.cursor(db=dbs.idx)
    if not cursor.set_key(key):
        return None
    entry = _newest_at(cursor, key, revision)
    if entry is None or entry[8:] == layout.IDX_DELETE:
        return None
    return _entry(txn, dbs, layout.unrev(entry))[1]


def _start(prefix: bytes, start_after: bytes | None) -> bytes:
    if start_after is not None and start_after >= prefix:
        return start_after + b"\x00"
    return prefix


def list_latest(
    txn: Any, dbs: Databases, prefix: bytes, start_after: bytes | None, limit: int
) -> tuple[list[KeyValue], bool]:
    """(up to `limit` keys of the latest state, whether another key follows them)."""
    cursor = txn.cursor(db=dbs.kv)
    kvs: list[KeyValue] = []
    if not cursor.set_range(_start(prefix, start_after)):
        return kvs, False
    # The hot loop of every list: tuple.__new__ skips NamedTuple's Python-level __new__ (~10% of the loop); islice
    # stops at the key after the limit in C, and the header's three fields are unpacked into a tuple of known size.
    unpack = layout.HEADER.unpack_from
    append = kvs.append
    new = tuple.__new__
    for key, data in islice(cursor, limit + 1):
        if not key.startswith(prefix):
            return kvs, False
        created, modified, version = unpack(data)
        append(new(KeyValue, (key, data[HEADER_SIZE:], created, modified, version)))
    return _cut(kvs, limit)


def list_latest_heads(
    txn: Any, dbs: Databases, prefix: bytes, start_after: bytes | None, limit: int
) -> tuple[list[KeyValue], bool]:
    """list_latest with every value b"", in a transaction opened with buffers=True: of each value only its header
    is read, nothing of it copied."""
    cursor = txn.cursor(db=dbs.kv)
    kvs: list[KeyValue] = []
    if not cursor.set_range(_start(prefix, start_after)):
        return kvs, False
    unpack = layout.HEADER.unpack_from
    append = kvs.append
    new = tuple.__new__
    for view, data in islice(cursor, limit + 1):
        key = bytes(view)
        if not key.startswith(prefix):
            return kvs, False
        created, modified, version = unpack(data)
        append(new(KeyValue, (key, b"", created, modified, version)))
    return _cut(kvs, limit)


def _cut(kvs: list[KeyValue], limit: int) -> tuple[list[KeyValue], bool]:
    """(the first `limit` of kvs, whether a key followed them): a list reads one key past its limit to know."""
    if len(kvs) > limit:
        del kvs[limit:]
        return kvs, True
    return kvs, False


# A count reads keys a chunk at a time, in C, the chunks growing from the first's size to the last's: counting a
# short rest reads little past it, and no chunk holds more than the last's keys.
_FIRST_CHUNK = 16
_LAST_CHUNK = 4096


def _successor(prefix: bytes) -> bytes | None:
    """The least key after every key that starts with `prefix`; None when every key from `prefix` on starts with
    it (an empty prefix, or one of 0xff bytes only)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes((stripped[-1] + 1,)) if stripped else None


def count_latest_after(
    txn: Any, dbs: Databases, prefix: bytes, start_after: bytes | None, budget: int
) -> tuple[int, bytes | None]:
    """(keys under `prefix` after `start_after`, at most `budget` of them; the last one counted when the
    budget ran out, to resume after, else None)."""
    cursor = txn.cursor(db=dbs.kv)
    if not cursor.set_range(_start(prefix, start_after)):
        return 0, None
    end = _successor(prefix)
    keys = cursor.iternext(keys=True, values=False)
    n, size, last = 0, _FIRST_CHUNK, None
    while True:
        chunk = list(islice(keys, min(size, budget + 1 - n)))
        if not chunk:
            return n, None
        if end is not None and chunk[-1] >= end:  # the prefix's keys end in this chunk (the keys come in order)
            return n + bisect_left(chunk, end), None
        if n + len(chunk) > budget:  # a key under the prefix follows the budget's last
            return budget, chunk[-2] if len(chunk) > 1 else last
        n += len(chunk)
        last = chunk[-1]
        size = min(size * 4, _LAST_CHUNK)


def count_latest(txn: Any, dbs: Databases, prefix: bytes) -> int:
    return count_latest_after(txn, dbs, prefix, None, sys.maxsize)[0]


def _live_at(txn: Any, dbs: Databases, prefix: bytes, revision: int, start_after: bytes | None) -> Any:
    """The keys under `prefix` after `start_after` that exist at `revision`, in order, with their log entries."""
    cursor = txn.cursor(db=dbs.idx)
    found = cursor.set_range(_start(prefix, start_after))
    while found:
        key = bytes(cursor.key())  # a copy out of the map in a transaction with buffers
        if not key.startswith(prefix):
            return
        entry = _newest_at(cursor, key, revision)
        if entry is not None and entry[8:] == layout.IDX_PUT:
            yield key, entry
        cursor.set_key(key)
        found = cursor.next_nodup()


# A list at a past revision reads the latest state and looks up in the index only the keys written since that
# revision, when at most this many writes were made since (a paged list's later pages are read at its first page's
# revision, usually seconds old); with more, every key is looked up. Scanning the log for those keys costs ~1 µs a
# write, a page of 500 by the index ~2 ms: past ~1,000 writes the index is the cheaper way.
RECENT_WRITES = 1_000


def list_at(
    txn: Any,
    dbs: Databases,
    prefix: bytes,
    revision: int,
    start_after: bytes | None,
    limit: int | None,
    *,
    values: bool = True,
) -> tuple[list[KeyValue], bool]:
    """(up to `limit` keys as of a past `revision`, whether another key follows them). values=False: every value
    b"", and in a transaction with buffers the values of keys not written since are not copied out of the map."""
    start = _start(prefix, start_after)
    changed = _written_since(txn, dbs, prefix, revision, start)
    if changed is None:  # every key looked up in the index
        by_index: list[KeyValue] = []
        more = False
        for _key, entry in _live_at(txn, dbs, prefix, revision, start_after):
            if limit is not None and len(by_index) == limit:
                more = True
                break
            kv = _entry(txn, dbs, layout.unrev(entry))[1]
            by_index.append(kv if values else kv._replace(value=b""))
        return by_index, more
    # A key not written since `revision` is at `revision` as it is now; the others, as the index has them then.
    idx = txn.cursor(db=dbs.idx)
    past: list[KeyValue] = []
    for key in sorted(changed):
        entry = _put_at(idx, key, revision)
        if entry is not None:
            kv = _entry(txn, dbs, layout.unrev(entry))[1]
            past.append(kv if values else kv._replace(value=b""))
    kvs: list[KeyValue] = []
    append = kvs.append
    pending = iter(past)
    following = next(pending, None)
    unpack = layout.HEADER.unpack_from
    new = tuple.__new__
    cursor = txn.cursor(db=dbs.kv)
    if cursor.set_range(start):
        # limit + 1 keys are enough to fill the page and know whether more follow, once the written ones are skipped
        for view, data in cursor if limit is None else islice(cursor, limit + 1 + len(changed)):
            key = bytes(view)  # the key itself when the transaction copies, else its copy out of the map
            if not key.startswith(prefix):
                break
            if key in changed:
                continue
            while following is not None and following.key < key:
                append(following)
                following = next(pending, None)
            created, modified, version = unpack(data)
            append(new(KeyValue, (key, data[HEADER_SIZE:] if values else b"", created, modified, version)))
    while following is not None:  # past keys after the last key read: the cut below keeps the order's head
        append(following)
        following = next(pending, None)
    return (kvs, False) if limit is None else _cut(kvs, limit)


def _written_since(txn: Any, dbs: Databases, prefix: bytes, revision: int, start: bytes) -> set[bytes] | None:
    """The keys under `prefix`, from `start` on, written after `revision`; None when more than RECENT_WRITES
    writes were made after it."""
    cursor = txn.cursor(db=dbs.log)
    written: set[bytes] = set()
    if not cursor.set_range(layout.rev(revision + 1)):
        return written
    for scanned, data in enumerate(cursor.iternext(keys=False, values=True)):
        if scanned == RECENT_WRITES:
            return None
        keylen = layout.RECORD.unpack_from(data)[4]
        key = bytes(data[RECORD_SIZE : RECORD_SIZE + keylen])
        if key >= start and key.startswith(prefix):
            written.add(key)
    return written


def _put_at(idx: Any, key: bytes, revision: int) -> bytes | None:
    """The idx entry of the write that made `key` what it was at `revision`; None if it did not exist then."""
    entry = _newest_at(idx, key, revision) if idx.set_key(key) else None
    return entry if entry is not None and entry[8:] == layout.IDX_PUT else None


def count_at_after(
    txn: Any, dbs: Databases, prefix: bytes, revision: int, start_after: bytes | None, budget: int
) -> tuple[int, bytes | None]:
    """count_latest_after as of a past `revision`: as list_at reads it, the keys written since looked up in the
    index and the others counted from `kv`."""
    start = _start(prefix, start_after)
    changed = _written_since(txn, dbs, prefix, revision, start)
    keys: Iterator[bytes]
    if changed is None:
        keys = (key for key, _entry_bytes in _live_at(txn, dbs, prefix, revision, start_after))
    else:
        idx = txn.cursor(db=dbs.idx)
        keys = heapq.merge(_latest_keys(txn, dbs, prefix, start, changed),
                           sorted(key for key in changed if _put_at(idx, key, revision) is not None))
    n = 0
    last: bytes | None = None
    for key in keys:
        if n == budget:
            return n, last
        n += 1
        last = key
    return n, None


def _latest_keys(txn: Any, dbs: Databases, prefix: bytes, start: bytes, skipped: set[bytes]) -> Iterator[bytes]:
    """The keys under `prefix` from `start` on in `kv`, in order, but those in `skipped`."""
    cursor = txn.cursor(db=dbs.kv)
    if not cursor.set_range(start):
        return
    for key in cursor.iternext(keys=True, values=False):
        if not key.startswith(prefix):
            return
        if key not in skipped:
            yield key


def history(
    txn: Any, dbs: Databases, prefix: bytes, after: int, limit: int, current: int,
    wanted: Callable[[bytes], bool] | None = None,
) -> tuple[list[Event], int]:
    """Up to `limit` events under `prefix` with revision > `after`, and the last revision scanned.

    With `wanted`, the events of keys it refuses are passed over without reading their values, and `limit`
    bounds the writes scanned, passed over or not. In a transaction that reads buffers, only the keys and the
    values of the events returned are copied out of the map."""
    cursor = txn.cursor(db=dbs.log)
    events: list[Event] = []
    through = current
    if not cursor.set_range(layout.rev(after + 1)):
        return events, through
    passed = 0
    for rev_bytes, data in cursor:
        op, create, version, prev_rev, keylen = layout.RECORD.unpack_from(data)
        key = bytes(data[RECORD_SIZE : RECORD_SIZE + keylen])
        if not key.startswith(prefix):
            continue
        revision = layout.unrev(rev_bytes)
        if wanted is not None and not wanted(key):
            passed += 1
            if len(events) + passed == limit:
                return events, revision
            continue
        prev = _entry(txn, dbs, prev_rev)[1] if prev_rev else None
        if op == layout.OP_PUT:
            kv = KeyValue(key, bytes(data[RECORD_SIZE + keylen :]), create, revision, version)
            events.append(Event(EventType.PUT, kv, prev))
        else:
            events.append(Event(EventType.DELETE, KeyValue(key, b"", create, revision, version), prev))
        if len(events) + passed == limit:
            return events, revision
    return events, through
