"""The `Store` contract, run unchanged against every backend.

These are the promises `storage/interface.py` and `storage/types.py` make to the
server: one global revision that rises by exactly one per successful write, reads at
any retained revision that return exactly what was there, ordered prefix listing with
consistent paging, compare-and-swap results as data, and typed errors for what the
store cannot serve. Each table row is one promise; a backend passes only if it keeps
all of them.

Revision numbers in the tables are those of a store that starts at 1 (LMDB, memory); on etcd,
whose revision is the cluster's, a test adds `shift` = (the revision at open) - 1 to each.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from storage import (
    MAX_KEY_SIZE,
    InvalidArgument,
    KeyValue,
    Outcome,
    QuotaExceeded,
    RevisionTooLarge,
    Store,
    StoreClosed,
    StoreOptions,
    WriteResult,
)
from tests.storage.conftest import FAST, OpenStore, within

Call = Callable[[Any], Awaitable[object]]

KEY = b"/k"
OTHER = b"/other"


def kv(key: bytes, value: bytes, create: int, mod: int, version: int) -> KeyValue:
    return KeyValue(key=key, value=value, create_revision=create, mod_revision=mod, version=version)


async def snapshot(store: Store, prefix: bytes = b"") -> list[KeyValue]:
    return list((await within(store.list(prefix))).kvs)


# ---------------------------------------------------------------- revisions and writes


async def test_revision_starts_at_one_and_nothing_is_compacted(store: Store, backend: str) -> None:
    base = store.current_revision()
    if backend == "etcd":  # the cluster's revision; an earlier test may have compacted the cluster
        assert base >= 1 and store.compacted_revision() <= base
    else:
        assert (base, store.compacted_revision()) == (1, 0)
    got = await within(store.get(KEY))
    assert (got.revision, got.kv) == (base, None)
    listed = await within(store.list(b""))
    assert (listed.revision, list(listed.kvs), listed.remaining) == (base, [], 0)


WRITE_SEQUENCE: list[tuple[str, Callable[[Any, int], Awaitable[object]], bool]] = [
    # what, the write (given the store and shift), whether it succeeds (and so takes the next revision)
    ("create a", lambda s, _: s.create(b"/r/a", b"1"), True),
    ("create b", lambda s, _: s.create(b"/r/b", b"1"), True),
    ("create a again", lambda s, _: s.create(b"/r/a", b"2"), False),
    ("update a", lambda s, _: s.update(b"/r/a", b"2"), True),
    ("update a, stale", lambda s, d: s.update(b"/r/a", b"3", expected_mod_revision=d + 2), False),
    ("update a, fresh", lambda s, d: s.update(b"/r/a", b"3", expected_mod_revision=d + 4), True),
    ("delete b", lambda s, _: s.delete(b"/r/b"), True),
    ("delete b again", lambda s, _: s.delete(b"/r/b"), False),
    ("update b", lambda s, _: s.update(b"/r/b", b"x"), False),
    ("create b again", lambda s, _: s.create(b"/r/b", b"2"), True),
    ("delete a, stale", lambda s, d: s.delete(b"/r/a", expected_mod_revision=d + 4), False),
    ("delete a, fresh", lambda s, d: s.delete(b"/r/a", expected_mod_revision=d + 5), True),
]


async def test_each_successful_write_raises_the_revision_by_one(store: Store) -> None:
    expected = store.current_revision()
    shift = expected - 1
    for name, write, succeeds in WRITE_SEQUENCE:
        result = await within(write(store, shift))
        assert isinstance(result, WriteResult)
        assert result.ok is succeeds, name
        expected += succeeds
        assert result.revision == expected, name
        assert store.current_revision() == expected, name


async def _set_up(store: Store, state: str) -> KeyValue | None:
    """Bring KEY into `state`; OTHER is written last so the store revision is not KEY's."""
    before: KeyValue | None = None
    if state in ("present", "deleted"):
        await within(store.create(KEY, b"v0"))
        before = (await within(store.update(KEY, b"v1"))).current
    if state == "deleted":
        before = None
        await within(store.delete(KEY))
    await within(store.create(OTHER, b"x"))
    return before


