"""What a data file must be before it is served, and the full check of every stored value.

LMDB has no checksums: a damaged page is either caught by LMDB's own structural checks (a page of the wrong
type, a page number past the end: MDB_CORRUPTED, MDB_PAGE_NOTFOUND) or read as it is. Capstan needs no new
checksum to find damaged values, because every live value is stored twice: in `kv` (the latest state) and in
`log` at its mod revision (layout.py; compaction never removes a live key's newest entry). `verify` walks every
database, page by page through LMDB's cursors, and compares each live key's two copies, its `idx` entry and the
revisions in `meta`: a damaged value, header, key or index entry in either copy is a mismatch, a damaged
branch page a structural error or a missing entry. It costs nothing per write or read; it is run by `capstan
check`, by `capstan snapshot save`/`status`/`restore` on what they copy, and never on the serving path.

At every open (`check_file`, `check_format`, cheap): the file is as long as its newest meta page says (a
truncated file would otherwise be a SIGBUS on the first read past its end), and its format is one this
Capstan reads. `FORMAT` is recorded in `meta` when a store is created (and in an older store when first
opened); a store of a higher format was written by a newer Capstan and is refused, never read.

The content hash (`Report.hash`) is a CRC-32 over every database's keys and values in order, as etcd's
snapshot status hash is over its buckets': two stores with the same history have the same hash.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from storage.errors import BackendFailure
from storage.lmdb import layout

FORMAT: Final = 1  # the layout of layout.py; raised when a change makes older Capstans misread a store
META_FORMAT: Final = b"format"
DATA_FILE: Final = "data.mdb"
MAX_PROBLEMS: Final = 20  # problems a report keeps (the count goes on)


class DataError(BackendFailure):
    """A data file that must not be served: damaged, truncated, or of a newer format. One line, naming the file."""


@dataclass(frozen=True, slots=True)
class Report:
    revision: int
    compacted: int
    objects: int  # live keys
    log_entries: int
    hash: int  # CRC-32 of every database's keys and values
    format: int
    problems: tuple[str, ...] = field(default=())
    problem_count: int = 0


def check_file(path: Path, psize: int, last_pgno: int) -> None:
    """Refuse a data file shorter than the pages its newest meta page counts."""
    actual = os.path.getsize(path)
    needed = (last_pgno + 1) * psize
    if actual < needed:
        raise DataError(
            f"the data file {path} is truncated: {actual} bytes, but its pages end at {needed}; restore it from a"
            " snapshot (capstan snapshot restore)")


def read_format(txn: Any, meta: Any) -> int | None:
    raw = txn.get(META_FORMAT, db=meta)
    return None if raw is None else layout.unrev(raw)


def check_format(found: int | None, path: Path) -> None:
    if found is not None and found > FORMAT:
        raise DataError(
            f"the data file {path} has format {found}, written by a newer Capstan; this one reads format {FORMAT}"
            " at most: run the newer Capstan, or restore a snapshot this one wrote")


def verify(txn: Any, dbs: Any) -> Report:
    """Walk every database in `txn` and compare each live value's two copies (see the module docstring).

    `dbs` has the handles of layout.py's four databases (storage/lmdb/env.py's Databases).
    LMDB's structural errors (lmdb.Error) propagate: the caller names the file.
    """
    problems: list[str] = []
    count = 0

    def problem(text: str) -> None:
        nonlocal count
        count += 1
        if len(problems) < MAX_PROBLEMS:
            problems.append(text)

    crc = 0
    metas: dict[bytes, bytes] = {}
    for key, value in txn.cursor(db=dbs.meta):
        crc = zlib.crc32(value, zlib.crc32(key, crc))
        metas[bytes(key)] = bytes(value)
    revision = _meta_rev(metas, layout.META_REVISION, problem)
    compacted = _meta_rev(metas, layout.META_COMPACTED, problem)
    fmt = _meta_rev(metas, META_FORMAT, lambda _text: None) or FORMAT

    log_entries = 0
    newest = 0
    for key, value in txn.cursor(db=dbs.log):
        crc = zlib.crc32(value, zlib.crc32(key, crc))
        log_entries += 1
        if len(key) != layout.REV.size or len(value) < layout.RECORD.size:
            problem(f"log entry {bytes(key).hex()} is malformed")
            continue
        newest = layout.unrev(key)
    if newest > revision:
        problem(f"the log reaches revision {newest}, past the store's revision {revision}")

    idx_newest: dict[bytes, bytes] = {}
    for key, value in txn.cursor(db=dbs.idx):
        crc = zlib.crc32(value, zlib.crc32(key, crc))
        idx_newest[bytes(key)] = bytes(value)  # duplicates come sorted: the last is the newest

    objects = 0
    log = txn.cursor(db=dbs.log)
    for key, data in txn.cursor(db=dbs.kv):
        crc = zlib.crc32(data, zlib.crc32(key, crc))
        objects += 1
        name = bytes(key).decode("utf-8", "replace")
        if len(data) < layout.HEADER.size:
            problem(f"{name}: its stored header is cut short")
            continue
        create, mod, version = layout.HEADER.unpack_from(data)
        if not 0 < create <= mod <= revision or version < 1:
            problem(f"{name}: its revisions (created {create}, modified {mod}, version {version}) are impossible")
            continue
        record = log.get(layout.rev(mod))
        if not record or len(record) < layout.RECORD.size:
            problem(f"{name}: its log entry at revision {mod} is missing")
            continue
        op, log_create, log_version, _prev, keylen = layout.RECORD.unpack_from(record)
        body = record[layout.RECORD.size:]
        if (op != layout.OP_PUT or body[:keylen] != key or (log_create, log_version) != (create, version)
                or body[keylen:] != data[layout.HEADER.size:]):
            problem(f"{name}: its value differs from the log's copy at revision {mod} (a damaged page)")
        if idx_newest.get(bytes(key)) != layout.idx_entry(mod, layout.OP_PUT):
            problem(f"{name}: its index entry does not name revision {mod}")
    return Report(revision, compacted, objects, log_entries, crc, fmt, tuple(problems), count)


def _meta_rev(metas: dict[bytes, bytes], key: bytes, problem: Any) -> int:
    raw = metas.get(key)
    if raw is None or len(raw) != layout.REV.size:
        problem(f"meta {key.decode()} is {'missing' if raw is None else 'malformed'}")
        return 0
    return layout.unrev(raw)
