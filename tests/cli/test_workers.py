"""`capstan serve --workers 2` as a user runs it: two real worker processes under their parent, sharing one
HTTP port (SO_REUSEPORT) and one LMDB environment with fsync.

Which worker serves a connection is found from /proc (the server end of the TCP connection is a socket one
worker holds), so each test talks to each worker on purpose, not by chance.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientError, ClientSession, TCPConnector
from prometheus_client.parser import text_string_to_metric_families

from capstan.cli import commands, workers
from capstan.cli.commands import parse_args
from server.machinery.limits.config import DEFAULT
from storage import StoreOptions
from storage.lmdb import LmdbStore

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"HTTP http://127\.0\.0\.1:(\d+) .* worker (\d+) pid (\d+)")
LEADING = "acquired lease kube-system/capstan-controllers"
TIMEOUT = 60.0


@dataclass
class Server:
    proc: subprocess.Popen[str]
    port: int = 0
    pids: dict[int, int] = field(default_factory=dict)  # worker index -> pid, the newest start of each
    lines: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def follow(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.changed:
                self.lines.append(line)
                match = SERVING.search(line)
                if match:
                    self.port = int(match[1])
                    self.pids[int(match[2])] = int(match[3])
                self.changed.notify_all()

    def wait_for(self, predicate: Any, timeout: float = TIMEOUT) -> None:
        with self.changed:
            if not self.changed.wait_for(predicate, timeout):
                raise AssertionError("capstan serve --workers did not get there:\n" + "".join(self.lines[-40:]))

    def log_count(self, text: str) -> int:
        with self.changed:
            return sum(text in line for line in self.lines)


@asynccontextmanager
async def serving(data: Path, workers: int = 2) -> AsyncIterator[Server]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--workers", str(workers), "--data-dir", str(data),
         "--http-port", "0", "--grpc-port", "0", "--leader-elect-retry-period", "0.5"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = Server(proc)
    threading.Thread(target=server.follow, daemon=True).start()
    try:
        await asyncio.to_thread(server.wait_for, lambda: len(server.pids) == workers)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()  # the workers die with their parent
        proc.wait(10)


def serving_pid(server_port: int, client_port: int) -> int:
    """The process holding the server end of the loopback connection from `client_port`."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == client_port:
            inode = fields[9]
    assert inode is not None, "no such connection"
    target = f"socket:[{inode}]"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
        except OSError:
            continue
    raise AssertionError("no process holds the connection")


async def session_per_worker(server: Server) -> dict[int, ClientSession]:
    """One HTTP session (one keep-alive connection) to each worker, by its index."""
    by_pid = {pid: index for index, pid in server.pids.items()}
    sessions: dict[int, ClientSession] = {}
    for _ in range(64):
        if len(sessions) == len(by_pid):
            return sessions
        with socket.socket() as probe:  # a free local port, so the connection's client end is known
            probe.bind(("127.0.0.1", 0))
            client_port = probe.getsockname()[1]
        session = ClientSession(f"http://127.0.0.1:{server.port}",
                                connector=TCPConnector(limit=1, local_addr=("127.0.0.1", client_port)))
        async with session.get("/version") as resp:
            await resp.read()
        index = by_pid.get(serving_pid(server.port, client_port))
        if index is None or index in sessions:
            await session.close()
        else:
            sessions[index] = session
    raise AssertionError("the kernel never handed a connection to every worker")


async def create(session: ClientSession, ns: str, name: str) -> int:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}
    async with session.post(f"/api/v1/namespaces/{ns}/configmaps", json=body) as resp:
        assert resp.status == 201, await resp.text()
        return int((await resp.json())["metadata"]["resourceVersion"])


async def watch(session: ClientSession, ns: str, from_rv: int, count: int) -> list[tuple[str, str, int]]:
    """The first `count` events of a watch of the namespace's ConfigMaps named w-*: (type, name, revision)."""
    events: list[tuple[str, str, int]] = []
    async with session.get(f"/api/v1/namespaces/{ns}/configmaps",
                           params={"watch": "1", "resourceVersion": str(from_rv)}) as resp:
        assert resp.status == 200
        async for line in resp.content:
            event = json.loads(line)
            meta = event["object"]["metadata"]
            if meta["name"].startswith("w-"):
                events.append((event["type"], meta["name"], int(meta["resourceVersion"])))
            if len(events) == count:
                return events
    raise AssertionError(f"the watch ended after {len(events)} events")


