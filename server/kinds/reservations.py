"""Cluster-wide reservations of Service cluster IPs and node ports: one store key per range, written by
compare-and-swap, so several cores over one store never hand out the same value.

kube-apiserver keeps each range's whole bitmap in etcd (/registry/ranges/serviceips and servicenodeports,
RangeAllocation objects) and releases a value when its Service is deleted, with a repair loop for leaks.
Capstan derives what is allocated from the stored Services (services.py), so any delete on any path frees a
value without a hook; the record holds only what is being allocated now: a value taken by a request whose
Service may not be stored yet. An allocation reads the record, then lists the Services (so the list sees
every Service whose entry was dropped before the read), picks values that are in neither, and writes the
record with its entries added, the mod_revision it read as precondition: of two cores picking the same value
one write fails, and that core reads and picks again. One extra write per allocation.

An entry ({value, service key, holder, expires}) is dropped by whichever allocation writes the record next:
- when the Service it names is stored holding the value (the list counts it from then on);
- by its holder once the request that took it is done (its write, if any, is stored by then);
- by anyone once it expires, HOLD seconds after it was taken (a holder that died mid-request).

Example: cores A and B both read the record at revision 7 and list the same Services; both pick 10.96.3.4.
A's update (expected 7) wins at revision 9; B's fails (CONFLICT), B reads revision 9, sees A's entry and picks
10.96.8.1.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from server.machinery import errors
from server.objects.storeerrors import Store, store_call, swap

HOLD = 60.0  # seconds: longer than any request runs (kube-apiserver's --request-timeout, 1m)
ATTEMPTS = 64  # reads and writes of the record before a create gives up (a 500 as kube's "failed to allocate")
KEYS = {"ip": b"/ranges/serviceips", "port": b"/ranges/servicenodeports"}  # kube's etcd keys, under our root


@dataclass(frozen=True, slots=True)
class Entry:
    value: Any  # an address (str) or a port (int)
    service: str  # the store key of the Service the value is for
    holder: str  # the Reservations instance (one per core) that took it
    expires: float  # wall-clock seconds: several machines share the record


@dataclass(frozen=True, slots=True)
class Record:
    mod_revision: int  # 0: no record yet
    entries: tuple[Entry, ...]


class Conflict(Exception):
    """The record changed since it was read: read again and pick again."""


class Reservations:
    """One core's view of one range's record."""

    def __init__(self, store: Store, kind: str) -> None:
        self._store = store
        self._key = KEYS[kind]
        self.holder = str(uuid.uuid4())
        # value -> the requests of this core that are writing it or wrote it, registered before their write
        # (another request may read the record between the write and its acknowledgement)
        self._tasks: dict[Any, set[asyncio.Task[Any]]] = {}

    async def read(self) -> Record:
        got = await store_call(self._store.get(self._key))
        if got.kv is None:
            return Record(0, ())
        raw = orjson.loads(got.kv.value)
        return Record(got.kv.mod_revision, tuple(Entry(*item) for item in raw.get("reserved") or ()))

    def blocking(self, record: Record, stored: dict[str, set[Any]]) -> list[Entry]:
        """The entries still in force, given what each stored Service (by key) holds; the caller's own are not."""
        now, task = time.time(), asyncio.current_task()
        kept = []
        for entry in record.entries:
            if entry.expires <= now or entry.value in stored.get(entry.service, ()):
                continue
            if entry.holder == self.holder and not any(
                    owner is not task and not owner.done() for owner in self._tasks.get(entry.value, ())):
                continue
            kept.append(entry)
        return kept

    async def write(self, record: Record, kept: Iterable[Entry], service: str, values: Iterable[Any]) -> None:
        """The record with `kept` and the new values for `service`, if nothing changed it since `record`
        (Conflict otherwise)."""
        task = asyncio.current_task()
        added = [Entry(v, service, self.holder, time.time() + HOLD) for v in values]
        entries = [*kept, *added]
        body = orjson.dumps({"reserved": [[e.value, e.service, e.holder, e.expires] for e in entries]})
        self._tasks = {v: live for v, owners in self._tasks.items() if (live := {t for t in owners if not t.done()})}
        if task is not None:
            for entry in added:
                self._tasks.setdefault(entry.value, set()).add(task)
        try:
            written = await swap(self._store, self._key, body, record.mod_revision)
        except BaseException:
            self._forget(added, task)
            raise
        if not written:
            self._forget(added, task)
            raise Conflict()

    def _forget(self, added: list[Entry], task: asyncio.Task[Any] | None) -> None:
        for entry in added:
            if task is not None:
                self._tasks.get(entry.value, set()).discard(task)


def exhausted(what: str) -> errors.ApiError:
    return errors.internal(f"failed to allocate a {what}: too many concurrent allocations, try again")
