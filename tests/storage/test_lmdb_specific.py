"""What only the LMDB backend can get wrong: the map, the files, the on-disk layout.

LMDB fails a write with MapFullError when its memory map is full; the backend
must grow the map and carry on, whatever the write size. The data directory
layout is documented (docs/architecture.md, storage/lmdb/layout.py) and read by
operators and by the next version of Capstan, so it is checked byte for byte here,
by opening the closed environment with the lmdb library directly. And no lmdb
exception may leave `storage/`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import lmdb
import pytest

from storage import KeyValue, StorageError, Store, StoreOptions
from storage.lmdb import LmdbStore
from tests.storage.conftest import FAST, OpenStore, churn, within

ROOT = Path(__file__).resolve().parents[2]

SMALL_MAP = StoreOptions(sync=False, future_wait=0.2, compact_interval=0, initial_map_size=256 << 10)


def big_value(i: int, size: int) -> bytes:
    return (b"%08d" % i) * (size // 8)


GROWTH_TABLE = [
    # writes, value size, concurrent: about 4 MB into a 256 KiB map, in different shapes
    (200, 20 << 10, False),
    (200, 20 << 10, True),
    (4, 1 << 20, False),  # each value alone is four times the initial map
]


@pytest.mark.parametrize(("writes", "size", "concurrent"), GROWTH_TABLE)
async def test_the_map_grows_as_needed(open_lmdb: OpenStore, writes: int, size: int, concurrent: bool) -> None:
    store = await open_lmdb(SMALL_MAP)
    creates = [store.create(b"/big/%04d" % i, big_value(i, size)) for i in range(writes)]
    if concurrent:
        results = await within(asyncio.gather(*creates), 30.0)
    else:
        results = [await within(c) for c in creates]
    assert all(r.ok for r in results)
    assert sorted(r.revision for r in results) == list(range(2, writes + 2))
    for i in range(writes):
        got = (await within(store.get(b"/big/%04d" % i))).kv
        assert got is not None and got.value == big_value(i, size)
    await within(store.close())

    reopened = await open_lmdb(SMALL_MAP)  # a map smaller than the file it opens
    assert reopened.current_revision() == writes + 1
    assert (await within(reopened.count(b"/big/"))).count == writes
    assert (await within(reopened.update(b"/big/0000", big_value(7, size)))).ok


async def test_reopen_many_times(open_lmdb: OpenStore) -> None:
    expected: dict[bytes, bytes] = {}
    for round_ in range(5):
        store = await open_lmdb()
        assert store.current_revision() == 1 + 10 * round_
        for kv in (await within(store.list(b"/r/"))).kvs:
            assert expected[kv.key] == kv.value
        assert len(expected) == (await within(store.count(b"/r/"))).count
        for i in range(10):
            key = b"/r/%d/%d" % (round_, i)
            assert (await within(store.create(key, b"%d" % i))).ok
            expected[key] = b"%d" % i
        await within(store.close())


async def test_data_directory_layout(lmdb_store: Store, lmdb_path: Path) -> None:
    """One environment in the directory; the named databases and the meta revisions as documented."""
    store = lmdb_store
    await within(store.create(b"/k", b"v"))
    await within(store.update(b"/k", b"w"))
    await within(store.delete(b"/k"))
    await within(store.create(b"/j", b"x"))
    await within(store.compact(3))
    await within(store.close())
    assert lmdb_path.is_dir()
    assert {"data.mdb", "lock.mdb"} <= {p.name for p in lmdb_path.iterdir()}

    env = lmdb.open(str(lmdb_path), max_dbs=8, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            names = {key for key, _ in txn.cursor()}
            assert {b"kv", b"log", b"idx", b"meta"} <= names
            meta = env.open_db(b"meta", txn=txn, create=False)
            assert txn.get(b"revision", db=meta) == struct.pack(">Q", 5)
            assert txn.get(b"compacted", db=meta) == struct.pack(">Q", 3)
            kv = env.open_db(b"kv", txn=txn, create=False)
            assert [key for key, _ in txn.cursor(db=kv)] == [b"/j"]
            log = env.open_db(b"log", txn=txn, create=False)
            logged = [struct.unpack(">Q", key)[0] for key, _ in txn.cursor(db=log)]
            # Compacted to 3: /k's create (2) is superseded by its update (3), which stays.
            assert logged == [3, 4, 5]
    finally:
        env.close()


async def test_compaction_frees_superseded_history_on_disk(open_lmdb: OpenStore, lmdb_path: Path) -> None:
    store = await open_lmdb(StoreOptions(sync=False, future_wait=0.2, compact_interval=0, compact_batch=5))
    await within(churn(store, [b"/c/%d" % i for i in range(5)], 300))
    live = {kv.key: kv.mod_revision for kv in (await within(store.list(b"/c/"))).kvs}
    await within(store.compact(store.current_revision()))
    await within(store.close())
    env = lmdb.open(str(lmdb_path), max_dbs=8, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            log = env.open_db(b"log", txn=txn, create=False)
            logged = sorted(struct.unpack(">Q", key)[0] for key, _ in txn.cursor(db=log))
            assert logged == sorted(live.values()), "only each live key's last write is left"
    finally:
        env.close()


def a_regular_file(tmp_path: Path) -> Path:
    path = tmp_path / "file"
    path.write_bytes(b"not a directory")
    return path


def a_corrupt_data_file(tmp_path: Path) -> Path:
    path = tmp_path / "corrupt"
    path.mkdir()
    (path / "data.mdb").write_bytes(b"\xde\xad\xbe\xef" * 4096)
    return path


@pytest.mark.parametrize("make_path", [a_regular_file, a_corrupt_data_file])
async def test_opening_a_bad_path_raises_a_storage_error(tmp_path: Path, make_path: Callable[[Path], Path]) -> None:
    """Whatever lmdb or the OS says, the caller sees a StorageError (errors.py)."""
    from storage.lmdb import LmdbStore

    with pytest.raises(StorageError):
        await within(LmdbStore.open(make_path(tmp_path), SMALL_MAP))


async def test_nested_data_directory_is_created(tmp_path: Path) -> None:
    from storage.lmdb import LmdbStore

    path = tmp_path / "a" / "b" / "lmdb"
    store: Store = await within(LmdbStore.open(path, SMALL_MAP))
    try:
        assert (await within(store.create(b"/k", b"v"))).revision == 2
    finally:
        await within(store.close())
    assert (path / "data.mdb").is_file()


# ---------------------------------------------------------------- data at rest


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask, under which files are created 0644 unless the code asks otherwise."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def modes(path: Path) -> dict[str, int]:
    found = {path.name: stat.S_IMODE(path.stat().st_mode)}
    found.update({p.name: stat.S_IMODE(p.stat().st_mode) for p in path.iterdir()})
    return found


PRIVATE = {"lmdb": 0o700, "data.mdb": 0o600, "lock.mdb": 0o600}

LOOSE_CASES = [
    # what an older Capstan or an operator left: (dir mode, file mode)
    (0o755, 0o644),
    (0o777, 0o666),
    (0o750, 0o640),
]


@pytest.mark.usefixtures("umask_022")
async def test_a_new_store_is_private(lmdb_path: Path) -> None:
    store = await within(LmdbStore.open(lmdb_path, FAST))
    await within(store.create(b"/registry/secrets/default/s", b"hunter2"))
    await within(store.close())
    assert modes(lmdb_path) == PRIVATE


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize(("dir_mode", "file_mode"), LOOSE_CASES)
async def test_a_loose_store_is_tightened_with_a_warning(
    lmdb_path: Path, dir_mode: int, file_mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    await within((await within(LmdbStore.open(lmdb_path, FAST))).close())
    os.chmod(lmdb_path, dir_mode)
    for name in ("data.mdb", "lock.mdb"):
        os.chmod(lmdb_path / name, file_mode)
    with caplog.at_level(logging.WARNING, logger="storage.files"):
        store = await within(LmdbStore.open(lmdb_path, FAST))
    await within(store.close())
    assert modes(lmdb_path) == PRIVATE
    warned = {r.getMessage().split(" had ")[0] for r in caplog.records}
    assert warned == {str(lmdb_path), str(lmdb_path / "data.mdb"), str(lmdb_path / "lock.mdb")}


async def test_a_full_disk_refuses_the_write_cleanly_and_recovers(lmdb_path: Path) -> None:
    """The disk refuses LMDB's page writes (the writer caps its file size, as a full disk does): the write
    fails with DiskFailure, not a backend failure, nothing is written, reads go on, and once the disk
    takes writes again so does the store, without a restart."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storage.disk_full_writer", str(lmdb_path),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await within(proc.communicate(), 60.0)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("refused DiskFailure the disk refused the write ("), lines
    assert lines[1:] == ["revision-unchanged True", "read True", "recovered True"]


