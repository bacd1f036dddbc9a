"""A server under a loop-lag probe, for benchmarks only: `python -m bench._looplag OUT capstan-args...` runs
`capstan` (capstan.cli.commands.main) with a task on its event loop that asks to wake every PERIOD and records, each
time it does, how late it woke (the loop's lag: what a request waiting for its next step waits beyond its own
work) and how many callbacks were ready to run (the run queue's length), one `time lag_ms ready` line per
wake-up appended to OUT. It reads asyncio's private run queue, which is why it lives in bench/ and not in the
server. Each garbage collection's pause is recorded too (`gc time generation ms` lines): a collection holds
the interpreter, every thread's turn included.

It starts under the allocator `capstan serve` would (capstan/cli/allocator.py, CAPSTAN_ALLOCATOR). SIGUSR1
writes the
allocators' statistics (glibc's mallinfo2 before and after gc.collect() and malloc_trim(0), the objects gc
tracks, smaps_rollup) to OUT.objects and pymalloc's arenas (sys._debugmallocstats) to the server's stderr.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import signal
import sys
import time
from collections import Counter
from typing import Any

PERIOD = 0.005  # seconds between wake-ups asked for
FLUSH = 1.0  # seconds between writes to the file
START = 5.0  # seconds after the loop starts when BENCH_GC applies (the server has started by then)


async def _probe(path: str) -> None:
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, _trim, path)
    ready: Any = getattr(loop, "_ready", ())
    lines: list[str] = []
    flushed = time.monotonic()
    while True:
        asked = time.monotonic()
        await asyncio.sleep(PERIOD)
        woke = time.monotonic()
        lines.append(f"{time.time():.3f} {(woke - asked - PERIOD) * 1e3:.2f} {len(ready)}\n")
        if woke - flushed >= FLUSH:
            with open(path, "a") as out:
                out.writelines(lines)
                out.writelines(GC_PAUSES)
            lines.clear()
            GC_PAUSES.clear()
            flushed = woke


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo(libc: ctypes.CDLL) -> str:
    """glibc's heap: bytes in use, free in its heaps, and in chunks mapped alone (MiB)."""
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return (f"malloc: in use {info.uordblks / 2**20:.1f} MiB, free in heaps {info.fordblks / 2**20:.1f} MiB, "
            f"heaps {info.arena / 2**20:.1f} MiB, mapped alone {info.hblkhd / 2**20:.1f} MiB\n")


def _trim(path: str) -> None:
    libc = ctypes.CDLL("libc.so.6")
    before = _mallinfo(libc)
    gc.collect()
    libc.malloc_trim(0)
    kinds = Counter(type(o).__name__ for o in gc.get_objects())
    with open(path + ".objects", "a") as out:
        out.write(f"--- {time.time():.0f}\n")
        out.write(f"{sum(kinds.values())} objects tracked by gc; {sys.getallocatedblocks()} blocks\n")
        out.write("before trim: " + before + "after trim: " + _mallinfo(libc))
        out.writelines(f"{n} {name}\n" for name, n in kinds.most_common(25))
        with open("/proc/self/smaps_rollup") as smaps:
            out.write(smaps.read())
    sys._debugmallocstats()  # pymalloc's arenas and pools, to the server's log (its stderr)


_GC_STARTED = [0.0]
GC_PAUSES: list[str] = []  # `gc time generation ms` lines, written with the lag lines


def _gc_timer(phase: str, info: dict[str, int]) -> None:
    """gc.callbacks hook: how long each collection held the interpreter (and so every thread)."""
    if phase == "start":
        _GC_STARTED[0] = time.perf_counter()
    else:
        took = (time.perf_counter() - _GC_STARTED[0]) * 1e3
        GC_PAUSES.append(f"gc {time.time():.3f} {info['generation']} {took:.2f}\n")


class _Policy(asyncio.DefaultEventLoopPolicy):
    """Starts the probe on the first loop created in the main thread (the one asyncio.run makes for serve)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        self._started = False

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        if not self._started:
            self._started = True
            loop.call_soon(lambda: setattr(loop, "_lag_probe", loop.create_task(_probe(self._path))))
            loop.call_later(START, _tune_gc)
        return loop


def read(path: str, start: float, end: float) -> tuple[list[float], list[int]]:
    """The lags (ms) and run-queue lengths recorded between two wall-clock times."""
    lags: list[float] = []
    ready: list[int] = []
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith("gc "):
                    continue
                stamp, lag, length = line.split()
                if start <= float(stamp) <= end:
                    lags.append(float(lag))
                    ready.append(int(length))
    except FileNotFoundError:
        pass
    return lags, ready


def gc_pauses(path: str, start: float, end: float) -> dict[int, list[float]]:
    """The collections' pauses (ms) by generation between two wall-clock times."""
    out: dict[int, list[float]] = {0: [], 1: [], 2: []}
    try:
        with open(path) as lines:
            for line in lines:
                if line.startswith("gc "):
                    _, stamp, generation, took = line.split()
                    if start <= float(stamp) <= end:
                        out[int(generation)].append(float(took))
    except FileNotFoundError:
        pass
    return out


def _tune_gc() -> None:
    """BENCH_GC="freeze,T0,T1,T2": gc.freeze() once started, then those thresholds (an experiment's knob)."""
    asked = os.environ.get("BENCH_GC")
    if asked:
        gc.freeze()
        gc.set_threshold(*(int(n) for n in asked.split(",")[1:]))


def main() -> None:
    path, *args = sys.argv[1:]
    from capstan.cli.allocator import start_again

    start_again(args)  # the allocator `capstan serve` runs under (CAPSTAN_ALLOCATOR)
    asyncio.set_event_loop_policy(_Policy(path))
    gc.callbacks.append(_gc_timer)
    from capstan.cli.commands import main as capstan_main

    capstan_main(args)


if __name__ == "__main__":
    main()
