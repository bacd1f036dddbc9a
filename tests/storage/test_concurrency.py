"""Racing writers: compare-and-swap is the only lock the server has.

Every Kubernetes update is a read, a change and a compare-and-swap on the
resourceVersion read. If two racing updates could both win, or a write could
vanish inside a group-committed batch, objects would silently lose changes. Here
many coroutines race on one key and on many keys, and the history is then checked
revision by revision.
"""

from __future__ import annotations

import asyncio

import pytest

from storage import Event, EventType, Outcome, Store
from storage.errors import RevisionTooLarge
from storage.etcd import EtcdStore
from tests.storage.conftest import revisions, take_until, within

COUNTER = b"/counter"


async def increment(store: Store, times: int) -> tuple[int, int]:
    """CAS-increment COUNTER `times` times, retrying on conflict; (wins, conflicts)."""
    current = (await store.get(COUNTER)).kv
    assert current is not None
    wins = conflicts = 0
    while wins < times:
        result = await store.update(
            COUNTER, b"%d" % (int(current.value) + 1), expected_mod_revision=current.mod_revision
        )
        if result.outcome is Outcome.CONFLICT:
            conflicts += 1
        else:
            assert result.ok, result
            wins += 1
        assert result.current is not None
        current = result.current
    return wins, conflicts


@pytest.mark.parametrize(("workers", "times"), [(32, 10), (4, 50)])
async def test_racing_compare_and_swap_loses_nothing(store: Store, workers: int, times: int) -> None:
    created = await within(store.create(COUNTER, b"0"))
    results = await within(asyncio.gather(*(increment(store, times) for _ in range(workers))), 30.0)
    total = workers * times
    assert sum(wins for wins, _ in results) == total
    final = (await within(store.get(COUNTER))).kv
    assert final is not None
    assert int(final.value) == total
    assert (final.mod_revision, final.version) == (created.revision + total, total + 1)
    assert store.current_revision() == created.revision + total, "a failed compare raised the revision"

    events = await take_until(store.watch(COUNTER, from_revision=created.revision), final.mod_revision)
    assert revisions(events) == list(range(created.revision + 1, final.mod_revision + 1))
    for event in events:
        assert event.type is EventType.PUT and event.prev is not None
        assert int(event.kv.value) == int(event.prev.value) + 1, "two writers won the same revision"
    for rev in range(created.revision, final.mod_revision + 1, 7):
        got = (await within(store.get(COUNTER, at_revision=rev))).kv
        assert got is not None and int(got.value) == rev - created.revision


async def test_racing_creates_of_one_key_have_one_winner(store: Store) -> None:
    base = store.current_revision()
    results = await within(asyncio.gather(*(store.create(b"/once", b"%d" % i) for i in range(50))))
    winners = [r for r in results if r.ok]
    assert len(winners) == 1
    winner = winners[0].current
    for loser in (r for r in results if not r.ok):
        assert (loser.outcome, loser.current) == (Outcome.EXISTS, winner)
    assert store.current_revision() == base + 1


async def _watched(store: Store, from_revision: int, through: int) -> list[Event]:
    """Events under /many/ after from_revision through `through`, asking again, as a client does, while the
    store answers that from_revision is too large: the etcd store hears of commits through its watch of etcd,
    which under load can lag the Txns' answers by more than the fixture's future_wait."""
    while True:
        try:
            return await take_until(store.watch(b"/many/", from_revision=from_revision), through)
        except RevisionTooLarge:
            await asyncio.sleep(0.05)


async def test_racing_writes_to_many_keys_get_distinct_contiguous_revisions(store: Store) -> None:
    # etcd's revision is the cluster's: the session's etcd may be written by other tests' servers meanwhile (a
    # Lease renewed), so there the revisions are distinct and ordered, and contiguous only in an exclusive store.
    exclusive = not isinstance(store, EtcdStore)
    base = store.current_revision()
    results = await within(asyncio.gather(*(store.create(b"/many/%04d" % i, b"%d" % i) for i in range(500))))
    created = sorted(r.revision for r in results)
    assert len(set(created)) == 500 and created[0] > base
    if exclusive:
        assert created == list(range(base + 1, base + 501))
    by_revision = {r.revision: r.current for r in results}
    listed = (await within(store.list(b"/many/"))).kvs
    assert len(listed) == 500
    for kv in listed:
        assert by_revision[kv.mod_revision] == kv
    # Two updates per key with the same expected revision: exactly one of each pair wins.
    first = [store.update(kv.key, b"a", expected_mod_revision=kv.mod_revision) for kv in listed]
    second = [store.update(kv.key, b"b", expected_mod_revision=kv.mod_revision) for kv in listed]
    raced = await within(asyncio.gather(*(x for pair in zip(first, second, strict=True) for x in pair)))
    won: list[int] = []
    for a, b in zip(raced[::2], raced[1::2], strict=True):
        assert sorted([a.outcome.value, b.outcome.value]) == ["conflict", "ok"]
        winner, lost = (a, b) if a.ok else (b, a)
        assert lost.current == winner.current
        won.append(winner.revision)
    if exclusive:
        assert store.current_revision() == base + 1000
    events = await within(_watched(store, created[-1], max(won)))
    assert revisions(events) == sorted(won)
