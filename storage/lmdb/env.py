"""Opening the LMDB environment: one per data directory, with the map grown on demand."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb

from storage.errors import BackendFailure
from storage.lmdb import layout
from storage.options import StoreOptions


@dataclass(frozen=True, slots=True)
class Databases:
    env: Any  # lmdb.Environment
    kv: Any  # lmdb._Database handles
    log: Any
    idx: Any
    meta: Any


def open_env(path: Path, options: StoreOptions) -> Databases:
    """Open (creating if needed) the environment in `path`.

    With options.sync the data and the meta page are fsynced at every commit, so
    a committed transaction survives a crash; otherwise a crash may lose the last ones.
    """
    try:
        os.makedirs(path, exist_ok=True)
        env = lmdb.open(
            str(path),
            map_size=options.initial_map_size,
            max_dbs=8,
            sync=options.sync,
            metasync=options.sync,
            readahead=False,  # random reads of a large store should not pull whole pages of the file
            max_readers=512,
        )
        kv = env.open_db(layout.KV_DB)
        log = env.open_db(layout.LOG_DB)
        idx = env.open_db(layout.IDX_DB, dupsort=True, dupfixed=True)
        meta = env.open_db(layout.META_DB)
        with env.begin(write=True, db=meta) as txn:
            if txn.get(layout.META_REVISION) is None:
                txn.put(layout.META_REVISION, layout.rev(1))
                txn.put(layout.META_COMPACTED, layout.rev(0))
                txn.put(layout.META_COMPACT_DONE, layout.rev(0))
    except (lmdb.Error, OSError) as err:
        raise BackendFailure(f"cannot open the store in {path}: {err}") from err
    return Databases(env, kv, log, idx, meta)


def grow(dbs: Databases) -> None:
    """Double the map. Only call with no transaction open anywhere in the process."""
    size = dbs.env.info()["map_size"]
    dbs.env.set_mapsize(size * 2)
