"""Opening the LMDB environment: one per data directory, private to the server's user, with the
map grown on demand; what its data occupies; which of its failures are the disk's."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb

from storage import files
from storage.errors import BackendFailure, DiskFailure, StorageError
from storage.lmdb import integrity, layout
from storage.options import StoreOptions

LMDB_DEFAULT_MAP_SIZE = 10 << 20  # py-lmdb's own default: a new map starts small and doubles as it fills


@dataclass(frozen=True, slots=True)
class Databases:
    env: Any  # lmdb.Environment
    kv: Any  # lmdb._Database handles
    log: Any
    idx: Any
    meta: Any


def open_env(path: Path, options: StoreOptions, *, map_size: int | None = None) -> Databases:
    """Open (creating if needed) the environment in `path`.

    With options.sync the data and the meta page are fsynced at every commit, so
    a committed transaction survives a crash; otherwise a crash may lose the last ones.
    The directory is 0700 and its files 0600 (storage/files.py), looser ones are tightened.
    `map_size` reserves that much address space at once (processes sharing the environment pass the same,
    so that none has to adopt another's growth); without, the map starts small and doubles as it fills.
    Readers other processes left behind when they died are cleared. A truncated or damaged data file, or
    one of a newer format, is refused with DataError before it is served (integrity.py).
    """
    opened = False
    env = None
    try:
        files.private_dir(path)
        env = lmdb.open(
            str(path),
            mode=files.FILE_MODE,  # LMDB creates data.mdb and lock.mdb with it (the umask can only narrow it)
            max_dbs=8,
            sync=options.sync,
            metasync=options.sync,
            readahead=False,  # random reads of a large store should not pull whole pages of the file
            max_readers=512,
            map_size=LMDB_DEFAULT_MAP_SIZE if map_size is None else map_size,
        )
        integrity.check_file(path / integrity.DATA_FILE, env.stat()["psize"], env.info()["last_pgno"])
        env.reader_check()
        kv = env.open_db(layout.KV_DB)
        log = env.open_db(layout.LOG_DB)
        idx = env.open_db(layout.IDX_DB, dupsort=True, dupfixed=True)
        meta = env.open_db(layout.META_DB)
        with env.begin(write=True, db=meta) as txn:
            integrity.check_format(integrity.read_format(txn, meta), path / integrity.DATA_FILE)
            if txn.get(layout.META_REVISION) is None:
                txn.put(layout.META_REVISION, layout.rev(1))
                txn.put(layout.META_COMPACTED, layout.rev(0))
                txn.put(layout.META_COMPACT_DONE, layout.rev(0))
            if txn.get(integrity.META_FORMAT) is None:
                txn.put(integrity.META_FORMAT, layout.rev(integrity.FORMAT))
        for name in ("data.mdb", "lock.mdb"):
            files.private_file(path / name)
        opened = True
    except integrity.DataError:
        raise
    except lmdb.InvalidError as err:
        raise integrity.DataError(
            f"the data file {path / integrity.DATA_FILE} is damaged or is no LMDB store ({err}); restore it from a"
            " snapshot (capstan snapshot restore)") from err
    except (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.VersionMismatchError) as err:
        raise integrity.DataError(
            f"the data file {path / integrity.DATA_FILE} is damaged ({err}); restore it from a snapshot"
            " (capstan snapshot restore)") from err
    except (lmdb.Error, OSError) as err:
        raise BackendFailure(f"cannot open the store in {path}: {err}") from err
    finally:
        if not opened and env is not None:
            env.close()
    return Databases(env, kv, log, idx, meta)


def size(txn: Any, dbs: Databases) -> int:
    """Bytes of the pages the data uses in `txn`: every database's tree, the main one included.

    Pages freed by deletes and compaction drop out at once and are reused by later writes (once
    no reader holds them), so this falls when space is reclaimed while the file never shrinks.
    """
    total = 0
    psize = 0
    for db in (None, dbs.kv, dbs.log, dbs.idx, dbs.meta):
        stat = txn.stat(db) if db is not None else dbs.env.stat()
        psize = stat["psize"]
        total += stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
    return total * psize


# What LMDB reports when the disk refuses a write: it gives only the message (a short write at
# commit is EIO, "mdb_txn_commit: Input/output error"), so the errno's text is what we can match.
_DISK_ERRORS = tuple(os.strerror(code) for code in (errno.EIO, errno.ENOSPC, errno.EFBIG, errno.EDQUOT))


def write_failure(err: BaseException) -> StorageError:
    """The typed error for a failed write transaction: DiskFailure when the disk refused it."""
    if isinstance(err, lmdb.DiskError) or (isinstance(err, (lmdb.Error, OSError))
                                           and any(text in str(err) for text in _DISK_ERRORS)):
        return DiskFailure(f"the disk refused the write ({err}); nothing was written")
    return BackendFailure(f"write failed: {err}")


def adopt_map_size(dbs: Databases) -> None:
    """Take the map size another process set (after MapResizedError). Only call with no transaction open
    anywhere in the process."""
    dbs.env.set_mapsize(0)


def grow(dbs: Databases) -> None:
    """Double the map. Only call with no transaction open anywhere in the process."""
    size = dbs.env.info()["map_size"]
    dbs.env.set_mapsize(size * 2)
