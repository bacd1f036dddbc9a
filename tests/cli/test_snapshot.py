"""`capstan snapshot`, `check` and `defrag` as an operator runs them, and the refusals at start.

A snapshot saved while `capstan serve` takes writes restores into a new data directory that serves the same
objects at the saved revision; `snapshot status` prints etcdctl's table and JSON; a second server on a data
directory, a truncated data file and a newer format each stop `capstan serve` with exit 1 and one line naming
the file, never a traceback; the etcd store is etcd's tools' to back up.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest
from aiohttp import ClientSession

from storage import StoreOptions
from storage.lmdb import LmdbStore, layout
from tests.cli.test_data_at_rest import CONFIGMAPS, start, stop
from tests.cli.test_serve import ROOT
from tests.cli.test_workers import serving


def capstan(*words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "capstan", *words], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)


def refused_with(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("capstan: "), done.stderr
    for word in words:
        assert word in lines[-1], lines[-1]


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


async def names(port: int) -> tuple[int, list[str]]:
    async with ClientSession() as http, http.get(f"http://127.0.0.1:{port}{CONFIGMAPS}") as resp:
        body = await resp.json()
    return int(body["metadata"]["resourceVersion"]), sorted(item["metadata"]["name"] for item in body["items"])


async def test_save_while_serving_status_and_restore(tmp_path: Path) -> None:
    data, snap = tmp_path / "data", tmp_path / "backup.db"
    proc, port = start(data)
    stopping = asyncio.Event()
    created: list[str] = []

    async def write() -> None:
        async with ClientSession() as http:
            while not stopping.is_set():
                name = f"c{len(created)}"
                async with http.post(f"http://127.0.0.1:{port}{CONFIGMAPS}", json=configmap(name)) as resp:
                    assert resp.status == 201, await resp.text()
                created.append(name)

    try:
        writer = asyncio.create_task(write())
        await asyncio.sleep(0.5)
        before_save = len(created)
        saved = await asyncio.to_thread(capstan, "snapshot", "save", str(snap), "--data-dir", str(data))
        at_save = len(created)
        await asyncio.sleep(0.3)
        stopping.set()
        await writer
        assert saved.returncode == 0, saved.stderr
        assert saved.stdout.startswith(f"Snapshot saved at {snap} (revision ")
    finally:
        await stop(proc)

    table = capstan("snapshot", "status", str(snap))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert [cell.strip() for cell in lines[1].strip("|").split("|")] == ["HASH", "REVISION", "TOTAL KEYS",
                                                                         "TOTAL SIZE"]
    status = json.loads(capstan("snapshot", "status", str(snap), "-w", "json").stdout)
    assert status["totalSize"] == snap.stat().st_size
    assert [cell.strip() for cell in lines[3].strip("|").split("|")][:3] == [
        f"{status['hash']:x}", str(status["revision"]), str(status["totalKey"])]

    refused_with(capstan("snapshot", "restore", str(snap), "--data-dir", str(data)), "not empty")
    restored = tmp_path / "restored"
    done = capstan("snapshot", "restore", str(snap), "--data-dir", str(restored))
    assert done.returncode == 0, done.stderr
    proc, port = start(restored)
    try:
        revision, served = await names(port)
    finally:
        await stop(proc)
    # One writer, one create at a time: the snapshot holds exactly the creates acknowledged before its read
    # transaction began (and perhaps the one then in flight), which was while the command ran.
    assert set(served) == set(created[: len(served)])
    assert before_save <= len(served) <= at_save + 1 < len(created)
    assert revision >= status["revision"]  # the restored server's own start writes come after it


async def test_a_second_server_on_a_data_directory_is_refused(tmp_path: Path) -> None:
    proc, _ = start(tmp_path / "data")
    try:
        done = capstan("serve", "--insecure", "--data-dir", str(tmp_path / "data"), "--http-port", "0",
                       "--grpc-port", "0")
        refused_with(done, "is in use by another process", f"(pid {proc.pid})", "capstan.lock")
        refused_with(capstan("defrag", "--data-dir", str(tmp_path / "data")), "is in use by another process")
        assert capstan("check", "--data-dir", str(tmp_path / "data")).returncode == 0  # a reader is welcome
    finally:
        await stop(proc)
    proc, _ = start(tmp_path / "data")  # the lock went with the first server
    await stop(proc)


async def test_the_workers_share_the_lock_and_another_server_is_refused(tmp_path: Path) -> None:
    async with serving(tmp_path / "data") as server:  # both workers serve: they hold the parent's lock
        done = capstan("serve", "--insecure", "--data-dir", str(tmp_path / "data"), "--http-port", "0",
                       "--grpc-port", "0")
        refused_with(done, "is in use by another process", f"(pid {server.proc.pid})")
        done = capstan("serve", "--insecure", "--workers", "2", "--data-dir", str(tmp_path / "data"),
                       "--http-port", "0", "--grpc-port", "0")
        refused_with(done, "is in use by another process", f"(pid {server.proc.pid})")


def truncate(data: Path) -> None:
    path = data / "lmdb" / "data.mdb"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def newer_format(data: Path) -> None:
    env = lmdb.open(str(data / "lmdb"), max_dbs=8)
    meta = env.open_db(layout.META_DB)
    with env.begin(write=True, db=meta) as txn:
        txn.put(b"format", layout.rev(7))
    env.close()


@pytest.mark.parametrize(("damage", "words"), [(truncate, "is truncated"), (newer_format, "format 7")],
                         ids=["truncated", "newer-format"])
async def test_serve_refuses_a_data_file_it_must_not_serve(tmp_path: Path, damage: object, words: str) -> None:
    proc, _ = start(tmp_path / "data")
    await stop(proc)
    damage(tmp_path / "data")  # type: ignore[operator]
    done = capstan("serve", "--insecure", "--data-dir", str(tmp_path / "data"), "--http-port", "0",
                   "--grpc-port", "0")
    refused_with(done, words, str(tmp_path / "data" / "lmdb" / "data.mdb"))


def test_the_etcd_store_is_etcds_tools_to_back_up(tmp_path: Path) -> None:
    refused_with(capstan("snapshot", "save", str(tmp_path / "x.db"), "--etcd-servers", "http://127.0.0.1:2379"),
                 "etcdctl snapshot save")
    assert not (tmp_path / "x.db").exists()


async def test_defrag_prints_the_sizes_before_and_after(tmp_path: Path) -> None:
    store = await LmdbStore.open(tmp_path / "data" / "lmdb", StoreOptions(sync=False, compact_interval=0))
    try:
        for i in range(500):
            await store.create(b"/k/%04d" % i, b"v" * 2048)
        for i in range(450):
            await store.delete(b"/k/%04d" % i)
        await store.compact(store.current_revision())
    finally:
        await store.close()
    done = capstan("defrag", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    match = re.fullmatch(r"defragmented (\S+): .* -> .* \((\d+) -> (\d+) bytes\)\n", done.stdout)
    assert match and match[1] == str(tmp_path / "data" / "lmdb" / "data.mdb"), done.stdout
    assert int(match[3]) < int(match[2]) // 2
    assert ", 50 objects, " in capstan("check", "--data-dir", str(tmp_path / "data")).stdout


def test_missing_files_are_one_line(tmp_path: Path) -> None:
    refused_with(capstan("defrag", "--data-dir", str(tmp_path / "none")), "no store")
    refused_with(capstan("check", "--data-dir", str(tmp_path / "none")), "no store")
    refused_with(capstan("snapshot", "status", str(tmp_path / "none.db")), "cannot read the snapshot")
