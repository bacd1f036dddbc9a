"""What watchers that never read cost a `capstan serve`: writers' rate and the server's memory (issue 14, items 2, 5).

    python -m bench.watchers [--watchers 2000] [--writes 3000] [--objects 20000]

Three figures, from one `capstan serve --insecure` on loopback (a child process, so its RSS is its own):
1. writes/s (16 concurrent creates of 1 KiB ConfigMaps over HTTP) with no watcher, then with `--watchers` watches
   from the current resourceVersion whose clients read the response headers and then nothing;
2. the server's RSS before the watchers, at its highest while they sit there, and once they have left;
3. the RSS of `--initial` watchers (no resourceVersion: the whole collection first) over `--objects` 1 KiB
   ConfigMaps, clients that never read, sampled for a few seconds, then after they leave.
One JSON line per figure on stdout (bench/_util.py's shape); progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

from bench._processes import Children
from bench._util import at_least, context, emit, note

LISTENING = re.compile(r"capstan serving: HTTP (http://\S+)")
NAMESPACE = "default"
CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
WRITERS = 16
SAMPLE = 0.25  # seconds between RSS samples


def rss_of(pid: int) -> float:
    """The process's resident set now, in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def body(name: str) -> bytes:
    return orjson.dumps({"metadata": {"name": name}, "data": {"k": "x" * 1024}})


async def create_many(session: aiohttp.ClientSession, base: str, names: list[str]) -> float:
    """Create them with WRITERS at a time; the rate in writes/s."""
    queue = iter(names)
    started = time.monotonic()

    async def worker() -> None:
        for name in queue:
            async with session.post(base + CONFIGMAPS, data=body(name),
                                    headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"create {name}: {resp.status} {await resp.text()}")

    await asyncio.gather(*(worker() for _ in range(WRITERS)))
    return len(names) / (time.monotonic() - started)


class Idle:
    """Watches whose clients read the response's headers and then nothing."""

    def __init__(self) -> None:
        self.streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def open(self, base: str, count: int, query: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        request = f"GET {CONFIGMAPS}?{query} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()

        async def one() -> None:
            reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 16)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"watch refused: {head[:200]!r}")
            self.streams.append((reader, writer))

        for first in range(0, count, 200):
            await asyncio.gather(*(one() for _ in range(first, min(count, first + 200))))

    def dropped_by_server(self) -> int:
        """How many the server has ended (it closed the connection, or reset it)."""
        return sum(1 for reader, writer in self.streams if reader.at_eof() or writer.transport.is_closing()
                   or reader.exception() is not None)

    async def close(self) -> None:
        for _, writer in self.streams:
            writer.transport.abort()
        self.streams.clear()
        await asyncio.sleep(0.1)


async def peak_rss(pid: int, seconds: float, stop: asyncio.Event | None = None) -> float:
    """The highest RSS sampled over `seconds`, or until `stop` is set."""
    peak = 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        peak = max(peak, rss_of(pid))
        await asyncio.sleep(SAMPLE)
    return peak


async def settled_rss(pid: int, seconds: float = 3.0) -> float:
    await asyncio.sleep(seconds)
    return rss_of(pid)


async def run(args: argparse.Namespace, root: Path) -> None:
    children = Children(root)
    try:
        serve = children.start("serve", "-m", "capstan", "serve", "--insecure", "--data-dir", str(root / "data"),
                               "--http-port", "0", "--grpc-port", "0")
        base = serve.listening(LISTENING)
        pid = serve.proc.pid
        connector = aiohttp.TCPConnector(limit=WRITERS * 2)
        async with aiohttp.ClientSession(connector=connector) as session:
            await create_many(session, base, [f"warm{i}" for i in range(500)])
            baseline = await settled_rss(pid, 1.0)
            alone = await create_many(session, base, [f"a{i}" for i in range(args.writes)])
            note(f"{alone:.0f} writes/s without watchers")
            idle = Idle()
            async with session.get(base + CONFIGMAPS + "?limit=1") as resp:
                revision = (await resp.json())["metadata"]["resourceVersion"]
            await idle.open(base, args.watchers, f"watch=1&resourceVersion={revision}")
            opened = await settled_rss(pid, 1.0)
            stop = asyncio.Event()
            sampler = asyncio.ensure_future(peak_rss(pid, 3600, stop))
            beside = await create_many(session, base, [f"b{i}" for i in range(args.writes)])
            note(f"{beside:.0f} writes/s beside {args.watchers} idle watchers")
            await asyncio.sleep(args.linger)  # long enough for the server's write timeout to end them
            stop.set()
            during = max(opened, await sampler)
            dropped = idle.dropped_by_server()
            await idle.close()
            after = await settled_rss(pid)
            emit("write_beside_idle_watchers", "capstan", "ratio", beside / alone, at_least(0.8, "x"),
                 writes_per_s_alone=round(alone), writes_per_s_beside=round(beside), watchers=args.watchers,
                 dropped_by_server=dropped)
            emit("idle_watchers_rss", "capstan", "after_mib", after, context("MiB"), before_mib=round(baseline, 1),
                 with_watchers_mib=round(during, 1), watchers=args.watchers)

            have = 500 + 2 * args.writes
            if args.objects > have:
                note(f"filling to {args.objects} objects")
                await create_many(session, base, [f"f{i}" for i in range(args.objects - have)])
            before = await settled_rss(pid, 1.0)
            listers = Idle()
            await listers.open(base, args.initial, "watch=1")
            peak = await peak_rss(pid, 4.0)
            await listers.close()
            after_lists = await settled_rss(pid)
            emit("initial_list_watchers_rss", "capstan", "growth_mib", peak - before, context("MiB"),
                 before_mib=round(before, 1), peak_mib=round(peak, 1), after_mib=round(after_lists, 1),
                 watchers=args.initial, objects=max(args.objects, have), object_bytes=1024)
    finally:
        children.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=2_000)
    parser.add_argument("--writes", type=int, default=3_000)
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--initial", type=int, default=10)
    parser.add_argument("--linger", type=float, default=12.0, help="seconds the idle watchers stay after the writes")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.watchers * 2 + 1_000)), hard))
    with tempfile.TemporaryDirectory(prefix="bench-watchers-") as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