def _expected_mod(state: str, compare: str | None, store: Store, before: KeyValue | None) -> int | None:
    if compare is None:
        return None
    current = store.current_revision()
    if compare == "future":
        return current + 10
    if state == "present":
        assert before is not None
        return before.mod_revision if compare == "right" else before.create_revision
    # absent or deleted: there is no live mod_revision to match; offer the likeliest wrong ones.
    return current - 1 if compare == "right" else 1


WRITE_CASES = [
    # op, KEY's state before, expected_mod_revision, outcome
    ("create", "absent", None, Outcome.OK),
    ("create", "present", None, Outcome.EXISTS),
    ("create", "deleted", None, Outcome.OK),
    ("update", "absent", None, Outcome.NOT_FOUND),
    ("update", "absent", "stale", Outcome.NOT_FOUND),
    ("update", "deleted", None, Outcome.NOT_FOUND),
    ("update", "deleted", "right", Outcome.NOT_FOUND),  # the tombstone's revision matches nothing
    ("update", "present", None, Outcome.OK),
    ("update", "present", "right", Outcome.OK),
    ("update", "present", "stale", Outcome.CONFLICT),  # create_revision is not mod_revision
    ("update", "present", "future", Outcome.CONFLICT),
    ("delete", "absent", None, Outcome.NOT_FOUND),
    ("delete", "absent", "stale", Outcome.NOT_FOUND),
    ("delete", "deleted", None, Outcome.NOT_FOUND),
    ("delete", "deleted", "right", Outcome.NOT_FOUND),
    ("delete", "present", None, Outcome.OK),
    ("delete", "present", "right", Outcome.OK),
    ("delete", "present", "stale", Outcome.CONFLICT),
    ("delete", "present", "future", Outcome.CONFLICT),
]


@pytest.mark.parametrize(("op", "state", "compare", "outcome"), WRITE_CASES)
async def test_write_outcomes(store: Store, op: str, state: str, compare: str | None, outcome: Outcome) -> None:
    before = await _set_up(store, state)
    rev = store.current_revision()
    expected_mod = _expected_mod(state, compare, store, before)
    if op == "create":
        result = await within(store.create(KEY, b"new"))
    elif op == "update":
        result = await within(store.update(KEY, b"new", expected_mod_revision=expected_mod))
    else:
        result = await within(store.delete(KEY, expected_mod_revision=expected_mod))

    assert result.outcome is outcome
    assert result.ok is (outcome is Outcome.OK)
    after = (await within(store.get(KEY))).kv
    if outcome is not Outcome.OK:
        assert result.revision == rev, "a failed compare reports the revision it was evaluated at"
        assert store.current_revision() == rev, "a failed compare must not raise the revision"
        assert result.current == (before if outcome in (Outcome.EXISTS, Outcome.CONFLICT) else None)
        assert after == before
        return
    assert result.revision == rev + 1
    assert store.current_revision() == rev + 1
    assert result.prev == before
    if op == "create":
        assert result.current == kv(KEY, b"new", rev + 1, rev + 1, 1)
    elif op == "update":
        assert before is not None
        assert result.current == kv(KEY, b"new", before.create_revision, rev + 1, before.version + 1)
    else:
        assert result.current is None
    assert after == result.current


# ---------------------------------------------------------------- get


async def _history(store: Store) -> int:
    """r2 create KEY v1, r3 create OTHER, r4 update KEY v2, r5 delete KEY, r6 create KEY v3, r7 update v4.

    Returns the shift: each rN is N + shift.
    """
    shift = store.current_revision() - 1
    assert (await store.create(KEY, b"v1")).revision == 2 + shift
    assert (await store.create(OTHER, b"o")).revision == 3 + shift
    assert (await store.update(KEY, b"v2")).revision == 4 + shift
    assert (await store.delete(KEY)).revision == 5 + shift
    assert (await store.create(KEY, b"v3")).revision == 6 + shift
    assert (await store.update(KEY, b"v4")).revision == 7 + shift
    return shift


