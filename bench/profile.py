"""Where a request's server CPU goes, stage by stage: `capstan serve` as users run it (HTTPS, a bearer token,
RBAC, audit on) under a sampling profiler, driven verb by verb from this process, every stage's µs per request.

    python -m bench.profile [--quick] [--only create,get,update,list] [--compare TREE] [--audit on|off]

The server runs in its own process under bench/_sampler.py (every millisecond of its CPU charged, thread by
thread, to the stack that used it); this process is the client (aiohttp, HTTP/1.1 keep-alive, WORKERS concurrent
workers, 1 KiB ConfigMaps in `default`, a static token bound by a Role allowing what the verbs do). For each verb
the sampler is reset, COUNT requests are sent, and what it gathered is attributed to stages: each stack is read
from its innermost frame outwards and belongs to the first frame a STAGES rule names (frames of helpers no rule
names, say the codec or the standard library, take their caller's stage). The stage's share of the sampled CPU
times the server's CPU per request from /proc gives its µs per request; what the process spent outside any
Python thread the sampler sees (grpc's threads, jemalloc's) is the `unseen` row.

`--compare TREE` runs a second server from another checkout (before/after), the rounds alternating between the
two, and prints both tables and the difference per stage. Output: one JSON line per (verb, server) with the
stages, then the table on stderr. CPU per request is read from /proc and is steady on a shared machine where
rates are not; the stages' shares come from ~1 sample per ms of server CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench import _admission as admission
from bench._processes import Child, Children, with_children
from bench._util import check_choices, context, emit, exit_on_sigterm, note
from bench.http import CONFIGMAPS, JSON, config_map, failure
from capstan.cli import pki
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE, Allocator

OPS = ("create", "get", "update", "list")
WORKERS = 16
LIST_LIMIT = 500  # a LIST as client-go pages it
HERE = Path(__file__).resolve().parent.parent
SAMPLER = Path(__file__).resolve().parent / "_sampler.py"
SERVICE_IP = Allocator(DEFAULT_SERVICE_CLUSTER_IP_RANGE).first_ip
LISTENING = re.compile(r"capstan serving: HTTPS? (https?://\S+)")
RBAC = "rbac.authorization.k8s.io"
AUDIT_POLICY = b"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""

# (stage, path fragment, functions or None for every function of the file). A stack belongs to the first rule
# its innermost frame matching any rule matches; "-" rules name helpers that take their caller's stage.
Rule = tuple[str, str, frozenset[str] | None]
STAGES: tuple[Rule, ...] = (
    ("-", "/server/kinds/shaped.py", None),  # typing a body against its kind's shape: the caller's (decoding)
    ("compression", "/aiohttp/compression_utils.py", None),
    ("compression", "thread:asyncio_", None),  # the loop's default executor: aiohttp compresses large answers there
    ("compression", "thread:ThreadPoolExecutor", None),
    ("storage", "thread:capstan-lmdb-writer", None),
    ("TLS", "/asyncio/sslproto.py", None),
    ("TLS", "/ssl.py", None),
    ("limits", "/server/machinery/limits/", None),
    ("limits", "/gateway/limits.py", None),
    ("limits", "/gateway/parking.py", None),
    ("limits", "/gateway/connections.py", None),
    ("authentication", "/server/auth/authn/", None),
    ("authentication", "/server/auth/serviceaccounts/", None),
    ("authentication", "/gateway/credentials.py", None),
    ("authentication", "/server/auth/impersonation.py", None),
    ("authorization", "/server/auth/rbac/", None),
    ("authorization", "/server/auth/authorizer.py", None),
    ("authorization", "/server/auth/attributes.py", None),
    ("audit", "/server/auth/audit/", None),
    ("guard", "/server/auth/", None),
    ("admission", "/server/admission/", None),
    ("admission", "/server/objects/admitting.py", None),
    ("managed fields", "/server/machinery/fields/", None),
    ("managed fields", "/server/objects/managed.py", None),
    ("decoding", "/server/objects/body.py", None),
    ("decoding", "/gateway/handlers/request.py", None),
    ("strategy", "/server/kinds/", None),
    ("strategy", "/server/registry/strategy.py", None),
    ("strategy", "/server/objects/validate.py", None),
    ("strategy", "/server/machinery/validation/", None),
    ("strategy", "/server/objects/create.py", frozenset({"prepare_for_create", "place_namespace"})),
    ("strategy", "/server/objects/namespaces.py", None),
    ("watch fan-out", "/storage/broadcast.py", None),
    ("watch fan-out", "/storage/watch.py", None),
    ("watch fan-out", "/storage/lmdb/peers.py", None),
    ("watch fan-out", "/server/objects/watch.py", None),
    ("watch fan-out", "/server/objects/watchcache.py", None),
    ("watch fan-out", "/server/runtime/", None),
    ("watch fan-out", "/server/controllers/", None),
    ("storage", "/storage/", None),
    ("storage", "/server/objects/storeerrors.py", None),
    ("storage", "/server/objects/keygate.py", None),
    ("encoding", "/server/objects/render.py", None),
    ("encoding", "/server/objects/conversion.py", None),
    ("encoding", "/gateway/codecs/", None),
    ("encoding", "/gateway/handlers/respond.py", None),
    ("encoding", "/gateway/handlers/paging.py", None),
    ("core verb", "/server/objects/", None),
    ("core verb", "/server/service/", None),
    ("core verb", "/capstan/cli/inprocess.py", None),
    ("gateway", "/gateway/", None),
    ("HTTP (aiohttp)", "/aiohttp/", None),
    ("HTTP (aiohttp)", "/multidict/", None),
    ("HTTP (aiohttp)", "/yarl/", None),
    ("event loop", "/asyncio/", None),
    ("event loop", "/selectors.py", None),
    ("logging", "/logging/", None),
)
ORDER = ("TLS", "HTTP (aiohttp)", "limits", "authentication", "authorization", "guard", "audit", "gateway",
         "decoding", "strategy", "admission", "managed fields", "storage", "encoding", "compression", "core verb",
         "watch fan-out", "event loop", "logging", "other", "unseen")


@dataclass(frozen=True, slots=True)
class Sizes:
    count: int  # requests per verb per round
    lists: int  # LISTs per round
    rounds: int
    warmup: int


FULL = Sizes(count=2_000, lists=40, rounds=3, warmup=300)
QUICK = Sizes(count=60, lists=4, rounds=1, warmup=20)


def stage_of(stack: Sequence[str], memo: dict[str, str | None]) -> tuple[str, str]:
    """The stage of one stack and the frame that decided it, innermost frame first ("other" and the innermost
    frame when no frame matches a rule)."""
    for frame in stack:
        stage = memo.get(frame, "")
        if stage == "":
            stage = memo[frame] = _rule(frame)
        if stage is not None and stage != "-":
            return stage, frame
    return "other", stack[0] if stack else ""


def _rule(frame: str) -> str | None:
    function = frame.rpartition(":")[2]
    for stage, fragment, functions in STAGES:
        if fragment in frame and (functions is None or function in functions):
            return stage
    return None


@dataclass
class Server:
    """One server under the sampler: its process, the file prefix its samples go to, and how many it wrote."""

    label: str
    process: Child
    out: Path
    base: str = ""
    dumps: int = 0
    session: aiohttp.ClientSession | None = None
    created: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    auth: dict[str, str] = field(default_factory=dict)  # the bench token's header (none for --insecure)

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    async def samples(self) -> dict[str, Any]:
        """What the sampler gathered since the last call (SIGUSR1, then its file)."""
        return await self.dumped(signal.SIGUSR1, "the sampler", 10)

    async def dumped(self, signum: int, what: str, timeout: float) -> dict[str, Any]:
        """The JSON the server's `what` writes to <out>.<n> (n counting from 1) when sent `signum`; removed once
        read."""
        self.dumps += 1
        self.process.proc.send_signal(signum)
        path = Path(f"{self.out}.{self.dumps}")
        deadline = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: {what} wrote nothing")
            await asyncio.sleep(0.01)
        found: dict[str, Any] = orjson.loads(path.read_bytes())
        path.unlink()
        return found


@dataclass
class Figures:
    cpu_s: float = 0.0  # server CPU from /proc over the rounds
    requests: int = 0
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # sampled seconds per stage
    frames: dict[tuple[str, str], float] = field(default_factory=dict)  # sampled seconds per (stage, frame)
    overhead: float = 0.0
    cpu_rounds: list[float] = field(default_factory=list)

    def add(self, samples: dict[str, Any], memo: dict[str, str | None]) -> None:
        self.overhead += samples["overhead"]
        for stack, seconds in samples["stacks"]:
            stage, frame = stage_of(stack, memo)
            self.stages[stage] = self.stages.get(stage, 0.0) + seconds
            self.frames[stage, frame] = self.frames.get((stage, frame), 0.0) + seconds

    def top_frames(self, stage: str, count: int) -> list[tuple[str, float]]:
        """The frames that decided most of a stage's samples, with their µs per request."""
        sampled = sum(self.stages.values())
        scale = self.cpu_s / sampled / self.requests * 1e6 if sampled else 0.0
        found = sorted(((f, s) for (st, f), s in self.frames.items() if st == stage), key=lambda fs: -fs[1])
        return [(frame.replace(str(HERE), ""), round(s * scale, 1)) for frame, s in found[:count]]

    def per_request_us(self) -> dict[str, float]:
        """Each stage's µs per request: its share of the sampled CPU times /proc's CPU, `unseen` the rest."""
        sampled = sum(self.stages.values())
        total_us = self.cpu_s / self.requests * 1e6
        seen_us = min(total_us, sampled / self.requests * 1e6)
        out = {stage: seen_us * seconds / sampled for stage, seconds in self.stages.items()} if sampled else {}
        out["unseen"] = total_us - seen_us
        return out


