"""Snapshots, the full check and the refusals at open, on real LMDB files (storage/lmdb/snapshot.py, integrity.py).

A snapshot saved while another process writes as fast as it can holds exactly the store at the snapshot's
revision and restores to it; a save SIGKILLed at any moment leaves the store and any older snapshot at the
final name untouched; a damaged value, a truncated or foreign data file and a newer format are refused with
one line naming the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from storage import BackendFailure, KeyValue, StoreOptions
from storage.lmdb import LmdbStore, layout
from storage.lmdb import snapshot as snapshots
from storage.lmdb.integrity import DataError
from tests.storage.conftest import FAST, within
from tests.storage.test_crash import ROOT, kill, start

MARKER = b"capstan-snapshot-marker-" * 8


async def everything(path: Path, at_revision: int | None = None) -> tuple[int, list[KeyValue]]:
    store = await LmdbStore.open(path, FAST)
    try:
        listed = await store.list(b"/", at_revision=at_revision)
        return listed.revision, list(listed.kvs)
    finally:
        await store.close()


async def fill(path: Path, count: int, value: bytes = b"v" * 1024) -> None:
    store = await LmdbStore.open(path, FAST)
    try:
        await asyncio.gather(*(store.create(b"/fill/%06d" % i, value) for i in range(count)))
        await store.create(b"/marked", MARKER)
    finally:
        await store.close()


async def test_a_snapshot_saved_under_write_load_restores_the_store_at_its_revision(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await fill(data, 200)
    writer, _ = await start("write", data, "load")
    assert writer.stdout is not None
    # its acknowledgements are read as they come: a pipe left full would hold back the end of its output, and with
    # it the wait for its exit
    drained = asyncio.get_running_loop().create_task(writer.stdout.read())
    try:
        await asyncio.sleep(0.3)  # writes are flowing
        saved = await within(asyncio.to_thread(snapshots.save, data, tmp_path / "snap.db"), 30)
        await asyncio.sleep(0.2)  # and go on after the save
    finally:
        await kill(writer)
        await within(drained)
    final, _ = await everything(data)
    assert saved.report.revision < final  # the writer wrote past the snapshot
    _, expected = await everything(data, at_revision=saved.report.revision)
    assert saved.report.objects == len(expected)

    restored = tmp_path / "restored" / "lmdb"
    snapshots.restore(tmp_path / "snap.db", restored)
    revision, items = await everything(restored)
    assert (revision, items) == (saved.report.revision, expected)
    store = await LmdbStore.open(restored, FAST)
    try:
        assert (await store.create(b"/after", b"x")).revision == saved.report.revision + 1
    finally:
        await store.close()


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.4])
async def test_a_save_killed_midway_leaves_the_store_and_the_old_snapshot_untouched(
        tmp_path: Path, delay: float) -> None:
    data = tmp_path / "lmdb"  # the command reads <data-dir>/lmdb
    await fill(data, 20_000)  # ~40 MB: a save takes a while
    target = tmp_path / "snap.db"
    snapshots.save(data, target)
    old = target.read_bytes()
    before = hashlib.sha256((data / "data.mdb").read_bytes()).digest()
    proc = subprocess.Popen([sys.executable, "-m", "capstan", "snapshot", "save", str(target), "--data-dir",
                             str(tmp_path)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    await asyncio.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert hashlib.sha256((data / "data.mdb").read_bytes()).digest() == before
    if target.read_bytes() != old:  # killed after the rename: then the new snapshot is whole
        assert snapshots.status(target).report.objects == 20_001
    assert (await everything(data))[1][-1].value == MARKER


def flip_value(path: Path, marker: bytes) -> None:
    raw = bytearray(path.read_bytes())
    at = raw.index(marker)
    raw[at + 3] ^= 0xFF
    path.write_bytes(bytes(raw))


def truncate(path: Path, keep: float) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])


def newer_format(path: Path) -> None:
    env = lmdb.open(str(path.parent), max_dbs=8)
    meta = env.open_db(layout.META_DB)
    with env.begin(write=True, db=meta) as txn:
        txn.put(b"format", layout.rev(2))
    env.close()


def foreign(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[:8192] = b"\x5a" * 8192  # both meta pages
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(("damage", "words"), [
    (lambda p: truncate(p, 0.5), "is truncated"),
    (newer_format, "written by a newer Capstan"),
    (foreign, "is damaged or is no LMDB store"),
], ids=["truncated", "newer-format", "not-lmdb"])
async def test_a_data_file_that_must_not_be_served_is_refused_at_open(tmp_path: Path, damage: object,
                                                                      words: str) -> None:
    data = tmp_path / "data"
    await fill(data, 300)
    damage(data / "data.mdb")  # type: ignore[operator]
    with pytest.raises(DataError, match=words) as refused:
        await LmdbStore.open(data, FAST)
    assert str(data / "data.mdb") in str(refused.value) and "\n" not in str(refused.value)


async def test_a_damaged_value_is_found_by_the_check(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await fill(data, 300)
    assert snapshots.check(data).objects == 301
    flip_value(data / "data.mdb", MARKER)
    with pytest.raises(DataError, match="/marked: its value differs from the log's copy"):
        snapshots.check(data)
    with pytest.raises(DataError, match="/marked"):  # a snapshot would carry the damage: none is written
        snapshots.save(data, tmp_path / "snap.db")
    assert not (tmp_path / "snap.db").exists() and not (tmp_path / "snap.db.part").exists()


@pytest.mark.parametrize(("damage", "words"), [
    (lambda p: flip_value(p, MARKER), "is damaged: its SHA-256 is"),
    (lambda p: truncate(p, 0.7), "has no integrity hash"),
], ids=["flipped", "truncated"])
async def test_a_damaged_snapshot_is_refused_by_status_and_restore(tmp_path: Path, damage: object,
                                                                   words: str) -> None:
    await fill(tmp_path / "data", 300)
    snap = tmp_path / "snap.db"
    assert snapshots.save(tmp_path / "data", snap).report.objects == 301
    damage(snap)  # type: ignore[operator]
    with pytest.raises(DataError, match=words):
        snapshots.status(snap)
    with pytest.raises(DataError, match=words):
        snapshots.restore(snap, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()


async def test_restore_refuses_an_existing_directory(tmp_path: Path) -> None:
    await fill(tmp_path / "data", 10)
    snapshots.save(tmp_path / "data", tmp_path / "snap.db")
    with pytest.raises(BackendFailure, match="exists"):
        snapshots.restore(tmp_path / "snap.db", tmp_path / "data")


async def test_defrag_shrinks_the_file_and_keeps_every_object(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await fill(data, 2_000)
    store = await LmdbStore.open(data, StoreOptions(sync=False, compact_interval=0))
    try:
        await asyncio.gather(*(store.delete(b"/fill/%06d" % i) for i in range(1_500)))
        await store.compact(store.current_revision())
    finally:
        await store.close()
    revision, items = await everything(data)
    before, after = snapshots.defrag(data)
    assert after < before / 2
    assert await everything(data) == (revision, items)


STALE_READER = """
import lmdb, os, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
txn = env.begin()
print(os.getpid(), flush=True)
sys.stdin.read()
"""


def readers(data: Path) -> list[str]:
    """The pids in the environment's reader table, as another process sees it (LMDB's table, not a probe's)."""
    code = "import lmdb, sys; print(lmdb.open(sys.argv[1], max_dbs=8).readers())"
    table = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in table.stdout.splitlines()[1:] if line.strip()]


async def test_compaction_clears_the_reader_a_killed_save_left(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await fill(data, 10)
    store = await LmdbStore.open(data, FAST)
    try:
        reader = subprocess.Popen([sys.executable, "-c", STALE_READER, str(data)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert reader.stdout is not None
        pid = reader.stdout.readline().strip()
        reader.kill()
        reader.wait(10)
        assert pid in readers(data)
        await store.compact(store.current_revision())
        assert pid not in readers(data)
    finally:
        await store.close()
