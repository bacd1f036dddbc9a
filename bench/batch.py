"""How long a Job takes to complete through the Job controller, beside the API's floor for the same Pod writes,
in one run.

    python -m bench.batch [--quick] [--sizes 1,100] [--rounds 3]

One in-process core (`start_core`, LMDB with fsync as served) runs the default controllers plus `job`; a kubelet
stand-in in the same process (an informer on Pods) reports each new Pod Succeeded (its container terminated
with exit code 0) through pods/status as soon as it sees it, as simulated nodes would with no run time.

Impls, per size (the Job's completions; parallelism min(size, 10)):
  controllers  create the Job, then poll it until its Complete condition: seconds, and the store writes it took
  floor        the same Pod writes issued directly, 10 at a time: a create with a finalizer, the
               status update to Succeeded, and the patch removing the finalizer per Pod (what finalizer
               tracking must write): seconds; the gap is the controller's rounds (expectations, the
               uncounted-then-counted status writes, parallelism's waves)

Each line carries the median over rounds. Stdout is one JSON line per figure (bench/_util.py); progress goes to
stderr. Exit status 1 means a Job never completed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._util import context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, path
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

NS = "default"
TIMEOUT = 120.0
PARALLELISM = 10
FLOOR_LABEL = "bench/floor"  # the floor's Pods, which the bench writes itself
# the floor's stand-in for the tracking finalizer (the Job controller takes that one off any Pod no Job owns)
FLOOR_FINALIZER = "bench.capstan.dev/floor"


class Kubelet(KeyedController):
    """Every Pod not yet terminated reported Succeeded (but the floor's)."""

    name = "bench-kubelet"
    workers = 4

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.pods = self.follow(path("pods"), lambda old, new: self.queue(_key(new or old or {})))

    async def sync(self, key: Key) -> None:
        pod = self.pods.get(key)
        if pod is None or (pod.get("status") or {}).get("phase") == "Succeeded" \
                or pod["metadata"].get("deletionTimestamp") or FLOOR_LABEL in (pod["metadata"].get("labels") or {}):
            return
        await succeed(self, pod)


def _key(obj: Obj) -> Key:
    return str(obj["metadata"].get("namespace", "")), str(obj["metadata"]["name"])


async def succeed(controller: KeyedController, pod: Obj) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {**pod, "status": {"phase": "Succeeded", "containerStatuses": [{
        "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "startedAt": now, "finishedAt": now}}}]}}
    await controller.update(path("pods", _key(pod)[0]), body, subresource="status")


def job(name: str, completions: int) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        "completions": completions, "parallelism": min(completions, PARALLELISM),
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


async def complete(kubelet: Kubelet, name: str) -> bool:
    deadline = time.monotonic() + TIMEOUT
    at = path("jobs", NS, name, group="batch")
    while time.monotonic() < deadline:
        got = decode((await kubelet.core.get(core_pb2.GetRequest(path=at))).object)
        if any(c["type"] == "Complete" and c["status"] == "True" for c in (got.get("status") or {}).get(
                "conditions") or []):
            return True
        await asyncio.sleep(0.005)
    return False


async def through_controllers(kubelet: Kubelet, name: str, completions: int) -> tuple[float, int, bool]:
    store = kubelet.core.context.store
    before = store.current_revision()
    started = time.perf_counter()
    await kubelet.create(path("jobs", NS, group="batch"), job(name, completions))
    ok = await complete(kubelet, name)
    return time.perf_counter() - started, store.current_revision() - before, ok


async def floor(kubelet: Kubelet, name: str, completions: int) -> float:
    spec = job(name, completions)["spec"]["template"]["spec"]
    gate = asyncio.Semaphore(PARALLELISM)

    async def one(i: int) -> None:
        async with gate:
            pod_name = f"{name}-{i}"
            meta: Obj = {"name": pod_name, "labels": {FLOOR_LABEL: "true"}, "finalizers": [FLOOR_FINALIZER]}
            pod = await kubelet.create(path("pods", NS), {"metadata": meta, "spec": spec})
            await succeed(kubelet, pod)
            await kubelet.patch(path("pods", NS), pod_name,
                                {"metadata": {"$deleteFromPrimitiveList/finalizers": [FLOOR_FINALIZER]}})

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(completions)))
    return time.perf_counter() - started


async def main(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="capstan-bench-batch-") as tmp:
        store = await LmdbStore.open(Path(tmp) / "lmdb", StoreOptions())
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                   controller_names=controllers.DEFAULT | {"job"})
        kubelet = Kubelet(running.core)
        await kubelet.start()
        failed = False
        try:
            for size in sizes:
                seconds: list[float] = []
                writes: list[int] = []
                floors: list[float] = []
                for round_ in range(args.rounds):
                    took, wrote, ok = await through_controllers(kubelet, f"j{size}-{round_}", size)
                    failed = failed or not ok
                    seconds.append(took)
                    writes.append(wrote)
                    floors.append(await floor(kubelet, f"f{size}-{round_}", size))
                    note(f"{size} completions, round {round_}: {took:.3f} s ({wrote} writes), "
                         f"floor {floors[-1]:.3f} s")
                emit("job-complete", "controllers", "seconds", statistics.median(seconds),
                     context("create to Complete"), correct=not failed, completions=size,
                     writes=statistics.median(writes), rounds=args.rounds)
                emit("job-complete", "floor", "seconds", statistics.median(floors),
                     context("the Pod writes alone"), completions=size, writes=3 * size, rounds=args.rounds)
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
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.sizes, parsed.rounds = "1,10", 1
    sys.exit(asyncio.run(main(parsed)))
