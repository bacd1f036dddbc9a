"""What watchers that do not read cost a `capstan serve`: writers' rate and the server's memory.

    python -m bench.watchers [--watchers 2000] [--writes 2000] [--transports http,grpc] [--objects 20000]

From one `capstan serve --insecure` on loopback (a child process, so its RSS and CPU are its own):
1. writes/s of 16 concurrent creates of 1 KiB ConfigMaps over HTTP into namespace `bench`, with no watcher, and
   beside `--watchers` watches (from the current resourceVersion) held by a separate process that reads their
   response headers (HTTP) or opens the call (gRPC) and then reads nothing, so that process costs no CPU:
   - `quiet`: the watchers watch another namespace, where nothing changes (an idle kubelet-like watcher);
   - `stuck`: they watch `bench`, the namespace written to, and never read: the server writes each one's
     events until its socket buffers are full (the HTTP client's receive buffer is set to 4 KiB; gRPC's is
     its flow-control window), then it must cost nothing until it is dropped.
   Transports: `http`, `grpc` (grpc-python's client: its transport keeps reading every stream into the
   client's own memory although the application reads nothing, so to the server it is a watcher that keeps
   up), and `grpc-stopped` (the same process stopped with SIGSTOP once the calls are open: a hung client
   that reads nothing from its sockets, which the server's flow control must hold back).
   `--bookmarks`: the HTTP watchers ask for bookmarks (allowWatchBookmarks=true), as client-go's informers do.
   Each figure is the median of `--rounds` alternating rounds (no watchers, then with), the ratio is
   with/without; the 2 shared cores move single rounds by 10-20%.
2. the server's RSS before the watchers, at its highest while they sit there, and once they have left;
3. the RSS of `--initial` watchers (no resourceVersion: the whole collection first) over `--objects` 1 KiB
   ConfigMaps, clients that never read, sampled for a few seconds, then after they leave.
One JSON line per figure on stdout (bench/_util.py's shape); progress on stderr.

    python -m bench.watchers --hold http|grpc|grpc-stopped ADDRESS NAMESPACE COUNT REVISION

is the watchers' process: it opens COUNT watches, prints "ready", and holds them until its stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import grpc
import orjson

from bench._processes import Child, Children
from bench._util import at_least, context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc

LISTENING = re.compile(r"capstan serving: HTTP (http://\S+) gRPC (\S+)")
WRITTEN = "bench"  # the namespace the writers create in
QUIET = "quiet"  # a namespace nothing is written to
WRITERS = 16
SAMPLE = 0.25  # seconds between RSS samples
RECEIVE_BUFFER = 4096  # bytes of kernel receive buffer an HTTP watcher asks for before it connects
GRPC_CHANNEL_STREAMS = 500  # watches per gRPC channel


def configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def rss_of(pid: int) -> float:
    """The process's resident set now, in MiB."""
    return _kib_field(f"/proc/{pid}/status", "VmRSS:") / 1024


def anonymous_of(pid: int) -> float:
    """The process's anonymous memory now in MiB (its heap: the resident set without mapped files)."""
    return _kib_field(f"/proc/{pid}/smaps_rollup", "Anonymous:") / 1024


def _kib_field(path: str, name: str) -> int:
    with open(path) as lines:
        for line in lines:
            if line.startswith(name):
                return int(line.split()[1])
    return 0


def body(name: str) -> bytes:
    return orjson.dumps({"metadata": {"name": name}, "data": {"k": "x" * 1024}})


async def create_many(session: aiohttp.ClientSession, base: str, names: list[str], namespace: str = WRITTEN) -> float:
    """Create them with WRITERS at a time; the rate in writes/s."""
    queue = iter(names)
    started = time.monotonic()

    async def worker() -> None:
        for name in queue:
            async with session.post(base + configmaps(namespace), data=body(name),
                                    headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"create {name}: {resp.status} {await resp.text()}")

    await asyncio.gather(*(worker() for _ in range(WRITERS)))
    return len(names) / (time.monotonic() - started)


# The watchers' process.