GET_CASES = [
    # at_revision, KEY as it stood then (value, create_revision, mod_revision, version) or None
    (1, None),
    (2, (b"v1", 2, 2, 1)),
    (3, (b"v1", 2, 2, 1)),
    (4, (b"v2", 2, 4, 2)),
    (5, None),  # deleted
    (6, (b"v3", 6, 6, 1)),  # re-created: create_revision and version start afresh
    (7, (b"v4", 6, 7, 2)),
    (None, (b"v4", 6, 7, 2)),
]


@pytest.mark.parametrize(("at", "expected"), GET_CASES)
async def test_get_at_revision(store: Store, at: int | None, expected: tuple[bytes, int, int, int] | None) -> None:
    d = await within(_history(store))
    got = await within(store.get(KEY, at_revision=None if at is None else at + d))
    assert got.revision == (7 if at is None else at) + d
    if expected is None:
        assert got.kv is None
    else:
        value, create, mod, version = expected
        assert got.kv == kv(KEY, value, create + d, mod + d, version)


async def test_keys_and_values_are_opaque_bytes(store: Store) -> None:
    cases = {
        b"\x00": b"",
        b"\xff" * MAX_KEY_SIZE: bytes(range(256)),
        b"/a\x00b": b"\x00" * 10,
        b"k" * (MAX_KEY_SIZE - 1): b"x" * (1 << 20),
    }
    for key, value in cases.items():
        assert (await within(store.create(key, value))).ok
    for key, value in cases.items():
        got = (await within(store.get(key))).kv
        assert got is not None and got.value == value
    assert [k.key for k in await snapshot(store)] == sorted(cases)


# ---------------------------------------------------------------- list and count

PREFIX_KEYS = [
    b"/a",
    b"/a/",
    b"/a/x",
    b"/a/y/z",
    b"/a0",
    b"/ab",
    b"/ab/x",
    b"/b/x",
    b"\xff",
    b"\xff\x00",
    b"\xff\xff\x01",
]

PREFIX_CASES = [
    (b"/a/", [b"/a/", b"/a/x", b"/a/y/z"]),  # not /ab, not /a0, not /a
    (b"/a", [b"/a", b"/a/", b"/a/x", b"/a/y/z", b"/a0", b"/ab", b"/ab/x"]),
    (b"/ab", [b"/ab", b"/ab/x"]),
    (b"/ab/", [b"/ab/x"]),
    (b"/b/", [b"/b/x"]),
    (b"/c/", []),
    (b"\xff", [b"\xff", b"\xff\x00", b"\xff\xff\x01"]),  # no byte after 0xff to end the range at
    (b"\xff\xff", [b"\xff\xff\x01"]),
    (b"", sorted(PREFIX_KEYS)),
]


@pytest.mark.parametrize(("prefix", "expected"), PREFIX_CASES)
async def test_list_and_count_by_prefix(store: Store, prefix: bytes, expected: list[bytes]) -> None:
    shuffled = list(PREFIX_KEYS)
    random.Random(7).shuffle(shuffled)
    for key in shuffled:
        await within(store.create(key, b"v:" + key))
    listed = await within(store.list(prefix))
    assert [k.key for k in listed.kvs] == expected
    assert [k.value for k in listed.kvs] == [b"v:" + k for k in expected]
    assert (listed.revision, listed.remaining, listed.more) == (store.current_revision(), 0, False)
    counted = await within(store.count(prefix))
    assert (counted.revision, counted.count) == (store.current_revision(), len(expected))


PAGE_KEYS = [b"/p/%02d" % i for i in range(10)]

PAGE_CASES = [
    # start_after, limit, expected page (indexes into PAGE_KEYS), remaining
    (None, None, range(10), 0),
    (None, 0, range(10), 0),
    (None, 3, range(3), 7),
    (b"/p/02", 3, range(3, 6), 4),
    (b"/p/08", 3, range(9, 10), 0),
    (b"/p/09", 3, range(0), 0),
    (b"/p/025", 2, range(3, 5), 5),  # a point between keys
    (b"/", 2, range(2), 8),  # a point before the prefix
    (b"/p/", 1, range(1), 9),  # the prefix itself
    (b"/z", None, range(0), 0),  # a point after the prefix
    (None, 10, range(10), 0),
    (None, 11, range(10), 0),
]