def start(children: Children, root: Path, certs: pki.CertDir, trees: dict[str, Path], audit: bool,
          insecure: bool) -> list[Server]:
    token_file = admission.write_token_file(root / "tokens.csv")
    (root / "audit-policy.yaml").write_bytes(AUDIT_POLICY)
    servers = []
    for label, tree in trees.items():
        out = root / f"samples-{label}"
        commands = tree / "capstan" / "cli" / "commands.py"
        workers = ["--workers", "1"] if commands.exists() and "--workers" in commands.read_text() else []
        args = ["serve", *workers, "--grpc-port", "0", "--data-dir", str(root / f"data-{label}")]
        if insecure:
            args += ["--insecure", "--http-port", "0"]
        else:
            args += ["--cert-dir", str(certs.path), "--secure-port", "0", "--grpc-mtls-port", "0",
                     "--token-auth-file", str(token_file)]
        if audit:
            args += ["--audit-policy-file", str(root / "audit-policy.yaml"),
                     "--audit-log-path", str(root / f"audit-{label}.log")]
        servers.append(Server(label, children.start(label, str(SAMPLER), str(tree), str(out), *args), out))
    for server in servers:
        server.base = server.process.listening(LISTENING)
        note(f"{server.label}: {server.base} pid {server.process.proc.pid} ({trees[server.label]})")
    return servers


