"""Snapshots of an LMDB store (save while serving, status, restore) and its offline defragmentation.

A snapshot is one file: a compacted copy of the environment's data file, as LMDB's mdb_env_copy2 with
MDB_CP_COMPACT writes it from one read transaction, followed by the SHA-256 of those bytes (32 bytes, as
etcd appends its hash to a snapshot's bbolt file). The copy is of one committed revision, the store's whole
state at it (objects, history, revisions), and is written from a second process beside the server: LMDB
serves any number of readers in other processes, and a reader never blocks a writer, so writes go on during
the copy; the only cost to the server is that pages freed during the copy cannot be reused until it ends (the
data file may grow by what is rewritten meanwhile). Being an LMDB file with free pages dropped, a snapshot is
also the store defragmented.

Nothing is ever half-written at a final name: the copy goes to `FILE.part` (as etcdctl's), is fsynced, hashed
and fsynced again, and only then renamed to FILE; a save killed at any point leaves the store untouched and at
most a `.part` file. Restore writes the data file under `lmdb.part` in the new data directory and renames it
into place once fsynced. Defragmentation copies to `data.mdb.defrag` and renames it over the data file.

Every snapshot written or read is verified whole (integrity.py): save refuses to finish a copy with damaged
values, status and restore refuse a file whose hash or values do not match.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import lmdb

from storage import files
from storage.errors import BackendFailure
from storage.lmdb import integrity, layout
from storage.lmdb.integrity import DATA_FILE, DataError, Report

HASH_SIZE: Final = hashlib.sha256().digest_size
PART: Final = ".part"
CHUNK: Final = 1 << 20
MAX_DBS: Final = 8


@dataclass(frozen=True, slots=True)
class Snapshot:
    report: Report
    size: int  # bytes of the snapshot file, hash included


@dataclass(frozen=True, slots=True)
class _Dbs:
    env: Any
    kv: Any
    log: Any
    idx: Any
    meta: Any


@contextmanager
def _open(path: Path, *, file: bool) -> Iterator[_Dbs]:
    """A store's data read-only: a data directory's environment (beside any server on it), or a snapshot file."""
    try:
        if file:
            env = lmdb.open(str(path), subdir=False, readonly=True, lock=False, max_dbs=MAX_DBS)
        else:
            if not (path / DATA_FILE).is_file():
                raise BackendFailure(f"there is no store in {path} (no {DATA_FILE})")
            env = _open_env(path)
    except lmdb.Error as err:
        raise DataError(f"{path} is damaged or is no LMDB store ({err})") from err
    try:
        data_file = path if file else path / DATA_FILE
        integrity.check_file(data_file, env.stat()["psize"], env.info()["last_pgno"])
        for _ in range(8):
            try:
                dbs = _Dbs(env, env.open_db(layout.KV_DB, create=False), env.open_db(layout.LOG_DB, create=False),
                           env.open_db(layout.IDX_DB, create=False, dupsort=True, dupfixed=True),
                           env.open_db(layout.META_DB, create=False))
                break
            except lmdb.MapResizedError:
                env.set_mapsize(0)  # a serving process grew the map: adopt its size (no transaction is open)
        else:
            raise BackendFailure(f"{path}: the map kept growing while it was opened")
        yield dbs
    except lmdb.NotFoundError as err:
        raise DataError(f"{path} is no Capstan store (a database is missing: {err})") from err
    except (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.InvalidError, lmdb.BadTxnError) as err:
        raise DataError(f"{path} is damaged ({err})") from err
    except lmdb.Error as err:
        raise BackendFailure(f"reading {path} failed: {err}") from err
    finally:
        env.close()


def _open_env(path: Path) -> Any:
    """A data directory's environment beside a serving process, which may grow the map between opening's read of
    its size and opening's first transaction (MapResizedError): opened again then, as LMDB asks."""
    for _ in range(8):
        try:
            return lmdb.open(str(path), create=False, readonly=False, max_dbs=MAX_DBS, readahead=False,
                             max_readers=512, mode=files.FILE_MODE)
        except lmdb.MapResizedError:
            continue
    raise BackendFailure(f"{path}: the map kept growing while it was opened")


def _begin(env: Any) -> Any:
    """A read transaction, adopting a map a serving process grew meanwhile."""
    for _ in range(8):
        try:
            return env.begin()
        except lmdb.MapResizedError:
            env.set_mapsize(0)  # no transaction of this process is open
    return env.begin()