@pytest.mark.parametrize("counted", [True, False], ids=["counted", "uncounted"])
@pytest.mark.parametrize(("start_after", "limit", "page", "remaining"), PAGE_CASES)
async def test_list_pages(
    store: Store, start_after: bytes | None, limit: int | None, page: range, remaining: int, counted: bool
) -> None:
    """Uncounted, `remaining` only says whether keys follow: any positive number then, 0 on the last page."""
    for key in [b"/o/x", *reversed(PAGE_KEYS), b"/q/x"]:
        await within(store.create(key, key))
    listed = await within(store.list(b"/p/", start_after=start_after, limit=limit, counted=counted))
    assert [k.key for k in listed.kvs] == [PAGE_KEYS[i] for i in page]
    if counted:
        assert listed.remaining == remaining
    else:
        assert (listed.remaining > 0) is (remaining > 0)
    assert listed.more is (remaining > 0)


@pytest.mark.parametrize(("at", "start_after", "limit"), [
    ("latest", None, None), ("latest", b"/p/02", 3), ("past", None, None), ("past", b"/p/02", 3)])
async def test_a_list_without_values_has_the_same_keys_and_revisions(
        store: Store, at: str, start_after: bytes | None, limit: int | None) -> None:
    """values=False: every value b"", all else as listed with values, at the latest revision and at a past one."""
    for key in PAGE_KEYS:
        await within(store.create(key, key * 100))
    revision = store.current_revision() if at == "latest" else store.current_revision() - 2
    if at == "past":
        await within(store.update(PAGE_KEYS[9], b"new"))
        await within(store.delete(PAGE_KEYS[4]))
    whole = await within(store.list(b"/p/", at_revision=revision, start_after=start_after, limit=limit))
    heads = await within(store.list(b"/p/", at_revision=revision, start_after=start_after, limit=limit,
                                    values=False))
    assert whole.kvs and {kv.value for kv in heads.kvs} == {b""}
    assert [kv._replace(value=b"") for kv in whole.kvs] == list(heads.kvs)
    assert (heads.revision, heads.remaining) == (whole.revision, whole.remaining)


async def test_paging_at_the_first_pages_revision_ignores_later_writes(store: Store) -> None:
    for key in PAGE_KEYS:
        await within(store.create(key, b"old"))
    first = await within(store.list(b"/p/", limit=3))
    seen = list(first.kvs)
    await within(store.create(b"/p/055", b"new"))
    await within(store.delete(b"/p/07"))
    await within(store.update(b"/p/08", b"new"))
    page = first
    while page.more:
        page = await within(store.list(b"/p/", at_revision=first.revision, start_after=seen[-1].key, limit=3))
        assert page.revision == first.revision
        seen.extend(page.kvs)
    assert [k.key for k in seen] == PAGE_KEYS
    assert {k.value for k in seen} == {b"old"}


async def test_list_and_count_at_every_older_revision(store: Store) -> None:
    """Record the listing after every write, then read each revision back."""
    rng = random.Random(42)
    keys = [b"/h/%d" % i for i in range(6)] + [b"/i/0"]
    base = store.current_revision()
    states: dict[int, list[KeyValue]] = {base: []}
    for step in range(60):
        key = rng.choice(keys)
        result = await within(store.create(key, b"%d" % step))
        if not result.ok:
            result = await within(store.delete(key) if rng.random() < 0.4 else store.update(key, b"%d" % step))
        assert result.ok
        states[result.revision] = await snapshot(store)
    assert sorted(states) == list(range(base, store.current_revision() + 1))
    for rev, state in states.items():
        listed = await within(store.list(b"", at_revision=rev))
        assert (listed.revision, list(listed.kvs)) == (rev, state)
        under_h = [k for k in state if k.key.startswith(b"/h/")]
        assert list((await within(store.list(b"/h/", at_revision=rev))).kvs) == under_h
        assert (await within(store.count(b"/h/", at_revision=rev))).count == len(under_h)
        for key in keys:
            expected = next((k for k in state if k.key == key), None)
            assert (await within(store.get(key, at_revision=rev))).kv == expected


# ---------------------------------------------------------------- invalid input

