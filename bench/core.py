"""How fast Capstan's core serves, next to a bare grpc.aio echo server in the same run.

The core adds Kubernetes semantics (decode, validate, render, selectors, watch
translation) over the store; each workload measures it against its goal and, over
gRPC, against an echo server with the same process layout, so a slow figure reads
as "gRPC in Python" or "the core" at a glance.

    python -m bench.core [--quick] [--only grpc-get,grpc-create,get,create,watch]

Workloads (full sizes; --quick shrinks them for a smoke run):
  grpc-get     a separate client process (asyncio, 64 calls in flight, requests serialized
               in advance and responses left as bytes, so the client costs as little as it
               can) Gets 1 KiB ConfigMaps (10 data keys of ~100 bytes) from the CoreService,
               then calls a bare grpc.aio echo server (raw bytes in and out, no protobuf) with a
               message of the same size: calls/s for each and the core/echo ratio (the median
               of 5 alternating rounds:
               the shared 2-core machine moves single rounds by ±40%).
  grpc-create  the same with Creates of such ConfigMaps (fsync on, as served).
  get          `await core.get(request)` on server.objects.core.Core in-process (no network, as the
               gateway calls it), by 1 and by 64 callers: gets/s (the median of 5 rounds).
  create       in-process creates with StoreOptions(sync=True) by 64 callers: durable creates/s.
               Beside it, in the same run, the floor of this layout: the same callers and store,
               with only what no create can skip (parse the JSON, set uid and creationTimestamp,
               write JSON, store durably, render the response) and none of the Kubernetes
               semantics: the most any create on one event loop can reach on this machine.
  watch        1,000 in-process core.watch streams on one namespace; 200 creates, one at a
               time: each event's latency from the create's acknowledgement to its delivery
               at each watcher; p99 over all deliveries.

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr. Exit
status 1 means a workload failed or returned wrong results; a missed goal is only `"ok": false`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import struct
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import orjson

from bench._util import CEILING, Timings, at_least, below, emit, note, run_workers, run_workloads
from bench.storage import commits
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.machinery import meta, stored
from server.objects.core import Core
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

CM_PATH = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default")
DATA = {f"key-{i:02}": f"{i:02}" * 48 for i in range(10)}  # 10 keys of ~100 bytes: a ~1 KiB ConfigMap
ECHO_METHOD = "/bench.Echo/Echo"
CORE_METHODS = {"get": "/capstan.core.v1.CoreService/Get", "create": "/capstan.core.v1.CoreService/Create"}

RATIO_GOAL = at_least(0.8, "x echo")
GET_GOAL = at_least(15_000, "/s")
CREATE_GOAL = at_least(8_000, "/s")
WATCH_GOAL = below(50, " ms")


@dataclass(frozen=True, slots=True)
class Sizes:
    grpc_calls: int  # per measured round
    grpc_warmup: int
    grpc_rounds: int
    objects: int  # ConfigMaps the gets choose from
    gets: int
    creates: int
    watchers: int
    watch_writes: int
    callers: int = 64


FULL = Sizes(grpc_calls=20_000, grpc_warmup=2_000, grpc_rounds=5, objects=1_000, gets=100_000, creates=20_000,
             watchers=1_000, watch_writes=200)
QUICK = Sizes(grpc_calls=300, grpc_warmup=50, grpc_rounds=1, objects=100, gets=2_000, creates=300,
              watchers=50, watch_writes=10)


def config_map(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": DATA})


def create_request(name: str) -> core_pb2.CreateRequest:
    return core_pb2.CreateRequest(
        path=CM_PATH, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=config_map(name)))


def get_request(name: str) -> core_pb2.GetRequest:
    path = core_pb2.ResourcePath()
    path.CopyFrom(CM_PATH)
    path.name = name
    return core_pb2.GetRequest(path=path)


async def populate(core: Core, count: int, prefix: str = "cm") -> list[str]:
    names = [f"{prefix}-{i:06}" for i in range(count)]

    async def create(i: int) -> None:
        await core.create(create_request(names[i]))

    await run_workers(count, 64, create)
    return names


# -- gRPC: a client process against the core and against an echo server -----------------------


async def start_echo() -> tuple[grpc.aio.Server, int]:
    """A grpc.aio server that answers each call with its request bytes: what gRPC alone costs."""

    async def echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return request

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler("bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


def write_frames(path: Path, frames: Sequence[bytes]) -> None:
    with path.open("wb") as out:
        for frame in frames:
            out.write(struct.pack(">I", len(frame)))
            out.write(frame)


def read_frames(path: Path) -> list[bytes]:
    data = path.read_bytes()
    frames, at = [], 0
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        frames.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return frames


async def run_client(*, target: str, method: str, requests: Path, warmup: int, calls: int, concurrency: int
                     ) -> dict[str, Any]:
    """Run the client process (`--client`) to the end; its figures. The caller's loop keeps serving meanwhile."""
    spec = json.dumps({"target": target, "method": method, "requests": str(requests), "warmup": warmup,
                       "calls": calls, "concurrency": concurrency})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.core", "--client", spec,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode:
        raise AssertionError(f"client process failed: {err.decode()}")
    figures: dict[str, Any] = json.loads(out)
    return figures


