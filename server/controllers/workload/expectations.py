"""kube's ControllerExpectations and UIDTrackingControllerExpectations (pkg/controller/controller_utils.go): what
a controller waits to see in its informer before it acts on a key again, so a sync under watch lag never
creates or deletes the same Pods twice.

Contracts, as kube's:
- `expect_creations(key, n)` / `expect_deletions(key, names)` before the writes; `creation_observed(key)` and
  `deletion_observed(key, name)` from the informer's handlers; `lower` for writes that failed;
- `satisfied(key)`: no record (a new controller), or every expected add and delete observed, or the record is
  older than EXPECTATIONS_TIMEOUT (a lost event never wedges a controller);
- deletions are tracked by Pod key, so a Pod observed deleted twice (its update with deletionTimestamp, then
  its DELETED event) lowers the count once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

EXPECTATIONS_TIMEOUT = 300.0  # kube's ExpectationsTimeout: 5 minutes

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Expectation:
    add: int = 0
    delete: int = 0
    at: float = 0.0
    deleting: frozenset[str] = field(default_factory=frozenset)  # the Pod names whose deletion is awaited

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class Expectations(Generic[K]):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._records: dict[K, Expectation] = {}

    def get(self, key: K) -> Expectation | None:
        return self._records.get(key)

    def satisfied(self, key: K) -> bool:
        record = self._records.get(key)
        if record is None:
            return True
        return record.fulfilled() or self._clock() - record.at > EXPECTATIONS_TIMEOUT

    def set(self, key: K, add: int, delete: int) -> None:
        self._records[key] = Expectation(add, delete, self._clock())

    def expect_creations(self, key: K, count: int) -> None:
        self.set(key, count, 0)

    def expect_deletions(self, key: K, names: Iterable[str]) -> None:
        deleting = frozenset(names)
        self._records[key] = Expectation(0, len(deleting), self._clock(), deleting)

    def raise_(self, key: K, add: int, delete: int) -> None:
        record = self._records.get(key)
        if record is not None:
            self._records[key] = replace(record, add=record.add + add, delete=record.delete + delete)

    def lower(self, key: K, add: int, delete: int) -> None:
        record = self._records.get(key)
        if record is not None:
            self._records[key] = replace(record, add=record.add - add, delete=record.delete - delete)

    def creation_observed(self, key: K) -> None:
        self.lower(key, 1, 0)

    def deletion_observed(self, key: K, name: str = "") -> None:
        """A Pod's deletion seen; with a name, counted only while that Pod's deletion is awaited, and once."""
        record = self._records.get(key)
        if record is None:
            return
        if name:
            if name not in record.deleting:
                return
            self._records[key] = replace(record, delete=record.delete - 1, deleting=record.deleting - {name})
            return
        self._records[key] = replace(record, delete=record.delete - 1)

    def forget(self, key: K) -> None:
        """DeleteExpectations: the controller is gone."""
        self._records.pop(key, None)
