"""`capstan serve` keeps its data private and within its quota, as a user runs it.

The data directory, the store and the files beside it are 0700/0600 under the common umask 0o022; past
--quota-backend-bytes creates answer 507 with etcd's words and the quota while reads and deletes work,
/readyz's etcd-quota check fails and /metrics shows the size against the quota.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import ClientSession

from tests.cli.test_serve import LISTENING, ROOT

QUOTA = 2 << 20  # room for what serve writes at start, then a dozen ConfigMaps
BLOB = 128 << 10  # under a tenth of the quota, so a refused write means /readyz's etcd-quota fails
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def start(data_dir: Path, *flags: str) -> tuple[subprocess.Popen[str], int]:
    proc, port, _ = start_logged(data_dir, *flags)
    return proc, port


def start_logged(data_dir: Path, *flags: str) -> tuple[subprocess.Popen[str], int, list[str]]:
    """The server, its port, and what it logged before listening."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--sync", "false", "--data-dir", str(data_dir),
         "--http-port", "0", "--grpc-port", "0", *flags],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    logged: list[str] = []
    for line in proc.stderr:
        match = LISTENING.search(line)
        if match:
            return proc, int(match[1]), logged
        logged.append(line)
    raise AssertionError(f"capstan serve exited with {proc.wait()} before listening")


async def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, 10) == 0


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


EXPECTED_MODES = {"": 0o700, "lmdb": 0o700, "lmdb/data.mdb": 0o600, "lmdb/lock.mdb": 0o600, "endpoints.json": 0o600}


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("loose", [False, True], ids=["new", "tightened"])
async def test_the_data_directory_is_private(tmp_path: Path, loose: bool) -> None:
    data = tmp_path / "data"
    if loose:  # an older Capstan's data dir, everything world-readable
        proc, _ = start(data)
        await stop(proc)
        for name in EXPECTED_MODES:
            os.chmod(data / name, 0o755 if (data / name).is_dir() else 0o644)
    proc, _, logged = start_logged(data)
    try:
        assert {name: mode(data / name) for name in EXPECTED_MODES} == EXPECTED_MODES
        # A fresh data dir is created private: only an older, looser one is tightened, with a warning.
        assert any("had permission" in line for line in logged) == loose, logged
    finally:
        await stop(proc)


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": "x" * BLOB}}


async def test_past_the_quota_writes_answer_507_and_reads_and_deletes_work(tmp_path: Path) -> None:
    proc, port = start(tmp_path / "data", "--quota-backend-bytes", str(QUOTA))
    base = f"http://127.0.0.1:{port}"
    try:
        async with ClientSession() as http:
            created = []
            for i in range(2 * QUOTA // BLOB):
                async with http.post(base + CONFIGMAPS, json=configmap(f"c{i}")) as resp:
                    if resp.status != 201:
                        refused = (resp.status, await resp.json())
                        break
                    created.append(f"c{i}")
            else:
                raise AssertionError(f"{2 * QUOTA} bytes of ConfigMaps accepted under a quota of {QUOTA}")
            status, body = refused
            assert (status, body["reason"], body["code"]) == (507, "InsufficientStorage", 507), body
            assert body["message"].startswith("etcdserver: mvcc: database space exceeded: "), body
            assert f"the quota is {QUOTA} (--quota-backend-bytes)" in body["message"], body
            assert created
            async with http.get(f"{base}/readyz?verbose") as resp:
                assert resp.status == 500
                assert "[-]etcd-quota failed: reason withheld" in (await resp.text()).splitlines()
            async with http.get(f"{base}/metrics") as resp:
                lines = (await resp.text()).splitlines()
            samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines
                       if line and not line.startswith("#")}
            assert samples["etcd_server_quota_backend_bytes"] == QUOTA
            # at the quota, give or take the pages the last writes took beyond their keys and values
            assert QUOTA - BLOB < samples['apiserver_storage_size_bytes{storage_cluster_id="capstan"}'] < QUOTA + BLOB
            async with http.get(f"{base}{CONFIGMAPS}/{created[0]}") as resp:
                assert resp.status == 200
            async with http.get(base + CONFIGMAPS) as resp:
                assert len((await resp.json())["items"]) == len(created)
            for name in created:
                async with http.delete(f"{base}{CONFIGMAPS}/{name}") as resp:
                    assert resp.status == 200, await resp.text()
    finally:
        await stop(proc)


async def test_no_quota_when_negative(tmp_path: Path) -> None:
    proc, port = start(tmp_path / "data", "--quota-backend-bytes", "-1")
    try:
        async with ClientSession() as http:
            for i in range(2 * QUOTA // BLOB):
                async with http.post(f"http://127.0.0.1:{port}{CONFIGMAPS}", json=configmap(f"c{i}")) as resp:
                    assert resp.status == 201, await resp.text()
            async with http.get(f"http://127.0.0.1:{port}/readyz/etcd-quota") as resp:
                assert resp.status == 200
    finally:
        await stop(proc)
