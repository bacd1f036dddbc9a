"""Watch: history then live, in revision order, with no gap and no duplicate.

Kubernetes clients resume a watch from the resourceVersion they last saw and
trust that they miss nothing and see nothing twice; informers fan one store out to
hundreds of watchers; a stuck watcher must cost the writers nothing. These tests
hold every backend to that, with writes racing the start of each watch.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from storage import (
    Event,
    EventType,
    InvalidArgument,
    KeyValue,
    RevisionTooLarge,
    Store,
    StoreClosed,
    StoreOptions,
    Watch,
    WatcherTooSlow,
)
from storage.broadcast import Broadcaster, Subscriber
from tests.storage.conftest import (
    FAST,
    TIMEOUT,
    OpenStore,
    assert_quiet,
    churn,
    event_for,
    revisions,
    take,
    take_until,
    within,
)

KEYS = [b"/w/%d" % i for i in range(8)]


async def live(watch: Watch) -> asyncio.Task[list[Event]]:
    """Start reading `watch` in the background and let it reach its wait for live events."""
    task = asyncio.ensure_future(take(watch, 1))
    await asyncio.sleep(0.05)
    assert not task.done(), task
    return task


@pytest.mark.parametrize("from_revision", [0, 1, 10, 25])
@pytest.mark.parametrize("head_start", [0, 3, 40])
async def test_replay_then_live_without_gap_or_duplicate(store: Store, from_revision: int, head_start: int) -> None:
    d = store.current_revision() - 1  # revisions below are a store's that starts at 1, shifted by d
    expected = await churn(store, KEYS, 24, seed=1)  # revisions 2..25
    writer = asyncio.ensure_future(churn(store, KEYS, 60, seed=2))  # 26..85, racing the watch
    for _ in range(head_start):
        await asyncio.sleep(0)
    watch = store.watch(b"/w/", from_revision=from_revision + d if from_revision else 0)
    expected.update(await within(writer))
    events = await take_until(watch, 85 + d)
    assert revisions(events) == list(range(max(from_revision, 1) + 1 + d, 86 + d))
    assert events == [expected[r] for r in revisions(events)]
    await assert_quiet(watch)
    watch.close()


EVENT_TABLE: list[tuple[str, Callable[[Store, int], Awaitable[Any]], Event]] = [
    # the write (given the store and the shift d), the event it makes in a store that starts at 1
    # (key, value, create_revision, mod_revision, version): each revision is shifted by d
    (
        "create",
        lambda s, _: s.create(b"/e/k", b"v1"),
        Event(EventType.PUT, KeyValue(b"/e/k", b"v1", 2, 2, 1), None),
    ),
    (
        "update",
        lambda s, _: s.update(b"/e/k", b"v2"),
        Event(EventType.PUT, KeyValue(b"/e/k", b"v2", 2, 3, 2), KeyValue(b"/e/k", b"v1", 2, 2, 1)),
    ),
    (
        "delete",
        lambda s, _: s.delete(b"/e/k"),
        Event(EventType.DELETE, KeyValue(b"/e/k", b"", 2, 4, 2), KeyValue(b"/e/k", b"v2", 2, 3, 2)),
    ),
    (
        "re-create",
        lambda s, _: s.create(b"/e/k", b"v3"),
        Event(EventType.PUT, KeyValue(b"/e/k", b"v3", 5, 5, 1), None),
    ),
    (
        "compare-and-swap update",
        lambda s, d: s.update(b"/e/k", b"v4", expected_mod_revision=5 + d),
        Event(EventType.PUT, KeyValue(b"/e/k", b"v4", 5, 6, 2), KeyValue(b"/e/k", b"v3", 5, 5, 1)),
    ),
    (
        "compare-and-swap delete",
        lambda s, d: s.delete(b"/e/k", expected_mod_revision=6 + d),
        Event(EventType.DELETE, KeyValue(b"/e/k", b"", 5, 7, 2), KeyValue(b"/e/k", b"v4", 5, 6, 2)),
    ),
]


def shifted(event: Event, d: int) -> Event:
    def move(kv: KeyValue) -> KeyValue:
        return kv._replace(create_revision=kv.create_revision + d, mod_revision=kv.mod_revision + d)

    return Event(event.type, move(event.kv), None if event.prev is None else move(event.prev))


@pytest.mark.parametrize("mode", ["replay", "live"])
async def test_events_carry_kv_prev_and_revision(store: Store, mode: str) -> None:
    base = store.current_revision()
    d = base - 1
    watch = store.watch(b"/e/", from_revision=base)
    reader = await live(watch) if mode == "live" else None
    got: list[Event] = []
    for name, write, _ in EVENT_TABLE:
        assert (await within(write(store, d))).ok, name
        if reader is not None:
            got.extend(await within(reader))
            reader = asyncio.ensure_future(take(watch, 1))
    if reader is not None:
        reader.cancel()
    else:
        got = await take(watch, len(EVENT_TABLE))
    for (name, _, unshifted), event in zip(EVENT_TABLE, got, strict=True):
        expected = shifted(unshifted, d)
        assert event == expected, name
        assert event.revision == expected.kv.mod_revision, name


PREFIX_WRITES = [b"/a/1", b"/ab", b"/a/2", b"/b/1", b"/a", b"/a/1", b"\xff\x01", b"/a/", b"/b"]

PREFIX_TABLE = [
    (b"/a/", [b"/a/1", b"/a/2", b"/a/1", b"/a/"]),
    (b"/a", [b"/a/1", b"/ab", b"/a/2", b"/a", b"/a/1", b"/a/"]),
    (b"/b/", [b"/b/1"]),
    (b"\xff", [b"\xff\x01"]),
    (b"", PREFIX_WRITES),
]


@pytest.mark.parametrize("mode", ["replay", "live"])
@pytest.mark.parametrize(("prefix", "expected"), PREFIX_TABLE)
async def test_prefix_filtering(store: Store, mode: str, prefix: bytes, expected: list[bytes]) -> None:
    watch = store.watch(prefix, from_revision=store.current_revision())
    reader = await live(watch) if mode == "live" else None
    for i, key in enumerate(PREFIX_WRITES):
        assert (await within(store.create(key, b"%d" % i) if i != 5 else store.update(key, b"5"))).ok
    events = (await within(reader)) if reader is not None else []
    events += await take(watch, len(expected) - len(events))
    assert [e.kv.key for e in events] == expected
    await assert_quiet(watch)


async def test_a_prefix_with_no_writes_sees_nothing(store: Store) -> None:
    watch = store.watch(b"/c/", from_revision=0)
    await within(churn(store, KEYS, 20))
    await assert_quiet(watch, 0.1)


async def test_many_watchers_see_the_identical_stream(store: Store) -> None:
    """200 watchers from one revision, opened while the writes are under way."""
    await within(churn(store, KEYS, 10, seed=3))
    start = store.current_revision()
    watches: list[Watch] = []

    async def open_watches() -> None:
        for _ in range(200):
            watches.append(store.watch(b"/w/", from_revision=start))
            await asyncio.sleep(0)

    expected, _ = await within(asyncio.gather(churn(store, KEYS, 100, seed=4), open_watches()))
    final = store.current_revision()
    streams = await within(asyncio.gather(*(take_until(w, final) for w in watches)))
    assert revisions(streams[0]) == list(range(start + 1, final + 1))
    assert streams[0] == [expected[r] for r in range(start + 1, final + 1)]
    for stream in streams[1:]:
        assert stream == streams[0]


async def create_many(store: Store, start: int, count: int) -> dict[int, Event]:
    """Concurrent creates of /n/<i>, one in ten of them under /n/s/; returns their events."""
    keys = [b"/n/%s%05d" % (b"s/" if i % 10 == 0 else b"", i) for i in range(start, start + count)]
    results = await within(asyncio.gather(*(store.create(key, b"%d" % len(key)) for key in keys)))
    return {r.revision: event_for(key, r) for key, r in zip(keys, results, strict=True)}


@pytest.mark.parametrize("prefix", [b"/n/", b"/n/s/"])
async def test_long_replay_racing_writes(store: Store, prefix: bytes) -> None:
    """History longer than any replay chunk, a sparse prefix, and writes racing the switch to live."""
    base = store.current_revision()
    expected = await create_many(store, 0, 3000)
    watch = store.watch(prefix, from_revision=0)
    writer = asyncio.ensure_future(create_many(store, 3000, 600))
    first = await within(watch.next_batch())
    expected.update(await within(writer))
    final = store.current_revision()
    wanted = [e for r, e in sorted(expected.items()) if e.kv.key.startswith(prefix)]
    events = list(first)
    if events[-1].revision < wanted[-1].revision:
        events += await take_until(watch, wanted[-1].revision)
    assert events == wanted
    assert final == base + 3600
    await assert_quiet(watch)


async def test_next_batch_and_async_iteration(store: Store) -> None:
    d = store.current_revision() - 1
    expected = await within(churn(store, KEYS, 30, seed=5))
    batched = store.watch(b"/w/", from_revision=0)
    batches: list[Sequence[Event]] = []
    while sum(len(b) for b in batches) < 30:
        batch = await within(batched.next_batch())
        assert len(batch) >= 1
        batches.append(batch)
    iterated = store.watch(b"/w/", from_revision=0)
    events: list[Event] = []

    async def iterate() -> None:
        async for event in iterated:
            events.append(event)
            if len(events) == 30:
                break

    await within(iterate())
    assert [e for b in batches for e in b] == events == [expected[r] for r in range(2 + d, 32 + d)]


# (writes before the wait, writes during it): what next_batch(within) answers, then what the next call gets
@pytest.mark.parametrize(("before", "during"), [(0, 0), (2, 0), (0, 1), (0, 3)])
async def test_next_batch_within_a_time_answers_empty_and_loses_nothing(store: Store, before: int,
                                                                         during: int) -> None:
    watch = store.watch(b"/w/", from_revision=store.current_revision())
    for i in range(before):
        await within(store.create(b"/w/b%d" % i, b"v"))
    got: list[Event] = list(await within(watch.next_batch(0.2)))
    assert len(got) == min(before, len(got)) and bool(got) == bool(before)  # a batch already there: at once

    async def write_later() -> None:
        await asyncio.sleep(0.05)
        for i in range(during):
            await store.create(b"/w/d%d" % i, b"v")

    writer = asyncio.ensure_future(write_later())
    started = time.monotonic()
    batch = await within(watch.next_batch(0.5))
    waited = time.monotonic() - started
    await within(writer)
    if not before and not during:
        assert batch == () and waited >= 0.45  # the time passed: empty, the watch still open
    got += batch
    for _ in range(10):  # whatever the first answers left is read after: nothing was lost
        if len(got) == before + during:
            break
        got += await within(watch.next_batch(0.5))
    assert [e.kv.key for e in got] == [b"/w/b%d" % i for i in range(before)] + [b"/w/d%d" % i for i in range(during)]
    assert await within(watch.next_batch(0.05)) == ()
    watch.close()
    with pytest.raises(StopAsyncIteration):
        await within(watch.next_batch(0.05))


async def test_close_ends_iteration(store: Store) -> None:
    await within(store.create(b"/w/0", b"v"))
    closed = store.watch(b"/w/", from_revision=0)
    assert len(await take(closed, 1)) == 1
    closed.close()
    closed.close()  # idempotent
    with pytest.raises(StopAsyncIteration):
        await within(closed.next_batch())
    async for event in closed:
        raise AssertionError(f"a closed watch yielded {event}")

    waiting = store.watch(b"/w/", from_revision=store.current_revision())
    reader = asyncio.ensure_future(waiting.next_batch())
    await asyncio.sleep(0.05)
    waiting.close()
    with pytest.raises(StopAsyncIteration):
        await within(reader, 1.0)

    other = store.watch(b"/w/", from_revision=store.current_revision())
    await within(store.update(b"/w/0", b"after"))
    assert [e.kv.value for e in await take(other, 1)] == [b"after"]


SLOW_TABLE = [
    # unread writes, whether the watcher read once first, dropped
    (7, False, False),
    (7, True, False),
    (16, False, True),
    (16, True, True),
    (200, False, True),
]


@pytest.mark.parametrize(("unread", "read_first", "dropped"), SLOW_TABLE)
async def test_slow_watcher_is_dropped_and_writers_never_wait(
    open_store: OpenStore, unread: int, read_first: bool, dropped: bool
) -> None:
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, watch_queue_size=8))
    base = store.current_revision()
    slow = store.watch(b"/w/", from_revision=base)
    fast = store.watch(b"/w/", from_revision=base)
    bystander = store.watch(b"/x/", from_revision=base)
    if read_first:
        reader = await live(slow)
        await within(store.create(b"/w/first", b"v"))
        assert len(await within(reader)) == 1
        assert len(await take(fast, 1)) == 1
    written: list[int] = []
    for i in range(unread):
        result = await within(store.create(b"/w/%03d" % i, b"v"), 1.0)
        assert result.ok
        written.append(result.revision)
        assert revisions(await take(fast, 1)) == [result.revision]  # the fast watcher keeps up
    await within(store.create(b"/x/1", b"v"))
    assert len(await take(bystander, 1)) == 1
    if dropped:
        with pytest.raises(WatcherTooSlow):
            await within(slow.next_batch())
    else:
        assert revisions(await take(slow, unread)) == written
    await within(store.create(b"/w/last", b"v"))
    assert revisions(await take(fast, 1)) == [store.current_revision()]


async def test_watch_from_a_future_revision(store: Store) -> None:
    d = (await within(store.create(b"/w/0", b"v"))).revision - 2  # the create is revision 2 + d
    never = store.watch(b"/w/", from_revision=5 + d)
    started = time.monotonic()
    with pytest.raises(RevisionTooLarge) as caught:
        await within(never.next_batch())
    assert (caught.value.requested, caught.value.current) == (5 + d, 2 + d)
    assert time.monotonic() - started >= FAST.future_wait * 0.75

    arrives = store.watch(b"/w/", from_revision=4 + d)
    reader = asyncio.ensure_future(take(arrives, 1))
    await asyncio.sleep(FAST.future_wait / 4)
    for i in range(3):
        await within(store.update(b"/w/0", b"%d" % i))  # revisions 3, 4, 5
    assert revisions(await within(reader)) == [5 + d]


async def test_closing_the_store_ends_open_watches(store: Store) -> None:
    await within(store.create(b"/w/0", b"v"))
    last = (await within(store.create(b"/w/1", b"v"))).revision
    unread = store.watch(b"/w/", from_revision=0)  # history it never read
    waiting = store.watch(b"/w/", from_revision=last)
    waiting_reader = await live(waiting)
    future = store.watch(b"/w/", from_revision=last + 47)
    future_reader = asyncio.ensure_future(future.next_batch())
    await asyncio.sleep(0.01)
    await within(store.close())
    for pending in (waiting_reader, future_reader):
        with pytest.raises(StoreClosed):
            await within(pending, 1.0)

    async def drain() -> None:
        while True:
            await unread.next_batch()

    with pytest.raises(StoreClosed):
        await within(drain(), 1.0)


INVALID_WATCHES: list[tuple[str, Callable[[Any], Watch]]] = [
    ("str prefix", lambda s: s.watch("/w/", from_revision=0)),
    ("None prefix", lambda s: s.watch(None, from_revision=0)),
    ("negative revision", lambda s: s.watch(b"/w/", from_revision=-1)),
    ("str revision", lambda s: s.watch(b"/w/", from_revision="1")),
]


@pytest.mark.parametrize(("name", "open_watch"), INVALID_WATCHES, ids=[c[0] for c in INVALID_WATCHES])
async def test_invalid_watch(store: Store, name: str, open_watch: Callable[[Any], Watch]) -> None:
    with pytest.raises(InvalidArgument):
        await within(open_watch(store).next_batch(), TIMEOUT)


async def retained_by_writes(store: Store, watchers: int) -> int:
    """Bytes still allocated after 2,000 writes, with `watchers` watches opened and closed first."""
    tag = b"%d" % watchers
    for watch in [store.watch(b"/f/" + tag, from_revision=store.current_revision()) for _ in range(watchers)]:
        watch.close()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for chunk in range(20):
        await within(asyncio.gather(*(store.create(b"/f/%s/%d/%d" % (tag, chunk, i), b"v") for i in range(100))))
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before


async def test_closed_watches_hold_nothing(open_store: OpenStore) -> None:
    """500 closed watches would hold 2,000 queued events each (~8 MB) if close() did not free them."""
    tracemalloc.start()
    try:
        first = await open_store()
        baseline = await retained_by_writes(first, 0)
        await within(first.close())
        with_closed = await retained_by_writes(await open_store(), 500)
    finally:
        tracemalloc.stop()
    assert with_closed - baseline < 1 << 20, (baseline, with_closed)


@pytest.mark.parametrize("other_prefix_writes", [0, 5])
async def test_progress_says_how_far_the_stream_has_got(store: Store, other_prefix_writes: int) -> None:
    """progress() never passes an event not yet handed out, and follows the store while nothing is queued."""
    start = store.current_revision()
    watch = store.watch(b"/p/", from_revision=start)
    assert watch.progress() == start  # replay not run yet: only what is known handed out
    first = await within(store.create(b"/p/a", b"1"))
    batch = await within(watch.next_batch())
    assert [e.revision for e in batch] == [first.revision]
    assert watch.progress() == first.revision
    for i in range(other_prefix_writes):  # changes nobody under /p/ sees still move progress on
        await within(store.create(b"/q/%d" % i, b"v"))
    # A shared store (etcd) learns of a write through its one watch, a moment after the write returns.
    for _ in range(100):
        if watch.progress() == store.current_revision():
            break
        await asyncio.sleep(0.01)
    assert watch.progress() == store.current_revision()
    pending = await within(store.create(b"/p/b", b"2"))
    assert watch.progress() < pending.revision  # queued, not handed out
    assert [e.revision for e in await within(watch.next_batch())] == [pending.revision]
    assert watch.progress() == pending.revision
    watch.close()


def put(i: int, size: int, prefix: bytes = b"/b/") -> Event:
    """A create of `size` value bytes at revision i."""
    return Event(EventType.PUT, KeyValue(prefix + b"%d" % i, b"x" * size, i, i, 1), None)


BOUNDED = [
    # events, value bytes each, count bound, byte bound, whether the stuck watcher is dropped
    (8, 10, 8, 1 << 20, False),
    (9, 10, 8, 1 << 20, True),  # one event past the count
    (3, 1_000, 100, 4 * (1_000 + 200 + 5), False),
    (5, 1_000, 100, 4 * (1_000 + 200 + 5), True),  # few events, but past the bytes
    (1, 10_000, 100, 5_000, False),  # one event larger than the whole bound is not "behind"
    (2, 10_000, 100, 5_000, True),  # but one more is
]


@pytest.mark.parametrize(("count", "size", "count_limit", "byte_limit", "dropped"), BOUNDED)
async def test_a_stuck_watcher_is_bounded_in_events_and_bytes_then_freed(
    count: int, size: int, count_limit: int, byte_limit: int, dropped: bool
) -> None:
    """The events held for a watcher that never reads stay within both bounds; once it is dropped (or has
    read) nothing is held, and the others are not held up."""
    broadcaster = Broadcaster(count_limit, byte_limit=byte_limit)
    stuck, reader, other = broadcaster.subscribe(b"/b/"), broadcaster.subscribe(b"/b/"), broadcaster.subscribe(b"/o/")
    for i in range(1, count + 1):
        broadcaster.publish([put(i, size), put(i, size, b"/o/")])
        assert [e.revision for e in reader.take_nowait()] == [i]  # readers keep up, whatever the stuck one does
        assert [e.revision for e in other.take_nowait()] == [i]
        assert broadcaster.held_events == stuck.unread <= count_limit
        assert broadcaster.held_bytes == stuck.unread_bytes <= max(byte_limit, size + 300)
    assert stuck.closed is dropped
    assert broadcaster.subscriber_count == (2 if dropped else 3)
    if dropped:
        with pytest.raises(WatcherTooSlow):
            stuck.take_nowait()
    else:
        batches = drain(stuck)  # one published batch at a time
        assert [[e.revision for e in batch] for batch in batches] == [[i] for i in range(1, count + 1)]
    assert (broadcaster.held_events, broadcaster.held_bytes) == (0, 0)
    for sub in (stuck, reader, other):
        sub.close()
    assert broadcaster.subscriber_count == 0


async def test_writers_pass_idle_watchers_that_are_dropped_and_forgotten(open_store: OpenStore) -> None:
    """200 watchers that never read: every write completes, each watcher is dropped once it falls a bound
    behind, and afterwards the store holds no event for them."""
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, watch_queue_size=8))
    idle = [store.watch(b"/i/", from_revision=store.current_revision()) for _ in range(200)]
    first = [asyncio.ensure_future(watch.next_batch()) for watch in idle[:100]]  # these read one batch, once
    await asyncio.sleep(0.05)
    for i in range(20):
        assert (await within(store.create(b"/i/%d" % i, b"v" * 1_000), 1.0)).ok
        await asyncio.sleep(0)
    assert all(len(batch) >= 1 for batch in await within(asyncio.gather(*first)))
    for i in range(20, 30):
        assert (await within(store.create(b"/i/%d" % i, b"v" * 1_000), 1.0)).ok
    backend: Any = getattr(store, "inner", store)  # the backend, under an EncryptedStore too
    broadcaster = backend._broadcaster
    assert (broadcaster.subscriber_count, broadcaster.held_events, broadcaster.held_bytes) == (0, 0, 0)
    for watch in idle:
        with pytest.raises(WatcherTooSlow):
            await within(watch.next_batch())


def drain(sub: Subscriber) -> list[Sequence[Event]]:
    """What take_nowait hands out until nothing is left."""
    got = []
    while batch := sub.take_nowait():
        got.append(batch)
    return got


@pytest.mark.parametrize(("batches", "behind"), [
    ([[1]], 0),
    ([[1, 2, 3]], 0),
    ([[1], [2, 3], [4]], 0),
    ([[1], [2, 3], [4]], 2),  # a watcher two batches behind reads the same objects, later
])
def test_watchers_of_a_prefix_take_each_published_batch_as_one_shared_object(
    batches: list[list[int]], behind: int
) -> None:
    """What the layers above do per batch (render, frame) they can do once for all the prefix's watchers: each
    reads every batch as published, as the same object, however far behind it is."""
    broadcaster = Broadcaster(100)
    subs = [broadcaster.subscribe(b"/b/") for _ in range(3)]
    late = broadcaster.subscribe(b"/b/")
    taken: list[list[Sequence[Event]]] = [[] for _ in subs]
    for number, published in enumerate(batches):
        broadcaster.publish([put(i, 10) for i in published])
        for sub, got in zip(subs, taken, strict=True):
            got.append(sub.take_nowait())
        if number + 1 == len(batches) - behind:
            late_got = drain(late)
    late_got.extend(drain(late))
    assert [[e.revision for e in batch] for batch in late_got] == batches
    for got in [*taken, late_got]:
        assert all(mine is first for mine, first in zip(got, taken[0], strict=True))
    assert (broadcaster.held_events, broadcaster.held_bytes) == (0, 0)


BATCH_KEYS = [[b"/a/1", b"/ab", b"/a/2"], [b"/b/1"], [b"/a", b"/a/1", b"\xff\x01", b"/a/"], [b"/b"]]


@pytest.mark.parametrize("closed", [(), (b"/a/",), (b"/a/", b"/a")])
def test_every_prefix_watched_at_once_takes_exactly_its_events(closed: tuple[bytes, ...]) -> None:
    """Prefixes of many lengths watched together (the whole store, a key's exact bytes, a prefix longer than some
    keys), some of them closed before the writes: each open watcher reads its prefix's events of each batch, in
    order, and no other."""
    broadcaster = Broadcaster(100)
    subs = {prefix: broadcaster.subscribe(prefix) for prefix, _ in PREFIX_TABLE}
    subs[b"/a/1"] = broadcaster.subscribe(b"/a/1")
    subs[b"/a/10/"] = broadcaster.subscribe(b"/a/10/")
    for prefix in closed:
        subs.pop(prefix).close()
    revision = 0
    for keys in BATCH_KEYS:
        batch = []
        for key in keys:
            revision += 1
            batch.append(Event(EventType.PUT, KeyValue(key, b"x", revision, revision, 1), None))
        broadcaster.publish(batch)
    for prefix, sub in subs.items():
        got = [e.kv.key for batch in drain(sub) for e in batch]
        assert got == [k for keys in BATCH_KEYS for k in keys if k.startswith(prefix)], prefix


@pytest.mark.parametrize(("before", "change", "after"), [
    ((b"/a/",), ("watch", b"/a/"), (b"/a/", b"/a/")),  # a second watcher of a prefix already watched
    ((b"/a/",), ("watch", b"/"), (b"/a/", b"/")),  # a shorter prefix of the same keys' directory
    ((b"/a/",), ("watch", b"/a/x"), (b"/a/", b"/a/x")),  # one reaching into the keys' names
    ((b"/b/",), ("watch", b"/a/"), (b"/b/", b"/a/")),  # the directory matched nothing before
    ((b"/a/", b"/"), ("close", b"/"), (b"/a/",)),
    ((b"/a/", b"/a/x"), ("close", b"/a/x"), (b"/a/",)),
])
def test_a_publish_follows_the_prefixes_watched_when_it_runs(
        before: tuple[bytes, ...], change: tuple[str, bytes], after: tuple[bytes, ...]) -> None:
    """Keys of one directory published before and after a prefix is watched or closed: each publish gives each
    key to exactly the prefixes open then, whatever an earlier publish to the same directory found."""
    broadcaster = Broadcaster(100)
    subs = [(prefix, broadcaster.subscribe(prefix)) for prefix in before]
    keys = [b"/a/x1", b"/a/y", b"/b/x"]
    revision = 0

    def publish_and_check(open_now: list[tuple[bytes, Subscriber]]) -> None:
        nonlocal revision
        batch = []
        for key in keys:
            revision += 1
            batch.append(Event(EventType.PUT, KeyValue(key, b"x", revision, revision, 1), None))
        broadcaster.publish(batch)
        for prefix, sub in open_now:
            got = [e.kv.key for taken in drain(sub) for e in taken]
            assert got == [k for k in keys if k.startswith(prefix)], prefix

    publish_and_check(subs)
    action, prefix = change
    if action == "watch":
        subs.append((prefix, broadcaster.subscribe(prefix)))
    else:
        closing = next(sub for watched, sub in subs if watched == prefix)
        closing.close()
        subs = [(watched, sub) for watched, sub in subs if sub is not closing]
    assert sorted(watched for watched, _ in subs) == sorted(after)
    publish_and_check(subs)
    assert (broadcaster.held_events, broadcaster.held_bytes) == (0, 0)


@pytest.mark.parametrize(("watched", "closed"), [
    ((), ()),
    ((b"/a/",), ()),
    ((b"/a/", b"/a/10/", b"\xff"), ()),
    ((b"/a/1", b"/b"), ()),
    ((b"/a/", b"/a"), (b"/a/",)),
    ((b"/a/", b"/b/"), (b"/a/", b"/b/")),  # every watcher gone: nothing wanted
    ((b"", b"/a/"), ()),  # the whole store
])
def test_wanted_keys_are_those_a_publish_gives_a_watcher(watched: tuple[bytes, ...], closed: tuple[bytes, ...]) -> None:
    """A store that reads others' writes from its log passes over those `wants` refuses: it must refuse exactly
    the keys a publish would give no open watcher."""
    broadcaster = Broadcaster(100)
    subs = {prefix: broadcaster.subscribe(prefix) for prefix in watched}
    for prefix in closed:
        subs.pop(prefix).close()
    keys = [k for batch in BATCH_KEYS for k in batch] + [b"", b"/a/10/x", b"/c", b"\xff"]
    for revision, key in enumerate(keys, 1):
        broadcaster.publish([Event(EventType.PUT, KeyValue(key, b"x", revision, revision, 1), None)])
        given = any([drain(sub) for sub in subs.values()])  # every watcher drained
        assert broadcaster.wants(key) is given is any(key.startswith(prefix) for prefix in subs), key


@pytest.mark.parametrize("arrives", [False, True])  # the awaited revision acknowledged in the same loop turn
async def test_a_wait_for_a_revision_that_is_cancelled_ends_cancelled(arrives: bool) -> None:
    """A task stopped while it waits for a revision stops, even when the revision arrives in the same loop turn
    (asyncio.wait_for on Python 3.11 returned the result then, and the task went on waiting for the next one)."""
    from storage.clock import RevisionClock

    clock = RevisionClock(1)
    task = asyncio.get_running_loop().create_task(clock.wait_for(2, TIMEOUT))
    await asyncio.sleep(0)  # waiting now
    if arrives:
        clock.advance(2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task)