async def hold_http(address: str, namespace: str, count: int, revision: str, *,
                    bookmarks: bool = False) -> list[socket.socket]:
    """Watches whose client reads the response headers and then nothing (a 4 KiB receive buffer); with
    `bookmarks`, they ask for bookmarks as client-go's informers do (allowWatchBookmarks=true)."""
    host, port = address.removeprefix("http://").split(":")
    asked = "&allowWatchBookmarks=true" if bookmarks else ""
    request = (f"GET {configmaps(namespace)}?watch=1&resourceVersion={revision}{asked} HTTP/1.1\r\n"
               f"Host: {host}\r\n\r\n").encode()
    loop = asyncio.get_running_loop()
    held: list[socket.socket] = []

    async def one() -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, int(port)))
        await loop.sock_sendall(sock, request)
        head = b""
        while b"\r\n\r\n" not in head:
            got = await loop.sock_recv(sock, 1024)
            if not got:
                raise RuntimeError(f"watch closed before its headers: {head[:200]!r}")
            head += got
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"watch refused: {head[:200]!r}")
        held.append(sock)  # never read again: the loop does not watch it

    for first in range(0, count, 200):
        await asyncio.gather(*(one() for _ in range(first, min(count, first + 200))))
    return held


async def hold_grpc(address: str, namespace: str, count: int, revision: str) -> list[object]:
    """Watch calls opened and never read (grpc reads up to each stream's flow-control window)."""
    calls: list[object] = []
    request = core_pb2.WatchRequest(
        path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace=namespace),
        options={"resourceVersion": revision}, accept=core_pb2.ENCODING_JSON)
    for first in range(0, count, GRPC_CHANNEL_STREAMS):
        channel = grpc.aio.insecure_channel(address)
        stub = core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]
        calls.append(channel)
        calls.extend(stub.Watch(request) for _ in range(first, min(count, first + GRPC_CHANNEL_STREAMS)))
    await asyncio.sleep(2.0)  # the calls start on their own; give the server time to open them all
    return calls


async def hold(args: argparse.Namespace) -> None:
    kind, address, namespace, count, revision = args.hold
    if kind == "http":
        held: list[object] = list(await hold_http(address, namespace, int(count), revision, bookmarks=args.bookmarks))
    else:  # grpc-stopped: the bench stops this process
        held = await hold_grpc(address, namespace, int(count), revision)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    del held


# The bench.

class Watchers:
    """A process holding idle watches; they go when it exits."""

    def __init__(self, children: Children, kind: str, address: str, namespace: str, count: int, revision: str, *,
                 bookmarks: bool = False):
        self.child: Child = children.start(f"watchers-{kind}-{namespace}", "-m", "bench.watchers", "--hold", kind,
                                           address, namespace, str(count), revision,
                                           *(["--bookmarks"] if bookmarks else []), control=True)
        self.stopped = kind == "grpc-stopped"

    async def ready(self) -> None:
        assert self.child.proc.stdout is not None
        line = await asyncio.get_running_loop().run_in_executor(None, self.child.proc.stdout.readline)
        if line.strip() != b"ready":
            raise RuntimeError(f"watchers did not open: {self.child.log.read_text()[-2000:]}")
        if self.stopped:
            self.child.proc.send_signal(signal.SIGSTOP)

    async def leave(self) -> None:
        assert self.child.proc.stdin is not None
        if self.stopped:
            self.child.proc.send_signal(signal.SIGCONT)
        self.child.proc.stdin.close()
        await asyncio.get_running_loop().run_in_executor(None, self.child.proc.wait)


async def peak_rss(pid: int, stop: asyncio.Event) -> float:
    """The highest RSS sampled until `stop` is set."""
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, rss_of(pid))
        await asyncio.sleep(SAMPLE)
    return peak


async def settled_rss(pid: int, seconds: float = 3.0) -> float:
    await asyncio.sleep(seconds)
    return rss_of(pid)


async def current_revision(session: aiohttp.ClientSession, base: str) -> str:
    async with session.get(base + configmaps(WRITTEN) + "?limit=1") as resp:
        return str((await resp.json())["metadata"]["resourceVersion"])


