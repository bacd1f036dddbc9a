"""A server process under a sampling profiler, for bench/profile.py: what each thread's CPU was spent in, by
stack, with little enough overhead (a few %) that the proportions are the unprofiled server's.

Run as a file (standard library only, so it can start a server from another checkout):

    python bench/_sampler.py TREE OUT capstan-args...

TREE is put first on sys.path and `capstan` is started from it as its console script starts it (the allocator's
exec, the imports with the collector off). Every millisecond of the process's CPU (ITIMER_PROF), the handler reads
each Python thread's CPU clock and charges what it used since the last sample to the stack the thread is in (the
interrupted frame for the main thread, sys._current_frames() for the others), so time a thread spent in C (TLS,
LMDB, orjson) goes to the Python frame that called it. The handler's own CPU is left out. SIGUSR1 writes what was
gathered since the last SIGUSR1 to OUT.<n> (n counting from 1) as JSON, {"stacks": [[frames, seconds], ...],
"overhead": seconds}, each frame "path:function", innermost first (a thread other than the main one ends
with "thread:<its name>"), and starts again.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

INTERVAL = 0.001  # seconds of process CPU between samples
DEPTH = 60  # frames kept per stack, innermost first


class Sampler:
    def __init__(self, out: str) -> None:
        self._out = out
        self._dumps = 0
        self._stacks: dict[tuple[str, ...], float] = {}
        self._last: dict[int, float] = {}
        self._clocks: dict[int, int] = {}
        self._overhead = 0.0
        self._names: dict[Any, str] = {}  # code object -> "path:function"

    def install(self) -> None:
        signal.signal(signal.SIGPROF, self._sample)
        signal.signal(signal.SIGUSR1, self._dump)
        signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
        atexit.register(signal.setitimer, signal.ITIMER_PROF, 0)  # before the interpreter resets the handlers

    def _clock(self, ident: int) -> int | None:
        clock = self._clocks.get(ident)
        if clock is None:
            try:
                clock = self._clocks[ident] = time.pthread_getcpuclockid(ident)
            except (OSError, ProcessLookupError):
                return None
        return clock

    def _stack(self, frame: FrameType | None) -> tuple[str, ...]:
        names = self._names
        out: list[str] = []
        while frame is not None and len(out) < DEPTH:
            code = frame.f_code
            name = names.get(code)
            if name is None:
                name = names[code] = f"{code.co_filename}:{code.co_name}"
            out.append(name)
            frame = frame.f_back
        return tuple(out)

    def _sample(self, signum: int, frame: FrameType | None) -> None:
        start = time.thread_time()
        main = threading.main_thread().ident
        others = None
        for thread in threading.enumerate():
            ident = thread.ident
            if ident is None:
                continue
            clock = self._clock(ident)
            if clock is None:
                continue
            try:
                now = time.clock_gettime(clock)
            except OSError:
                continue
            spent = now - self._last.get(ident, now)
            self._last[ident] = now
            if spent <= 0:
                continue
            if ident == main:
                stack = self._stack(frame)
            else:  # where it is now, which may be the wait after its work: its name says what it works for
                if others is None:
                    others = sys._current_frames()
                stack = (*self._stack(others.get(ident)), f"thread:{thread.name}")
            self._stacks[stack] = self._stacks.get(stack, 0.0) + spent
        end = time.thread_time()
        self._overhead += end - start
        if main is not None:
            clock = self._clock(main)
            if clock is not None:
                self._last[main] = time.clock_gettime(clock)  # the handler's own CPU is charged to nobody

    def _dump(self, signum: int, frame: FrameType | None) -> None:
        self._dumps += 1
        stacks, self._stacks = self._stacks, {}
        overhead, self._overhead = self._overhead, 0.0
        path = f"{self._out}.{self._dumps}"
        with open(path + ".tmp", "w") as out:
            json.dump({"stacks": [[list(s), t] for s, t in stacks.items()], "overhead": overhead}, out)
        os.replace(path + ".tmp", path)


def main() -> None:
    tree, out, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.path[0] = tree  # instead of this file's folder, whose modules (http.py) would shadow the standard library's
    sys.argv = ["capstan", *argv]
    try:
        from capstan.cli import allocator
    except ImportError:  # a checkout from before the allocator step
        pass
    else:
        allocator.start_again(argv)  # returns in the process started again (or at once without jemalloc)
    Sampler(out).install()
    gc.disable()
    try:
        from capstan.cli.commands import main as run
    except ImportError:  # a checkout whose command line is capstan/cli.py
        from capstan.cli import main as run  # type: ignore[attr-defined,no-redef]
    gc.freeze()
    run(argv)


if __name__ == "__main__":
    main()
