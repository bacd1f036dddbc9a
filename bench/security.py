"""What Capstan's security costs a request: HTTPS, a bearer token and RBAC beside `--insecure` plain
HTTP and beside bare aiohttp over HTTP and HTTPS, in one run, rounds alternated.

Servers, each in its own process (this process is the client):
  insecure       `capstan serve --insecure`: plain HTTP, every request system:unsecured, nothing authorized
  token          `capstan serve` as shipped (HTTPS, generated cert dir, RBAC) with `--token-auth-file`; requests
                 carry `Authorization: Bearer` of a static token whose user (`bench`, an ordinary user) a
                 RoleBinding in `default` binds to a Role allowing get/list/create of ConfigMaps: RBAC evaluates
  sa-token       the same server process, requests carrying the token of a ServiceAccount (`bench-sa`, bound by the
                 same RoleBinding) issued by TokenRequest, as `kubectl create token` gets it
  cert           the same server process, requests authenticated by the admin's client certificate
                 (system:masters) instead of a token
  ceiling-http   bare aiohttp (bench/http.py's Ceiling: ConfigMaps as blobs in a dict) over plain HTTP
  ceiling-https  the same over HTTPS with Capstan's serving certificate: what TLS alone costs the server

    python -m bench.security [--quick] [--only get,create,admit] [--impls insecure,token,...]

Workloads (full sizes; --quick shrinks them). The client is aiohttp with HTTP/1.1 keep-alive (a ClientSession per
server, a TCPConnector holding up to WORKERS connections open), WORKERS concurrent workers; 1 KiB ConfigMaps:
  get     GETs of one ConfigMap (made untimed first), a fixed count per round: gets/s
  create  POSTs of new ConfigMaps, a fixed count per round: creates/s
  admit   in-process (bench/_admission.py): µs per `GuardedCore._admit` with a cached static token, a
          ServiceAccount token and a client certificate, the RBAC index holding kube's bootstrap policy plus 1,000
          RoleBindings in other namespaces, and µs per `gateway.credentials.of_request` on a real HTTPS request.
          Their sum is the goal: <= 20 µs.

Each HTTP line carries the median over rounds of the rate and of the server's CPU per request (`server_cpu_us`,
user+system time of the server process from /proc over the round, divided by its requests), each round's
figures, and the client's share of a core. After them, a `security-cost` line per workload: `token` minus
`insecure` server CPU per request (what HTTPS, authentication and authorization cost together), `sa-token` and
`cert` beside it,
`ceiling-https` minus `ceiling-http` (what TLS alone costs aiohttp), and their difference (an estimate of
authentication and authorization, noisier than the in-process figure).

Stdout is one JSON line per figure (bench/_util.py); progress goes to stderr. Exit status 1 means a server
failed to start or answered wrongly; a missed goal is only `"ok": false`. Every server is stopped and the
temporary directory removed at the end, on error too.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import ssl
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench import _admission as admission
from bench._processes import Child, Children, with_children
from bench._util import CEILING, Goal, at_most, check_choices, context, emit, exit_on_sigterm, note
from bench.http import CONFIGMAPS, JSON, Ceiling, config_map, failure, stdin_reader
from capstan.cli import pki
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE, Allocator

IMPLS = ("insecure", "token", "sa-token", "cert", "ceiling-http", "ceiling-https")
SECURE = ("token", "sa-token", "cert")  # one `capstan serve`, three credentials
OPS = ("get", "create", "admit")
SERVICE_IP = Allocator(DEFAULT_SERVICE_CLUSTER_IP_RANGE).first_ip  # as `capstan serve` names it: the cert dir is reused
GOAL_US = 20.0  # authentication and authorization together, µs of server CPU a request
WORKERS = 16
GET_NAME = "bench-get"
LISTENING = {
    "insecure": re.compile(r"capstan serving: HTTP (http://\S+)"),
    "secure": re.compile(r"capstan serving: HTTPS (https://\S+)"),
    "ceiling": re.compile(r"bench server listening: (https?://\S+)"),
}
GOALS: dict[str, Goal] = {"insecure": context("plain HTTP, no authorization"),
                          "token": context("HTTPS, bearer token, RBAC"),
                          "sa-token": context("HTTPS, ServiceAccount token, RBAC"),
                          "cert": context("HTTPS, client certificate"),
                          "ceiling-http": CEILING, "ceiling-https": CEILING}
# A difference of two noisy figures may come out negative at small sizes: context, never missed.
COST = Goal("(token minus insecure)", 0.0, lambda figure, bound: True)
METRICS = {"get": "gets_per_s", "create": "creates_per_s"}


@dataclass(frozen=True, slots=True)
class Sizes:
    gets: int  # per round, as are creates
    creates: int
    rounds: int  # per server and workload, alternated
    warmup: int  # requests per server before a workload's rounds
    admit_calls: int  # per in-process round
    admit_rounds: int


FULL = Sizes(gets=3_000, creates=1_000, rounds=5, warmup=300, admit_calls=20_000, admit_rounds=7)
QUICK = Sizes(gets=100, creates=50, rounds=2, warmup=20, admit_calls=500, admit_rounds=2)


@dataclass
class Target:
    """One server as the client sees it: its process, base URL, TLS context and credential headers."""

    impl: str
    process: Child
    base: str = ""
    tls: ssl.SSLContext | None = None
    headers: dict[str, str] = field(default_factory=dict)
    session: aiohttp.ClientSession | None = None
    created: int = 0  # ConfigMaps this target created: names are unique per target (token and cert share a store)

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session


@dataclass
class Rounds:
    rates: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)  # server CPU per request, each round
    client_share: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# -- servers -----------------------------------------------------------------------------------------------------------


def start(children: Children, root: Path, certs: pki.CertDir, impls: Sequence[str]) -> list[Target]:
    """Every server asked for, each waited for until it listens; token, sa-token and cert are one `capstan serve`
    (sa-token's header is set by prepare, once the ServiceAccount exists)."""
    capstan = ("-m", "capstan", "serve", "--workers", "1", "--grpc-port", "0")
    processes: dict[str, Child] = {}
    if "insecure" in impls:
        processes["insecure"] = children.start("insecure", *capstan, "--insecure", "--data-dir",
                                               str(root / "insecure"), "--http-port", "0")
    if set(SECURE) & set(impls):
        token_file = admission.write_token_file(root / "tokens.csv")
        processes["secure"] = children.start("secure", *capstan, "--data-dir", str(root / "secure"), "--cert-dir",
                                             str(certs.path), "--secure-port", "0", "--grpc-mtls-port", "0",
                                             "--token-auth-file", str(token_file))
    for impl in ("ceiling-http", "ceiling-https"):
        if impl in impls:
            tls = ("--cert-dir", str(certs.path)) if impl == "ceiling-https" else ()
            processes[impl] = children.start(impl, "-m", "bench.security", "--serve", impl, *tls, control=True)
    bases = {role: child.listening(LISTENING["ceiling" if role.startswith("ceiling") else role])
             for role, child in processes.items()}
    verify = ssl.create_default_context(cafile=certs.ca_cert)
    admin = ssl.create_default_context(cafile=certs.ca_cert)
    admin.load_cert_chain(certs.admin_cert, certs.admin_key)
    targets = []
    for impl in impls:
        role = "secure" if impl in SECURE else impl
        target = Target(impl, processes[role], bases[role])
        if impl == "token":
            target.tls, target.headers = verify, {"Authorization": f"Bearer {admission.BENCH_TOKEN}"}
        elif impl == "sa-token":
            target.tls = verify
        elif impl in ("cert", "ceiling-https"):
            target.tls = admin if impl == "cert" else verify
        targets.append(target)
        note(f"{impl}: {target.base} pid {target.process.proc.pid}")
    return targets


async def serve_ceiling(cert_dir: Path | None) -> None:
    """bench/http.py's Ceiling (GET and POST of ConfigMaps) on a free port, over TLS with the cert dir's serving
    certificate when given one, until stdin closes."""
    ceiling = Ceiling()
    app = web.Application()
    app.router.add_post(CONFIGMAPS, ceiling.create)
    app.router.add_get(CONFIGMAPS + "/{name}", ceiling.get)
    tls = None
    if cert_dir is not None:
        certs = pki.CertDir(cert_dir)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(certs.serving_cert, certs.serving_key)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.create_server(("127.0.0.1", 0))
    await web.SockSite(runner, sock, ssl_context=tls).start()
    scheme = "https" if tls else "http"
    print(f"bench server listening: {scheme}://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
    commands = await stdin_reader()
    while await commands.readline():
        pass
    await runner.cleanup()


async def prepare(targets: Sequence[Target], certs: pki.CertDir) -> None:
    """The bench user's Role and RoleBinding and the bench ServiceAccount on the secure server (and sa-token's
    header: a token from TokenRequest), and on every server the ConfigMap the GETs read; written by the admin
    (client certificate) where the server is secure."""
    admin = ssl.create_default_context(cafile=certs.ca_cert)
    admin.load_cert_chain(certs.admin_cert, certs.admin_key)
    done: set[str] = set()
    for target in targets:
        if target.process.role in done:
            continue
        done.add(target.process.role)
        secure = target.process.role == "secure"
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=admin if secure else False)) as session:
            writes = [(CONFIGMAPS, config_map(GET_NAME))]
            if secure:
                role, binding = admission.bench_role()
                rbac = f"/apis/{admission.RBAC}/v1/namespaces/default"
                accounts = "/api/v1/namespaces/default/serviceaccounts"
                writes = [(accounts, admission.service_account()), (f"{rbac}/roles", role),
                          (f"{rbac}/rolebindings", binding), *writes]
            for path, body in writes:
                async with session.post(target.base + path, data=body, headers=JSON) as response:
                    if response.status != 201:
                        raise RuntimeError(await failure(response, f"{target.impl}: POST {path}"))
            if secure:
                token = await issue_token(session, target.base)
                for other in targets:
                    if other.impl == "sa-token":
                        other.headers = {"Authorization": f"Bearer {token}"}
                await until_allowed(target.base, certs, admission.BENCH_TOKEN)
                await until_allowed(target.base, certs, token)