async def prepare(server: Server, certs: pki.CertDir, insecure: bool) -> None:
    """The bench user's Role (what the verbs do to ConfigMaps) and RoleBinding, written with the admin's
    certificate; returns once the token may list. Nothing to do for an --insecure server."""
    if insecure:
        return
    server.auth = {"Authorization": f"Bearer {admission.BENCH_TOKEN}"}
    admin = ssl.create_default_context(cafile=certs.ca_cert)
    admin.load_cert_chain(certs.admin_cert, certs.admin_key)
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "profile", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["get", "list", "create", "update"]}]}
    binding = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
               "metadata": {"name": "profile", "namespace": "default"},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "profile"},
               "subjects": [{"kind": "User", "apiGroup": RBAC, "name": admission.BENCH_USER}]}
    rbac = f"/apis/{RBAC}/v1/namespaces/default"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=admin)) as session:
        for path, body in ((f"{rbac}/roles", role), (f"{rbac}/rolebindings", binding)):
            async with session.post(server.base + path, data=orjson.dumps(body), headers=JSON) as response:
                if response.status != 201:
                    raise RuntimeError(await failure(response, f"{server.label}: POST {path}"))
    deadline = time.monotonic() + 10
    while True:
        async with server.http.get(f"{server.base}{CONFIGMAPS}?limit=1", headers=server.auth) as response:
            if response.status == 200:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(await failure(response, f"{server.label}: LIST with the bench token"))
        await asyncio.sleep(0.05)