async def client_main(spec: dict[str, Any]) -> dict[str, Any]:
    """The client process: `warmup` then `calls` unary calls, `concurrency` in flight, bytes in and out."""
    requests = read_frames(Path(spec["requests"]))
    warmup, calls, concurrency = spec["warmup"], spec["calls"], spec["concurrency"]
    failures: list[str] = []
    async with grpc.aio.insecure_channel(spec["target"]) as channel:
        await channel.channel_ready()
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(spec["method"])  # bytes in and out

        async def run(offset: int, count: int) -> None:
            async def one(i: int) -> None:
                try:
                    await call(requests[(offset + i) % len(requests)])
                except grpc.aio.AioRpcError as err:
                    failures.append(f"{err.code()}: {err.details()}")

            await run_workers(count, concurrency, one)

        await run(0, warmup)
        cpu, start = time.process_time(), time.perf_counter()
        await run(warmup, calls)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": seconds, "client_cpu_s": cpu, "failures": len(failures), "first_failure": failures[:1]}


class GrpcRounds:
    """Alternating rounds against the core and the echo server; the median of each."""

    def __init__(self) -> None:
        self.rates: dict[str, list[float]] = {"capstan": [], "echo": []}
        self.server_cpu_us: dict[str, list[float]] = {"capstan": [], "echo": []}
        self.client_cpu_share: dict[str, list[float]] = {"capstan": [], "echo": []}
        self.failures = 0

    async def measure(self, impl: str, *, target: str, method: str, requests: Path, sizes: Sizes) -> None:
        cpu = time.process_time()  # this process: the server's loop and gRPC's threads
        figures = await run_client(target=target, method=method, requests=requests, warmup=sizes.grpc_warmup,
                                   calls=sizes.grpc_calls, concurrency=sizes.callers)
        cpu = time.process_time() - cpu
        if figures["failures"]:
            note(f"{impl}: {figures['failures']} calls failed, e.g. {figures['first_failure']}")
        self.failures += figures["failures"]
        calls = sizes.grpc_calls + sizes.grpc_warmup
        self.rates[impl].append(sizes.grpc_calls / figures["seconds"])
        self.server_cpu_us[impl].append(cpu / calls * 1e6)
        self.client_cpu_share[impl].append(figures["client_cpu_s"] / figures["seconds"])

    def emit(self, op: str, **context: Any) -> None:
        ok = self.failures == 0
        medians = {impl: statistics.median(rates) for impl, rates in self.rates.items()}
        for impl in ("capstan", "echo"):
            emit(op, impl, "calls_per_s", medians[impl], CEILING, correct=ok,
                 server_cpu_us_per_call=round(statistics.median(self.server_cpu_us[impl]), 1),
                 client_cpu_share=round(statistics.median(self.client_cpu_share[impl]), 2),
                 rounds=[round(r) for r in self.rates[impl]], **context)
        emit(op, "capstan/echo", "ratio", medians["capstan"] / medians["echo"], RATIO_GOAL, correct=ok, **context)