async def issue_token(session: aiohttp.ClientSession, base: str) -> str:
    """A token for the bench ServiceAccount, from TokenRequest."""
    path = f"/api/v1/namespaces/default/serviceaccounts/{admission.BENCH_SA}/token"
    async with session.post(base + path, data=admission.token_request(), headers=JSON) as response:
        if response.status != 201:
            raise RuntimeError(await failure(response, f"POST {path}"))
        token: str = (await response.json())["status"]["token"]
    return token


async def until_allowed(base: str, certs: pki.CertDir, token: str) -> None:
    """Wait until the token may GET (the server's RBAC index follows the binding by a watch)."""
    headers = {"Authorization": f"Bearer {token}"}
    tls = ssl.create_default_context(cafile=certs.ca_cert)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as session:
        deadline = time.monotonic() + 10
        while True:
            async with session.get(f"{base}{CONFIGMAPS}/{GET_NAME}", headers=headers) as response:
                if response.status == 200:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(await failure(response, "GET with the bench token"))
            await asyncio.sleep(0.05)


# -- rounds ------------------------------------------------------------------------------------------------------------

Job = Callable[[Target, int], Awaitable[str | None]]  # request i to the target; None, or what went wrong


async def get_job(target: Target, i: int) -> str | None:
    async with target.http.get(f"{target.base}{CONFIGMAPS}/{GET_NAME}", headers=target.headers) as response:
        if response.status != 200:
            return await failure(response, "GET")
        await response.read()
    return None


