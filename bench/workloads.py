"""How long a Deployment takes to become Available through the workload controllers, beside the API's floor for
the same Pod writes, in one run.

    python -m bench.workloads [--quick] [--sizes 1,100] [--rounds 3] [--nodes 10]

One in-process core (`start_core`, LMDB with fsync as served) runs the default controllers plus `deployment` and
`replicaset`; a kubelet stand-in in the same process (an informer on Pods) reports each new Pod Running and Ready
through pods/status as soon as it sees it, as simulated nodes would with no start-up delay.

Impls, per size (Deployment replicas):
  controllers  create the Deployment, then poll it until Available with the new ReplicaSet complete
               (Progressing NewReplicaSetAvailable): seconds, and the store writes it took
  floor        the same Pod writes issued directly, 16 at a time: one create and one status update per Pod
               (what any control plane must write): seconds; the gap is the controllers' rounds (expectations,
               slow-start batches, status writes)
  nodes        the whole control plane instead of the stand-in: a second core (its own store) with the scheduler,
               the node lifecycle controller (which lifts each new Node's not-ready taint) and `--nodes`
               simulated nodes (10 by default), so each Pod is also bound and started by its node's kubelet:
               create to Available, seconds

Each line carries the median over rounds. Stdout is one JSON line per figure (bench/_util.py); progress goes to
stderr. Exit status 1 means a Deployment never became Available.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._standin import FLOOR_LABEL, NS, StandIn, floor, report, rounds, through, until
from bench._util import context, emit, note
from server.auth.config import INSECURE
from server.controllers.kubelets.config import NodesConfig
from server.controllers.workload.keyed import Obj, path
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore


class Kubelet(StandIn):
    """Every Pod without an IP reported Running and Ready (but the floor's)."""

    @staticmethod
    def reported(pod: Obj) -> bool:
        return bool((pod.get("status") or {}).get("podIP"))

    @staticmethod
    def status(pod: Obj, now: str) -> Obj:
        return {"phase": "Running", "podIP": "10.244.0.1", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}


def deployment(name: str, replicas: int) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def available(replicas: int) -> Callable[[Obj], bool]:
    def done(d: Obj) -> bool:
        status = d.get("status") or {}
        progressing: Obj = next((c for c in status.get("conditions") or [] if c["type"] == "Progressing"), {})
        return bool(status.get("availableReplicas", 0) == replicas
                    and progressing.get("reason") == "NewReplicaSetAvailable")
    return done


async def with_nodes(tmp: Path, nodes: int, name: str, replicas: int) -> tuple[float, bool]:
    """Create to Available on a core running the scheduler and simulated nodes (no stand-in kubelet)."""
    store = await LmdbStore.open(tmp / f"nodes-{name}", StoreOptions())
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                               controller_names=controllers.DEFAULT | {"deployment", "replicaset", "scheduler",
                                                                          "nodelifecycle"},
                               nodes=NodesConfig(count=nodes))
    client = Kubelet(running.core)  # never started: it only writes and reads; the simulated nodes run the Pods
    try:
        started = time.perf_counter()
        await client.create(path("deployments", NS, group="apps"), deployment(name, replicas))
        ok = await until(client, path("deployments", NS, name, group="apps"), available(replicas))
        return time.perf_counter() - started, ok
    finally:
        await running.stop()
        await store.close()


async def main(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="capstan-bench-workloads-") as tmp:
        store = await LmdbStore.open(Path(tmp) / "lmdb", StoreOptions())
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                   controller_names=controllers.DEFAULT | {"deployment", "replicaset"})
        kubelet = Kubelet(running.core)
        await kubelet.start()

        async def controllers_run(name: str, replicas: int) -> tuple[float, int, bool]:
            return await through(kubelet, deployment(name, replicas), path("deployments", NS, group="apps"),
                                 available(replicas))

        async def floor_run(name: str, replicas: int) -> float:
            template = deployment(name, replicas)["spec"]["template"]

            async def one(i: int) -> None:
                meta = {"name": f"{name}-{i}", "labels": {**template["metadata"]["labels"], FLOOR_LABEL: "true"}}
                await kubelet.report(await kubelet.create(path("pods", NS),
                                                          {"metadata": meta, "spec": template["spec"]}))

            return await floor(replicas, 16, one)

        failed = False
        try:
            for size in sizes:
                got = await rounds(size, args.rounds, "replicas", "d", controllers_run, floor_run)
                failed = failed or not got.ok
                report("deployment-available", "Available", got, args.rounds, 2 * size, replicas=size)
                if args.nodes:
                    ran = [await with_nodes(Path(tmp), args.nodes, f"n{size}-{r}", size) for r in range(args.rounds)]
                    failed = failed or not all(ok for _, ok in ran)
                    note(f"{size} replicas over {args.nodes} nodes: {[round(t, 3) for t, _ in ran]} s")
                    emit("deployment-available", "nodes", "seconds", statistics.median(t for t, _ in ran),
                         context(f"create to Available, scheduled and started on {args.nodes} simulated nodes"),
                         correct=all(ok for _, ok in ran), replicas=size, nodes=args.nodes, rounds=args.rounds)
        finally:
            await kubelet.stop()
            await running.stop()
            await store.close()
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes 1,10 and one round")
    parser.add_argument("--sizes", default="1,100")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=10, help="simulated nodes for the `nodes` impl (0: skip it)")
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.sizes, parsed.rounds = "1,10", 1
    sys.exit(asyncio.run(main(parsed)))
