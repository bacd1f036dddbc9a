"""Which event loop a serving process runs its command on.

uvloop (libuv's loop, with its own TLS transport) when it is installed, which the package's dependencies make
the case on Linux and macOS: the event loop and the TLS transport are a large share of the CPU every request
costs on asyncio's own loop (docs/performance.md, bench.profile). `CAPSTAN_EVENT_LOOP=asyncio` runs asyncio's
own loop instead, for comparison or where uvloop misbehaves; any other value, or none, asks for uvloop and falls
back to asyncio's loop where uvloop cannot be imported (Windows, or an install without it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

CHOICE = "CAPSTAN_EVENT_LOOP"


def factory(environ: Mapping[str, str] = os.environ) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The loop factory the environment asks for, or None for asyncio's own loop."""
    if environ.get(CHOICE, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def name(environ: Mapping[str, str] = os.environ) -> str:
    """The loop `run` uses, as the start-up log names it."""
    return "asyncio" if factory(environ) is None else "uvloop"


def run(main: Coroutine[Any, Any, T], environ: Mapping[str, str] = os.environ) -> T:
    """asyncio.run on the loop the environment asks for."""
    with asyncio.Runner(loop_factory=factory(environ)) as runner:
        return runner.run(main)
