"""What ValidatingAdmissionPolicy adds to a write: ConfigMap creates through a core with no binding, one policy
with one validation, ten such policies, and one policy with params, variables and a messageExpression, in one
run, rounds alternated.

    python -m bench.policies [--quick]

In-process: a core started as `capstan serve --feature-gates=ValidatingAdmissionPolicy=true
--runtime-config=admissionregistration.k8s.io/v1beta1=true` starts it (LMDB without fsync, so the figure is the
CPU of the write path), creates called back to back on its event loop (`Core.create`, the admission chain
included, no transport). Each round switches the bindings (the policies stay compiled) and waits until the
plugin follows them. Every line is the median over rounds of µs per create; policy lines add `added_us` (minus
the `none` line of the same run), and the same for the process's CPU time (`cpu_us_per_create`, `added_cpu_us`:
steadier than wall time on a shared machine). Stdout is one JSON line per figure (bench/_util.py).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench._util import context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission.policies import BINDINGS, POLICIES, Policies
from server.auth.config import INSECURE
from server.objects.core import Core
from server.startup import apienablement
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

GROUP = "admissionregistration.k8s.io"
RULES = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]
SIMPLE: dict[str, object] = {"matchConstraints": {"resourceRules": RULES},
          "validations": [{"expression": "object.data.a == '1'", "message": "a must be 1"}]}
RICH: dict[str, object] = {
        "matchConstraints": {"resourceRules": RULES}, "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "variables": [{"name": "a", "expression": "object.data.a"}],
        "validations": [{"expression": "variables.a == params.data.want",
                         "messageExpression": "'a must be ' + params.data.want"}]}
# impl -> the policies (name, spec) bound, each by a binding of the same name
IMPLS: dict[str, list[tuple[str, dict[str, object]]]] = {
    "none": [],
    "one-policy": [("simple-0", SIMPLE)],
    "ten-policies": [(f"simple-{i}", SIMPLE) for i in range(10)],
    "params-variables": [("rich", RICH)],
}


def _path(resource: str, namespace: str = "", group: str = "", version: str = "v1",
          name: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version=version, resource=resource, namespace=namespace, name=name)


async def _create(core: Core, path: core_pb2.ResourcePath, obj: dict[str, object]) -> str:
    answer = await core.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))))
    return str(orjson.loads(answer.object.data)["metadata"]["resourceVersion"])


async def _wait(policies: Policies, resource: str, name: str, version: str) -> None:
    deadline = time.monotonic() + 10
    while not policies.follows(resource, name, version):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{resource}/{name} never reached admission")
        await asyncio.sleep(0.005)


async def _bind(core: Core, policies: Policies, names: list[str], bound: set[str]) -> None:
    """Bindings for exactly `names`."""
    for name in sorted(bound - set(names)):
        await core.delete(core_pb2.DeleteRequest(path=_path(BINDINGS, group=GROUP, version="v1beta1", name=name)))
        await _wait(policies, BINDINGS, name, "")
    for name in names:
        if name not in bound:
            version = await _create(core, _path(BINDINGS, group=GROUP, version="v1beta1"), {
                "apiVersion": f"{GROUP}/v1beta1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {"policyName": name, "validationActions": ["Deny"],
                         "paramRef": {"name": "wanted", "namespace": "default"}}})
            await _wait(policies, BINDINGS, name, version)
    bound.clear()
    bound.update(names)


async def run(root: Path, creates: int, rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """µs per create by impl, each round's: wall time, and the process's CPU time."""
    store = await LmdbStore.open(root / "lmdb", StoreOptions(sync=False, compact_interval=0))
    api = apienablement.runtime_config([f"{GROUP}/v1beta1=true"],
                                       apienablement.feature_gates(["ValidatingAdmissionPolicy=true"]))
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                               namespace_controllers=False, api=api)
    try:
        core, policies = running.core, running.policies
        assert policies is not None
        await _create(core, _path("configmaps", "default"), {"metadata": {"name": "wanted"}, "data": {"want": "1"}})
        for name, spec in {n: s for specs in IMPLS.values() for n, s in specs}.items():
            version = await _create(core, _path(POLICIES, group=GROUP, version="v1beta1"), {
                "apiVersion": f"{GROUP}/v1beta1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
                "spec": spec})
            await _wait(policies, POLICIES, name, version)
        figures: dict[str, list[float]] = {impl: [] for impl in IMPLS}
        cpu_figures: dict[str, list[float]] = {impl: [] for impl in IMPLS}
        bound: set[str] = set()
        serial = 0
        for round_ in range(rounds):
            for impl, specs in IMPLS.items():
                await _bind(core, policies, [n for n, _ in specs], bound)
                path = _path("configmaps", "default")
                started, cpu = time.perf_counter(), time.process_time()
                for _ in range(creates):
                    serial += 1
                    await _create(core, path, {"metadata": {"name": f"c-{serial}"}, "data": {"a": "1"}})
                figures[impl].append((time.perf_counter() - started) / creates * 1e6)
                cpu_figures[impl].append((time.process_time() - cpu) / creates * 1e6)
            note(f"round {round_ + 1}/{rounds}: " + ", ".join(f"{i} {f[-1]:.0f} µs" for i, f in figures.items()))
        return figures, cpu_figures
    finally:
        await running.stop()
        await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.policies", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 creates a round, 3 rounds (else 1,000 and 5)")
    args = parser.parse_args(argv)
    creates, rounds = (200, 3) if args.quick else (1_000, 5)
    with tempfile.TemporaryDirectory(prefix="bench-policies-") as root:
        figures, cpu_figures = asyncio.run(run(Path(root), creates, rounds))
    anchor, cpu_anchor = statistics.median(figures["none"]), statistics.median(cpu_figures["none"])
    for impl, values in figures.items():
        median, cpu = statistics.median(values), statistics.median(cpu_figures[impl])
        extra: dict[str, Any] = {} if impl == "none" else {"added_us": round(median - anchor, 1),
                                                            "added_cpu_us": round(cpu - cpu_anchor, 1)}
        emit("create", impl, "us_per_create", round(median, 1), context("in-process"),
             rounds=[round(v, 1) for v in values], cpu_us_per_create=round(cpu, 1), **extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
