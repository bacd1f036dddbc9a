"""Values the store hands out: key-values, write outcomes, pages and watch events.

They are frozen so a value read once can be shared by every caller and watcher
without copying; the store never mutates what it has returned.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


class KeyValue(NamedTuple):
    """One key as of one revision.

    A NamedTuple rather than a frozen dataclass because it is the store's hot value:
    a list builds one per key, and a tuple builds about five times faster.

    create_revision: the revision that created this incarnation of the key
    (a key deleted and created again starts afresh); mod_revision: the revision
    of its last write; version: writes since creation, 1 after create.
    """

    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int


class Outcome(enum.Enum):
    """What a conditional write did. Only OK changes the store."""

    OK = "ok"
    EXISTS = "exists"  # create: the key is present; `current` holds it
    NOT_FOUND = "not_found"  # update/delete: no such key
    CONFLICT = "conflict"  # update/delete: mod_revision differed; `current` holds the key


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The result of create, update or delete.

    revision: on OK, the new store revision this write created; otherwise the
    store revision at which the failed compare was evaluated.
    current: on OK, the key after the write (for a delete: None); on EXISTS or
    CONFLICT, the key as it stood, so the caller can report or retry without a read.
    prev: on OK, the key before the write (None for a create).
    """

    outcome: Outcome
    revision: int
    current: KeyValue | None
    prev: KeyValue | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


class GetResult(NamedTuple):
    """revision: the store revision the read was served at; kv None when absent then.

    A NamedTuple for the same reason as KeyValue: every get builds one.
    """

    revision: int
    kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a prefix, ordered by key, all as of `revision`.

    remaining: how many keys under the prefix come after this page at that revision
    (0 when the page is the last); feeds Kubernetes' remainingItemCount. From a list
    asked with counted=False it is only 0 or not: any positive number when keys follow.
    """

    revision: int
    kvs: Sequence[KeyValue]
    remaining: int

    @property
    def more(self) -> bool:
        return self.remaining > 0


@dataclass(frozen=True, slots=True)
class CountResult:
    revision: int
    count: int


class EventType(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"


class Event(NamedTuple):
    """A change at `revision` (== kv.mod_revision); a NamedTuple for the same reason as KeyValue.

    PUT: kv is the key after the write; prev is the key before it, or None for a create.
    DELETE: kv carries the key and the deleting revision with an empty value
    (create_revision and version of the deleted incarnation); prev is the deleted key.
    """

    type: EventType
    kv: KeyValue
    prev: KeyValue | None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision
