"""Compaction: history before C is gone, everything from C on is exactly as it was.

A compaction that loses one live key, or a tombstone's effect, or a watch's `prev`
value, corrupts every client that relies on resourceVersion. These tests record the
whole store at every revision first, compact, and then demand that reads and watches
at or above C still return exactly the recorded answers, and that older ones fail
with `Compacted` naming C.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from storage import Compacted, Event, InvalidArgument, KeyValue, Store, StoreOptions
from tests.storage.conftest import EMBEDDED, FAST, OpenStore, churn, event_for, revisions, take, take_until, within


@pytest.fixture(params=EMBEDDED)
def backend(request: pytest.FixtureRequest) -> str:
    """The embedded backends only: these tests count revisions from 1 (see conftest.EMBEDDED)."""
    name: str = request.param
    return name

History = dict[int, list[KeyValue]]


Script = list[tuple[bytes, Callable[[Store], Awaitable[Any]]]]

BEFORE_CHURN: Script = [
    (b"/c/kept", lambda s: s.create(b"/c/kept", b"1")),  # r2
    (b"/c/deleted-later", lambda s: s.create(b"/c/deleted-later", b"1")),  # r3
    (b"/c/deleted-early", lambda s: s.create(b"/c/deleted-early", b"1")),  # r4
    (b"/c/deleted-early", lambda s: s.delete(b"/c/deleted-early")),  # r5
    (b"/c/kept", lambda s: s.update(b"/c/kept", b"2")),  # r6: its last write
]
AFTER_CHURN: Script = [
    (b"/c/deleted-later", lambda s: s.delete(b"/c/deleted-later")),  # r37
    (b"/c/created-after", lambda s: s.create(b"/c/created-after", b"1")),  # r38
]


async def run_script(store: Store, script: Script) -> dict[int, Event]:
    events: dict[int, Event] = {}
    for key, write in script:
        result = await within(write(store))
        events[result.revision] = event_for(key, result)
    return events


async def build_history(store: Store) -> tuple[History, dict[int, Event]]:
    """38 revisions: scripted keys around the compaction points, churn (r7..r36), later writes."""
    events = await run_script(store, BEFORE_CHURN)
    events.update(await churn(store, [b"/c/churn/%d" % i for i in range(6)], 30, seed=9))
    events.update(await run_script(store, AFTER_CHURN))
    assert store.current_revision() == 38
    states = {r: list((await within(store.list(b"", at_revision=r))).kvs) for r in range(1, 39)}
    return states, events


async def assert_history_from(store: Store, compacted: int, states: History, events: dict[int, Event]) -> None:
    """Every read at or above `compacted` and every watch from it match what was recorded."""
    keys = {kv.key for state in states.values() for kv in state}
    for rev in range(compacted, store.current_revision() + 1):
        assert list((await within(store.list(b"", at_revision=rev))).kvs) == states[rev], rev
        assert (await within(store.count(b"/c/", at_revision=rev))).count == len(states[rev])
        page = await within(store.list(b"/c/", at_revision=rev, limit=2))
        assert (list(page.kvs), page.remaining) == (states[rev][:2], max(0, len(states[rev]) - 2))
        for key in keys:
            expected = next((kv for kv in states[rev] if kv.key == key), None)
            assert (await within(store.get(key, at_revision=rev))).kv == expected, (rev, key)
    final = store.current_revision()
    watch = store.watch(b"/c/", from_revision=compacted)
    replayed = await take_until(watch, final) if final > compacted else []
    assert replayed == [events[r] for r in range(compacted + 1, final + 1)]
    watch.close()


BELOW: list[tuple[str, Callable[[Store, int], Awaitable[object]]]] = [
    ("get", lambda s, r: s.get(b"/c/kept", at_revision=r)),
    ("list", lambda s, r: s.list(b"/c/", at_revision=r)),
    ("list page", lambda s, r: s.list(b"/c/", at_revision=r, start_after=b"/c/a", limit=1)),
    ("count", lambda s, r: s.count(b"/c/", at_revision=r)),
    ("watch", lambda s, r: s.watch(b"/c/", from_revision=r).next_batch()),
]


@pytest.mark.parametrize("compact_to", [2, 6, 20, 37, 38])
async def test_compaction_keeps_everything_from_c_on(store: Store, compact_to: int) -> None:
    states, events = await build_history(store)
    assert await within(store.compact(compact_to)) == 38
    assert store.compacted_revision() == compact_to
    assert store.current_revision() == 38
    await assert_history_from(store, compact_to, states, events)
    for name, read in BELOW:
        for rev in {1, compact_to // 2, compact_to - 1} - {0}:
            with pytest.raises(Compacted) as caught:
                await within(read(store, rev))
            assert (caught.value.requested, caught.value.compact_revision) == (rev, compact_to), name
    if compact_to > 1:
        with pytest.raises(Compacted):
            await within(store.watch(b"", from_revision=0).next_batch())


async def test_state_at_c_includes_keys_deleted_later_and_not_those_deleted_before(store: Store) -> None:
    await within(build_history(store))
    await within(store.compact(20))
    at_c = {kv.key: kv for kv in (await within(store.list(b"/c/", at_revision=20))).kvs}
    assert at_c[b"/c/kept"] == KeyValue(b"/c/kept", b"2", 2, 6, 2)
    assert at_c[b"/c/deleted-later"] == KeyValue(b"/c/deleted-later", b"1", 3, 3, 1)
    assert b"/c/deleted-early" not in at_c
    assert b"/c/created-after" not in at_c
    watch = store.watch(b"/c/deleted-later", from_revision=20)
    (deleted,) = await take(watch, 1)
    assert deleted.revision == 37 and deleted.prev == at_c[b"/c/deleted-later"]


NO_OPS = [20, 19, 2, 1]


@pytest.mark.parametrize("again", NO_OPS)
async def test_compacting_to_or_below_the_compacted_revision_does_nothing(store: Store, again: int) -> None:
    states, events = await build_history(store)
    await within(store.compact(20))
    assert await within(store.compact(again)) == 38
    assert store.compacted_revision() == 20
    await assert_history_from(store, 20, states, events)


@pytest.mark.parametrize("beyond", [1, 2, 100])
async def test_compacting_beyond_the_current_revision_is_invalid(store: Store, beyond: int) -> None:
    states, events = await build_history(store)
    with pytest.raises(InvalidArgument):
        await within(store.compact(store.current_revision() + beyond))
    assert store.compacted_revision() == 0
    await assert_history_from(store, 1, states, events)


async def test_compacting_to_the_current_revision(store: Store) -> None:
    states, _ = await build_history(store)
    await within(store.compact(38))
    assert list((await within(store.list(b""))).kvs) == states[38]
    watch = store.watch(b"/c/", from_revision=38)
    result = await within(store.update(b"/c/kept", b"3"))
    assert result.prev == KeyValue(b"/c/kept", b"2", 2, 6, 2)
    assert await take(watch, 1) == [event_for(b"/c/kept", result)]


async def test_many_revisions_in_small_batches_while_writers_run(open_store: OpenStore) -> None:
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, compact_batch=7))
    events: dict[int, Event] = {}
    for part in await within(
        asyncio.gather(*(churn(store, [b"/c/%d/%d" % (w, i) for i in range(5)], 100, seed=w) for w in range(6)))
    ):
        events.update(part)
    assert sorted(events) == list(range(2, 602))
    target = 500
    states = {r: list((await within(store.list(b"", at_revision=r))).kvs) for r in range(target, 602)}

    async def keep_writing() -> list[int]:
        done = []
        for i in range(50):
            done.append((await within(store.create(b"/d/%d" % i, b"v"), 2.0)).revision)
        return done

    _, written = await within(asyncio.gather(store.compact(target), keep_writing()))
    assert store.compacted_revision() == target
    assert len(written) == 50
    for rev, state in states.items():
        assert list((await within(store.list(b"", at_revision=rev))).kvs) == state
    watch = store.watch(b"/c/", from_revision=target)
    assert await take_until(watch, 601) == [events[r] for r in range(target + 1, 602)]
    with pytest.raises(Compacted):
        await within(store.get(b"/c/0/0", at_revision=target - 1))


async def test_compacted_revision_survives_reopen(open_lmdb: OpenStore) -> None:
    first = await open_lmdb()
    states, events = await build_history(first)
    await within(first.compact(20))
    await within(first.close())
    second = await open_lmdb()
    assert (second.current_revision(), second.compacted_revision()) == (38, 20)
    with pytest.raises(Compacted) as caught:
        await within(second.get(b"/c/kept", at_revision=19))
    assert caught.value.compact_revision == 20
    await assert_history_from(second, 20, states, events)


async def test_automatic_compaction_keeps_the_retained_revisions(open_store: OpenStore) -> None:
    keep = 20
    store = await open_store(
        StoreOptions(
            sync=False,
            future_wait=0.2,
            compact_interval=0.02,
            retention_seconds=0.05,
            retention_revisions=keep,
        )
    )
    seen: list[int] = []

    async def sample_until(condition: Callable[[], bool]) -> None:
        while not condition():
            assert store.current_revision() - store.compacted_revision() + 1 >= keep
            seen.append(store.compacted_revision())
            await asyncio.sleep(0.01)

    await within(churn(store, [b"/a/%d" % i for i in range(10)], 100, seed=1))
    await within(sample_until(lambda: store.compacted_revision() > 0), 5.0)
    first = store.compacted_revision()
    assert first <= store.current_revision() - keep + 1
    for round_ in range(5):  # it goes on compacting as history grows, never past the retained window
        await within(churn(store, [b"/b/%d" % round_], 20, seed=round_))
        await asyncio.sleep(0.03)
        assert store.current_revision() - store.compacted_revision() + 1 >= keep
    await within(sample_until(lambda: store.compacted_revision() > first), 5.0)
    assert seen == sorted(seen)
    oldest = store.compacted_revision()
    await within(store.get(b"/a/0", at_revision=oldest))
    with pytest.raises(Compacted):
        await within(store.get(b"/a/0", at_revision=oldest - 1))


RETENTION_TABLE = [
    # retention_seconds, retention_revisions: either alone keeps all 100 revisions
    (60.0, 5),
    (0.01, 1_000),
]


@pytest.mark.parametrize(("seconds", "revisions_kept"), RETENTION_TABLE)
async def test_automatic_compaction_respects_both_retention_measures(
    open_store: OpenStore, seconds: float, revisions_kept: int
) -> None:
    options = StoreOptions(
        sync=False,
        future_wait=FAST.future_wait,
        compact_interval=0.02,
        retention_seconds=seconds,
        retention_revisions=revisions_kept,
    )
    store = await open_store(options)
    await within(churn(store, [b"/a/%d" % i for i in range(10)], 100))
    started = time.monotonic()
    while time.monotonic() - started < 0.3:
        assert store.compacted_revision() == 0
        await asyncio.sleep(0.02)
    watch = store.watch(b"/a/", from_revision=0)
    assert revisions(await take(watch, 100)) == list(range(2, 102))