def _verify(dbs: _Dbs, path: Path) -> Report:
    try:
        with _begin(dbs.env) as txn:
            report = integrity.verify(txn, dbs)
    except lmdb.Error as err:
        raise DataError(f"{path} is damaged ({err})") from err
    integrity.check_format(report.format, path)
    if report.problem_count:
        more = f" (and {report.problem_count - len(report.problems)} more)" if report.problem_count > 1 else ""
        raise DataError(f"{path} has damaged data: {report.problems[0]}{more}")
    return report


def save(directory: Path, target: Path) -> Snapshot:
    """Copy the store in `directory` (an LMDB environment's, served or not) to the snapshot file `target`."""
    part = target.with_name(target.name + PART)
    try:
        with _open(directory, file=False) as dbs:
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, files.FILE_MODE)
            try:
                with _begin(dbs.env) as txn:
                    dbs.env.copyfd(fd, compact=True, txn=txn)
                os.fsync(fd)
            finally:
                os.close(fd)
        with _open(part, file=True) as copy:
            report = _verify(copy, part)
        digest = _sha256(part, os.path.getsize(part))
        with open(part, "ab") as out:
            out.write(digest)
            out.flush()
            os.fsync(out.fileno())
        os.replace(part, target)
        _fsync_dir(target.parent)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return Snapshot(report, os.path.getsize(target))


def status(snapshot: Path) -> Snapshot:
    """Check the snapshot file's hash and every value in it; what it holds."""
    try:
        size = os.path.getsize(snapshot)
    except OSError as err:
        raise BackendFailure(f"cannot read the snapshot {snapshot}: {err}") from err
    if size % 512 != HASH_SIZE:
        raise DataError(f"the snapshot {snapshot} has no integrity hash at its end: it was cut short, or is no"
                        " snapshot capstan wrote")
    with open(snapshot, "rb") as src:
        src.seek(size - HASH_SIZE)
        recorded = src.read(HASH_SIZE)
    actual = _sha256(snapshot, size - HASH_SIZE)
    if actual != recorded:
        raise DataError(f"the snapshot {snapshot} is damaged: its SHA-256 is {actual.hex()}, it records"
                        f" {recorded.hex()}")
    with _open(snapshot, file=True) as dbs:
        return Snapshot(_verify(dbs, snapshot), size)


def restore(snapshot: Path, directory: Path) -> Snapshot:
    """Write the store of `snapshot` as the LMDB environment `directory`, which must not exist yet."""
    checked = status(snapshot)
    if directory.exists():
        raise BackendFailure(f"{directory} exists: a snapshot is restored into a new data directory only")
    staging = directory.with_name(directory.name + PART)
    if staging.exists():
        for leftover in staging.iterdir():  # an earlier restore killed midway; nothing else writes here
            leftover.unlink()
    files.private_dir(staging)
    out = os.open(staging / DATA_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, files.FILE_MODE)
    try:
        with open(snapshot, "rb") as src:
            left = checked.size - HASH_SIZE
            while left:
                chunk = src.read(min(CHUNK, left))
                if not chunk:
                    raise DataError(f"the snapshot {snapshot} ended early")
                os.write(out, chunk)
                left -= len(chunk)
        os.fsync(out)
    finally:
        os.close(out)
    _fsync_dir(staging)
    os.replace(staging, directory)
    _fsync_dir(directory.parent)
    return checked


def defrag(directory: Path) -> tuple[int, int]:
    """Rewrite the (unserved) store in `directory` without its free pages: the data file's size before, after."""
    data = directory / DATA_FILE
    before = os.path.getsize(data) if data.exists() else 0
    fresh = directory / (DATA_FILE + ".defrag")
    with _open(directory, file=False) as dbs:
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, files.FILE_MODE)
        try:
            dbs.env.copyfd(fd, compact=True)
            os.fsync(fd)
        except BaseException:
            fresh.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
    os.replace(fresh, data)
    (directory / "lock.mdb").unlink(missing_ok=True)  # its reader table and txn id were the old file's
    _fsync_dir(directory)
    return before, os.path.getsize(data)


def _sha256(path: Path, length: int) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while length:
            chunk = src.read(min(CHUNK, length))
            if not chunk:
                break
            digest.update(chunk)
            length -= len(chunk)
    return digest.digest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check(directory: Path) -> Report:
    """Verify every value of the store in `directory` (served or not); DataError on the first damage found."""
    with _open(directory, file=False) as dbs:
        return _verify(dbs, directory / DATA_FILE)
