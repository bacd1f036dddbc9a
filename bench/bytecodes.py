"""What a request runs in Python: the bytecodes `capstan serve` executes per request, by part of the server and
by function. The most of a request's CPU is the interpreter running Python (bench.instructions), so this is where
its length shows, exactly and quickly.

    python -m bench.bytecodes [--quick] [--only create,get,update,list] [--compare TREE] [--requests N] [--top N]

Each tree (this checkout, and each --compare TREE) serves in its own process as bench.instructions serves it
(`--workers 1`, HTTPS with the generated cert dir, bench.profile's static token bound by a Role, RBAC,
admission, limits and fair queuing, no leader election, CPython's allocator, a fixed hash seed), from TREE's
code on this interpreter, with bench/_opcounter.py loaded: between SIGUSR1 and SIGUSR2 it counts every bytecode
the main thread executes (sys.settrace's opcode events), by function. The client creates the objects to read,
warms each verb up, then counts its requests (WORKERS at a time over one TLS session each). Counting is the same
whatever else the machine runs; it slows the server many times over, so rates mean nothing here. The LMDB
writer thread's Python (a batch's transaction) is not counted, nor is any C: bench.instructions counts those.

Each verb's line gives bytecodes and Python calls a request (a coroutine's resumption counts as a call), the
split by part (aiohttp and its libraries, gateway/, server/, storage/, capstan/, the standard library, other),
and the functions with the most.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import signal
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import instructions
from bench._processes import Children, with_children
from bench._util import check_choices, context, emit, exit_on_sigterm, note
from bench.instructions import OPS, Sizes
from bench.profile import LISTENING, SERVICE_IP, Server
from capstan.cli import pki

WORKERS = 4
COUNTER = Path(__file__).resolve().parent / "_opcounter.py"
ENV = "CAPSTAN_BENCH_OPCODES"  # bench/_opcounter.py's
# Runs `capstan serve` from the tree given first with the counter installed, as its console script would run.
LAUNCH = ("import sys, runpy; counter = runpy.run_path(sys.argv[2]); counter['install'](); "
          "sys.path[0] = sys.argv[1]; sys.argv = ['capstan', *sys.argv[3:]]; "
          "from capstan.cli.launch import main; main()")
STDLIB = sysconfig.get_paths()["stdlib"]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = instructions.arguments("python -m bench.bytecodes", __doc__)
    parser.add_argument("--top", type=int, default=15, help="functions listed per verb (default 15)")
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS)
    return args


def part_of(file: str, tree: Path) -> str:
    """The part of the server a function's file belongs to."""
    if "/site-packages/" in file:
        library = file.split("/site-packages/", 1)[1].split("/", 1)[0]
        return "aiohttp, multidict, yarl" if library in ("aiohttp", "multidict", "yarl", "propcache") else library
    for top in ("gateway", "server", "storage", "capstan"):
        if file.startswith(f"{tree}/{top}/"):
            return f"{top}/"
    if file.startswith(STDLIB):
        return "standard library"
    return "other"


def start(children: Children, root: Path, certs: pki.CertDir, label: str, tree: Path) -> Server:
    args = instructions.serve_args(root, certs, label)
    out = root / f"opcodes-{label}"
    os.environ[ENV] = str(out)
    child = children.start(label, "-c", LAUNCH, str(tree), str(COUNTER), *args)
    server = Server(label, child, out)
    server.base = child.listening(LISTENING)
    note(f"{label}: {server.base} pid {child.proc.pid} ({tree})")
    return server


async def counted(server: Server) -> list[tuple[str, str, int, int]]:
    """What the counter counted since SIGUSR1: (file, function, bytecodes, calls) rows."""
    found = await server.dumped(signal.SIGUSR2, "the counter", 60)
    return [tuple(row) for row in found["functions"]]


async def measure(servers: Sequence[Server], certs: pki.CertDir, ops: Sequence[str],
                  sizes: Sizes) -> dict[tuple[str, str], tuple[int, list[tuple[str, str, int, int]]]]:
    """(op, label) -> (requests counted, the counter's rows)."""

    async def begin(server: Server) -> None:
        server.process.proc.send_signal(signal.SIGUSR1)
        await asyncio.sleep(0.05)  # the handler runs between two bytecodes of the serving thread

    return await instructions.counted_rounds(servers, certs, ops, sizes, begin, counted)


def _short(file: str, tree: Path) -> str:
    if "/site-packages/" in file:
        return file.split("/site-packages/", 1)[1]
    if file.startswith(f"{tree}/"):
        return file[len(str(tree)) + 1:]
    if file.startswith(STDLIB):
        return file[len(STDLIB) + 1:]
    return file


def report(results: dict[tuple[str, str], tuple[int, list[tuple[str, str, int, int]]]], trees: dict[str, Path],
           top: int) -> None:
    for (op, label), (count, rows) in results.items():
        tree = trees[label]
        parts: collections.Counter[str] = collections.Counter()
        for file, _, bytecodes, _ in rows:
            parts[part_of(file, tree)] += bytecodes
        total = sum(row[2] for row in rows)
        calls = sum(row[3] for row in rows)
        functions: list[dict[str, Any]] = [
            {"function": f"{_short(file, tree)}:{name}", "bytecodes": round(bytecodes / count, 1),
             "calls": round(called / count, 2)} for file, name, bytecodes, called in rows[:top]]
        emit(op, label, "bytecodes_per_req", round(total / count), context("bytecodes a request, main thread"),
             requests=count, calls_per_req=round(calls / count, 1),
             split={part: round(n / count) for part, n in parts.most_common()}, functions=functions)
    labels = list(trees)
    ops = list(dict.fromkeys(op for op, _ in results))
    lines = ["| verb | " + " | ".join(labels) + " |", "|---" * (1 + len(labels)) + "|"]
    for op in ops:
        base_count, base_rows = results[op, labels[0]]
        base = sum(row[2] for row in base_rows) / base_count
        cells = []
        for label in labels:
            count, rows = results[op, label]
            per = sum(row[2] for row in rows) / count
            cells.append(f"{per:,.0f}" + ("" if label == labels[0] else f" ({per / base - 1:+.1%})"))
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    note("bytecodes per request (beside the first):\n" + "\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    sizes, ops, trees = instructions.planned(args)
    os.environ["CAPSTAN_ALLOCATOR"] = "python"  # one process: no exec under jemalloc to lose the counter in
    os.environ["PYTHONHASHSEED"] = "0"  # the same dict and set layouts, run after run

    def body(root: Path, children: Children) -> bool:
        certs = pki.ensure(root / "pki", bind_address="127.0.0.1", service_ip=SERVICE_IP)
        servers = [start(children, root, certs, label, tree) for label, tree in trees.items()]
        report(asyncio.run(measure(servers, certs, ops, sizes)), trees, args.top)
        return True

    return with_children("capstan-bench-bytecodes-", body)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
