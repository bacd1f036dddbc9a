"""The automatic compactor: keep a bounded window of history, forget the rest.

Policy (the same for every backend): every `compact_interval` seconds it samples
the current revision. It compacts to the newest sampled revision that is at least
`retention_seconds` old (and, where `retention_revisions` is set, never closer
than that to the current revision) — so, as kube-apiserver's compaction every 5
minutes, at least 5 minutes of history stay, whatever the number of writes.
Samples live in memory, so after a restart nothing is compacted until a full
retention period has passed (it errs towards keeping).

Not elected (unlike the server's singletons, server/runtime/election.py): it belongs to the store, which
the server never reaches past the Store protocol. An LMDB store has one process; on etcd every core's store
runs one, as every kube-apiserver runs its compactor, and they coordinate through the backend's own
compare-and-swap on a compaction key, so a cluster is compacted once per interval whichever cores live.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Protocol

from storage.errors import StorageError
from storage.options import StoreOptions
from storage.tasks import cancel

log = logging.getLogger(__name__)


class Compactable(Protocol):
    def current_revision(self) -> int: ...

    def compacted_revision(self) -> int: ...

    async def compact(self, revision: int) -> int: ...


class AutoCompactor:
    def __init__(self, store: Compactable, options: StoreOptions) -> None:
        self._store = store
        self._options = options
        self._samples: deque[tuple[float, int]] = deque()
        self._floor = 0  # the newest sampled revision that is old enough to compact to
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._options.compact_interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-compactor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel(task)

    def target(self, now: float) -> int:
        """The revision to compact to now (0: nothing to do)."""
        cutoff = now - self._options.retention_seconds
        while self._samples and self._samples[0][0] <= cutoff:
            self._floor = self._samples.popleft()[1]
        target = min(self._floor, self._store.current_revision() - self._options.retention_revisions)
        return target if target > self._store.compacted_revision() else 0

    async def _run(self) -> None:
        while True:
            self._samples.append((time.monotonic(), self._store.current_revision()))
            revision = self.target(time.monotonic())
            if revision:
                try:
                    await self._store.compact(revision)
                except StorageError as err:  # e.g. closed underneath us; the next round retries
                    log.warning("automatic compaction to %d failed: %s", revision, err)
            await asyncio.sleep(self._options.compact_interval)
