"""What a request costs in machine instructions: `capstan serve` as users run it (HTTPS, a bearer token, RBAC)
under valgrind's callgrind, driven verb by verb from this process, instructions per request and where they run.

    python -m bench.instructions [--quick] [--only create,get,update,list] [--compare TREE] [--requests N]

CPU time on a shared machine moves with whatever else runs (the same figure by ±40% between runs here); an
instruction count does not: callgrind counts every instruction the server executes, the same for the same code
and requests whatever the other cores do. So this is the benchmark to tell whether a change made a request
cheaper by a few per cent; the time it takes is bench.http's and bench.profile's to say. Instructions are not
time (a cache miss or a system call costs more than its instructions, and the kernel's work is not counted), and
callgrind runs the server ~50 times slower, so rates mean nothing here.

Each tree (this checkout, and each --compare TREE) serves in its own process (`--workers 1`: one process holds
all the server's work; CPython's allocator, as valgrind would not follow jemalloc's exec; no leader election,
whose Lease renewals come with wall time, not requests; a fixed hash seed) under `valgrind
--tool=callgrind --instr-atstart=no`, from TREE's code on this interpreter. The client (aiohttp, HTTP/1.1
keep-alive, WORKERS concurrent workers, 1 KiB ConfigMaps in `default`, bench.profile's jobs and token) creates
the objects to read, warms each verb up, then switches counting on (callgrind_control -i on), sends the verb's
requests, switches it off and dumps: the dump holds those requests' instructions alone, TLS included (one
session, so no handshake is counted). `split` says where they ran, by shared object (callgrind_annotate):
`interpreter` is CPython executing Python code (and its objects, dicts and allocator), the rest is C that
Python calls.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import aiohttp

from bench import _admission as admission
from bench._processes import Children, with_children
from bench._util import check_choices, context, emit, exit_on_sigterm, note
from bench.profile import HERE, JOBS, LISTENING, SERVICE_IP, Server, create_job, prepare, run_round
from capstan.cli import pki

OPS = ("create", "get", "update", "list")
T = TypeVar("T")
WORKERS = 4
START_TIMEOUT = 300.0  # seconds for a server under callgrind to say it listens
# Runs `capstan serve` from the tree given first, as its console script does, on this interpreter.
LAUNCH = ("import sys; sys.path[0] = sys.argv[1]; sys.argv = ['capstan', *sys.argv[2:]]; "
          "from capstan.cli.launch import main; main()")
# Shared objects, by a fragment of their path, to the part of the server they are; the first match wins.
PARTS = (
    ("interpreter", "libpython"),
    ("interpreter", "inline"),  # CPython's inlined helpers: callgrind names no object for them
    ("OpenSSL", "libcrypto"),
    ("OpenSSL", "libssl"),
    ("OpenSSL", "/_ssl."),
    ("C library", "libc.so"),
    ("protobuf (upb)", "/google/_upb/"),
    ("orjson", "/orjson/"),
    ("aiohttp, multidict, yarl", "/aiohttp/"),
    ("aiohttp, multidict, yarl", "/multidict/"),
    ("aiohttp, multidict, yarl", "/yarl/"),
    ("aiohttp, multidict, yarl", "/propcache/"),
    ("uvloop", "/uvloop/"),
    ("LMDB", "/lmdb/"),
    ("zlib", "libz."),  # gzip of large answers
)
_ANNOTATED = re.compile(r"\s*([\d,]+) \([\s\d.]+%\)\s+(.*)")


@dataclass(frozen=True, slots=True)
class Sizes:
    objects: int  # ConfigMaps created before the verbs, to get, update and list
    count: int  # requests counted per verb
    lists: int  # LISTs counted


FULL = Sizes(objects=200, count=300, lists=20)
QUICK = Sizes(objects=12, count=12, lists=2)


def arguments(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The options of a benchmark that serves checkouts side by side and counts a verb's requests (this one's and
    bench.bytecodes')."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default="create,get,update", help="comma-separated verbs of "
                        f"{','.join(OPS)} (default create,get,update)")
    parser.add_argument("--compare", type=Path, action="append", default=[],
                        help="another checkout served the same way beside this one (before/after); repeatable")
    parser.add_argument("--requests", type=int, default=0, help="requests counted per verb (default 300)")
    return parser


def planned(args: argparse.Namespace) -> tuple[Sizes, list[str], dict[str, Path]]:
    """What `arguments`' options ask for: the sizes, the verbs in order, and the trees to serve by label."""
    sizes = QUICK if args.quick else FULL
    if args.requests:
        sizes = Sizes(sizes.objects, args.requests, sizes.lists)
    trees = {"this": HERE}
    for tree in args.compare:
        trees[tree.name] = tree.resolve()
    return sizes, [op for op in OPS if op in args.only.split(",")], trees


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = arguments("python -m bench.instructions", __doc__)
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS)
    return args


def serve_args(root: Path, certs: pki.CertDir, label: str) -> list[str]:
    """`capstan serve` as these counts run it: one process, HTTPS, bench.profile's static token. No leader
    election: its Lease renewals every 2 s of wall time (and a counted server's wall time follows the machine's
    load) would add their work to whichever requests were being counted."""
    token_file = admission.write_token_file(root / "tokens.csv")
    return ["serve", "--workers", "1", "--data-dir", str(root / f"data-{label}"), "--grpc-port", "0",
            "--cert-dir", str(certs.path), "--secure-port", "0", "--grpc-mtls-port", "0",
            "--token-auth-file", str(token_file), "--leader-elect", "false"]