INVALID_CASES: list[tuple[str, Call]] = [
    ("create empty key", lambda s: s.create(b"", b"v")),
    ("create str key", lambda s: s.create("k", b"v")),
    ("create oversized key", lambda s: s.create(b"k" * (MAX_KEY_SIZE + 1), b"v")),
    ("create str value", lambda s: s.create(b"k", "v")),
    ("create None value", lambda s: s.create(b"k", None)),
    ("update empty key", lambda s: s.update(b"", b"v")),
    ("update str value", lambda s: s.update(b"k", "v")),
    ("update oversized key", lambda s: s.update(b"k" * (MAX_KEY_SIZE + 1), b"v")),
    ("delete empty key", lambda s: s.delete(b"")),
    ("delete str key", lambda s: s.delete("k")),
    ("get empty key", lambda s: s.get(b"")),
    ("get str key", lambda s: s.get("k")),
    ("get oversized key", lambda s: s.get(b"k" * (MAX_KEY_SIZE + 1))),
    ("get at zero", lambda s: s.get(b"k", at_revision=0)),
    ("get at negative", lambda s: s.get(b"k", at_revision=-1)),
    ("list str prefix", lambda s: s.list("/")),
    ("list None prefix", lambda s: s.list(None)),
    ("list at zero", lambda s: s.list(b"/", at_revision=0)),
    ("list at negative", lambda s: s.list(b"/", at_revision=-3)),
    ("list negative limit", lambda s: s.list(b"/", limit=-1)),
    ("list str start_after", lambda s: s.list(b"/", start_after="/a")),
    ("count str prefix", lambda s: s.count("/")),
    ("count at zero", lambda s: s.count(b"/", at_revision=0)),
    ("count at negative", lambda s: s.count(b"/", at_revision=-1)),
]


@pytest.mark.parametrize(("name", "call"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES])
async def test_invalid_input(store: Store, name: str, call: Call) -> None:
    written = (await within(store.create(b"k", b"v"))).revision
    with pytest.raises(InvalidArgument):
        await within(call(store))
    assert store.current_revision() == written, "an invalid write must not raise the revision"


async def test_key_of_exactly_max_size_is_valid(store: Store) -> None:
    key = b"m" * MAX_KEY_SIZE
    assert (await within(store.create(key, b"v"))).ok
    assert (await within(store.update(key, b"w"))).ok
    assert (await within(store.delete(key))).ok


# ---------------------------------------------------------------- future revisions

Read = Callable[[Store, int], Awaitable[int]]

FUTURE_READS: list[tuple[str, Read]] = [
    ("get", lambda s, at: _served(s.get(KEY, at_revision=at))),
    ("list", lambda s, at: _served(s.list(b"/", at_revision=at))),
    ("count", lambda s, at: _served(s.count(b"/", at_revision=at))),
]


async def _served(result: Awaitable[Any]) -> int:
    revision: int = (await result).revision
    return revision


@pytest.mark.parametrize(("name", "read"), FUTURE_READS, ids=[c[0] for c in FUTURE_READS])
async def test_future_revision_waits_then_raises(store: Store, name: str, read: Read) -> None:
    written = (await within(store.create(KEY, b"v"))).revision
    started = time.monotonic()
    with pytest.raises(RevisionTooLarge) as caught:
        await within(read(store, written + 3))
    waited = time.monotonic() - started
    assert FAST.future_wait * 0.75 <= waited < FAST.future_wait + 2.0
    assert (caught.value.requested, caught.value.current) == (written + 3, written)


@pytest.mark.parametrize(("name", "read"), FUTURE_READS, ids=[c[0] for c in FUTURE_READS])
async def test_future_revision_served_when_a_write_arrives_in_time(store: Store, name: str, read: Read) -> None:
    written = (await within(store.create(KEY, b"v"))).revision
    pending = asyncio.ensure_future(read(store, written + 1))
    await asyncio.sleep(FAST.future_wait / 4)
    assert not pending.done()
    assert (await within(store.update(KEY, b"w"))).revision == written + 1
    assert await within(pending) == written + 1
    got = await within(store.get(KEY, at_revision=written + 1))
    assert got.kv is not None and got.kv.value == b"w"


# ---------------------------------------------------------------- lifecycle