Job = Callable[[Server, int], Awaitable[str | None]]


async def create_job(server: Server, i: int) -> str | None:
    server.created += 1
    name = f"cm-{server.created:07}"
    async with server.http.post(server.base + CONFIGMAPS, data=config_map(name),
                                headers={**server.auth, **JSON}) as response:
        if response.status != 201:
            return await failure(response, "POST")
        server.versions[name] = str(orjson.loads(await response.read())["metadata"]["resourceVersion"])
    return None


async def get_job(server: Server, i: int) -> str | None:
    name = f"cm-{i % max(1, server.created) + 1:07}"
    async with server.http.get(f"{server.base}{CONFIGMAPS}/{name}", headers=server.auth) as response:
        if response.status != 200:
            return await failure(response, "GET")
        await response.read()
    return None


async def update_job(server: Server, i: int) -> str | None:
    name = f"cm-{i % max(1, server.created) + 1:07}"
    body = config_map(name, resource_version=server.versions[name], stamp=i + 1)
    async with server.http.put(f"{server.base}{CONFIGMAPS}/{name}", data=body,
                               headers={**server.auth, **JSON}) as response:
        if response.status != 200:
            return await failure(response, "PUT")
        server.versions[name] = str(orjson.loads(await response.read())["metadata"]["resourceVersion"])
    return None


async def list_job(server: Server, i: int) -> str | None:
    async with server.http.get(f"{server.base}{CONFIGMAPS}?limit={LIST_LIMIT}", headers=server.auth) as response:
        if response.status != 200:
            return await failure(response, "LIST")
        await response.read()
    return None


JOBS: dict[str, Job] = {"create": create_job, "get": get_job, "update": update_job, "list": list_job}


async def run_round(server: Server, job: Job, count: int, workers: int) -> tuple[float, float, list[str]]:
    """`count` requests, each index to one of `workers` workers; (server CPU seconds, wall seconds, errors).
    An update's index names an object no other worker updates in the same round."""
    indexes = iter(range(count))
    errors: list[str] = []

    async def worker() -> None:
        for i in indexes:
            error = await job(server, i)
            if error:
                errors.append(error)

    cpu, wall = server.process.cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(workers, count))))
    return server.process.cpu_seconds() - cpu, time.perf_counter() - wall, errors


async def profile(servers: Sequence[Server], ops: Sequence[str], sizes: Sizes) -> dict[str, dict[str, Figures]]:
    results: dict[str, dict[str, Figures]] = {op: {s.label: Figures() for s in servers} for op in ops}
    memo: dict[str, str | None] = {}
    for server in servers:
        await run_round(server, create_job, max(sizes.warmup, LIST_LIMIT), WORKERS)  # objects to get and list
    for op in ops:
        count = sizes.lists if op == "list" else sizes.count
        if op == "update":
            count = min(count, min(s.created for s in servers))  # one update per object per round
        for server in servers:  # warm-up, not counted
            await run_round(server, JOBS[op], min(sizes.warmup, count), WORKERS)
        for r in range(sizes.rounds):
            for k in range(len(servers)):
                server = servers[(r + k) % len(servers)]
                figures = results[op][server.label]
                await server.samples()  # what came before is not this round's
                cpu, seconds, errors = await run_round(server, JOBS[op], count, WORKERS)
                if errors:
                    raise RuntimeError(f"{server.label} {op}: {len(errors)} failed, the first: {errors[0]}")
                figures.add(await server.samples(), memo)
                figures.cpu_s += cpu
                figures.requests += count
                figures.seconds += seconds
                figures.cpu_rounds.append(cpu / count * 1e6)
        note(f"{op} done")
    return results


