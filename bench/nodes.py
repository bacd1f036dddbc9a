"""What simulated nodes cost a core, and how fast their kubelets start Pods.

    python -m bench.nodes [--nodes 100] [--pods 5000] [--idle 30] [--quick]

In one process (the core and its simulated kubelets share it, as in `capstan serve --nodes N`; LMDB with fsync):
1. idle CPU: the process's CPU over `--idle` seconds of a core with no nodes (the anchor), then of a core with
   `--nodes` simulated nodes and the nodelifecycle controller, their Leases renewed every 10 s; the figure is
   the difference per node, in milliseconds of CPU per node per second; and what registering the nodes adds to
   the core's start (start_core returns once they are registered);
2. Pods started per second: `--pods` Pods bound round robin to the nodes, created by 32 concurrent callers through
   the core's verbs; the clock runs from the first create until the last Pod is Ready (an informer counts);
3. heartbeats meanwhile: every second each node's Lease renewTime is read; the largest age seen must stay under
   the node-monitor-grace-period (40 s), and at the end every node is still Ready.
One JSON line per figure on stdout (bench/_util.py's shape); progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench._util import at_least, at_most, context, emit, note, process_usage
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.controllers.kubelets.config import NodesConfig
from server.machinery.codec import gotime
from server.runtime.informer import Handlers, SharedInformers
from server.startup import controllers
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

CALLERS = 32
GRACE = 40.0  # node-monitor-grace-period


async def start(root: Path, nodes: int) -> tuple[RunningCore, LmdbStore]:
    store = await LmdbStore.open(root / "lmdb", StoreOptions(sync=True))
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                               nodes=NodesConfig(nodes) if nodes else None,
                               controller_names=controllers.DEFAULT | {"nodelifecycle"})
    return running, store


async def idle_cpu(root: Path, nodes: int, seconds: float) -> tuple[float, float]:
    """CPU seconds per second of a core with `nodes` simulated nodes, idle after a settling pause; and the
    seconds its start took (the nodes are registered before start_core returns)."""
    begun = time.perf_counter()
    running, store = await start(root, nodes)
    start_seconds = time.perf_counter() - begun
    try:
        await asyncio.sleep(min(5.0, seconds / 3))
        before, started = process_usage()[0], time.monotonic()
        await asyncio.sleep(seconds)
        return (process_usage()[0] - before) / (time.monotonic() - started), start_seconds
    finally:
        await running.stop()
        await store.close()


async def lease_ages(running: RunningCore) -> list[float]:
    path = core_pb2.ResourcePath(group="coordination.k8s.io", version="v1", resource="leases",
                                 namespace="kube-node-lease")
    answer = await running.core.list(core_pb2.ListRequest(path=path))
    now = time.time()
    ages = []
    for item in answer.items:
        renewed = str((orjson.loads(item).get("spec") or {}).get("renewTime") or "")
        if renewed:
            ages.append(now - gotime.parse(renewed, gotime.RFC3339_MICRO)[0])
    return ages


async def pods_started(root: Path, nodes: int, pods: int) -> dict[str, Any]:
    running, store = await start(root, nodes)
    informers = SharedInformers(running.core)
    ready: set[str] = set()

    def seen(pod: dict[str, Any]) -> None:
        if any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or []):
            ready.add(str(pod["metadata"]["name"]))

    informer = informers.informer(core_pb2.ResourcePath(version="v1", resource="pods"))
    informer.add_handlers(Handlers(on_add=lambda pod, _: seen(pod), on_update=lambda _, pod: seen(pod)))
    await informer.start()
    oldest = 0.0
    stop_sampling = asyncio.Event()

    async def sample() -> None:
        nonlocal oldest
        while not stop_sampling.is_set():
            oldest = max([oldest, *await lease_ages(running)])
            await asyncio.sleep(1.0)

    sampler = asyncio.get_running_loop().create_task(sample())
    try:
        queue = list(range(pods))
        path = core_pb2.ResourcePath(version="v1", resource="pods", namespace="default")

        async def caller() -> None:
            while queue:
                i = queue.pop()
                body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}"},
                        "spec": {"nodeName": f"capstan-node-{i % nodes}",
                                 "containers": [{"name": "app", "image": "nginx:1.25"}]}}
                await running.core.create(core_pb2.CreateRequest(
                    path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))))

        started, cpu = time.monotonic(), process_usage()[0]
        await asyncio.gather(*(caller() for _ in range(CALLERS)))
        created = time.monotonic() - started
        while len(ready) < pods:
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
        used = process_usage()[0] - cpu
        await asyncio.sleep(2.0)  # one more lease sample after the burst
        stop_sampling.set()
        await sampler
        node_path = core_pb2.ResourcePath(version="v1", resource="nodes")
        answer = await running.core.list(core_pb2.ListRequest(path=node_path))
        not_ready = sum(1 for item in answer.items if not any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (orjson.loads(item).get("status") or {}).get("conditions") or []))
        return {"elapsed": elapsed, "created_in": created, "cpu": used, "oldest_lease": oldest,
                "not_ready": not_ready}
    finally:
        stop_sampling.set()
        await informer.stop()
        await running.stop()
        await store.close()


async def run(args: argparse.Namespace) -> bool:
    ok = True
    with tempfile.TemporaryDirectory(prefix="capstan-bench-nodes-") as tmp:
        root = Path(tmp)
        note(f"idle: a core without nodes, {args.idle:g} s")
        bare, bare_start = await idle_cpu(root / "bare", 0, args.idle)
        note(f"idle: a core with {args.nodes} nodes, {args.idle:g} s")
        loaded, loaded_start = await idle_cpu(root / "idle", args.nodes, args.idle)
        per_node = max(0.0, loaded - bare) / args.nodes * 1000
        ok &= emit("idle-cpu", "capstan", "ms_cpu_per_node_per_s", per_node, at_most(1.0, " ms/s"),
                   nodes=args.nodes, core_alone_cpu_share=round(bare, 4), with_nodes_cpu_share=round(loaded, 4))
        emit("startup", "capstan", "extra_s", max(0.0, loaded_start - bare_start), context("registering the nodes"),
             nodes=args.nodes, start_s=round(loaded_start, 3), start_without_nodes_s=round(bare_start, 3))
        note(f"pods: {args.pods} Pods on {args.nodes} nodes")
        got = await pods_started(root / "pods", args.nodes, args.pods)
        ok &= emit("pods-started", "capstan", "pods_per_s", args.pods / got["elapsed"], at_least(100, "/s"),
                   pods=args.pods, nodes=args.nodes, seconds=round(got["elapsed"], 2),
                   created_in_s=round(got["created_in"], 2), cpu_s=round(got["cpu"], 2))
        ok &= emit("heartbeats", "capstan", "oldest_lease_s", got["oldest_lease"], at_most(GRACE, " s"),
                   correct=got["not_ready"] == 0, not_ready_nodes=got["not_ready"], renew_every_s=10)
        emit("pods-started", "capstan", "cpu_ms_per_pod", got["cpu"] / args.pods * 1000, context("cost"))
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.nodes", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU measured per core")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.pods, args.idle = 5, 100, 1.0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