def start(children: Children, root: Path, certs: pki.CertDir, label: str, tree: Path) -> Server:
    args = serve_args(root, certs, label)
    out = root / f"callgrind-{label}.out"
    child = children.start(label, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                           sys.executable, "-c", LAUNCH, str(tree), *args, program="valgrind")
    server = Server(label, child, out)
    server.base = child.listening(LISTENING, timeout=START_TIMEOUT)
    note(f"{label}: {server.base} pid {child.proc.pid} ({tree})")
    return server


def _control(server: Server, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(server.process.proc.pid)], check=True, capture_output=True,
                   timeout=120)


def _dump(server: Server) -> Path:
    """Dump what was counted since the last dump (callgrind then starts again from zero); the dump's file."""
    before = set(server.out.parent.glob(server.out.name + ".*"))
    _control(server, "-d")
    found = sorted(set(server.out.parent.glob(server.out.name + ".*")) - before)
    if not found:
        raise RuntimeError(f"{server.label}: callgrind wrote no dump")
    return found[-1]


def read_dump(path: Path) -> tuple[int, dict[str, int]]:
    """(instructions in all, instructions by part of the server) of one callgrind dump."""
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            total = int(line.split()[1])
    annotated = subprocess.run(["callgrind_annotate", "--threshold=100", str(path)], capture_output=True, text=True,
                               check=True, timeout=300).stdout
    parts: collections.Counter[str] = collections.Counter()
    for line in annotated.splitlines():
        found = _ANNOTATED.match(line)
        if found is None or "PROGRAM TOTALS" in line:
            continue
        count = int(found[1].replace(",", ""))
        obj = re.search(r"\[([^\]]+)\]\s*$", found[2])
        where = obj[1] if obj else "inline"
        parts[next((part for part, fragment in PARTS if fragment in where), "other C")] += count
    return total, dict(parts)


async def counted_rounds(servers: Sequence[Server], certs: pki.CertDir, ops: Sequence[str], sizes: Sizes,
                         begin: Callable[[Server], Awaitable[None]], end: Callable[[Server], Awaitable[T]]
                         ) -> dict[tuple[str, str], tuple[int, T]]:
    """Each verb's requests counted on each server: the objects created and the verb warmed up uncounted, then
    begin(server), the counted requests, and end(server)'s figures. (op, label) -> (requests counted, figures)."""
    verify = ssl.create_default_context(cafile=certs.ca_cert)
    out: dict[tuple[str, str], tuple[int, T]] = {}
    for server in servers:
        server.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=WORKERS, ssl=verify,
                                                                              keepalive_timeout=3600))
    try:
        for server in servers:
            await prepare(server, certs, False)
            _checked(server, "create", await run_round(server, create_job, sizes.objects, WORKERS))
        for op in ops:
            count = sizes.lists if op == "list" else sizes.count
            if op == "update":
                count = min(count, sizes.objects)  # one update per object, with its resourceVersion
            for server in servers:
                _checked(server, op, await run_round(server, JOBS[op], min(count, 20), WORKERS))  # warm-up
                await begin(server)
                result = await run_round(server, JOBS[op], count, WORKERS)
                figures = await end(server)
                _checked(server, op, result)
                out[op, server.label] = (count, figures)
            note(f"{op} done")
    finally:
        for server in servers:
            await server.http.close()
    return out


def _checked(server: Server, op: str, result: tuple[float, float, list[str]]) -> None:
    errors = result[2]
    if errors:
        raise RuntimeError(f"{server.label} {op}: {len(errors)} failed, the first: {errors[0]}")


async def measure(servers: Sequence[Server], certs: pki.CertDir, ops: Sequence[str],
                  sizes: Sizes) -> dict[tuple[str, str], tuple[int, int, dict[str, int]]]:
    """(op, label) -> (requests counted, instructions, instructions by part)."""

    async def begin(server: Server) -> None:
        _control(server, "-i", "on")

    async def end(server: Server) -> tuple[int, dict[str, int]]:
        _control(server, "-i", "off")
        return read_dump(_dump(server))

    counted = await counted_rounds(servers, certs, ops, sizes, begin, end)
    return {key: (count, total, parts) for key, (count, (total, parts)) in counted.items()}


def report(results: dict[tuple[str, str], tuple[int, int, dict[str, int]]], labels: Sequence[str]) -> None:
    for (op, label), (count, total, parts) in results.items():
        emit(op, label, "instructions_per_req", round(total / count), context("instructions a request, callgrind"),
             requests=count, split={part: round(n / count) for part, n in sorted(parts.items(), key=lambda p: -p[1])})
    ops = list(dict.fromkeys(op for op, _ in results))
    lines = ["| verb | " + " | ".join(labels) + " |", "|---" * (1 + len(labels)) + "|"]
    for op in ops:
        base = results[op, labels[0]]
        cells = []
        for label in labels:
            count, total, _ = results[op, label]
            per = total / count
            cells.append(f"{per / 1000:,.1f}k" + ("" if label == labels[0] else
                                                  f" ({per / (base[1] / base[0]) - 1:+.1%})"))
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    note("instructions per request (thousands; beside the first):\n" + "\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        note("valgrind (callgrind) is not installed: apt install valgrind")
        return 1
    sizes, ops, trees = planned(args)
    os.environ["CAPSTAN_ALLOCATOR"] = "python"  # the servers' own: valgrind follows no exec under jemalloc
    os.environ["PYTHONHASHSEED"] = "0"  # the same dict and set layouts, so the same instructions, run after run

    def body(root: Path, children: Children) -> bool:
        certs = pki.ensure(root / "pki", bind_address="127.0.0.1", service_ip=SERVICE_IP)
        servers = [start(children, root, certs, label, tree) for label, tree in trees.items()]
        report(asyncio.run(measure(servers, certs, ops, sizes)), list(trees))
        return True

    return with_children("capstan-bench-instructions-", body)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
