"""Compaction: history before C is gone, everything from C on is exactly as it was.

A compaction that loses one live key, or a tombstone's effect, or a watch's `prev`
value, corrupts every client that relies on resourceVersion. These tests record the
whole store at every revision first, compact, and then demand that reads and watches
at or above C still return exactly the recorded answers, and that older ones fail
with `Compacted` naming C.

Revisions are written as on a fresh embedded store (the first write is r2) and read through
`at`, the store's revision at open: on etcd, whose revision is the whole cluster's, r2 is the
first write after open. The automatic compactor's policy differs by backend (storage/compactor.py
samples for the embedded stores; cores on etcd take turns as kube-apiserver's do,
storage/etcd/compactor.py), so each has its own tests here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from storage import Compacted, Event, InvalidArgument, KeyValue, Store, StoreOptions
from storage.etcd import EtcdStore
from storage.etcd.client import Stubs, open_channel
from storage.etcd.pb.etcdserverpb import rpc_pb2
from tests.storage.conftest import EMBEDDED, FAST, OpenStore, churn, event_for, revisions, take, take_until, within

embedded = pytest.mark.parametrize("backend", EMBEDDED, indirect=True)


class Offset:
    """Revision r of a fresh embedded store, on this store: r - 1 + the revision at open."""

    def __init__(self, store: Store) -> None:
        self.base = store.current_revision() - 1

    def __call__(self, revision: int) -> int:
        return self.base + revision


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


async def build_history(store: Store, at: Offset) -> tuple[History, dict[int, Event]]:
    """38 revisions: scripted keys around the compaction points, churn (r7..r36), later writes.

    Keyed by the store's revisions (at(r)); `states` holds what `list(b"")` shows at each."""
    events = await run_script(store, BEFORE_CHURN)
    events.update(await churn(store, [b"/c/churn/%d" % i for i in range(6)], 30, seed=9))
    events.update(await run_script(store, AFTER_CHURN))
    assert store.current_revision() == at(38)
    states = {r: list((await within(store.list(b"", at_revision=r))).kvs) for r in range(at(1), at(39))}
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
    at = Offset(store)
    states, events = await build_history(store, at)
    assert await within(store.compact(at(compact_to))) == at(38)
    assert store.compacted_revision() == at(compact_to)
    assert store.current_revision() == at(38)
    await assert_history_from(store, at(compact_to), states, events)
    for name, read in BELOW:
        for rev in {at(1), at(compact_to // 2), at(compact_to) - 1} - {at(0)}:
            with pytest.raises(Compacted) as caught:
                await within(read(store, rev))
            assert (caught.value.requested, caught.value.compact_revision) == (rev, at(compact_to)), name
    if compact_to > 1:
        with pytest.raises(Compacted):
            await within(store.watch(b"", from_revision=0).next_batch())


async def test_state_at_c_includes_keys_deleted_later_and_not_those_deleted_before(store: Store) -> None:
    at = Offset(store)
    await within(build_history(store, at))
    await within(store.compact(at(20)))
    at_c = {kv.key: kv for kv in (await within(store.list(b"/c/", at_revision=at(20)))).kvs}
    assert at_c[b"/c/kept"] == KeyValue(b"/c/kept", b"2", at(2), at(6), 2)
    assert at_c[b"/c/deleted-later"] == KeyValue(b"/c/deleted-later", b"1", at(3), at(3), 1)
    assert b"/c/deleted-early" not in at_c
    assert b"/c/created-after" not in at_c
    watch = store.watch(b"/c/deleted-later", from_revision=at(20))
    (deleted,) = await take(watch, 1)
    assert deleted.revision == at(37) and deleted.prev == at_c[b"/c/deleted-later"]


NO_OPS = [20, 19, 2, 1]


@pytest.mark.parametrize("again", NO_OPS)
async def test_compacting_to_or_below_the_compacted_revision_does_nothing(store: Store, again: int) -> None:
    at = Offset(store)
    states, events = await build_history(store, at)
    await within(store.compact(at(20)))
    assert await within(store.compact(at(again))) == at(38)
    assert store.compacted_revision() == at(20)
    await assert_history_from(store, at(20), states, events)


@pytest.mark.parametrize("beyond", [1, 2, 100])
async def test_compacting_beyond_the_current_revision_is_invalid(store: Store, beyond: int) -> None:
    at = Offset(store)
    compacted = store.compacted_revision()  # 0 on a fresh embedded store; etcd may have been compacted before
    states, events = await build_history(store, at)
    with pytest.raises(InvalidArgument):
        await within(store.compact(store.current_revision() + beyond))
    assert store.compacted_revision() == compacted
    await assert_history_from(store, at(1), states, events)


async def test_compacting_to_the_current_revision(store: Store) -> None:
    at = Offset(store)
    states, _ = await build_history(store, at)
    await within(store.compact(at(38)))
    assert list((await within(store.list(b""))).kvs) == states[at(38)]
    watch = store.watch(b"/c/", from_revision=at(38))
    result = await within(store.update(b"/c/kept", b"3"))
    assert result.prev == KeyValue(b"/c/kept", b"2", at(2), at(6), 2)
    assert await take(watch, 1) == [event_for(b"/c/kept", result)]


async def test_many_revisions_in_small_batches_while_writers_run(open_store: OpenStore) -> None:
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, compact_batch=7))
    at = Offset(store)
    events: dict[int, Event] = {}
    for part in await within(
        asyncio.gather(*(churn(store, [b"/c/%d/%d" % (w, i) for i in range(5)], 100, seed=w) for w in range(6)))
    ):
        events.update(part)
    assert sorted(events) == list(range(at(2), at(602)))
    target = at(500)
    states = {r: list((await within(store.list(b"", at_revision=r))).kvs) for r in range(target, at(602))}

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
    assert await take_until(watch, at(601)) == [events[r] for r in range(target + 1, at(602))]
    with pytest.raises(Compacted):
        await within(store.get(b"/c/0/0", at_revision=target - 1))


