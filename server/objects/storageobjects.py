"""apiserver_storage_objects: how many objects each resource has in the store, counted when scraped.

kube-apiserver counts every resource's keys once a minute; here a scrape counts them when the last count is
older than PERIOD (one range count per storage prefix: versions and resources stored as another share theirs),
so a scrape costs at most one count per PERIOD however often it comes.
"""

from __future__ import annotations

import time

from server.machinery.apimetrics import StorageObjects
from server.objects.core import Core

PERIOD = 10.0  # seconds a count is served before a scrape counts again


class StorageObjectsCounter:
    def __init__(self, core: Core, period: float = PERIOD) -> None:
        self._core = core
        self._period = period
        self._counted_at: float | None = None
        self.collector = StorageObjects()

    async def refresh(self) -> None:
        """Count again when the last count is older than the period."""
        now = time.monotonic()
        if self._counted_at is not None and now - self._counted_at < self._period:
            return
        self._counted_at = now
        counts: dict[str, int] = {}
        seen: set[bytes] = set()
        for resource in self._core.registry:
            if resource.stored_as is not None or resource.computed is not None or "list" not in resource.verbs:
                continue  # kept under another's keys, computed, or never stored (bindings, the reviews)
            prefix = resource.key_prefix()
            if prefix in seen:
                continue
            seen.add(prefix)
            name = f"{resource.resource}.{resource.group}" if resource.group else resource.resource
            counts[name] = (await self._core.context.store.count(prefix)).count
        self.collector.counts = counts
