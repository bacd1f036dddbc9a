"""The one interface every storage backend implements (LMDB now, etcd later).

Everything above `storage/` talks to a `Store` and nothing else, so a second
backend is a new module, not a change to the server.

Revisions
---------
The store has one global revision, an integer that starts at 1 in an empty
store and rises by exactly one for every write that succeeds (create, update,
delete). Failed compares do not raise it. It survives restarts.

Every call returns the revision it took effect at (writes) or was served at
(reads), so the caller can hand it out as a resourceVersion.

`at_revision=None` reads the latest state. An explicit revision R (>= 1) reads
the state exactly as it stood after the write that created R:
- R older than the compacted revision: `Compacted` (carrying the oldest readable one);
- R newer than the current revision: the call waits up to the store's
  `future_wait` for the revision to arrive, then raises `RevisionTooLarge`.

Keys and values
---------------
Keys are non-empty byte strings of at most `MAX_KEY_SIZE` bytes, ordered
bytewise; values are byte strings. The store never looks inside either.

Watch
-----
`watch(prefix, from_revision)` yields every change to a key under `prefix`
with a revision strictly greater than `from_revision`, in revision order,
with no gap and no duplicate: history first, then live changes. Example: after
writes at revisions 5, 6 and 7, watch(from_revision=5) yields 6 and 7 and then
whatever comes next. A watcher that falls more than its queue bound behind
gets `WatcherTooSlow` on its next read and is closed; writers never wait for it.

Quota
-----
`size_bytes()` is how much data the store holds: keys, values and the history not yet
compacted (for LMDB, the pages in use; freed pages are reused, so the file keeps its
high-water mark). A create or update whose cost (len(key) + len(value)) would take it past
`StoreOptions.quota_bytes` raises `QuotaExceeded` and writes nothing, as etcd refuses a put
past --quota-backend-bytes; the cost stands for the write's pages, so the size can pass the quota
by the last writes' overhead, never by more. Failed compares are data as always, quota or not. Deletes, reads,
watches and compaction are never refused, so deleting keys and compacting their history
brings the size back under the quota and writes succeed again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from storage.types import CountResult, Event, GetResult, KeyValue, ListResult, WriteResult

MAX_KEY_SIZE = 511  # LMDB's default key bound; the same for every backend so callers see one rule


class Watch(Protocol):
    """A live watch. Iterate it for events, or take whole batches; close it when done."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    async def next_batch(self, within: float | None = None) -> Sequence[Event]:
        """The events available now (at least one), waiting for one if there are none.

        With `within` (seconds), an empty sequence when no event came in that time: the watch stays open and
        nothing is lost (a watcher's time to send a bookmark). Only the wait for new events counts: a watch
        from a future revision first waits for the store to reach it (up to StoreOptions.future_wait).
        Raises StopAsyncIteration when the watch was closed, WatcherTooSlow when dropped,
        StoreClosed when the store closed underneath it. After WatcherTooSlow or StoreClosed
        the watch is closed: later reads raise StopAsyncIteration.
        """
        ...

    def close(self) -> None:
        """Stop the watch and free its queue at once; idempotent."""
        ...

    def progress(self) -> int:
        """A revision R such that every change under the prefix up to R has been handed out.

        Lets a caller tell its client how far the stream has got when nothing matched (a
        bookmark): R rises with the store's revision while nothing is queued for this watch.
        """
        ...


class Store(Protocol):
    """A key-value store with one global revision, history, watch and compaction."""

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        """Store `value` under a new key. Outcome.EXISTS (with the current key) if present."""
        ...

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        """The key as of `at_revision` (latest when None); kv None when absent at that revision."""
        ...

    def recent(self, key: bytes) -> KeyValue | None:
        """The key as this store last saw it change, without asking its backend; None when it keeps no such
        memory of the key (a local store whose get is as cheap keeps none at all).

        Possibly stale: a write by another process may not have reached this one yet. So it is only a hint
        for a compare-and-swap (update or delete with expected_mod_revision), whose compare catches the
        difference and answers the current key; what the caller concludes from the hint alone (a conflict,
        a write that changes nothing, a refusal) must be checked against a get first.
        """
        ...

    async def list(
        self,
        prefix: bytes,
        *,
        at_revision: int | None = None,
        start_after: bytes | None = None,
        limit: int | None = None,
        counted: bool = True,
        values: bool = True,
    ) -> ListResult:
        """Keys under `prefix` at one revision, ordered by key.

        start_after: only keys strictly greater (a page's continuation point).
        limit: at most this many (None or 0: all). `remaining` counts the keys after the page.
        counted: False when the caller needs only whether keys follow the page, not how many (a store
        that has to pass over them to count them may then not, and `remaining` is any positive number).
        values: False when the caller needs the keys and their revisions alone: every value is then b"" (a
        store that would copy or decrypt them need not).
        To page consistently, pass the first page's revision as `at_revision` for the rest.
        """
        ...

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        """How many keys exist under `prefix`."""
        ...

    async def update(
        self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None
    ) -> WriteResult:
        """Replace an existing key's value (compare-and-swap when expected_mod_revision is given).

        NOT_FOUND if absent; CONFLICT (with the current key) if its mod_revision differs.
        """
        ...

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        """Delete a key, leaving a tombstone in history; the same compare rules as update."""
        ...

    def watch(self, prefix: bytes, *, from_revision: int) -> Watch:
        """Changes under `prefix` with revision > from_revision (see the module docstring).

        Raises (on first read) Compacted when from_revision is older than the compacted
        revision, RevisionTooLarge when it stays beyond the current revision.
        from_revision=0 replays all retained history, so it needs an uncompacted store;
        to watch only what comes next, pass `current_revision()`.
        """
        ...

    async def compact(self, revision: int) -> int:
        """Forget history before `revision` (>= 1); returns the current revision.

        After it, reads at `revision` or later and watches from it or later still work
        exactly; older ones raise Compacted. A revision at or below the compacted one
        does nothing; one below 1 or beyond the current revision is InvalidArgument. The work is
        done in bounded batches so writers are never blocked for long.
        """
        ...

    def current_revision(self) -> int:
        """The latest revision whose write has been acknowledged.

        A read may already see a write that is durable but whose acknowledgement has not been
        delivered yet, so it can report a revision a moment ahead of this one.
        """
        ...

    def compacted_revision(self) -> int:
        """The oldest revision still readable: reads and watches from it on work (0 before any compaction)."""
        ...

    def size_bytes(self) -> int:
        """The data the store holds, as the quota measures it (see Quota above)."""
        ...

    def quota_bytes(self) -> int | None:
        """The quota writes are held to (StoreOptions.quota_bytes); None when there is none."""
        ...

    async def close(self) -> None:
        """Finish acknowledged writes, stop watches, release the backend; idempotent."""
        ...
