"""The fuzz suites' long run: many more examples than `make test` draws, from the same strategies
(tests/fuzz/inputs.py) against the same real servers (tests/fuzz/harness.py), counted rather than asserted.

    python -m bench.fuzz [--examples 20000] [--seconds 600] [--seed 14]

Examples are split evenly over the families (HTTP bodies, query strings, media types; gRPC raw bytes, bent
requests, any field values) and drawn in chunks of CHUNK, each with its own seed, until the count or the time
is up. Printed: answers by status code and by endpoint, every problem found (a 5xx kube would not answer, an
error that is not a Status, a logged traceback, a stuck request) with a reproducer, and Goal lines
(bench/_util.py's shape). Figures are recorded in docs/performance.md under bench.fuzz.
"""

from __future__ import annotations

import argparse
import collections
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from bench._util import at_most, context, emit, note
from tests.fuzz.harness import HttpRequest, Judge, running
from tests.fuzz.inputs import (
    SEED_OBJECTS,
    body_requests,
    field_calls,
    header_requests,
    mutated_calls,
    query_requests,
    raw_calls,
)

CHUNK = 500
NAME = re.compile(r"/(fuzz|absent)[^/?]*")


class Tally:
    """Answers counted by code and by endpoint; problems kept with their reproducer."""

    def __init__(self) -> None:
        self.codes: collections.Counter[str] = collections.Counter()
        self.endpoints: collections.Counter[str] = collections.Counter()
        self.problems: list[tuple[str, list[str]]] = []
        self.sent = 0

    def http(self, judge: Judge, request: HttpRequest) -> None:
        self.sent += 1
        endpoint = f"{request.method} {NAME.sub('/{name}', request.target.split('?')[0])}"
        try:
            answer, problems = judge.http(request)
            code = str(answer.status)
        except Exception as err:  # a stuck or dropped exchange is a finding too
            code, problems = "no answer", [f"{type(err).__name__}: {err}"]
        self.codes[f"http {code}"] += 1
        self.endpoints[f"{endpoint} -> {code}"] += 1
        if problems:
            self.problems.append((request.reproducer(), problems))

    def grpc(self, judge: Judge, call: tuple[str, bytes]) -> None:
        self.sent += 1
        try:
            answer, problems = judge.grpc(*call)
            code = answer.code.name
        except Exception as err:
            code, problems = "no answer", [f"{type(err).__name__}: {err}"]
        self.codes[f"grpc {code}"] += 1
        self.endpoints[f"{call[0]} -> {code}"] += 1
        if problems:
            self.problems.append((f"grpc {call[0]} request bytes {call[1]!r}", problems))


def family(strategy: st.SearchStrategy[Any], send: Callable[[Any], None], examples: int, chunk_seed: int) -> None:
    @seed(chunk_seed)
    @settings(max_examples=examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(value=strategy)
    def run(value: Any) -> None:
        send(value)

    run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=600.0, help="stop drawing new chunks after this long")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    tally = Tally()
    readyz: list[float] = []
    with tempfile.TemporaryDirectory(prefix="capstan-fuzz-") as scratch, running(Path(scratch)) as capstan:
        for path, obj in SEED_OBJECTS:
            capstan.seed("POST", path, obj)
        judge = Judge(capstan)
        families: list[tuple[str, st.SearchStrategy[Any], Callable[[Any], None]]] = [
            ("http bodies", body_requests(), lambda r: tally.http(judge, r)),
            ("http queries", query_requests(), lambda r: tally.http(judge, r)),
            ("http media types", header_requests(), lambda r: tally.http(judge, r)),
            ("grpc raw bytes", raw_calls(), lambda c: tally.grpc(judge, c)),
            ("grpc bent requests", mutated_calls(), lambda c: tally.grpc(judge, c)),
            ("grpc field values", field_calls(), lambda c: tally.grpc(judge, c)),
        ]
        per_family = max(1, args.examples // len(families))
        started = time.monotonic()
        deadline = started + args.seconds
        for index in range(0, per_family, CHUNK):
            if time.monotonic() > deadline:
                note("out of time: stopping")
                break
            for number, (name, strategy, send) in enumerate(families):
                note(f"{name}: examples {index}..{min(per_family, index + CHUNK)} ({tally.sent} sent)")
                family(strategy, send, min(CHUNK, per_family - index), args.seed * 1_000_003 + index * 7 + number)
                readyz.append(capstan.ready_within(5.0) * 1e3)
        wall = time.monotonic() - started
    for label, counts in (("by status", tally.codes), ("by endpoint", tally.endpoints)):
        print(f"# answers {label}")
        for key, count in sorted(counts.items()):
            print(f"{count:8d}  {key}")
    for reproducer, problems in tally.problems:
        print(f"# PROBLEM {problems}\n  {reproducer}")
    emit("fuzz", "capstan", "problems", len(tally.problems), at_most(0, ""), examples=tally.sent,
         seconds=round(wall, 1), per_s=round(tally.sent / wall))
    emit("fuzz-readyz", "capstan", "readyz_max_ms", max(readyz, default=0.0), context("after each chunk"),
         checks=len(readyz))
    return 1 if tally.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
