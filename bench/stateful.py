"""How fast the stateful workload controllers converge, beside the same writes made directly by a client, in one
run on an in-process core (LMDB, no fsync) that runs the controllers:

    python -m bench.stateful [--quick] [--only statefulset,daemonset,pvbinding]

  statefulset   a Parallel StatefulSet of N replicas: seconds from its create until its N Pods exist (the
                controller's reads, creates, events and status writes), beside N Pods of the same template
                created one after another by a client (the write path's floor for the same Pods).
  daemonset     a DaemonSet over N Nodes: seconds until its N Pods exist, beside the same N creates.
  pvbinding     N Available PersistentVolumes and N claims: seconds from the claims' creates until all are
                Bound (four writes per claim: the volume's claimRef and phase, the claim's volumeName and
                phase), beside a client creating the N claims and making those four writes itself.

Each figure is pods (or claims) per second, the median of 3 rounds run alternately (direct, controller, ...),
each on a new store; the anchor is `direct` in the same run. Goal: the controller at no less than a third of the
direct rate. Stdout is one JSON line per
figure (see bench/_util.py); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from bench._util import CEILING, at_least, check_choices, emit, note, run_workloads
from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server import admission
from server.auth.config import INSECURE
from server.objects.core import Core
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

WORKLOADS = ("statefulset", "daemonset", "pvbinding")
STATEFUL = frozenset({"statefulset", "daemonset", "persistentvolume-binder"})
FULL = {"n": 200, "rounds": 3}
QUICK = {"n": 10, "rounds": 1}
POLL = 0.1  # seconds between checks for convergence (each lists every object: it competes with the controller)
TIMEOUT = 120.0
# Goals: the controller at no less than a third of the direct write rate for the same objects.
SHARE = 1 / 3
TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}


def _path(resource: str, namespace: str = "default", name: str = "", *, group: str = "",
          subresource: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace, name=name,
                                 subresource=subresource)


def _raw(obj: dict[str, Any]) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


async def _create(core: Core, at: core_pb2.ResourcePath, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = orjson.loads((await core.create(core_pb2.CreateRequest(path=at, object=_raw(obj))))
                                           .object.data)
    return created


async def _update(core: Core, at: core_pb2.ResourcePath, obj: dict[str, Any]) -> dict[str, Any]:
    updated: dict[str, Any] = orjson.loads((await core.update(core_pb2.UpdateRequest(path=at, object=_raw(obj))))
                                           .object.data)
    return updated


async def _items(core: Core, at: core_pb2.ResourcePath, label_selector: str = "") -> list[dict[str, Any]]:
    listed = await core.list(core_pb2.ListRequest(path=at, options=meta_pb2.ListOptions(labelSelector=label_selector)))
    return [orjson.loads(item) for item in listed.items]


async def _until(check: Callable[[], Awaitable[bool]]) -> float:
    started = time.perf_counter()
    while not await check():
        if time.perf_counter() - started > TIMEOUT:
            raise TimeoutError("the controller did not converge")
        await asyncio.sleep(POLL)
    return time.perf_counter() - started


def _direct_pods(n: int) -> Callable[[Core], Awaitable[float]]:
    async def run(core: Core) -> float:
        started = time.perf_counter()
        for i in range(n):
            await _create(core, _path("pods"), {"metadata": {"name": f"p-{i}", **TEMPLATE["metadata"]},
                                                "spec": TEMPLATE["spec"]})
        return time.perf_counter() - started
    return run


async def _on_core(directory: Path, names: frozenset[str], work: Callable[[Core], Awaitable[float]]) -> float:
    store = await LmdbStore.open(directory / "lmdb", StoreOptions(sync=False, compact_interval=0))
    # the Nodes stand for Ready nodes whose not-ready taint the node lifecycle controller has lifted
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, controller_names=names,
                               admission_plugins=admission.enabled(disable=["TaintNodesByCondition"]))
    try:
        return await work(running.core)
    finally:
        await running.stop()
        await store.close()


async def _compare(directory: Path, op: str, sizes: dict[str, int], direct: Callable[[Core], Awaitable[float]],
                   controlled: Callable[[Core], Awaitable[float]]) -> None:
    """`direct` on a core without the stateful controllers and `controlled` on one with them, alternating for
    the rounds, each on a new store; the medians."""
    n = sizes["n"]
    direct_s: list[float] = []
    controller_s: list[float] = []
    for round_ in range(sizes["rounds"]):
        direct_s.append(await _on_core(directory / f"direct-{round_}", controllers.DEFAULT, direct))
        controller_s.append(await _on_core(directory / f"controller-{round_}", controllers.DEFAULT | STATEFUL,
                                           controlled))
    direct_rate = n / statistics.median(direct_s)
    controller_rate = n / statistics.median(controller_s)
    emit(op, "direct", "per_s", direct_rate, CEILING, count=n, rounds=len(direct_s),
         seconds=[round(x, 3) for x in direct_s])
    emit(op, "controller", "per_s", controller_rate, at_least(round(direct_rate * SHARE), "/s"), count=n,
         rounds=len(controller_s), seconds=[round(x, 3) for x in controller_s],
         share_of_direct=round(controller_rate / direct_rate, 2))


async def statefulset(directory: Path, sizes: dict[str, int]) -> None:
    n = sizes["n"]

    async def work(core: Core) -> float:
        body = {"metadata": {"name": "web"}, "spec": {
            "replicas": n, "podManagementPolicy": "Parallel", "serviceName": "web",
            "selector": {"matchLabels": {"app": "bench"}}, "template": TEMPLATE}}
        started = time.perf_counter()
        await _create(core, _path("statefulsets", group="apps"), body)

        async def done() -> bool:
            return len(await _items(core, _path("pods"), label_selector="app=bench")) >= n

        await _until(done)
        return time.perf_counter() - started

    await _compare(directory, "statefulset", sizes, _direct_pods(n), work)


async def daemonset(directory: Path, sizes: dict[str, int]) -> None:
    n = sizes["n"]

    async def work(core: Core) -> float:
        for i in range(n):
            await _create(core, _path("nodes", ""), {"metadata": {"name": f"node-{i}"}})
        body = {"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "bench"}}, "template": TEMPLATE}}
        started = time.perf_counter()
        await _create(core, _path("daemonsets", group="apps"), body)

        async def done() -> bool:
            return len(await _items(core, _path("pods"), label_selector="app=bench")) >= n

        await _until(done)
        return time.perf_counter() - started

    await _compare(directory, "daemonset", sizes, _direct_pods(n), work)


async def pvbinding(directory: Path, sizes: dict[str, int]) -> None:
    n = sizes["n"]

    def volume(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": f"/d/{name}"}}}

    def claim(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}

    async def direct(core: Core) -> float:
        """A client creating each claim and binding it itself, with the four writes binding makes (the volumes'
        creates are not timed, as in the controller's run)."""
        volumes = [await _create(core, _path("persistentvolumes", ""), volume(f"direct-{i}")) for i in range(n)]
        started = time.perf_counter()
        for i, pv in enumerate(volumes):
            pvc = await _create(core, _path("persistentvolumeclaims"), claim(f"direct-{i}"))
            pv["spec"]["claimRef"] = {"namespace": "default", "name": f"direct-{i}", "uid": pvc["metadata"]["uid"]}
            pv = await _update(core, _path("persistentvolumes", "", f"direct-{i}"), pv)
            pv["status"] = {"phase": "Bound"}
            await _update(core, _path("persistentvolumes", "", f"direct-{i}", subresource="status"), pv)
            pvc["spec"]["volumeName"] = f"direct-{i}"
            pvc = await _update(core, _path("persistentvolumeclaims", name=f"direct-{i}"), pvc)
            pvc["status"] = {"phase": "Bound"}
            await _update(core, _path("persistentvolumeclaims", name=f"direct-{i}", subresource="status"), pvc)
        return time.perf_counter() - started

    async def work(core: Core) -> float:
        for i in range(n):
            await _create(core, _path("persistentvolumes", ""), volume(f"pv-{i}"))

        async def available() -> bool:
            phases = [(v.get("status") or {}).get("phase") for v in await _items(core, _path("persistentvolumes", ""))]
            return phases.count("Available") >= n

        await _until(available)
        started = time.perf_counter()
        for i in range(n):
            await _create(core, _path("persistentvolumeclaims"), claim(f"pvc-{i}"))

        async def done() -> bool:
            claims = await _items(core, _path("persistentvolumeclaims"))
            bound = [c for c in claims if (c.get("status") or {}).get("phase") == "Bound"]
            return len([c for c in bound if str(c["metadata"]["name"]).startswith("pvc-")]) >= n

        await _until(done)
        return time.perf_counter() - started

    await _compare(directory, "pvbinding", sizes, direct, work)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.stateful", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    args = parser.parse_args(argv)
    check_choices(parser, args, only=WORKLOADS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    note(f"sizes {sizes}")
    workloads = {"statefulset": statefulset, "daemonset": daemonset, "pvbinding": pvbinding}
    return run_workloads(args.only, workloads, sizes, prefix="bench-stateful-")


if __name__ == "__main__":
    raise SystemExit(main())
