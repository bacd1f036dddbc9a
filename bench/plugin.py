"""What the pytest plugin's testing aids cost a test session: the audit log every request is written to (for
`capstan_requests`) and fault injection (`--fault-injection`, for `capstan_faults`), beside the same server
without them, in one run, alternating:

    python -m bench.plugin [--rounds 5] [--requests 300]

  plain      `capstan.testing.server.start` as a session's server started before the aids: no audit, no faults
  aids       with the audit policy and log and --fault-injection, as the plugin starts its servers now
  aids+rule  `aids` with one fault rule that matches nothing, so every request is checked against it

Per configuration: the start (exec to every port listening, fresh data dir) and the median latency of a GET
(read a ConfigMap) and of a create (a ConfigMap), made one after another by the official client over HTTPS,
medians over the rounds. The goal is context: the aids are on for every plugin session, so what they add is
said beside the plain figures.

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kubernetes import client

from bench._util import context, emit, note
from capstan.testing import server as servers
from capstan.testing.access import api_client
from capstan.testing.faults import Faults
from capstan.testing.requestlog import AUDIT_POLICY

CONFIGS = ("plain", "aids", "aids+rule")


def _config_map(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))


def _round(config: str, directory: Path, requests: int) -> tuple[float, float, float]:
    aids = config != "plain"
    started = servers.start(directory / "data", extra=("--fault-injection",) if aids else (),
                            audit_policy=AUDIT_POLICY if aids else None)
    try:
        with api_client(started.kubeconfig) as api:
            if config == "aids+rule":
                Faults(api).inject(500, resource="nothing-matches", count=0)
            core = client.CoreV1Api(api)
            core.create_namespaced_config_map("default", _config_map("read"))
            gets, creates = [], []
            for i in range(requests):
                began = time.perf_counter()
                core.read_namespaced_config_map("read", "default")
                gets.append(time.perf_counter() - began)
                began = time.perf_counter()
                core.create_namespaced_config_map("default", _config_map(f"c{i}"))
                creates.append(time.perf_counter() - began)
        return started.started_in, statistics.median(gets), statistics.median(creates)
    finally:
        started.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float, float]]] = {config: [] for config in CONFIGS}
    for number in range(args.rounds):
        for config in CONFIGS:  # alternating, so that the machine's load falls on each alike
            with tempfile.TemporaryDirectory(prefix="bench-plugin-") as directory:
                figures[config].append(_round(config, Path(directory), args.requests))
                note(f"round {number + 1} {config}: start {figures[config][-1][0]:.2f} s")
    for config in CONFIGS:
        starts, gets, creates = zip(*figures[config], strict=True)
        emit("start", config, "seconds", statistics.median(starts), context("the plugin's session start"),
             rounds=args.rounds)
        emit("get", config, "ms", statistics.median(gets) * 1000, context("one GET, official client"),
             requests=args.requests)
        emit("create", config, "ms", statistics.median(creates) * 1000, context("one create, official client"),
             requests=args.requests)


if __name__ == "__main__":
    main()