async def create_job(target: Target, i: int) -> str | None:
    target.created += 1
    body = config_map(f"{target.impl}-{target.created:07}")
    async with target.http.post(target.base + CONFIGMAPS, data=body, headers={**target.headers, **JSON}) as response:
        if response.status != 201:
            return await failure(response, "POST")
        await response.read()
    return None


async def run_round(target: Target, job: Job, count: int, rounds: Rounds | None) -> None:
    """`count` requests on WORKERS coroutines; with `rounds`, the rate and the server's CPU per request recorded."""
    indexes = iter(range(count))
    errors: list[str] = []

    async def worker() -> None:
        for i in indexes:  # shared: each index goes to exactly one worker
            error = await job(target, i)
            if error:
                errors.append(error)

    cpu, client, wall = target.process.cpu_seconds(), time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(WORKERS, count))))
    seconds = time.perf_counter() - wall
    if rounds is None:
        return
    rounds.rates.append((count - len(errors)) / seconds)
    rounds.cpu_us.append((target.process.cpu_seconds() - cpu) / count * 1e6)
    rounds.client_share.append((time.process_time() - client) / seconds)
    rounds.errors += errors


async def bench_http(op: str, targets: Sequence[Target], sizes: Sizes) -> dict[str, Rounds]:
    """Warm-up requests to every server, then `sizes.rounds` rounds each, the order rotating every round."""
    job, count = (get_job, sizes.gets) if op == "get" else (create_job, sizes.creates)
    results = {t.impl: Rounds() for t in targets}
    for target in targets:
        await run_round(target, job, sizes.warmup, None)
    for r in range(sizes.rounds):
        for k in range(len(targets)):
            target = targets[(r + k) % len(targets)]
            await run_round(target, job, count, results[target.impl])
    metric = METRICS[op]
    for target in targets:
        rounds = results[target.impl]
        extra: dict[str, Any] = {"error": rounds.errors[0], "failures": len(rounds.errors)} if rounds.errors else {}
        emit(op, target.impl, metric, statistics.median(rounds.rates), GOALS[target.impl],
             correct=not rounds.errors, server_cpu_us=round(statistics.median(rounds.cpu_us), 1),
             rounds=[round(r) for r in rounds.rates], cpu_us_rounds=[round(c) for c in rounds.cpu_us],
             client_cpu_share=round(statistics.median(rounds.client_share), 2), requests_per_round=count,
             workers=WORKERS, **extra)
    emit_cost(op, results)
    return results


