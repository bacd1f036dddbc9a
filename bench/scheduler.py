"""How fast the scheduler binds Pods over 100 Nodes, beside the floor of the same bindings written without any
scheduling decision, in the same run.

    python -m bench.scheduler [--quick] [--nodes 100] [--pods 1000] [--only plain,spread]

One in-process core (LMDB, fsync on as served, the default controllers, the garbage collector set as
`capstan serve` sets it) holds `--nodes` Ready Nodes (64 cpu,
256Gi, 250 Pods each) and `--pods` pending Pods (100m cpu, 128Mi) in namespace `bench`. Then, alternating over
3 rounds (a fresh namespace of Pods each):
  scheduler  the scheduler (server/controllers/scheduler) is started (its informers list the cluster, every
             pending Pod queued) and timed from then until every Pod is bound (its cache sees each binding
             through the informer): pods/s. Its CPU per Pod is this process's CPU over that time (the core's
             writes included: the binding and the Scheduled event) per Pod;
  floor      the same Pods bound through the same pods/binding subresource by 16 concurrent writers, Nodes in
             turn, without filtering or scoring: the most binding writes this layout takes per second.
  decide     the scheduling decision alone (filters and scores over the cache, no write) for one Pod: µs per
             decision over the same Nodes with half their Pods bound.
Workloads: `plain` (Pods with requests only) and `spread` (each Pod with a DoNotSchedule zone topology spread
constraint, a ScheduleAnyway hostname one, and preferred anti-affinity to its own app: the costliest plugins).
The goal beside pods/s is kube-scheduler's own client limit (--kube-api-qps 50, burst 100): it binds no faster.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench._util import at_least, context, emit, note
from capstan.cli import gcpolicy
from capstan.core.v1 import core_service_pb2 as core_pb2
from server import admission
from server.auth.config import INSECURE
from server.controllers.scheduler.model import pod_info
from server.controllers.scheduler.scheduler import PODS, Scheduler, decide
from server.objects.core import Core
from server.runtime.informer import SharedInformers, on_change
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
WRITERS = 16
ROUNDS = 3


def raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def node(i: int) -> Obj:
    allocatable = {"cpu": "64", "memory": "256Gi", "pods": "250"}
    name = f"node-{i:03d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: f"zone-{i % 3}"}},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, workload: str) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "nginx",
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    labels = {"app": "web"}
    if workload == "spread":
        selector = {"matchLabels": labels}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": selector}]
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}}]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def path(resource: str, namespace: str = "", name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace, name=name,
                                 subresource=subresource)


async def fill(core: Core, namespace: str, count: int, workload: str) -> None:
    await core.create(core_pb2.CreateRequest(path=path("namespaces"), object=raw(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})))
    names = iter(range(count))

    async def writer() -> None:
        for i in names:
            await core.create(core_pb2.CreateRequest(path=path("pods", namespace), object=raw(pod(f"p{i}", workload))))
    await asyncio.gather(*(writer() for _ in range(WRITERS)))


async def schedule_round(core: Core, namespace: str, count: int) -> tuple[float, float]:
    """Seconds from the scheduler's start (its informers listed, the Pods queued) until every Pod of the
    namespace is bound, and this process's CPU seconds meanwhile."""
    informers = SharedInformers(core)
    bound: set[str] = set()
    done = asyncio.Event()

    def seen(old: Obj | None, new: Obj | None) -> None:  # the informer's view of each binding
        metadata = (new or {}).get("metadata") or {}
        if metadata.get("namespace") == namespace and (new or {}).get("spec", {}).get("nodeName"):
            bound.add(str(metadata.get("name")))
            if len(bound) == count:
                done.set()
    informers.informer(PODS).add_handlers(on_change(seen))
    scheduler = Scheduler(core, informers)
    await scheduler.start()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        await done.wait()
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await scheduler.stop()


