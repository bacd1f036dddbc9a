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
import sys
import tempfile
from pathlib import Path

from bench._standin import FLOOR_LABEL, NS, StandIn, floor, report, rounds, through
from server.auth.config import INSECURE
from server.controllers.workload.keyed import Obj, path
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

PARALLELISM = 10
# the floor's stand-in for the tracking finalizer (the Job controller takes that one off any Pod no Job owns)
FLOOR_FINALIZER = "bench.capstan.dev/floor"


class Kubelet(StandIn):
    """Every Pod not yet terminated reported Succeeded (but the floor's)."""

    @staticmethod
    def reported(pod: Obj) -> bool:
        return (pod.get("status") or {}).get("phase") == "Succeeded"

    @staticmethod
    def status(pod: Obj, now: str) -> Obj:
        return {"phase": "Succeeded", "containerStatuses": [{
            "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "startedAt": now, "finishedAt": now}}}]}


def job(name: str, completions: int) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        "completions": completions, "parallelism": min(completions, PARALLELISM),
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


def complete(got: Obj) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True"
               for c in (got.get("status") or {}).get("conditions") or [])


async def main(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="capstan-bench-batch-") as tmp:
        store = await LmdbStore.open(Path(tmp) / "lmdb", StoreOptions())
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                   controller_names=controllers.DEFAULT | {"job"})
        kubelet = Kubelet(running.core)
        await kubelet.start()

        async def controllers_run(name: str, completions: int) -> tuple[float, int, bool]:
            return await through(kubelet, job(name, completions), path("jobs", NS, group="batch"), complete)

        async def floor_run(name: str, completions: int) -> float:
            spec = job(name, completions)["spec"]["template"]["spec"]

            async def one(i: int) -> None:
                pod_name = f"{name}-{i}"
                meta: Obj = {"name": pod_name, "labels": {FLOOR_LABEL: "true"}, "finalizers": [FLOOR_FINALIZER]}
                await kubelet.report(await kubelet.create(path("pods", NS), {"metadata": meta, "spec": spec}))
                await kubelet.patch(path("pods", NS), pod_name,
                                    {"metadata": {"$deleteFromPrimitiveList/finalizers": [FLOOR_FINALIZER]}})

            return await floor(completions, PARALLELISM, one)

        failed = False
        try:
            for size in sizes:
                got = await rounds(size, args.rounds, "completions", "j", controllers_run, floor_run)
                failed = failed or not got.ok
                report("job-complete", "Complete", got, args.rounds, 3 * size, completions=size)
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