async def test_compacted_revision_survives_reopen(open_lmdb: OpenStore) -> None:
    first = await open_lmdb()
    states, events = await build_history(first, Offset(first))
    await within(first.compact(20))
    await within(first.close())
    second = await open_lmdb()
    assert (second.current_revision(), second.compacted_revision()) == (38, 20)
    with pytest.raises(Compacted) as caught:
        await within(second.get(b"/c/kept", at_revision=19))
    assert caught.value.compact_revision == 20
    await assert_history_from(second, 20, states, events)


@embedded
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
    # with no more writes, compaction settles at the retained window's edge, which stays readable
    edge = store.current_revision() - keep
    await within(sample_until(lambda: store.compacted_revision() == edge), 5.0)
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


@embedded
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


# -- etcd: the cores over one cluster take turns compacting it (storage/etcd/compactor.py) ----------------

on_etcd = pytest.mark.parametrize("backend", ["etcd"], indirect=True)
ROUND = 0.2  # seconds: the compaction interval (retention_seconds) these tests run with


def etcd(store: Store) -> EtcdStore:
    assert isinstance(store, EtcdStore)
    return store


async def compaction_rounds_won(store: EtcdStore) -> int:
    """The compaction key's version: how many rounds any core has won (kube's shared 'compact time')."""
    channel = open_channel(store.config)
    try:
        kvs = (await within(Stubs(channel).kv.Range(rpc_pb2.RangeRequest(key=store.compactor.key)))).kvs
        return int(kvs[0].version) if kvs else 0
    finally:
        await channel.close()


async def write_for(store: Store, seconds: float) -> None:
    """Keeps the cluster's revision moving, as live clients do."""
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        await within(store.update(b"/tick", b"%d" % step) if step else store.create(b"/tick", b"0"))
        step += 1
        await asyncio.sleep(0.01)


ETCD_COMPACTION = [
    # retention_revisions, whether anything is compacted: the revision floor holds even when a core wins
    (0, True),
    (100_000, False),
]


@on_etcd
@pytest.mark.parametrize(("keep", "compacts"), ETCD_COMPACTION)
async def test_cores_on_one_etcd_compact_it_once_per_round(open_store: OpenStore, keep: int, compacts: bool) -> None:
    options = StoreOptions(sync=False, future_wait=FAST.future_wait, compact_interval=1,
                           retention_seconds=ROUND, retention_revisions=keep)
    first, second = etcd(await open_store(options)), etcd(await open_store(options))
    opened_at = first.current_revision()
    started = time.monotonic()
    await write_for(first, 8 * ROUND)
    rounds = (time.monotonic() - started) / ROUND
    won = await compaction_rounds_won(first)
    compactions = [s.compactor.compactions for s in (first, second)]
    # One winner a round between both cores (each trying every round would be twice as many).
    assert 0.5 * rounds <= won <= rounds + 1, (won, rounds)
    if not compacts:
        assert compactions == [0, 0] and first.compacted_revision() == second.compacted_revision()
        await within(first.get(b"/tick", at_revision=opened_at))
        return
    assert 0 < sum(compactions) <= won, compactions  # a round's loser does not compact
    # Reading at the oldest revision races the next round: the compactors stop first, and a store opened after
    # that (with no compactor of its own) learns where etcd's compaction settled.
    for store in (first, second):
        await within(store.compactor.stop())
    await asyncio.sleep(ROUND)  # a Compact sent just before its compactor stopped is applied by now
    oldest = etcd(await open_store()).compacted_revision()
    assert oldest >= max(first.compacted_revision(), second.compacted_revision()) and oldest > opened_at
    await within(first.get(b"/tick", at_revision=oldest))
    with pytest.raises(Compacted):
        await within(first.get(b"/tick", at_revision=opened_at))


@on_etcd
async def test_when_a_core_stops_the_others_go_on_compacting(open_store: OpenStore) -> None:
    options = StoreOptions(sync=False, future_wait=FAST.future_wait, compact_interval=1,
                           retention_seconds=ROUND, retention_revisions=0)
    first, second = etcd(await open_store(options)), etcd(await open_store(options))
    await write_for(first, 4 * ROUND)
    assert first.compactor.compactions + second.compactor.compactions > 0
    await within(first.close())
    before = (second.compactor.compactions, second.compacted_revision())
    await write_for(second, 4 * ROUND)  # the survivor wins every round from the one after next
    assert second.compactor.compactions >= before[0] + 1
    assert second.compacted_revision() > before[1]


@on_etcd
@pytest.mark.parametrize("behind", [0, 1, 2, 7, 40])  # how far below the newest revision etcd is compacted
async def test_a_store_opened_on_compacted_etcd_knows_the_compacted_revision(open_store: OpenStore,
                                                                              behind: int) -> None:
    first = etcd(await open_store())
    for i in range(50):
        await within(first.create(b"/probe/%d" % i, b"v"))
    target = first.current_revision() - behind
    await within(first.compact(target))
    second = etcd(await open_store())  # opened at once: etcd answers it before it has finished compacting
    assert second.compacted_revision() == target
    with pytest.raises(Compacted) as caught:
        await within(second.get(b"/probe/0", at_revision=target - 1))
    assert caught.value.compact_revision == target
    assert (await within(second.get(b"/probe/0", at_revision=target))).revision >= target
