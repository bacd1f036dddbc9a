"""The LMDB storage backend: durable, MVCC, one process."""

from storage.lmdb.store import LmdbStore

__all__ = ["LmdbStore"]
