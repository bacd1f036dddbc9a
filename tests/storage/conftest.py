"""Real stores for the storage tests, and the few helpers every storage test module shares.

The contract suite runs against every backend (kine runs one suite against every
driver), so `store` is parametrized over them; LMDB-only tests take `lmdb_store` and
reopen it at the same path with `open_lmdb`. Nothing here is a mock: LMDB lives in
`tmp_path`, etcd is one real etcd for the session (tests/storage/etcd_server.py) in which
each test has its own key prefix, and every await that could hang goes through `within`.

etcd's revision is the whole cluster's, so a test's first write is not revision 2 there:
tests count revisions from `store.current_revision()` at open (`base`), never from 1.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from storage import Event, EventType, KeyValue, Store, StoreOptions, Watch, WriteResult
from tests.storage.etcd_server import EtcdServer

# "encrypted" is LMDB behind storage/encryption's EncryptedStore with every key under AES-GCM: the contract
# holds through encryption at rest too.
BACKENDS = ["lmdb", "memory", "etcd", "encrypted"]
# The backends whose automatic compactor is storage/compactor.py's sampling policy (etcd's takes turns
# with other cores instead: storage/etcd/compactor.py).
EMBEDDED = ["lmdb", "memory"]

# Fast and deterministic: no fsync, a short wait for future revisions, no background compactor.
FAST = StoreOptions(sync=False, future_wait=0.2, compact_interval=0)

# The longest any single await in these tests may take before the test fails instead of hanging.
TIMEOUT = 10.0

T = TypeVar("T")


class OpenStore(Protocol):
    """Opens a store of the test's backend; for LMDB every call opens the same path (a reopen)."""

    async def __call__(self, options: StoreOptions = FAST) -> Store: ...


async def open_backend(backend: str, path: Path, options: StoreOptions, etcd: EtcdServer | None = None) -> Store:
    if backend == "etcd":
        from storage.etcd import EtcdConfig, EtcdStore

        assert etcd is not None, "the etcd backend needs the session's etcd server"
        # One prefix per path, all of one length, so no test's prefix is a prefix of another's.
        prefix = "/capstan-test/" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        # Its own compaction key too: a test's compactors take turns with each other, not with other tests'.
        config = EtcdConfig(servers=(etcd.url,), prefix=prefix, compact_key=prefix.encode() + b"\x00compact_rev_key")
        return await EtcdStore.open(config, options)
    if backend == "lmdb":
        from storage.lmdb import LmdbStore

        return await LmdbStore.open(path, options)
    if backend == "encrypted":
        from storage.encryption import EncryptedStore, Encryption
        from storage.lmdb import LmdbStore

        encryption = path.parent / f"{path.name}-encryption.yaml"
        if not encryption.exists():
            key = base64.b64encode(hashlib.sha256(str(path).encode()).digest()).decode()
            encryption.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
                                  "- resources: ['*.*']\n  providers:\n"
                                  f"  - aesgcm: {{keys: [{{name: k, secret: {key}}}]}}\n")
        return EncryptedStore(await LmdbStore.open(path, options), await Encryption.open(encryption))
    if backend == "memory":
        from storage.memory import MemoryStore

        return await MemoryStore.open(options)
    raise ValueError(f"unknown backend {backend!r}")


async def within(awaitable: Awaitable[T], timeout: float = TIMEOUT) -> T:
    """Await with a bound, so a broken store fails the test instead of hanging the suite."""
    return await asyncio.wait_for(awaitable, timeout)


async def take(watch: Watch, count: int, timeout: float = TIMEOUT) -> list[Event]:
    """Read batches until at least `count` events arrived; returns all of them (maybe more)."""

    async def collect() -> list[Event]:
        events: list[Event] = []
        while len(events) < count:
            batch = await watch.next_batch()
            assert len(batch) >= 1, "next_batch returned an empty batch"
            events.extend(batch)
        return events

    return await asyncio.wait_for(collect(), timeout)


async def take_until(watch: Watch, revision: int, timeout: float = TIMEOUT) -> list[Event]:
    """Read batches until an event at `revision` or later arrived; returns all of them."""

    async def collect() -> list[Event]:
        events: list[Event] = []
        while not events or events[-1].revision < revision:
            batch = await watch.next_batch()
            assert len(batch) >= 1, "next_batch returned an empty batch"
            events.extend(batch)
        return events

    return await asyncio.wait_for(collect(), timeout)


async def assert_quiet(watch: Watch, wait: float = 0.05) -> None:
    """Nothing more arrives on `watch` within `wait` seconds."""
    try:
        extra: Sequence[Event] = await asyncio.wait_for(watch.next_batch(), wait)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected events: {extra}")


def revisions(events: Sequence[Event]) -> list[int]:
    return [e.revision for e in events]


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """One real etcd for the whole session, started by the first test that needs it."""
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def etcd_for(backend: str, request: pytest.FixtureRequest) -> EtcdServer | None:
    """The session's etcd when the test runs on the etcd backend (started only then)."""
    if backend != "etcd":
        return None
    server: EtcdServer = request.getfixturevalue("etcd_server")
    return server


@pytest.fixture
async def open_store(backend: str, tmp_path: Path, etcd_for: EtcdServer | None) -> AsyncIterator[OpenStore]:
    """Opens stores of the parametrized backend with any options; closes them all afterwards.

    For etcd every call opens the same prefix, so a second store sees the first one's keys.
    """
    opened: list[Store] = []

    async def opener(options: StoreOptions = FAST) -> Store:
        store = await within(open_backend(backend, tmp_path / "db", options, etcd_for))
        opened.append(store)
        return store

    yield opener
    for store in opened:
        await within(store.close())


@pytest.fixture
async def store(open_store: OpenStore) -> Store:
    """A fresh, empty store of each backend with the fast options."""
    return await open_store()


@pytest.fixture
def lmdb_path(tmp_path: Path) -> Path:
    return tmp_path / "lmdb"


@pytest.fixture
async def open_lmdb(lmdb_path: Path) -> AsyncIterator[OpenStore]:
    """Opens the LMDB store at one path; call again after close() to reopen it."""
    opened: list[Store] = []

    async def opener(options: StoreOptions = FAST) -> Store:
        store = await within(open_backend("lmdb", lmdb_path, options))
        opened.append(store)
        return store

    yield opener
    for store in opened:
        await within(store.close())


@pytest.fixture
async def lmdb_store(open_lmdb: OpenStore) -> Store:
    """A fresh, empty LMDB store with the fast options."""
    return await open_lmdb()


def event_for(key: bytes, result: WriteResult) -> Event:
    """The watch event a successful write must produce, as `storage.types.Event` documents it."""
    assert result.ok, result
    if result.current is not None:
        return Event(EventType.PUT, result.current, result.prev)
    prev = result.prev
    assert prev is not None
    gone = KeyValue(key, b"", prev.create_revision, result.revision, prev.version)
    return Event(EventType.DELETE, gone, prev)


async def churn(store: Store, keys: Sequence[bytes], writes: int, *, seed: int = 0) -> dict[int, Event]:
    """`writes` successful creates, updates and deletes over `keys`; returns the events they make."""
    rng = random.Random(seed)
    events: dict[int, Event] = {}
    for step in range(writes):
        key = rng.choice(keys)
        value = b"%d:%d" % (seed, step)
        result = await within(store.create(key, value))
        if not result.ok:
            assert result.current is not None
            if rng.random() < 0.3:
                result = await within(store.delete(key, expected_mod_revision=result.current.mod_revision))
            else:
                result = await within(store.update(key, value))
        events[result.revision] = event_for(key, result)
    return events