async def revision(session: ClientSession, ns: str) -> int:
    async with session.get(f"/api/v1/namespaces/{ns}/configmaps") as resp:
        return int((await resp.json())["metadata"]["resourceVersion"])


@pytest.mark.parametrize("writes_per_worker", [40])
async def test_every_worker_writes_one_order_that_every_worker_watches(
        tmp_path: Path, writes_per_worker: int) -> None:
    async with serving(tmp_path / "data") as server:
        sessions = await session_per_worker(server)
        watching = await session_per_worker(server)
        try:
            start = await revision(sessions[0], "default")
            total = writes_per_worker * len(sessions)
            watches = [asyncio.ensure_future(watch(s, "default", start, total)) for s in watching.values()]
            await asyncio.sleep(0.3)  # both watches open: each worker serves one

            async def writes(index: int, session: ClientSession) -> dict[str, int]:
                names = [f"w-{index}-{n:03d}" for n in range(writes_per_worker)]
                revisions = await asyncio.gather(*(create(session, "default", name) for name in names))
                return dict(zip(names, revisions, strict=True))

            acked: dict[str, int] = {}
            for part in await asyncio.wait_for(asyncio.gather(*(writes(i, s) for i, s in sessions.items())), TIMEOUT):
                acked.update(part)
            assert len(set(acked.values())) == total  # one revision each: the workers share one order
            expected = sorted((("ADDED", name, rv) for name, rv in acked.items()), key=lambda e: e[2])
            for events in await asyncio.wait_for(asyncio.gather(*watches), TIMEOUT):
                assert events == expected  # each worker's watch: every worker's writes, in order, once
            # The controllers run in one worker only: one leader, however many workers.
            await asyncio.to_thread(server.wait_for, lambda: server.log_count(LEADING) >= 1)
            assert server.log_count(LEADING) == 1
        finally:
            for session in [*sessions.values(), *watching.values()]:
                await session.close()
        # SIGTERM drains every worker; the parent exits 0 once all have.
        server.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(server.proc.wait, 30) == 0
        for pid in server.pids.values():
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    store = await LmdbStore.open(tmp_path / "data" / "lmdb", StoreOptions(compact_interval=0))
    try:
        stored = {kv.key.rsplit(b"/", 1)[1].decode(): kv.mod_revision
                  for kv in (await store.list(b"/core/configmaps/default/w-")).kvs}
        assert stored == acked
    finally:
        await store.close()


def request_count(text: str, verb: str, resource: str, code: str) -> float:
    """apiserver_request_total for one verb, resource and code, in a /metrics answer."""
    wanted = {"verb": verb, "resource": resource, "code": code}
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "apiserver_request_total" and wanted.items() <= sample.labels.items())


@pytest.mark.parametrize("creates", [(3, 5)])
async def test_every_worker_answers_metrics_for_the_whole_server(tmp_path: Path, creates: tuple[int, int]) -> None:
    """A scrape reaches whichever worker the kernel picks; each answers with every worker's requests counted."""
    async with serving(tmp_path / "data") as server:
        sessions = await session_per_worker(server)
        try:
            for index, session in sessions.items():
                for n in range(creates[index]):
                    await create(session, "default", f"m-{index}-{n}")
            for session in sessions.values():
                async with session.get("/metrics") as resp:
                    assert resp.status == 200
                    text = await resp.text()
                assert request_count(text, "POST", "configmaps", "201") == sum(creates)
                assert text.count("# TYPE apiserver_request_total counter") == 1
        finally:
            for session in sessions.values():
                await session.close()