def emit_cost(op: str, results: dict[str, Rounds]) -> None:
    """What the secure server spends a request beyond the insecure one, and how much of it is TLS's."""
    cpu = {impl: statistics.median(rounds.cpu_us) for impl, rounds in results.items() if rounds.cpu_us}
    if not {"token", "insecure"} <= set(cpu):
        return
    secure_us = cpu["token"] - cpu["insecure"]
    extra: dict[str, Any] = {"token_cpu_us": round(cpu["token"], 1), "insecure_cpu_us": round(cpu["insecure"], 1)}
    if {"ceiling-http", "ceiling-https"} <= set(cpu):
        tls_us = cpu["ceiling-https"] - cpu["ceiling-http"]
        extra |= {"tls_us": round(tls_us, 1), "authn_authz_estimate_us": round(secure_us - tls_us, 1)}
    for impl in ("sa-token", "cert"):
        if impl in cpu:
            extra[f"{impl.replace('-', '_')}_minus_insecure_us"] = round(cpu[impl] - cpu["insecure"], 1)
    if {"sa-token", "cert"} <= set(cpu):
        extra["sa_token_over_cert"] = round(cpu["sa-token"] / cpu["cert"], 3)
    emit(f"{op}-security-cost", "capstan", "extra_cpu_us_per_req", secure_us, COST,
         **extra)


async def bench_admit(root: Path, certs: pki.CertDir, sizes: Sizes) -> None:
    """The in-process figures, and the goal on their sum."""
    note("admit: filling the RBAC index ...")
    admits = await admission.bench_admit(root, certs, calls=sizes.admit_calls, rounds=sizes.admit_rounds)
    collected = await admission.bench_credentials(certs, calls=sizes.admit_calls, rounds=sizes.admit_rounds)
    for label, figures in admits.items():
        emit("admit", label, "us_per_call", figures.median_us, context("GuardedCore._admit"), rounds=figures.rounds,
             calls_per_round=sizes.admit_calls, role_bindings=admission.BINDINGS)
    for label, figures in collected.items():
        emit("credentials", label, "us_per_call", figures.median_us, context("gateway.credentials.of_request"),
             rounds=figures.rounds, calls_per_round=sizes.admit_calls)
    for label in ("token", "sa-token", "cert"):
        admit = admits[f"{label}-get"].median_us
        credentials = collected["cert" if label == "cert" else "token"].median_us  # a bearer token either way
        emit("authn-authz", label, "us_per_request", admit + credentials, at_most(GOAL_US, " us"),
             admit_us=round(admit, 2), credentials_us=round(credentials, 2))


# -- main --------------------------------------------------------------------------------------------------------------


async def run(targets: Sequence[Target], certs: pki.CertDir, root: Path, sizes: Sizes, ops: Sequence[str]) -> bool:
    """Every workload asked for; False if a server answered wrongly."""
    wrong = False
    if targets:
        await prepare(targets, certs)
        for target in targets:
            target.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=WORKERS, ssl=target.tls or False, keepalive_timeout=60))
        try:
            for op in ("get", "create"):
                if op in ops:
                    note(f"{op} ...")
                    results = await bench_http(op, targets, sizes)
                    wrong |= any(rounds.errors for rounds in results.values())
        finally:
            for target in targets:
                await target.http.close()
    if "admit" in ops:
        (root / "admit").mkdir()
        await bench_admit(root / "admit", certs, sizes)
    return not wrong


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.security", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"comma-separated workloads (default {','.join(OPS)})")
    parser.add_argument("--impls", default=",".join(IMPLS), help=f"comma-separated servers (default {','.join(IMPLS)})")
    parser.add_argument("--serve", choices=("ceiling-http", "ceiling-https"), help=argparse.SUPPRESS)  # internal
    parser.add_argument("--cert-dir", type=Path, default=None, help=argparse.SUPPRESS)  # internal: ceiling-https's
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS, impls=IMPLS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        asyncio.run(serve_ceiling(args.cert_dir if args.serve == "ceiling-https" else None))
        return 0
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    ops = args.only.split(",")
    impls = [impl for impl in IMPLS if impl in args.impls.split(",")] if {"get", "create"} & set(ops) else []

    def body(root: Path, children: Children) -> bool:
        certs = pki.ensure(root / "pki", bind_address="127.0.0.1", service_ip=SERVICE_IP)
        targets = start(children, root, certs, impls)
        return asyncio.run(run(targets, certs, root, sizes, ops))

    return with_children("capstan-bench-security-", body)


if __name__ == "__main__":
    sys.exit(main())
