"""A dictionary that keeps at most a fixed number of entries, dropping the oldest first.

The core remembers things it computes often and can always compute again (the protobuf of a
body's fields, managedFields entries encoded or read, rendered objects): a lost entry costs a
recomputation, never a wrong answer, so a bound on memory is all these caches need. Where values can
be large (objects are up to 1.5 MiB), a count alone bounds nothing: `max_bytes` with `weight` (an entry's
size, from its key and value: a key may be a whole object's JSON) bounds their sum too, and an entry heavier
than the whole bound is not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    def __init__(self, size: int, *, max_bytes: int = 0, weight: Callable[[K, V], int] | None = None) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._weight = weight if max_bytes else None
        self._entries: dict[K, V] = {}
        self.bytes = 0  # the kept entries' weight, when weighed

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> Iterable[V]:
        return self._entries.values()

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    @property
    def getter(self) -> Callable[[K], V | None]:
        """get itself, without the method call around it: for loops that look up many keys in a row (it stays
        valid while the entries change)."""
        return self._entries.get

    def put(self, key: K, value: V) -> None:
        entries, weight = self._entries, self._weight
        if weight is None:
            entries[key] = value
            if len(entries) > self._size:
                del entries[next(iter(entries))]
            return
        heft = weight(key, value)
        if heft > self._max_bytes:
            return
        old = entries.get(key)
        if old is not None:
            self.bytes -= weight(key, old)
        entries[key] = value
        self.bytes += heft
        while len(entries) > self._size or self.bytes > self._max_bytes:
            oldest = next(iter(entries))
            self.bytes -= weight(oldest, entries.pop(oldest))