@pytest.mark.parametrize(("issuer", "redeemer"), [(0, 1), (1, 0)])
async def test_a_console_code_redeems_once_at_any_worker(tmp_path: Path, issuer: int, redeemer: int) -> None:
    """A login code lives in the worker that issued it; the login may reach another worker, which redeems it
    there, once."""
    async with serving(tmp_path / "data") as server:
        sessions = await session_per_worker(server)
        try:
            async with sessions[issuer].post("/console/codes", headers={"Authorization": "Bearer the-token"}) as resp:
                assert resp.status == 201, await resp.text()
                code = (await resp.json())["code"]
            async with sessions[redeemer].post("/console/login", json={"code": code}) as resp:
                assert resp.status == 200, await resp.text()
                assert (await resp.json())["token"] == "the-token"
            for session in (sessions[issuer], sessions[redeemer]):
                async with session.post("/console/login", json={"code": code}) as resp:
                    assert resp.status == 401  # redeemed: gone from every worker
        finally:
            for session in sessions.values():
                await session.close()


async def test_a_worker_killed_under_writes_loses_nothing_acknowledged_and_comes_back(tmp_path: Path) -> None:
    async with serving(tmp_path / "data") as server:
        sessions = await session_per_worker(server)
        acked: dict[str, int] = {}
        stop = asyncio.Event()

        async def writes(index: int, session: ClientSession) -> None:
            n = 0
            while not stop.is_set():
                name = f"w-{index}-{n:05d}"
                n += 1
                try:
                    acked[name] = await create(session, "default", name)
                except (ClientError, AssertionError):
                    return  # the worker died under it: unacknowledged
        try:
            writers = [asyncio.ensure_future(writes(i, s)) for i, s in sessions.items()]
            await asyncio.sleep(1.0)
            victim = server.pids[1]
            os.kill(victim, signal.SIGKILL)
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.wait_for(asyncio.gather(*writers), TIMEOUT)
            assert any(name.startswith("w-1-") for name in acked) and any(name.startswith("w-0-") for name in acked)
            # The parent starts it again, and it serves the same port.
            await asyncio.to_thread(server.wait_for, lambda: server.pids[1] != victim)
            again = await session_per_worker(server)
            try:
                async with again[1].get("/api/v1/namespaces/default/configmaps") as resp:
                    items = (await resp.json())["items"]
            finally:
                for session in again.values():
                    await session.close()
            stored = {item["metadata"]["name"]: int(item["metadata"]["resourceVersion"])
                      for item in items if item["metadata"]["name"].startswith("w-")}
            assert {name: stored.get(name) for name in acked} == acked  # every acknowledged write, as answered
        finally:
            for session in sessions.values():
                await session.close()