async def bench_grpc(root: Path, sizes: Sizes, op: str) -> None:
    verb = op.removeprefix("grpc-")
    store = await LmdbStore.open(root / "lmdb", StoreOptions(sync=True))
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
    echo, echo_port = await start_echo()
    rounds = GrpcRounds()
    per_run = sizes.grpc_warmup + sizes.grpc_calls
    try:
        echo_frames = root / "echo.frames"
        write_frames(echo_frames, [create_request("echo-000000").SerializeToString()])
        names = await populate(running.core, sizes.objects) if verb == "get" else []
        rng = random.Random(1)
        for attempt in range(sizes.grpc_rounds):
            frames = root / f"{verb}-{attempt}.frames"
            if verb == "get":
                write_frames(frames, [get_request(rng.choice(names)).SerializeToString() for _ in range(per_run)])
            else:
                write_frames(frames, [create_request(f"c{attempt}-{i:06}").SerializeToString()
                                      for i in range(per_run)])
            await rounds.measure("echo", target=f"127.0.0.1:{echo_port}", method=ECHO_METHOD,
                                 requests=echo_frames, sizes=sizes)
            await rounds.measure("capstan", target=f"127.0.0.1:{running.grpc_port}", method=CORE_METHODS[verb],
                                 requests=frames, sizes=sizes)
        if verb == "create":
            listed = await running.core.list(core_pb2.ListRequest(path=CM_PATH))
            if len(listed.items) != per_run * sizes.grpc_rounds:
                raise AssertionError(f"{len(listed.items)} ConfigMaps after {per_run * sizes.grpc_rounds} creates")
    finally:
        await echo.stop(None)
        await running.stop()
        await store.close()
    rounds.emit(op, calls=sizes.grpc_calls, concurrency=sizes.callers, object_bytes=len(config_map("cm-000000")),
                echo_bytes=len(create_request("echo-000000").SerializeToString()),
                store_sync=True)
    if rounds.failures:
        raise AssertionError(f"{rounds.failures} calls failed")


# -- in-process: the core as the gateway calls it -----------------------------------------------

GET_ROUNDS = 5


async def open_core(path: Path, options: StoreOptions) -> tuple[RunningCore, LmdbStore]:
    store = await LmdbStore.open(path, options)
    return await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE), store


async def bench_get(root: Path, sizes: Sizes) -> None:
    running, store = await open_core(root / "lmdb", StoreOptions(sync=False))
    try:
        core = running.core
        names = await populate(core, sizes.objects)
        rng = random.Random(1)
        per_round = sizes.gets // GET_ROUNDS
        requests = [get_request(rng.choice(names)) for _ in range(per_round)]

        async def get(i: int) -> None:
            await core.get(requests[i])

        for callers in (1, sizes.callers):
            clock = Timings()
            for _ in range(GET_ROUNDS):
                started = clock.start()
                await run_workers(per_round, callers, get)
                clock.stop(started)
            rate, spread = clock.rate(per_round)
            emit("get", "capstan-inprocess", "gets_per_s", rate, GET_GOAL, callers=callers,
                 count=per_round * GET_ROUNDS, objects=sizes.objects, object_bytes=len(config_map(names[0])),
                 **spread)
    finally:
        await running.stop()
        await store.close()


async def commits_of_idle_core(path: Path) -> int:
    """Transactions a core commits by starting (default namespaces) and stopping: subtracted from counts."""
    running, store = await open_core(path, StoreOptions(sync=False))
    await running.stop()
    await store.close()
    return commits(path)


async def bench_create(root: Path, sizes: Sizes) -> None:
    path = root / "lmdb"
    running, store = await open_core(path, StoreOptions(sync=True))
    try:
        core = running.core
        requests = [create_request(f"cm-{i:06}") for i in range(sizes.creates)]

        async def create(i: int) -> None:
            await core.create(requests[i])

        started, loop_cpu = time.perf_counter(), time.thread_time()
        await run_workers(sizes.creates, sizes.callers, create)
        seconds, loop_cpu = time.perf_counter() - started, time.thread_time() - loop_cpu
        listed = await core.list(core_pb2.ListRequest(path=CM_PATH))
        correct = len(listed.items) == sizes.creates
    finally:
        await running.stop()
        await store.close()
    batches = commits(path) - await commits_of_idle_core(root / "idle")
    emit("create", "capstan-inprocess", "writes_per_s", sizes.creates / seconds, CREATE_GOAL, correct=correct,
         callers=sizes.callers, count=sizes.creates, object_bytes=len(config_map("cm-000000")), sync=True,
         loop_cpu_us_per_create=round(loop_cpu / sizes.creates * 1e6, 1),
         mean_batch=round(sizes.creates / max(batches, 1), 1))
    if not correct:
        raise AssertionError(f"listed {len(listed.items)} of {sizes.creates} created ConfigMaps")
    await bench_create_floor(root / "floor", sizes)


