"""What deciding that a webhook is not called costs a create: admission webhook configurations whose rules,
matchPolicy or matchConditions keep the request from the webhook, against a core without any, in-process.

A core started as `capstan serve` starts it (server.startup.app.start_core, RBAC, a static token of a user in
system:masters), creates sent to its guard back to back on one event loop (no HTTP, no gRPC: the figure is the
core's CPU per create). Each round runs every case once, in order, on a fresh configuration (the previous one
deleted, the new one followed by the webhook plugin's informer before timing starts):

  configmaps (v1 ConfigMaps):
    none         no webhook configuration: the anchor
    exact        one validating webhook, matchPolicy Exact, its rule on secrets
    equivalent   the same with matchPolicy Equivalent: the request's equivalent resources are looked up too
    condition    its rule on configmaps, a matchCondition on the object that is false (`object.metadata.name ==
                 'never'`)
    authorizer   the same with an authorizer check first (`authorizer.group('').resource('secrets')
                 .namespace('default').check('get').allowed() && ...`): one RBAC decision per create
  hpas (autoscaling/v2 HorizontalPodAutoscalers):
    none         no webhook configuration: the anchor
    converted    a rule on autoscaling/v1 under matchPolicy Equivalent with a false matchCondition: the object is
                 converted to v1 for the condition, then not sent

    python -m bench.webhookmatch [--quick] [--rounds 3] [--creates 2000] [--cases none,exact,...]

Stdout is one JSON line per case (bench/_util.py): µs of the process's CPU per create, the median over rounds, and
`added_us` beside the anchor of the same run; progress goes to stderr. --cases limits the run to the cases named
(the anchors always run), e.g. to compare with a tree that lacks some.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench._util import CEILING, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

Obj = dict[str, Any]
TOKEN = "bench-token-0123456789abcdef0123456789abcdef"
ADMISSION = "admissionregistration.k8s.io"
NEVER = "object.metadata.name == 'never'"
CHECK = "authorizer.group('').resource('secrets').namespace('default').check('get').allowed()"
UNREACHABLE = {"url": "https://127.0.0.1:9/"}  # never called: every case keeps the request from it


def _rule(group: str, version: str, resource: str) -> Obj:
    return {"operations": ["CREATE"], "apiGroups": [group], "apiVersions": [version], "resources": [resource]}


def _webhook(rule: Obj, policy: str = "Equivalent", condition: str = "") -> Obj:
    hook: Obj = {"name": "bench.example.com", "clientConfig": UNREACHABLE, "rules": [rule], "sideEffects": "None",
                 "admissionReviewVersions": ["v1"], "matchPolicy": policy, "failurePolicy": "Fail"}
    if condition:
        hook["matchConditions"] = [{"name": "bench", "expression": condition}]
    return hook


CONFIGMAPS = "configmaps"
HPAS = "hpas"
CASES: dict[str, list[tuple[str, Obj | None]]] = {
    CONFIGMAPS: [
        ("none", None),
        ("exact", _webhook(_rule("", "v1", "secrets"), "Exact")),
        ("equivalent", _webhook(_rule("", "v1", "secrets"))),
        ("condition", _webhook(_rule("", "v1", "configmaps"), condition=NEVER)),
        ("authorizer", _webhook(_rule("", "v1", "configmaps"), condition=f"{CHECK} && {NEVER}")),
    ],
    HPAS: [
        ("none", None),
        ("converted", _webhook(_rule("autoscaling", "v1", "horizontalpodautoscalers"), condition=NEVER)),
    ],
}


def _object(kind: str, name: str) -> tuple[core_pb2.ResourcePath, Obj]:
    if kind == CONFIGMAPS:
        return (core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default"),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
    return (core_pb2.ResourcePath(group="autoscaling", version="v2", resource="horizontalpodautoscalers",
                                  namespace="default"),
            {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
             "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                      "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {
                          "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}})


async def _configure(running: RunningCore, credentials: Credentials, hook: Obj | None, generation: int) -> None:
    """Replace the configuration (the previous generation's) with one holding `hook` (none when None), and wait
    until admission follows."""
    path = core_pb2.ResourcePath(group=ADMISSION, version="v1", resource="validatingwebhookconfigurations")
    guard = running.guard
    previous = core_pb2.ResourcePath(group=ADMISSION, version="v1", resource="validatingwebhookconfigurations",
                                     name=f"bench-{generation - 1}")
    with contextlib.suppress(ApiError):  # the previous case had none
        await guard.delete(core_pb2.DeleteRequest(path=previous), credentials)
    webhooks = running.webhooks
    assert webhooks is not None
    wanted = f"bench-{generation}" if hook is not None else ""
    if hook is not None:
        config = {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": wanted}, "webhooks": [hook]}
        await guard.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(config))), credentials)
    for _ in range(1000):
        names = {h.configuration for h in webhooks.hooks(False)}
        if names == ({wanted} if wanted else set()):
            return
        await asyncio.sleep(0.01)
    raise RuntimeError("admission never followed the configuration")


async def _creates(running: RunningCore, credentials: Credentials, kind: str, prefix: str, count: int) -> float:
    """µs of this process's CPU per create, `count` creates back to back (CPU, not wall time: the figure holds on a
    shared machine)."""
    guard = running.guard
    requests = []
    for i in range(count):
        path, obj = _object(kind, f"{prefix}-{i}")
        requests.append(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))))
    started = time.process_time()
    for request in requests:
        await guard.create(request, credentials)
    return (time.process_time() - started) / count * 1e6


async def run(rounds: int, creates: int, chosen: set[str]) -> int:
    root = Path(tempfile.mkdtemp(prefix="capstan-webhookmatch-"))
    try:
        tokens = root / "tokens.csv"
        tokens.write_text(f'{TOKEN},bench,uid-bench,"system:masters"\n')
        store = await LmdbStore.open(root / "lmdb", StoreOptions(sync=False, compact_interval=0))
        running = await start_core(store, listen="127.0.0.1", grpc_port=0,
                                   security=SecurityConfig(token_auth_file=tokens), namespace_controllers=False)
        credentials = Credentials(token=TOKEN, source_ip="127.0.0.1",
                                  request_uri="/api/v1/namespaces/default/configmaps")
        figures: dict[tuple[str, str], list[float]] = {}
        generation = 0
        try:
            for round_ in range(rounds):
                for kind, cases in CASES.items():
                    for case, hook in cases:
                        if case != "none" and chosen and case not in chosen:
                            continue
                        generation += 1
                        await _configure(running, credentials, hook, generation)
                        await _creates(running, credentials, kind, f"warm-{generation}", creates // 10)
                        us = await _creates(running, credentials, kind, f"r{round_}-{case}", creates)
                        figures.setdefault((kind, case), []).append(us)
                        note(f"round {round_ + 1} {kind} {case}: {us:.0f} µs/create")
        finally:
            await running.stop()
            await store.close()
        for kind, cases in CASES.items():
            anchor = statistics.median(figures[(kind, "none")])
            for case, _ in cases:
                if (kind, case) not in figures:
                    continue
                median = statistics.median(figures[(kind, case)])
                emit(f"create {kind}", case, "us_per_create", median, CEILING,
                     added_us=round(median - anchor, 1), rounds=[round(f, 1) for f in figures[(kind, case)]])
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhookmatch", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 300 creates a case")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--cases", default="", help="comma-separated cases to run (default: all)")
    args = parser.parse_args(argv)
    rounds, creates = (1, 300) if args.quick else (args.rounds, args.creates)
    return asyncio.run(run(rounds, creates, {c for c in args.cases.split(",") if c}))


if __name__ == "__main__":
    sys.exit(main())
