"""Large lists under load: while 20 clients each LIST 50,000 ConfigMaps (~1 KiB) un-paged,
how long is a LIST, and how long does /readyz take meanwhile?

A list that holds the event loop stalls every other request of the process; the health check, polled
every 50 ms throughout, shows it. Run as served: `capstan serve --insecure` in its own process (or the split
form, `--layout split`: a core and a gateway over gRPC), this process as the clients.

    python -m bench.biglist                       # 50,000 objects, 20 lists, JSON and Table
    python -m bench.biglist --objects 2000 --lists 4  # quick
    python -m bench.biglist --tree /path/to/checkout  # the server from another checkout (before/after)

One JSON line per figure (bench/_util.py's shape). Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import orjson

from bench._processes import Children
from bench._util import at_most, context, emit, note, run_workers

DATA = {f"key-{i:02}": f"{i:02}" * 48 for i in range(10)}  # 10 keys of ~100 bytes: a ~1 KiB ConfigMap
PATH = "/api/v1/namespaces/default/configmaps"
FORMS = {"json": "application/json", "table": "application/json;as=Table;v=v1;g=meta.k8s.io"}
READYZ_EVERY = 0.05  # seconds between health checks
SERVE = re.compile(r"capstan serving: HTTP (http://\S+)")
CORE = re.compile(r"capstan core serving: gRPC (\S+)")
GATEWAY = re.compile(r"capstan gateway serving: HTTP (http://\S+)")


def capstan_args(tree: str | None) -> tuple[str, ...]:
    """`python -m capstan`, from `tree` when given (its own packages first on the path)."""
    if tree is None:
        return ("-m", "capstan")
    code = f"import runpy, sys; sys.path.insert(0, {tree!r}); runpy.run_module('capstan', run_name='__main__')"
    return ("-c", code)


def start(children: Children, root: Path, layout: str, tree: str | None) -> str:
    capstan = capstan_args(tree)
    if layout == "serve":
        serve = children.start("serve", *capstan, "serve", "--workers", "1",
                               "--insecure", "--data-dir", str(root / "data"),
                               "--http-port", "0", "--grpc-port", "0")
        return serve.listening(SERVE)
    core = children.start("core", *capstan, "core", "--insecure", "--data-dir", str(root / "data"), "--grpc-port", "0")
    address = core.listening(CORE)
    gateway = children.start("gateway", *capstan, "gateway", "--insecure", "--core", address, "--http-port", "0")
    return gateway.listening(GATEWAY)


async def fill(session: aiohttp.ClientSession, base: str, objects: int) -> None:
    async def create(i: int) -> None:
        body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:06}"}, "data": DATA})
        async with session.post(base + PATH, data=body, headers={"Content-Type": "application/json"}) as resp:
            if resp.status != 201:
                raise RuntimeError(f"create answered {resp.status}: {(await resp.read())[:200]!r}")

    await run_workers(objects, 32, create)


async def one_list(session: aiohttp.ClientSession, base: str, accept: str, objects: int) -> float:
    started = time.perf_counter()
    async with session.get(base + PATH, headers={"Accept": accept}) as resp:
        body = await resp.read()
    took = time.perf_counter() - started
    if resp.status != 200:
        raise RuntimeError(f"LIST answered {resp.status}: {body[:200]!r}")
    count = body.count(b'"name":"cm-')  # a Table names each object twice (cells, metadata)
    if count < objects:
        raise RuntimeError(f"LIST gave {count} of {objects} objects")
    return took


async def under_lists(base: str, form: str, objects: int, lists: int, impl: str) -> None:
    """`lists` concurrent LISTs in `form`, /readyz polled throughout from a process of its own (this one's
    loop is busy reading the lists)."""
    poller = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.biglist", "--poll", base,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert poller.stdin is not None and poller.stdout is not None
    await poller.stdout.readline()  # polling
    await asyncio.sleep(0.5)  # a baseline before the lists start
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=900)) as session:
        started = time.perf_counter()
        latencies = await asyncio.gather(*(one_list(session, base, FORMS[form], objects) for _ in range(lists)))
        wall = time.perf_counter() - started
    poller.stdin.close()
    health: list[float] = orjson.loads(await poller.stdout.read())
    await poller.wait()
    ms = sorted(1000 * t for t in latencies)
    health_ms = sorted(1000 * t for t in health)
    emit(f"list-{form}", impl, "list_p50_ms", statistics.median(ms), context(f"{lists} concurrent"),
         list_max_ms=round(ms[-1]), wall_s=round(wall, 2), objects=objects, lists=lists)
    emit(f"readyz-during-list-{form}", impl, "readyz_max_ms", health_ms[-1], at_most(100, " ms"),
         readyz_p50_ms=round(statistics.median(health_ms), 1), readyz_p99_ms=round(_p99(health_ms), 1),
         checks=len(health_ms), objects=objects, lists=lists)


async def poll(base: str) -> None:
    """/readyz every READYZ_EVERY until stdin closes; then the latencies (seconds) as one JSON array."""
    health: list[float] = []
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.buffer.read)
    print("polling", flush=True)
    async with aiohttp.ClientSession() as session:
        while not stdin_closed.done():
            started = time.perf_counter()
            async with session.get(base + "/readyz") as resp:
                await resp.read()
            health.append(time.perf_counter() - started)
            await asyncio.sleep(READYZ_EVERY)
    sys.stdout.buffer.write(orjson.dumps(health))
    sys.stdout.flush()


def _p99(sorted_ms: list[float]) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * 0.99))]


async def run(args: argparse.Namespace) -> None:
    logs = Path(tempfile.mkdtemp(prefix="capstan-biglist-logs-"))
    children = Children(logs)
    root = Path(tempfile.mkdtemp(prefix="capstan-biglist-"))
    impl = f"capstan-{args.layout}" + ("" if args.tree is None else f"@{args.tree}")
    try:
        base = start(children, root, args.layout, args.tree)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            note(f"creating {args.objects} ConfigMaps ...")
            await fill(session, base, args.objects)
        for form in args.forms.split(","):
            note(f"{args.lists} concurrent LISTs ({form}) ...")
            await under_lists(base, form, args.objects, args.lists, impl)
    finally:
        children.stop()
        for scratch in (root, logs):
            shutil.rmtree(scratch, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--forms", default="json,table", help="comma-separated: json, table")
    parser.add_argument("--layout", choices=("serve", "split"), default="serve")
    parser.add_argument("--tree", help="run the server from this checkout (e.g. a worktree of another commit)")
    parser.add_argument("--poll", help=argparse.SUPPRESS)  # internal: the /readyz poller's process
    args = parser.parse_args(argv)
    if args.poll:
        asyncio.run(poll(args.poll))
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
