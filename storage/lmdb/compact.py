"""Compaction steps: forget history superseded at or before the compacted revision.

`mark` records the new compacted revision C in one transaction: from then on,
reads below C raise Compacted. `step` then removes, in bounded transactions, the
log and idx entries nothing at or after C can see, recording its progress
(`compact_done`) in the same transaction as the removals, so a crash resumes
where it stopped. Example: key k written at 3, 5 and deleted at 7; compacting to
6 removes 3 (superseded by 5 <= 6) and keeps 5 (what k was at 6) and 7;
compacting to 8 later removes 5 and the tombstone 7 as well.
"""

from __future__ import annotations

from typing import Any

from storage.lmdb import layout
from storage.lmdb.env import Databases


def mark(txn: Any, dbs: Databases, revision: int) -> bool:
    """Raise the compacted revision to `revision`; False if it already is at or past it."""
    current = layout.unrev(txn.get(layout.META_COMPACTED, db=dbs.meta))
    if revision <= current:
        return False
    txn.put(layout.META_COMPACTED, layout.rev(revision), db=dbs.meta)
    return True


def step(txn: Any, dbs: Databases, batch: int) -> bool:
    """Process up to `batch` log entries at or below the compacted revision; True when caught up.

    Each entry r of key k at or below the target makes every older entry of k dead
    (r supersedes it for all reads at the target or later), and a tombstone is dead
    itself. Entries are visited in revision order, so an older entry kept by an
    earlier, lower compaction is removed once a newer write passes the target.
    """
    target = layout.unrev(txn.get(layout.META_COMPACTED, db=dbs.meta))
    position = layout.unrev(txn.get(layout.META_COMPACT_DONE, db=dbs.meta))
    if position >= target:
        return True
    log_cursor = txn.cursor(db=dbs.log)
    idx_cursor = txn.cursor(db=dbs.idx)
    caught_up = True
    examined = 0
    found = log_cursor.set_range(layout.rev(position + 1))
    while found:
        revision = layout.unrev(log_cursor.key())
        if revision > target:
            break
        if examined == batch:
            caught_up = False
            break
        data = log_cursor.value()
        op, _create, _version, _prev, keylen = layout.RECORD.unpack_from(data)
        key = data[layout.RECORD.size : layout.RECORD.size + keylen]
        _drop_older(txn, dbs, idx_cursor, key, revision)
        if op == layout.OP_DELETE:
            idx_cursor.set_key_dup(key, layout.idx_entry(revision, op))
            idx_cursor.delete()
            log_cursor.delete()  # leaves the cursor on the next entry, if any
            found = bool(log_cursor.key())
        else:
            found = log_cursor.next()
        position = revision
        examined += 1
    txn.put(layout.META_COMPACT_DONE, layout.rev(target if caught_up else position), db=dbs.meta)
    return caught_up


def _drop_older(txn: Any, dbs: Databases, idx_cursor: Any, key: bytes, revision: int) -> None:
    """Delete the idx and log entries of `key` older than `revision`."""
    while idx_cursor.set_key(key):
        entry = idx_cursor.value()
        older = layout.unrev(entry)
        if older >= revision:
            return
        idx_cursor.delete()
        txn.delete(entry[:8], db=dbs.log)
