"""The allocator the serving commands run under: one that returns memory.

CPython's own small-object allocator (pymalloc) keeps every 1 MiB arena in which one object still lives, and a
server's load leaves a few long-lived objects in most of the arenas its peak needed: after 2,000 clients and
2,000 watchers had left, `capstan serve` held 60 more arenas than before for the same live bytes, and its RSS
stayed near its peak (docs/performance.md, "Memory after load"). jemalloc, with its background thread, hands
freed pages back to the kernel within seconds, at no cost in throughput measured here. So `serve`, `core` and
`gateway` start again, once, through exec (same process id, same arguments) with jemalloc preloaded and
Python allocating through it (PYTHONMALLOC=malloc), when jemalloc is installed (Debian: libjemalloc2).

CAPSTAN_ALLOCATOR chooses: `auto` (the default: jemalloc if installed, else CPython's), `jemalloc` (fail if it
is not installed), `python` (CPython's own). A PYTHONMALLOC already set means the operator chose: nothing is
changed. This module imports only the standard library and runs before the server's modules are imported, so
starting again costs one interpreter start (~30 ms), not the server's imports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence

# the long-running commands; the others exit at once
SERVING = frozenset({"serve", "core", "gateway", "kube-apiserver"})
ENV = "CAPSTAN_ALLOCATOR"
JEMALLOC_CONF = "background_thread:true"  # purge freed pages from a thread of its own, idle or not
LIBRARY = "libjemalloc.so.2"  # jemalloc 5's soname (Debian/Ubuntu libjemalloc2, Fedora jemalloc, Alpine)


def find_jemalloc() -> str | None:
    """jemalloc's library in the system's library directories, or None (and None off Linux: LD_PRELOAD is
    the Linux loader's). Looked up by path, not with ctypes.util.find_library, which may run a compiler."""
    if not sys.platform.startswith("linux"):
        return None
    arch = getattr(sys.implementation, "_multiarch", "")
    dirs = (f"/usr/lib/{arch}", f"/lib/{arch}", "/usr/lib64", "/usr/lib", "/lib64", "/lib", "/usr/local/lib")
    return next((path for path in (os.path.join(d, LIBRARY) for d in dirs) if os.path.exists(path)), None)


class AllocatorError(Exception):
    """CAPSTAN_ALLOCATOR asks for what this machine does not have."""


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named on a command line (its first word that is not an option)."""
    return next((word for word in argv if not word.startswith("-")), None)


def plan(argv: Sequence[str], environ: Mapping[str, str],
         find: Callable[[], str | None] = find_jemalloc) -> dict[str, str] | None:
    """The environment to start again with, or None to go on as this process is.

    Raises AllocatorError for CAPSTAN_ALLOCATOR=jemalloc without jemalloc, or an unknown value."""
    wanted = environ.get(ENV, "auto")
    if wanted not in ("auto", "jemalloc", "python"):
        raise AllocatorError(f"{ENV}={wanted!r}: expected auto, jemalloc or python")
    if wanted == "python" or command_of(argv) not in SERVING or "PYTHONMALLOC" in environ:
        return None
    library = find()
    if library is None:
        if wanted == "jemalloc":
            raise AllocatorError(f"{ENV}=jemalloc: no jemalloc library is installed (Debian: libjemalloc2)")
        return None
    preload = environ.get("LD_PRELOAD", "")
    return {**environ, "PYTHONMALLOC": "malloc", "LD_PRELOAD": f"{library} {preload}".strip(),
            "MALLOC_CONF": environ.get("MALLOC_CONF", JEMALLOC_CONF)}


def describe(environ: Mapping[str, str]) -> str:
    """Which allocator this process runs under, for its log."""
    malloc = environ.get("PYTHONMALLOC")
    if malloc is None:
        return "CPython's own (pymalloc; install jemalloc to return memory after load)"
    preload = environ.get("LD_PRELOAD", "")
    if malloc == "malloc" and "jemalloc" in preload:
        return f"jemalloc ({preload.split()[0]}, MALLOC_CONF={environ.get('MALLOC_CONF', '')})"
    return f"PYTHONMALLOC={malloc}" + (f", LD_PRELOAD={preload}" if preload else "")


def planned(argv: Sequence[str]) -> dict[str, str] | None:
    """plan() for this process; an unknown or unavailable CAPSTAN_ALLOCATOR exits 2 with its reason."""
    try:
        return plan(argv, os.environ)
    except AllocatorError as err:
        print(f"capstan: {err}", file=sys.stderr)
        sys.exit(2)


def start_again(argv: Sequence[str]) -> None:
    """exec this interpreter with its own command line under plan()'s environment; returns if there is none.

    `argv` is the command's arguments (to read the subcommand); sys.orig_argv, the interpreter's own command
    line, is what runs again, so `python -m capstan`, the console script and wrappers all start as they did."""
    start_again_under(planned(argv))


def start_again_under(environ: Mapping[str, str] | None) -> None:
    """start_again with an environment planned() gave already; returns at once for None."""
    if environ is None or not sys.executable or len(sys.orig_argv) < 2:
        return  # nothing to do, or no command line to run again (an embedded interpreter)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environ)
    except OSError as err:  # this process goes on, as CPython's allocator serves it
        print(f"capstan: could not start under jemalloc ({err}); going on with CPython's allocator",
              file=sys.stderr)
