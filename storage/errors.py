"""The store's typed errors: the only exceptions that leave `storage/`.

Expected outcomes of a write (exists, not found, conflict) are data in
`WriteResult`, never exceptions; these are for requests the store cannot serve.
Backend library exceptions (lmdb.Error and the like) are translated here and
never cross the package boundary.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every error the store raises."""


class InvalidArgument(StorageError):
    """The request is malformed: empty or oversized key, non-bytes, a negative revision..."""


class Compacted(StorageError):
    """The requested revision's history is gone.

    compact_revision is the oldest revision still readable: get/list at it or later,
    and watch from it or later, succeed.
    """

    def __init__(self, requested: int, compact_revision: int) -> None:
        super().__init__(
            f"revision {requested} has been compacted; the oldest available is {compact_revision}"
        )
        self.requested = requested
        self.compact_revision = compact_revision


class RevisionTooLarge(StorageError):
    """A read or watch asked for a revision the store had not reached within its wait."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"revision {requested} is larger than the current revision {current}")
        self.requested = requested
        self.current = current


class WatcherTooSlow(StorageError):
    """A watcher fell more than its queue bound behind and was dropped; re-list and watch again."""


class StoreClosed(StorageError):
    """The store was closed before or during the call."""


class BackendFailure(StorageError):
    """The backend failed in a way the caller cannot fix (I/O error, corrupt file)."""


class BackendUnavailable(BackendFailure):
    """The backend did not answer in time (an etcd cluster down or without a leader).

    A write may or may not have been applied; the same call is worth retrying once the backend is back.
    """


class QuotaExceeded(StorageError):
    """A create or update would take the store past its quota (StoreOptions.quota_bytes).

    Nothing was written. Reads, watches, deletes and compaction still work: deleting keys and
    compacting their history brings size_bytes down, and writes are accepted again.
    """

    def __init__(self, size: int, cost: int, quota: int) -> None:
        super().__init__(
            f"database space exceeded: {size} bytes in use and {cost} more would pass the quota of {quota} bytes"
        )
        self.size = size
        self.cost = cost
        self.quota = quota


class DiskFailure(StorageError):
    """The backend could not write to its disk (no space left, an I/O error).

    Nothing of the failed write was applied, and the store keeps serving: a retry succeeds
    once the disk takes writes again.
    """