COUNT_CASES = [
    # keys under the prefix, keys a count step may cover (COUNT_SLICE): counts cross the chunk edges (16, 64, 256
    # keys read at a time, growing) and the step's budget
    (0, 2000), (1, 2000), (15, 2000), (16, 2000), (17, 2000), (80, 2000), (81, 2000), (350, 2000),
    (16, 5), (17, 16), (81, 16), (350, 64),
]


@pytest.mark.parametrize(("keys", "count_slice"), COUNT_CASES)
async def test_counts_read_in_chunks_count_every_key_under_the_prefix_and_no_other(
        lmdb_store: Store, monkeypatch: pytest.MonkeyPatch, keys: int, count_slice: int) -> None:
    """A count reads keys a chunk at a time and cuts the last chunk where the prefix's keys end; keys just before
    and just after the prefix (b"/n" < b"/n/..." < b"/n0") are never counted."""
    monkeypatch.setattr("storage.lmdb.store.COUNT_SLICE", count_slice)
    names = [b"/n/%04d" % i for i in range(keys)]
    for key in [b"/m/x", b"/n", *names, b"/n0", b"/o/x"]:
        await within(lmdb_store.create(key, b"v"))
    assert (await within(lmdb_store.count(b"/n/"))).count == keys
    for start in (0, 1, keys // 2, keys - 2):
        if not 0 <= start < keys:
            continue
        page = await within(lmdb_store.list(b"/n/", start_after=names[start - 1] if start else None, limit=1))
        assert [kv.key for kv in page.kvs] == [names[start]]
        assert page.remaining == keys - start - 1


# A history around the prefix /h/: creates, updates, deletes and a re-create, with keys just outside it.
HISTORY = [
    ("create", b"/h/a"), ("create", b"/h/b"), ("create", b"/h0"), ("create", b"/h/c"), ("update", b"/h/a"),
    ("create", b"/g/x"), ("delete", b"/h/b"), ("create", b"/h/d"), ("update", b"/h/c"), ("delete", b"/h/a"),
    ("create", b"/h/a"), ("create", b"/h/e"), ("delete", b"/h/e"), ("update", b"/h/d"), ("create", b"/h/b"),
]


@pytest.mark.parametrize("count_slice", [2000, 1], ids=["counted at once", "counted a key a step"])
@pytest.mark.parametrize("recent_writes", [10_000, 3, 0],
                         ids=["latest and recent writes", "past the bound", "by index"])
@pytest.mark.parametrize(("start_after", "limit"), [
    (None, None), (None, 1), (None, 2), (b"/h/a", 2), (b"/h/b", None), (b"/h/c", 1), (b"/h/e", None)])
async def test_a_list_at_a_past_revision_sees_the_keys_as_they_were(
        lmdb_store: Store, monkeypatch: pytest.MonkeyPatch, recent_writes: int, count_slice: int,
        start_after: bytes | None, limit: int | None) -> None:
    """At every revision of the history, a list reads what the keys under the prefix held then (with their values
    or without), and counts those after its page, whether it reads the latest state and looks up the keys written
    since, or (more writes since than RECENT_WRITES) looks every key up in the index."""
    monkeypatch.setattr("storage.lmdb.reader.RECENT_WRITES", recent_writes)
    monkeypatch.setattr("storage.lmdb.store.COUNT_SLICE", count_slice)
    states: dict[int, dict[bytes, KeyValue]] = {}
    live: dict[bytes, KeyValue] = {}
    for step, (op, key) in enumerate(HISTORY):
        if op == "delete":
            result = await within(lmdb_store.delete(key))
            del live[key]
        else:
            value = b"%s@%d" % (key, step)
            result = await within(lmdb_store.create(key, value) if op == "create" else lmdb_store.update(key, value))
            before = live.get(key)
            created = before.create_revision if before is not None else result.revision
            live[key] = KeyValue(key, value, created, result.revision, before.version + 1 if before else 1)
        assert result.ok
        states[result.revision] = dict(live)
    for revision, state in states.items():
        expected = sorted((kv for key, kv in state.items() if key.startswith(b"/h/")
                           and (start_after is None or key > start_after)), key=lambda kv: kv.key)
        listed = await within(lmdb_store.list(b"/h/", at_revision=revision, start_after=start_after, limit=limit))
        assert list(listed.kvs) == expected[:limit]
        assert listed.remaining == len(expected[limit:]) if limit is not None else listed.remaining == 0
        heads = await within(lmdb_store.list(b"/h/", at_revision=revision, start_after=start_after, limit=limit,
                                             values=False))
        assert list(heads.kvs) == [kv._replace(value=b"") for kv in expected[:limit]]
        assert heads.remaining == listed.remaining
        assert (await within(lmdb_store.count(b"/h/", at_revision=revision))).count == len(
            [key for key in state if key.startswith(b"/h/")])