def report(results: dict[str, dict[str, Figures]], labels: Sequence[str]) -> None:
    for op, by_server in results.items():
        for label in labels:
            figures = by_server[label]
            stages = figures.per_request_us()
            total = figures.cpu_s / figures.requests * 1e6
            emit(op, label, "server_cpu_us_per_req", total, context("µs of server CPU a request, /proc"),
                 stages_us={s: round(stages.get(s, 0.0), 1) for s in ORDER if s in stages},
                 cpu_us_rounds=[round(c) for c in figures.cpu_rounds], requests=figures.requests,
                 sampler_overhead_share=round(figures.overhead / figures.cpu_s, 3) if figures.cpu_s else 0.0,
                 rate_per_s=round(figures.requests / figures.seconds), workers=WORKERS,
                 frames={stage: figures.top_frames(stage, 6) for stage in ORDER if stage in stages})
    header = "| stage | " + " | ".join(f"{op} {label}" for op in results for label in labels) + " |"
    lines = [header, "|---" * (1 + len(results) * len(labels)) + "|"]
    tables = {(op, label): results[op][label].per_request_us() for op in results for label in labels}
    for stage in ORDER:
        if any(stage in t for t in tables.values()):
            lines.append(f"| {stage} | " + " | ".join(f"{tables[k].get(stage, 0.0):,.0f}" for k in tables) + " |")
    lines.append("| **total (/proc)** | " + " | ".join(
        f"**{results[op][label].cpu_s / results[op][label].requests * 1e6:,.0f}**" for op, label in tables) + " |")
    note("µs of server CPU per request:\n" + "\n".join(lines))


async def run(servers: Sequence[Server], certs: pki.CertDir, ops: Sequence[str], sizes: Sizes,
              insecure: bool) -> None:
    verify = ssl.create_default_context(cafile=certs.ca_cert)
    for server in servers:
        server.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=WORKERS, ssl=False if insecure else verify, keepalive_timeout=60))
    try:
        for server in servers:
            await prepare(server, certs, insecure)
        results = await profile(servers, ops, sizes)
    finally:
        for server in servers:
            await server.http.close()
    report(results, [s.label for s in servers])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"comma-separated verbs (default {','.join(OPS)})")
    parser.add_argument("--compare", type=Path, action="append", default=[],
                        help="another server from this checkout, rounds alternating (before/after); repeatable")
    parser.add_argument("--audit", choices=("on", "off"), default="on", help="an audit policy logging Metadata")
    parser.add_argument("--insecure", action="store_true", help="`capstan serve --insecure`: plain HTTP, no token")
    parser.add_argument("--rounds", type=int, default=0, help="rounds per verb and server (default 3, quick 1)")
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    if args.rounds:
        sizes = dataclasses.replace(sizes, rounds=args.rounds)
    ops = [op for op in OPS if op in args.only.split(",")]
    trees = {"this": HERE}
    for tree in args.compare:
        trees[tree.name] = tree.resolve()

    def body(root: Path, children: Children) -> bool:
        certs = pki.ensure(root / "pki", bind_address="127.0.0.1", service_ip=SERVICE_IP)
        servers = start(children, root, certs, trees, args.audit == "on" and not args.insecure, args.insecure)
        asyncio.run(run(servers, certs, ops, sizes, args.insecure))
        return True

    return with_children("capstan-bench-profile-", body)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
