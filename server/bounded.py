"""A dictionary that keeps at most a fixed number of entries, dropping the oldest first.

The core remembers things it computes often and can always compute again (the protobuf of a
body's fields, managedFields entries encoded or read): a lost entry costs a recomputation,
never a wrong answer, so a bound on memory is all these caches need.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        if len(self._entries) > self._size:
            del self._entries[next(iter(self._entries))]