async def test_revision_and_data_survive_reopen(open_lmdb: OpenStore) -> None:
    first = await open_lmdb()
    await within(_history(first))
    before = {rev: (await within(first.get(KEY, at_revision=rev))).kv for rev in range(1, 8)}
    listing = await snapshot(first)
    await within(first.close())

    second = await open_lmdb()
    assert second.current_revision() == 7
    assert second.compacted_revision() == 0
    assert await snapshot(second) == listing
    for rev, expected in before.items():
        assert (await within(second.get(KEY, at_revision=rev))).kv == expected
    assert (await within(second.update(KEY, b"v5"))).revision == 8


async def test_durable_writes_with_sync(open_store: OpenStore, backend: str) -> None:
    durable = StoreOptions(sync=True, future_wait=0.2, compact_interval=0)
    store = await open_store(durable)
    shift = store.current_revision() - 1
    for i in range(10):
        assert (await within(store.create(b"/s/%d" % i, b"%d" % i))).revision == i + 2 + shift
    assert (await within(store.delete(b"/s/3", expected_mod_revision=5 + shift))).ok
    await within(store.close())
    if backend != "lmdb":
        return
    reopened = await open_store(durable)
    assert reopened.current_revision() == 12
    assert [k.key for k in await snapshot(reopened)] == [b"/s/%d" % i for i in range(10) if i != 3]


async def test_close_finishes_or_refuses_writes_in_flight(open_store: OpenStore, backend: str) -> None:
    """Each write racing close() is acknowledged (and then kept) or refused; none hangs."""
    store = await open_store()
    base = store.current_revision()
    keys = [b"/f/%03d" % i for i in range(200)]
    writes = [asyncio.ensure_future(store.create(key, key)) for key in keys]
    await asyncio.sleep(0)
    await within(store.close())
    outcomes = await within(asyncio.gather(*writes, return_exceptions=True))
    acknowledged: dict[bytes, int] = {}
    for key, outcome in zip(keys, outcomes, strict=True):
        if isinstance(outcome, WriteResult):
            assert outcome.ok
            acknowledged[key] = outcome.revision
        else:
            assert isinstance(outcome, StoreClosed), outcome
    assert sorted(acknowledged.values()) == list(range(base + 1, base + len(acknowledged) + 1))
    if backend != "lmdb":
        return
    reopened = await open_store()
    assert reopened.current_revision() == len(acknowledged) + 1
    assert {kv.key: kv.mod_revision for kv in await snapshot(reopened)} == acknowledged


CLOSED_CASES: list[tuple[str, Call]] = [
    ("create", lambda s: s.create(b"/new", b"v")),
    ("update", lambda s: s.update(KEY, b"v")),
    ("delete", lambda s: s.delete(KEY)),
    ("get", lambda s: s.get(KEY)),
    ("get at", lambda s: s.get(KEY, at_revision=2)),
    ("list", lambda s: s.list(b"/")),
    ("count", lambda s: s.count(b"/")),
    ("compact", lambda s: s.compact(2)),
    ("watch", lambda s: s.watch(b"/", from_revision=0).next_batch()),
]


@pytest.mark.parametrize(("name", "call"), CLOSED_CASES, ids=[c[0] for c in CLOSED_CASES])
async def test_closed_store_raises_store_closed(store: Store, name: str, call: Call) -> None:
    await within(store.create(KEY, b"v"))
    await within(store.close())
    await within(store.close())  # idempotent
    with pytest.raises(StoreClosed):
        await within(call(store))


# ---------------------------------------------------------------- quota

# etcd holds writes to its own --quota-backend-bytes, on the server and for the whole cluster;
# tests/storage/test_etcd_specific.py checks that its refusal is QuotaExceeded.
ETCD_QUOTA = "etcd's quota is the server's --quota-backend-bytes (test_etcd_specific.py)"
QUOTA = 256 << 10  # tiny, so a few hundred writes reach it; LMDB counts pages, the memory store bytes
VALUE = b"v" * 1000

QUOTA_WRITES: list[tuple[str, Call]] = [
    ("create", lambda s: s.create(b"/q/new", VALUE)),
    ("update", lambda s: s.update(b"/q/0000", VALUE)),
    ("update-compared", lambda s: s.update(b"/q/0000", VALUE, expected_mod_revision=2)),
]


