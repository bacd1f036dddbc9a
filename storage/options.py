"""Tunables shared by every backend, with the defaults `capstan serve` uses."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_QUOTA_BYTES = 2 << 30  # etcd's --quota-backend-bytes default (2 GiB)


@dataclass(frozen=True, slots=True)
class StoreOptions:
    # Durability: True means an acknowledged write is on disk (fsync) before the call
    # returns. False is for tests and benchmarks only: a crash loses recent acknowledged writes.
    sync: bool = True
    # How long a read or watch at a revision beyond the current one waits for it to
    # arrive before RevisionTooLarge (kube-apiserver's watch cache waits 3 s).
    future_wait: float = 3.0
    # Events a watcher may have queued and unread before it is dropped as too slow.
    watch_queue_size: int = 10_000
    # Automatic compaction keeps at least this much history: retention_seconds, as kube-apiserver compacts every
    # 5 minutes whatever the count; and, when above 0, never less than retention_revisions revisions.
    retention_seconds: float = 300.0
    retention_revisions: int = 0
    # How often the automatic compactor samples the revision and considers compacting;
    # 0 turns it off (compact() still works).
    compact_interval: float = 30.0
    # Revisions examined per compaction transaction: bounds how long a writer can wait behind it.
    compact_batch: int = 1_000
    # Writes committed together in one transaction at most (group commit).
    max_batch: int = 4_096
    # Initial LMDB map size; the map grows by doubling whenever it fills.
    initial_map_size: int = 1 << 30
    # The most data the store holds (Store.size_bytes), as etcd's --quota-backend-bytes: a create or
    # update that would take the size past it raises QuotaExceeded; deletes, reads and compaction go on,
    # so space can be freed. None: no quota (the disk is the limit).
    quota_bytes: int | None = DEFAULT_QUOTA_BYTES