def _reaped_pid() -> int:
    """The pid of a process that has exited and been reaped: nothing runs under it now."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _make(path: Path, contents: str, held: list[socket.socket]) -> None:
    """A workers' directory as a parent leaves it: `contents` is "empty", "file" (not a directory), "gone" (a
    socket no worker listens on any more) or "listening" (a worker answers on it)."""
    if contents == "file":
        path.write_text("")
        return
    path.mkdir(mode=0o700)
    if contents in ("gone", "listening"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path / "0.sock"))
        if contents == "listening":
            sock.listen()
            held.append(sock)
        else:
            sock.close()


@pytest.mark.parametrize(("name", "contents", "age", "removed"), [
    ("capstan-workers-{dead}-a1b2c3", "gone", "old", True),
    ("capstan-workers-{dead}-a1b2c3", "empty", "old", True),
    ("capstan-workers-{alive}-a1b2c3", "gone", "old", False),
    ("capstan-workers-{dead}-a1b2c3", "gone", "new", False),
    ("capstan-workers-{dead}-a1b2c3", "listening", "old", False),
    ("capstan-workers-x{dead}-a1b2c3", "gone", "old", False),
    ("capstan-workers-{dead}-a1b2c3", "file", "old", False),
    ("capstan-other-{dead}-a1b2c3", "gone", "old", False),
], ids=["left by a killed parent", "left before any worker bound", "its parent runs", "just made",
        "a worker answers in it", "not named for a pid", "not a directory", "not a workers' directory"])
def test_a_start_removes_only_what_killed_parents_left(name: str, contents: str, age: str, removed: bool) -> None:
    base = Path(tempfile.mkdtemp(prefix="sweep-"))  # short, as /tmp is: a socket's path is at most 107 bytes
    path = base / name.format(dead=_reaped_pid(), alive=os.getpid())
    held: list[socket.socket] = []
    try:
        _make(path, contents, held)
        if age == "old":
            then = time.time() - workers.START_TIMEOUT - 1
            os.utime(path, (then, then))
        made = Path(workers.private_directory(str(base)))
        assert made.is_dir() and made.stat().st_mode & 0o777 == 0o700
        assert made.name.startswith(f"{workers.DIR_PREFIX}{os.getpid()}-")
        assert path.exists() is not removed
    finally:
        for sock in held:
            sock.close()
        shutil.rmtree(base, ignore_errors=True)


async def test_the_directory_of_a_killed_parent_is_removed_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves the parent no time to remove its workers' directory; the next parent to start does, once
    its workers have gone and it is older than a start takes."""
    async with serving(tmp_path / "data") as server:
        [left] = Path(tempfile.gettempdir()).glob(f"{workers.DIR_PREFIX}{server.proc.pid}-*")
        assert sorted(p.name for p in left.iterdir()) == ["0.sock", "1.sock"]
    assert left.is_dir()  # serving killed the parent
    then = time.time() - workers.START_TIMEOUT - 1
    os.utime(left, (then, then))
    deadline = time.monotonic() + TIMEOUT
    while left.exists():  # the workers drain after their parent dies, and answer until they have
        assert time.monotonic() < deadline, "the killed parent's directory stayed"
        os.rmdir(workers.private_directory())
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("argv, count", [
    (["serve", "--insecure"], workers.default_workers()),  # the default: the usable cores
    (["core", "--insecure"], workers.default_workers()),
    (["serve", "--workers", "1"], 1),
    (["serve", "--fault-injection"], 1),  # its rules are one process's
    (["serve", "--fault-injection", "--workers", "2"], 2),
    (["serve", "--workers", "3"], 3),
    (["core", "--workers=2", "--insecure"], 2),
    (["serve", "--workers", "auto"], workers.default_workers()),
    (["gateway", "--workers", "2"], 1),  # a gateway is stateless: run more of them instead
    (["serve", "--workers", "0"], 1),  # refused by the command's own parser, in the one process
    (["kube-apiserver", "--etcd-servers", "http://127.0.0.1:2379"], 1),  # envtest's: one process, as it starts one
])
def test_the_parent_reads_the_worker_count(argv: list[str], count: int) -> None:
    assert workers.workers_asked(argv) == count


@pytest.mark.parametrize("text, count", [("1", 1), ("4", 4), ("auto", workers.default_workers())])
def test_the_command_takes_workers(text: str, count: int) -> None:
    assert parse_args(["serve", "--workers", text]).workers == count
    assert parse_args(["core", "--workers", text]).workers == count


@pytest.mark.parametrize(("count", "argv", "limits"), [
    (1, [], (DEFAULT.max_requests_inflight, DEFAULT.max_mutating_requests_inflight)),
    (2, [], (DEFAULT.max_requests_inflight, DEFAULT.max_mutating_requests_inflight)),  # each event loop's
    (1, ["--max-requests-inflight", "400", "--max-mutating-requests-inflight", "200"], (400, 200)),
    (2, ["--max-requests-inflight", "400", "--max-mutating-requests-inflight", "200"], (200, 100)),
    (3, ["--max-requests-inflight", "400", "--max-mutating-requests-inflight", "200"], (134, 67)),  # rounded up
    (2, ["--max-requests-inflight", "0"], (0, DEFAULT.max_mutating_requests_inflight)),  # no limit stays none
])
def test_a_limit_given_is_the_servers_shared_by_its_workers(
        monkeypatch: pytest.MonkeyPatch, count: int, argv: list[str], limits: tuple[int, int]) -> None:
    monkeypatch.setenv(workers.COUNT_ENV, str(count))
    limiter = commands._limiter(parse_args(["serve", *argv]))
    assert (limiter.limits.max_requests_inflight, limiter.limits.max_mutating_requests_inflight) == limits


def test_auto_is_the_usable_cores_at_most_eight() -> None:
    assert workers.default_workers() == min(len(os.sched_getaffinity(0)), workers.MAX_WORKERS)