async def bench_create_floor(path: Path, sizes: Sizes) -> None:
    """Durable creates that skip every Kubernetes rule: the ceiling of one event loop over this store."""
    store = await LmdbStore.open(path, StoreOptions(sync=True))
    bodies = [config_map(f"cm-{i:06}") for i in range(sizes.creates)]
    type_prefix = b'"kind":"ConfigMap","apiVersion":"v1",'
    prefix = b"/core/configmaps/default/"  # the core's key layout (server/registry/resources.py), so keys are as long

    async def create(i: int) -> None:
        obj = orjson.loads(bodies[i])
        m = obj.pop("metadata")
        m.update(namespace="default", uid=meta.new_uid(), creationTimestamp=meta.now())
        value = stored.pack(orjson.dumps({"metadata": m, **obj}), b"")
        result = await store.create(prefix + m["name"].encode(), value)
        stored.render_json(value, str(result.revision), type_prefix)

    try:
        started, loop_cpu = time.perf_counter(), time.thread_time()
        await run_workers(sizes.creates, sizes.callers, create)
        seconds, loop_cpu = time.perf_counter() - started, time.thread_time() - loop_cpu
        correct = (await store.count(prefix)).count == sizes.creates
    finally:
        await store.close()
    emit("create", "store-floor", "writes_per_s", sizes.creates / seconds, CEILING, correct=correct,
         callers=sizes.callers, count=sizes.creates, sync=True,
         loop_cpu_us_per_create=round(loop_cpu / sizes.creates * 1e6, 1))


class Fanout:
    """Delivery times of the one event in flight, at every watcher."""

    def __init__(self, watchers: int) -> None:
        self.watchers = watchers
        self.expected = b""
        self.times: list[float] = []
        self.everyone = asyncio.Event()
        self.wrong = 0

    def expect(self, resource_version: int) -> None:
        self.expected = b'"resourceVersion":"%d"' % resource_version
        self.times = []
        self.everyone.clear()

    def delivered(self, data: bytes) -> None:
        self.times.append(time.perf_counter())
        if self.expected not in data:
            self.wrong += 1
        if len(self.times) == self.watchers:
            self.everyone.set()


async def bench_watch(root: Path, sizes: Sizes) -> None:
    running, store = await open_core(root / "lmdb", StoreOptions(sync=True))
    core = running.core
    fanout = Fanout(sizes.watchers)
    request = core_pb2.WatchRequest(path=CM_PATH, options={"resourceVersion": str(store.current_revision())})

    async def watcher() -> None:
        async for response in core.watch(request):
            for event in response.events:
                fanout.delivered(event.object.data)

    tasks = [asyncio.create_task(watcher()) for _ in range(sizes.watchers)]
    latencies: list[float] = []
    spans: list[float] = []
    complete = True
    try:
        await asyncio.sleep(0.5)  # every watcher is parked waiting for its first event
        for i in range(sizes.watch_writes):
            future = core.create(create_request(f"w-{i:06}"))
            fanout.expect(store.current_revision() + 1)
            await future
            acked = time.perf_counter()
            try:
                await asyncio.wait_for(fanout.everyone.wait(), 10)
            except TimeoutError:
                note(f"watch: write {i} reached {len(fanout.times)} of {sizes.watchers} watchers in 10 s")
                complete = False
                break
            latencies.extend(t - acked for t in fanout.times)
            spans.append(max(fanout.times) - acked)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await running.stop()
        await store.close()
    correct = complete and not fanout.wrong
    latencies.sort()
    ms = [x * 1e3 for x in latencies] or [0.0]
    emit("watch", "capstan-inprocess", "p99_ms", ms[min(len(ms) - 1, int(len(ms) * 0.99))], WATCH_GOAL,
         correct=correct, watchers=sizes.watchers, writes=sizes.watch_writes, deliveries=len(latencies),
         p50_ms=round(ms[len(ms) // 2], 3), max_ms=round(ms[-1], 3),
         last_watcher_median_ms=round(statistics.median(spans) * 1e3 if spans else 0.0, 3), sync=True)
    if not correct:
        raise AssertionError(f"watch: complete={complete}, {fanout.wrong} deliveries of the wrong event")


WORKLOADS: dict[str, Callable[[Path, Sizes], Coroutine[Any, Any, None]]] = {
    "grpc-get": lambda root, sizes: bench_grpc(root, sizes, "grpc-get"),
    "grpc-create": lambda root, sizes: bench_grpc(root, sizes, "grpc-create"),
    "get": bench_get,
    "create": bench_create,
    "watch": bench_watch,
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.core", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads (default: all of {','.join(WORKLOADS)})")
    parser.add_argument("--client", help=argparse.SUPPRESS)  # internal: run as the gRPC client process
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - WORKLOADS.keys()
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {','.join(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.client:
        print(json.dumps(asyncio.run(client_main(json.loads(args.client)))))
        return 0
    sizes = QUICK if args.quick else FULL
    return run_workloads(args.only, WORKLOADS, sizes, prefix="capstan-bench-core-")


if __name__ == "__main__":
    sys.exit(main())