async def _fill(store: Store) -> int:
    """Create keys under /q/ until the quota refuses one; returns how many were created."""
    for i in range(2 * QUOTA // len(VALUE)):
        try:
            await within(store.create(b"/q/%04d" % i, VALUE))
        except QuotaExceeded as err:
            assert err.quota == QUOTA and err.size + err.cost > QUOTA, err
            return i
    raise AssertionError(f"{2 * QUOTA} bytes written under a quota of {QUOTA} and none refused")


@pytest.mark.parametrize(("name", "write"), QUOTA_WRITES, ids=[c[0] for c in QUOTA_WRITES])
async def test_quota_refuses_puts_but_not_reads_deletes_or_compaction(
    open_store: OpenStore, backend: str, name: str, write: Call
) -> None:
    if backend == "etcd":
        pytest.skip(ETCD_QUOTA)
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, quota_bytes=QUOTA))
    assert store.quota_bytes() == QUOTA
    before = store.size_bytes()
    created = await _fill(store)
    assert created > 10 and store.size_bytes() > before
    full = store.current_revision()
    with pytest.raises(QuotaExceeded, match=f"quota of {QUOTA} bytes"):
        await within(write(store))
    assert store.current_revision() == full  # nothing was written
    # Failed compares stay data, quota or not.
    assert (await within(store.create(b"/q/0000", VALUE))).outcome is Outcome.EXISTS
    assert (await within(store.update(b"/q/0000", VALUE, expected_mod_revision=1))).outcome is Outcome.CONFLICT
    # Reads and deletes work, and deleting then compacting frees the space for writes again.
    assert (await within(store.get(b"/q/0000"))).kv is not None
    assert (await within(store.count(b"/q/"))).count == created
    for i in range(created):
        assert (await within(store.delete(b"/q/%04d" % i))).ok
    await within(store.compact(store.current_revision()))
    assert store.size_bytes() < QUOTA // 2, store.size_bytes()
    assert (await within(store.create(b"/q/new", VALUE))).ok
    assert (await within(store.update(b"/q/new", VALUE))).ok


async def test_no_quota_when_none(open_store: OpenStore, backend: str) -> None:
    if backend == "etcd":
        pytest.skip(ETCD_QUOTA)
    store = await open_store(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, quota_bytes=None))
    assert store.quota_bytes() is None
    for i in range(2 * QUOTA // len(VALUE)):
        assert (await within(store.create(b"/q/%04d" % i, VALUE))).ok
    assert store.size_bytes() > QUOTA


# ---------------------------------------------------------------- recent: a hint, never a read

async def _recent_becomes(store: Store, key: bytes, expected: KeyValue | None) -> None:
    """store.recent(key) reaches `expected` (a store learns other processes' writes from its watch)."""
    deadline = time.monotonic() + 5
    while store.recent(key) != expected:
        assert time.monotonic() < deadline, f"recent({key!r}) = {store.recent(key)}, not {expected}"
        await asyncio.sleep(0.01)


async def test_recent_is_none_or_a_key_as_it_stood(open_store: OpenStore, backend: str) -> None:
    """recent() answers None (the store remembers nothing: LMDB, memory) or the key as the store last saw it
    change: its own writes at once, another process's once its watch delivers them, nothing once deleted."""
    store = await open_store()
    other = await open_store() if backend == "etcd" else store  # etcd: another process over the same keys
    created = await within(store.create(KEY, b"v1"))
    assert created.outcome is Outcome.OK
    remembers = backend == "etcd"
    assert store.recent(KEY) == (created.current if remembers else None)
    updated = await within(other.update(KEY, b"v2", expected_mod_revision=created.revision))
    assert updated.outcome is Outcome.OK and updated.current is not None
    await _recent_becomes(store, KEY, updated.current if remembers else None)
    conflict = await within(store.update(KEY, b"v3", expected_mod_revision=created.revision))
    assert (conflict.outcome, conflict.current) == (Outcome.CONFLICT, updated.current)  # the hint's compare
    deleted = await within(store.delete(KEY))
    assert deleted.outcome is Outcome.OK
    assert store.recent(KEY) is None
    await _recent_becomes(other, KEY, None)