async def beside(args: argparse.Namespace, children: Children, session: aiohttp.ClientSession,
                 endpoints: dict[str, str], pid: int, kind: str, where: str) -> None:
    """Rounds of writes without, then beside, idle watchers of `where` over `kind`; one figure each."""
    alone: list[float] = []
    with_them: list[float] = []
    rss: list[tuple[float, float, float]] = []
    for round_ in range(args.rounds):
        prefix = f"{kind}-{where}-{round_}"
        alone.append(await create_many(session, endpoints["http"], [f"{prefix}-a{i}" for i in range(args.writes)]))
        before = await settled_rss(pid, 1.0)
        watchers = Watchers(children, kind, endpoints[kind], QUIET if where == "quiet" else WRITTEN,
                            args.watchers, await current_revision(session, endpoints["http"]),
                           bookmarks=args.bookmarks)
        await watchers.ready()
        stop = asyncio.Event()
        sampler = asyncio.ensure_future(peak_rss(pid, stop))
        rate = await create_many(session, endpoints["http"], [f"{prefix}-b{i}" for i in range(args.writes)])
        with_them.append(rate)
        stop.set()
        during = await sampler
        await watchers.leave()
        rss.append((before, during, await settled_rss(pid)))
        note(f"{kind} {where}: {alone[-1]:.0f} writes/s alone, {rate:.0f} beside {args.watchers} watchers; "
             f"RSS {before:.0f} / {during:.0f} / {rss[-1][2]:.0f} MiB")
    a, b = statistics.median(alone), statistics.median(with_them)
    emit(f"write_beside_{where}_watchers", "capstan", "ratio", b / a, at_least(0.9, "x"), transport=kind,
         writes_per_s_alone=round(a), writes_per_s_beside=round(b), watchers=args.watchers, rounds=args.rounds)
    emit(f"{where}_watchers_rss", "capstan", "after_mib", rss[-1][2], context("MiB"), transport=kind,
         before_mib=round(rss[-1][0], 1), with_watchers_mib=round(rss[-1][1], 1), watchers=args.watchers)


async def run(args: argparse.Namespace, root: Path) -> None:
    children = Children(root)
    try:
        serve = children.start("serve", "-m", "capstan", "serve", "--workers", "1",
                               "--insecure", "--data-dir", str(root / "data"),
                               "--http-port", "0", "--grpc-port", "0")
        address = serve.listening(LISTENING)
        found = LISTENING.search(serve.log.read_text(errors="replace"))
        assert found is not None
        endpoints = {"http": address, "grpc": found[2], "grpc-stopped": found[2]}
        pid = serve.proc.pid
        connector = aiohttp.TCPConnector(limit=WRITERS * 2)
        async with aiohttp.ClientSession(connector=connector) as session:
            for namespace in (WRITTEN, QUIET):
                async with session.post(endpoints["http"] + "/api/v1/namespaces",
                                        json={"metadata": {"name": namespace}}) as resp:
                    assert resp.status == 201, await resp.text()
            await create_many(session, endpoints["http"], [f"warm{i}" for i in range(500)])
            for kind in args.transports.split(","):
                for where in args.where.split(","):
                    await beside(args, children, session, endpoints, pid, kind, where)

            if args.initial:
                await initial_lists(args, session, endpoints["http"], pid)
    finally:
        children.stop()


async def initial_lists(args: argparse.Namespace, session: aiohttp.ClientSession, base: str, pid: int) -> None:
    """RSS of watchers that start with the whole collection and never read it."""
    async with session.get(base + configmaps(WRITTEN) + "?limit=1") as resp:
        have = int((await resp.json())["metadata"].get("remainingItemCount", 0)) + 1
    if args.objects > have:
        note(f"filling to {args.objects} objects")
        await create_many(session, base, [f"f{i}" for i in range(args.objects - have)])
    before = await settled_rss(pid, 1.0)
    host, port = base.removeprefix("http://").split(":")
    held = []
    for _ in range(args.initial):
        _, writer = await asyncio.open_connection(host, int(port), limit=1 << 16)
        writer.write(f"GET {configmaps(WRITTEN)}?watch=1 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        held.append(writer)
    stop = asyncio.Event()
    sampler = asyncio.ensure_future(peak_rss(pid, stop))
    await asyncio.sleep(4.0)
    stop.set()
    peak = await sampler
    for writer in held:
        writer.transport.abort()
    after = await settled_rss(pid)
    emit("initial_list_watchers_rss", "capstan", "growth_mib", peak - before, context("MiB"),
         before_mib=round(before, 1), peak_mib=round(peak, 1), after_mib=round(after, 1),
         watchers=args.initial, objects=max(args.objects, have), object_bytes=1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=2_000)
    parser.add_argument("--writes", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transports", default="http,grpc", help="http, grpc, grpc-stopped (comma-separated)")
    parser.add_argument("--where", default="quiet,stuck", help="quiet, stuck or both (comma-separated)")
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--initial", type=int, default=10)
    parser.add_argument("--bookmarks", action="store_true",
                        help="HTTP watchers ask for bookmarks (allowWatchBookmarks=true), as client-go's informers do")
    parser.add_argument("--hold", nargs=5, metavar=("KIND", "ADDRESS", "NAMESPACE", "COUNT", "REVISION"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.watchers * 2 + 1_000)), hard))
    if args.hold:
        asyncio.run(hold(args))
        return
    with tempfile.TemporaryDirectory(prefix="bench-watchers-") as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