async def floor_round(core: Core, namespace: str, count: int, nodes: int) -> tuple[float, float]:
    turn = itertools.cycle(range(nodes))
    pods = iter(range(count))
    started, cpu = time.perf_counter(), time.process_time()

    async def writer() -> None:
        for i in pods:
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"p{i}", "namespace": namespace},
                       "target": {"kind": "Node", "name": f"node-{next(turn):03d}"}}
            await core.create(core_pb2.CreateRequest(path=path("pods", namespace, f"p{i}", "binding"),
                                                     object=raw(binding)))
    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    return time.perf_counter() - started, time.process_time() - cpu


def decide_us(nodes: int, workload: str, samples: int) -> float:
    """µs per decision over `nodes` Nodes holding `nodes * 5` bound Pods."""
    from server.controllers.scheduler.cache import Cache
    cache = Cache()
    for i in range(nodes):
        n = node(i)
        cache.set_node(n["metadata"]["name"], n)
    for i in range(nodes * 5):
        bound = pod(f"b{i}", workload)
        bound["metadata"]["namespace"] = "bench"
        bound["spec"]["nodeName"] = f"node-{i % nodes:03d}"
        cache.put(pod_info(bound))
    incoming = pod("new", workload)
    incoming["metadata"]["namespace"] = "bench"
    info = pod_info(incoming)
    rng = random.Random(0)
    started = time.perf_counter()
    for _ in range(samples):
        decide(cache, info, lambda namespace: {}, rng)
    return (time.perf_counter() - started) / samples * 1e6


async def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="capstan-bench-scheduler-") as tmp:
        store = await LmdbStore.open(Path(tmp) / "lmdb", StoreOptions(sync=True, compact_interval=0))
        # the Nodes stand for Ready nodes whose not-ready taint the node lifecycle controller has lifted
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                   admission_plugins=admission.enabled(disable=["TaintNodesByCondition"]))
        core = running.core
        try:
            for i in range(args.nodes):
                await core.create(core_pb2.CreateRequest(path=path("nodes"), object=raw(node(i))))
            gcpolicy.after_start()  # the collector as a serving process sets it
            for workload in args.only:
                rates: dict[str, list[float]] = {"scheduler": [], "floor": []}
                cpus: dict[str, list[float]] = {"scheduler": [], "floor": []}
                for r in range(args.rounds):
                    for impl in ("scheduler", "floor"):
                        namespace = f"{workload}-{impl}-{r}"
                        await fill(core, namespace, args.pods, workload)
                        note(f"{workload} round {r}: {impl} binding {args.pods} Pods")
                        if impl == "scheduler":
                            seconds, cpu = await schedule_round(core, namespace, args.pods)
                        else:
                            seconds, cpu = await floor_round(core, namespace, args.pods, args.nodes)
                        rates[impl].append(args.pods / seconds)
                        cpus[impl].append(cpu / args.pods * 1e6)
                for impl, goal in (("scheduler", at_least(50, "/s")), ("floor", context("binding writes alone"))):
                    emit(workload, impl, "pods_per_s", statistics.median(rates[impl]), goal, nodes=args.nodes,
                         pods=args.pods, rounds=args.rounds, cpu_us_per_pod=round(statistics.median(cpus[impl])),
                         worst_per_s=round(min(rates[impl]), 1), best_per_s=round(max(rates[impl]), 1))
                emit(workload, "decide", "us_per_pod", decide_us(args.nodes, workload, args.samples),
                     context("filters and scores, no write"), nodes=args.nodes, bound_pods=args.nodes * 5)
        finally:
            await running.stop()
            await store.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--only", default="plain,spread")
    args = parser.parse_args()
    args.only = [w for w in args.only.split(",") if w]
    if not set(args.only) <= {"plain", "spread"}:
        parser.error("--only: plain, spread")
    if args.quick:
        args.nodes, args.pods, args.rounds, args.samples = 10, 50, 1, 10
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
