"""Random histories against a model whose correctness is obvious.

The hand-written tables cover the cases we thought of; this covers the ones we did
not. Hypothesis drives random creates, updates and deletes (with right and wrong
expected revisions), reads at the current and at old revisions, paging, watches
replayed from old revisions and compactions, against a fresh store per example and a
pure-Python model: a dict of key -> [(revision, value or None)]. Every result must
equal the model's, field for field.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from storage import (
    Compacted,
    Event,
    EventType,
    KeyValue,
    Outcome,
    Store,
    WriteResult,
)
from tests.storage.conftest import FAST, open_backend, take_until, within

T = TypeVar("T")

KEYS = [b"/a", b"/a/1", b"/a/10", b"/ab", b"\xff"]  # few, so keys see many writes
PREFIXES = [b"", b"/", b"/a", b"/a/", b"/b/", b"/c/", b"\xff"]

keys = st.sampled_from(KEYS)
values = st.binary(max_size=6)
prefixes = st.sampled_from(PREFIXES)
# None: compare nothing; "right": the key's mod_revision; an int: whatever it is (usually wrong).
compares = st.one_of(st.none(), st.just("right"), st.integers(1, 40))
# None: the latest; an int n: revision 1 + n % current, anywhere in history (compacted or not).
revisions = st.one_of(st.none(), st.integers(0, 1 << 16))


@dataclass
class Model:
    revision: int = 1
    compacted: int = 0
    history: dict[bytes, list[tuple[int, bytes | None]]] = field(default_factory=dict)
    log: list[Event] = field(default_factory=list)

    def at(self, key: bytes, revision: int) -> KeyValue | None:
        writes = [(r, v) for r, v in self.history.get(key, []) if r <= revision]
        if not writes or writes[-1][1] is None:
            return None
        first = len(writes) - 1
        while first > 0 and writes[first - 1][1] is not None:
            first -= 1
        value = writes[-1][1]
        return KeyValue(key, value, writes[first][0], writes[-1][0], len(writes) - first)

    def listing(self, prefix: bytes, revision: int) -> list[KeyValue]:
        found = (self.at(key, revision) for key in sorted(self.history) if key.startswith(prefix))
        return [kv for kv in found if kv is not None]

    def write(self, key: bytes, value: bytes | None) -> WriteResult:
        prev = self.at(key, self.revision)
        self.revision += 1
        self.history.setdefault(key, []).append((self.revision, value))
        now = self.at(key, self.revision)
        if now is not None:
            self.log.append(Event(EventType.PUT, now, prev))
        else:
            assert prev is not None
            gone = KeyValue(key, b"", prev.create_revision, self.revision, prev.version)
            self.log.append(Event(EventType.DELETE, gone, prev))
        return WriteResult(Outcome.OK, self.revision, now, prev)

    def conditional(self, key: bytes, value: bytes | None, expected: int | None) -> WriteResult:
        current = self.at(key, self.revision)
        if current is None:
            return WriteResult(Outcome.NOT_FOUND, self.revision, None)
        if expected is not None and expected != current.mod_revision:
            return WriteResult(Outcome.CONFLICT, self.revision, current)
        return self.write(key, value)

    def pick(self, n: int | None) -> int | None:
        return None if n is None else 1 + n % self.revision


def same_write(got: WriteResult, expected: WriteResult) -> None:
    assert (got.outcome, got.revision, got.current) == (expected.outcome, expected.revision, expected.current)
    if expected.ok:
        assert got.prev == expected.prev


class StoreMachine(RuleBasedStateMachine):
    backend = "lmdb"

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.dir = tempfile.mkdtemp(prefix="capstan-props-")
        self.store: Store = self.run(open_backend(self.backend, Path(self.dir) / "db", FAST))
        self.model = Model()

    def run(self, awaitable: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(within(awaitable))

    def teardown(self) -> None:
        try:
            self.run(self.store.close())
        finally:
            self.runner.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def expected_mod(self, key: bytes, compare: str | int | None) -> int | None:
        if compare != "right":
            return None if compare is None else int(compare)
        current = self.model.at(key, self.model.revision)
        return current.mod_revision if current is not None else self.model.revision

    # -- writes ------------------------------------------------------------

    @rule(key=keys, value=values)
    def create(self, key: bytes, value: bytes) -> None:
        current = self.model.at(key, self.model.revision)
        if current is not None:
            expected = WriteResult(Outcome.EXISTS, self.model.revision, current)
        else:
            expected = self.model.write(key, value)
        same_write(self.run(self.store.create(key, value)), expected)

    @rule(key=keys, value=values, compare=compares)
    def update(self, key: bytes, value: bytes, compare: str | int | None) -> None:
        expected_mod = self.expected_mod(key, compare)
        expected = self.model.conditional(key, value, expected_mod)
        same_write(self.run(self.store.update(key, value, expected_mod_revision=expected_mod)), expected)

    @rule(key=keys, compare=compares)
    def delete(self, key: bytes, compare: str | int | None) -> None:
        expected_mod = self.expected_mod(key, compare)
        expected = self.model.conditional(key, None, expected_mod)
        same_write(self.run(self.store.delete(key, expected_mod_revision=expected_mod)), expected)

    @rule(n=st.integers(0, 1 << 16), now=st.integers(0, 3))
    def compact(self, n: int, now: int) -> None:
        if now:  # compact one time in four, so old revisions stay readable for a while
            return
        target = 1 + n % self.model.revision
        self.model.compacted = max(self.model.compacted, target)
        assert self.run(self.store.compact(target)) == self.model.revision

    # -- reads -------------------------------------------------------------

    def compacted(self, revision: int | None) -> bool:
        return revision is not None and revision < self.model.compacted

    @rule(key=keys, n=revisions)
    def get(self, key: bytes, n: int | None) -> None:
        at = self.model.pick(n)
        if self.compacted(at):
            self.expect_compacted(self.store.get(key, at_revision=at))
            return
        got = self.run(self.store.get(key, at_revision=at))
        served = at or self.model.revision
        assert (got.revision, got.kv) == (served, self.model.at(key, served))

    @rule(
        prefix=prefixes,
        n=revisions,
        start_after=st.one_of(st.none(), keys, st.sampled_from([b"/", b"/a/0", b"/a/1x"])),
        limit=st.one_of(st.none(), st.integers(0, 4)),
    )
    def list(self, prefix: bytes, n: int | None, start_after: bytes | None, limit: int | None) -> None:
        at = self.model.pick(n)
        if self.compacted(at):
            self.expect_compacted(self.store.list(prefix, at_revision=at, start_after=start_after, limit=limit))
            return
        served = at or self.model.revision
        matching = [kv for kv in self.model.listing(prefix, served) if start_after is None or kv.key > start_after]
        page = matching[:limit] if limit else matching
        got = self.run(self.store.list(prefix, at_revision=at, start_after=start_after, limit=limit))
        assert (got.revision, list(got.kvs), got.remaining) == (served, page, len(matching) - len(page))

    @rule(prefix=prefixes, n=revisions)
    def count(self, prefix: bytes, n: int | None) -> None:
        at = self.model.pick(n)
        if self.compacted(at):
            self.expect_compacted(self.store.count(prefix, at_revision=at))
            return
        served = at or self.model.revision
        got = self.run(self.store.count(prefix, at_revision=at))
        assert (got.revision, got.count) == (served, len(self.model.listing(prefix, served)))

    @rule(prefix=prefixes, n=st.integers(0, 1 << 16))
    def watch_replay(self, prefix: bytes, n: int) -> None:
        start = n % (self.model.revision + 1)  # 0 .. current
        watch = self.store.watch(prefix, from_revision=start)
        try:
            if start < self.model.compacted:
                self.expect_compacted(watch.next_batch())
                return
            expected = [e for e in self.model.log if e.revision > start and e.kv.key.startswith(prefix)]
            if expected:
                assert self.run(take_until(watch, expected[-1].revision)) == expected
        finally:
            watch.close()

    def expect_compacted(self, call: Coroutine[Any, Any, object]) -> None:
        try:
            self.run(call)
        except Compacted as err:
            assert err.compact_revision == self.model.compacted
        else:
            raise AssertionError("expected Compacted")

    @invariant()
    def revisions_agree(self) -> None:
        assert self.store.current_revision() == self.model.revision
        assert self.store.compacted_revision() == self.model.compacted


class MemoryStoreMachine(StoreMachine):
    backend = "memory"


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

TestLmdbAgainstModel = StoreMachine.TestCase
TestLmdbAgainstModel.settings = SETTINGS
TestMemoryAgainstModel = MemoryStoreMachine.TestCase
TestMemoryAgainstModel.settings = SETTINGS
