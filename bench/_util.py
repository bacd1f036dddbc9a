"""Helpers the benchmarks share: goals, one JSON line per figure, timings, memory readings, a worker pool.

Every benchmark prints the same shape so runs can be diffed and graphed: one JSON object
per line naming the op, the implementation and one headline figure, with the goal beside
it and whether it was met, e.g.

    {"op": "create", "impl": "capstan", "metric": "writes_per_s", "writes_per_s": 12345.6,
     "goal": ">=10000/s", "ok": true, "count": 20000, ...}

`metric` names the key the goal applies to; the other keys are context (sizes, batch).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Goal:
    """A target for one figure: `figure <op> bound`, shown as `text`."""

    text: str
    bound: float
    compare: Callable[[float, float], bool]

    def met(self, figure: float) -> bool:
        return self.compare(figure, self.bound)


def at_least(bound: float, unit: str) -> Goal:
    return Goal(f">={bound:g}{unit}", bound, operator.ge)


def at_most(bound: float, unit: str) -> Goal:
    return Goal(f"<={bound:g}{unit}", bound, operator.le)


def below(bound: float, unit: str) -> Goal:
    return Goal(f"<{bound:g}{unit}", bound, operator.lt)


def context(label: str) -> Goal:
    """No target: a figure printed beside the others for comparison (a ceiling, say); always met."""
    return Goal(f"({label})", 0.0, operator.ge)


CEILING = context("ceiling")


def emit(
    op: str, impl: str, metric: str, figure: float, goal: Goal, *, correct: bool = True, **context: Any
) -> bool:
    """Print one figure as a JSON line (flushed, so a long run shows progress); True if met.

    correct=False marks a run whose result was wrong (say, events lost): never ok, however fast.
    """
    ok = correct and goal.met(figure)
    line = {"op": op, "impl": impl, "metric": metric, metric: round(figure, 3), "goal": goal.text, "ok": ok}
    line.update(context)
    print(json.dumps(line), flush=True)
    return ok


def note(message: str) -> None:
    """Progress for a human watching; stderr so stdout stays pure JSON lines."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def max_rss_mb() -> float:
    """This process's peak resident set so far, in MiB; file-backed mmap pages count."""
    return _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def process_usage() -> tuple[float, int]:
    """This process's CPU seconds (user and system, every thread) and page faults so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_minflt + usage.ru_majflt


def rss_mb() -> float:
    """This process's resident set now, in MiB (0 where /proc is missing)."""
    return _status_mb("VmRSS")


def _status_mb(field: str) -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024  # reported in kB
    except OSError:
        pass
    return 0.0


class Timings:
    """Samples of one operation: wall time, this thread's CPU time (near the wall time unless
    the machine is busy) and the process's minor page faults (memory the allocator gave back
    to the OS and must fault in again: on a VM, microseconds a page)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.faults: list[int] = []

    @staticmethod
    def start() -> tuple[float, float, int]:
        return time.perf_counter(), time.thread_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def stop(self, started: tuple[float, float, int]) -> None:
        self.wall.append(time.perf_counter() - started[0])
        self.cpu.append(time.thread_time() - started[1])
        self.faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - started[2])

    def median_ms(self) -> float:
        return statistics.median(self.wall) * 1e3

    def ms_figures(self) -> dict[str, Any]:
        """Context for a per-operation figure: spread, median CPU ms, median page faults."""
        return {"min_ms": round(min(self.wall) * 1e3, 3), "max_ms": round(max(self.wall) * 1e3, 3),
                "cpu_ms": round(statistics.median(self.cpu) * 1e3, 3),
                "page_faults": statistics.median(self.faults)}

    def rate(self, per_sample: int) -> tuple[float, dict[str, Any]]:
        """The median rate over samples of `per_sample` operations each, and its spread."""
        rates = sorted(per_sample / s for s in self.wall)
        return statistics.median(rates), {"rounds": len(rates), "worst_per_s": round(rates[0]),
                                          "best_per_s": round(rates[-1])}


async def run_workers(count: int, workers: int, job: Callable[[int], Awaitable[None]]) -> None:
    """Run job(0) .. job(count - 1) on `workers` concurrent coroutines, each awaiting its job
    before taking the next index: `workers` requests are in flight at all times, as with
    that many clients."""
    indexes = iter(range(count))

    async def worker() -> None:
        for i in indexes:  # shared iterator: each index goes to exactly one worker
            await job(i)

    await asyncio.gather(*(worker() for _ in range(min(workers, count))))


def run_workloads(
    names: str, workloads: Mapping[str, Callable[[Path, S], Coroutine[Any, Any, None]]], sizes: S, *, prefix: str
) -> int:
    """Run the comma-separated workloads (in the order given, once each), each in its own scratch
    directory and event loop; a failing one is reported and the rest still run. The exit status.
    The scratch directory is removed however the run ends, SIGTERM included (it exits 143): a workload it
    stops is cancelled, so that its own cleanup runs (its stores closed, their threads joined) first."""
    failed = []
    exit_on_sigterm()
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        for name in dict.fromkeys(names.split(",")):
            note(f"{name} ...")
            (root / name).mkdir()
            try:
                if _run_stoppable(workloads[name](root / name, sizes)):
                    raise SystemExit(TERMINATED)
            except Exception:
                traceback.print_exc()
                failed.append(name)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failed:
        note(f"failed: {','.join(failed)}")
    return 1 if failed else 0


TERMINATED = 143  # a shell's status for a process SIGTERM ended


def exit_on_sigterm() -> None:
    """SIGTERM (a CI timeout, `kill`) ends this process with status 143 by raising SystemExit, so that `finally`
    blocks run: the servers a benchmark started are stopped and its scratch directories removed."""
    signal.signal(signal.SIGTERM, _exit_terminated)


def _exit_terminated(*_: object) -> None:
    sys.exit(TERMINATED)


def _run_stoppable(workload: Coroutine[Any, Any, None]) -> bool:
    """Run `workload` on a new event loop until it ends, or until SIGTERM cancels it (True); the SIGTERM
    handler outside the loop exits at once."""
    stopped = False

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None

        def stop() -> None:
            nonlocal stopped
            stopped = True
            task.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        await workload

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if not stopped:
            raise
    finally:
        exit_on_sigterm()  # the closed loop left SIGTERM's default
    return stopped


def check_choices(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  **known: Sequence[str]) -> None:
    """Refuse, with the parser's usage error, a comma-separated flag (e.g. --only, --impls) naming values that
    are not among its `known` ones."""
    for flag, values in known.items():
        unknown = set(getattr(args, flag).split(",")) - set(values)
        if unknown:
            parser.error(f"unknown --{flag} {sorted(unknown)}; choose from {','.join(values)}")
