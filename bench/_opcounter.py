"""Counts the bytecodes a server's main thread executes, for bench.bytecodes; loaded into `capstan serve` by its
launch line, never imported by Capstan.

SIGUSR1 starts counting (sys.settrace with opcode events, in the main thread, from the next function call on);
SIGUSR2 stops and writes what was counted to `$CAPSTAN_BENCH_OPCODES.<n>` (n counting from 1) as JSON:
{"functions": [[file, function, bytecodes, calls], ...]}. A coroutine's resumption counts as a call, as
sys.settrace reports it. Other threads (the LMDB writer's) are not counted.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
from types import FrameType
from typing import Any

ENV = "CAPSTAN_BENCH_OPCODES"

_bytecodes: collections.Counter[tuple[str, str]] = collections.Counter()
_calls: collections.Counter[tuple[str, str]] = collections.Counter()
_dumps = 0


def _name(frame: FrameType) -> str:
    """A function's name; a generated method's (a dataclass's `__init__`, compiled from a string) with its
    class, so that each class's share shows."""
    code = frame.f_code
    if code.co_filename != "<string>" or not code.co_varnames:
        return code.co_name
    owner = frame.f_locals.get(code.co_varnames[0])
    return f"{type(owner).__name__}.{code.co_name}" if owner is not None else code.co_name


def _trace(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        _bytecodes[frame.f_code.co_filename, _name(frame)] += 1
    elif event == "call":
        frame.f_trace_opcodes = True
        _calls[frame.f_code.co_filename, _name(frame)] += 1
    return _trace


def _start(*_: object) -> None:
    _bytecodes.clear()
    _calls.clear()
    sys.settrace(_trace)


def _stop(*_: object) -> None:
    global _dumps
    sys.settrace(None)
    _dumps += 1
    rows = [[file, name, count, _calls[file, name]] for (file, name), count in _bytecodes.most_common()]
    path = f"{os.environ[ENV]}.{_dumps}"
    with open(path + ".tmp", "w") as out:
        json.dump({"functions": rows}, out)
    os.replace(path + ".tmp", path)


def install() -> None:
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
