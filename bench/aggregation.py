"""What API aggregation adds to a request: the same requests sent to an extension API server directly and through
`capstan serve`'s proxy, in one run, rounds alternated.

Processes (this one is the client):
  capstan   `capstan serve` as shipped (HTTPS, its generated cert dir, RBAC), an APIService with a service handing
            group bench.example.com/v1 to the backend, a selectorless Service and Endpoints pointing at it
  backend   a bare aiohttp HTTPS server (this module with --serve-backend): its own CA and serving certificate
            for api.default.svc, requiring a client certificate of the front-proxy CA; it answers from bytes made
            once, so its own cost is as small as aiohttp's

    python -m bench.aggregation [--quick] [--only get,list] [--impls direct,proxied] [--workers 8]

Impls:
  direct    the client dials the backend itself, with the front-proxy client certificate and X-Remote-* headers
            (what Capstan's gateway sends): the backend's own time, the anchor
  proxied   the client asks Capstan over HTTPS with the admin's certificate; Capstan authorizes, locates the
            endpoint and proxies: the backend's time plus what aggregation adds

Workloads (full sizes; --quick shrinks them), --workers concurrent workers (8) on kept-alive connections; with 1,
the latencies are a lone client's:
  get    GETs of one small object (~300 bytes): ms per request (median and p99 of all requests in a round)
  list   GETs of a 1 MiB list, streamed through: ms per request, and MB/s

Each line carries the median over rounds; `proxied` lines add `added_ms` (proxied minus direct, medians of the
same run) and Capstan's CPU per proxied request (`server_cpu_us`, from /proc). Stdout is one JSON line per
figure (bench/_util.py); progress goes to stderr. Exit status 1 means a server failed or answered wrongly.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import shutil
import signal
import socket
import ssl
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench._processes import Children, with_children
from bench._util import CEILING, check_choices, context, emit, exit_on_sigterm, note
from capstan.cli import pki

GROUP, VERSION = "bench.example.com", "v1"
BASE = f"/apis/{GROUP}/{VERSION}/namespaces/default/widgets"
SERVER_NAME = "api.default.svc"  # the Service api in default, as the aggregator names it
IMPLS = ("direct", "proxied")
OPS = ("get", "list")
WORKERS = 8
FULL = {"rounds": 5, "get": 2_000, "list": 80}  # per round, shared by the WORKERS workers
QUICK = {"rounds": 2, "get": 96, "list": 16}
LIST_BYTES = 1 << 20
SERVING = re.compile(r"capstan serving: HTTPS (https://\S+)")
BACKEND = re.compile(r"backend listening: (\d+)")


def _host_ip() -> str:
    """A non-loopback address of this machine (Endpoints may not name a loopback one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))
        address = str(probe.getsockname()[0])
    if address.startswith("127."):
        raise RuntimeError("no non-loopback address to put in Endpoints")
    return address


def _widget(name: str) -> dict[str, object]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "1", "uid": f"uid-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "bench"}},
            "spec": {"size": 3, "color": "blue"}}


def _bodies() -> tuple[bytes, bytes, bytes]:
    """(discovery, one widget, a list of about LIST_BYTES)."""
    discovery = json.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
                            "resources": [{"name": "widgets", "singularName": "widget", "namespaced": True,
                                           "kind": "Widget", "verbs": ["get", "list"]}]}).encode()
    one = json.dumps(_widget("one")).encode()
    items, size, count = [], 0, 0
    while size < LIST_BYTES:
        item = _widget(f"w{count:06d}")
        items.append(item)
        size += len(json.dumps(item))
        count += 1
    listed = json.dumps({"kind": "WidgetList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {},
                         "items": items}).encode()
    return discovery, one, listed


async def serve_backend(directory: Path, bind: str) -> None:
    discovery, one, listed = _bodies()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(directory / "backend.crt", directory / "backend.key")
    context.load_verify_locations(cafile=str(directory / "front-proxy-ca.crt"))
    context.verify_mode = ssl.CERT_REQUIRED

    def answer(body: bytes) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get(f"/apis/{GROUP}/{VERSION}", lambda _: _async(answer(discovery)))
    app.router.add_get(BASE + "/one", lambda _: _async(answer(one)))
    app.router.add_get(BASE, lambda _: _async(answer(listed)))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, bind, 0, ssl_context=context)
    await site.start()
    print(f"backend listening: {runner.addresses[0][1]}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


async def _async(response: web.Response) -> web.Response:
    return response


def _issue_backend(directory: Path) -> bytes:
    """The backend's CA (PEM, the APIService's caBundle) and its serving pair, written to `directory`."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench-backend-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (directory / "backend.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "backend.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM)


@dataclass
class Rounds:
    ms_p50: list[float] = field(default_factory=list)
    ms_p99: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    mb_per_s: list[float] = field(default_factory=list)


@dataclass
class Target:
    impl: str
    url: str
    context: ssl.SSLContext
    headers: dict[str, str]
    server_hostname: str | None = None


async def _round(target: Target, path: str, count: int, expected: int, cpu: Children | None, into: Rounds,
                 workers: int) -> None:
    latencies: list[float] = []
    received = 0
    connector = aiohttp.TCPConnector(limit=workers, ssl=target.context)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as http:
        async def worker(n: int) -> None:
            nonlocal received
            for _ in range(n):
                start = time.perf_counter()
                async with http.get(target.url + path, headers=target.headers,
                                    server_hostname=target.server_hostname) as resp:
                    body = await resp.read()
                if resp.status != 200 or len(body) != expected:
                    raise RuntimeError(f"{target.impl} {path}: {resp.status}, {len(body)} bytes")
                latencies.append((time.perf_counter() - start) * 1e3)
                received += len(body)

        await worker(1)  # a warm connection
        latencies.clear()
        received = 0
        before = cpu.all[0].cpu_seconds() if cpu is not None else 0.0
        wall = time.perf_counter()
        await asyncio.gather(*(worker(count // workers) for _ in range(workers)))
        wall = time.perf_counter() - wall
        if cpu is not None:
            into.cpu_us.append((cpu.all[0].cpu_seconds() - before) / len(latencies) * 1e6)
    latencies.sort()
    into.ms_p50.append(statistics.median(latencies))
    into.ms_p99.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
    into.mb_per_s.append(received / wall / 1e6)


async def _setup(https: str, admin: ssl.SSLContext, ip: str, port: int, ca_bundle: bytes) -> None:
    objects = [
        ("/api/v1/namespaces/default/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "default"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}),
        ("/api/v1/namespaces/default/endpoints", {
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port}]}]}),
        ("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{VERSION}.{GROUP}"},
            "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 1000, "versionPriority": 10,
                     "caBundle": base64.b64encode(ca_bundle).decode(),
                     "service": {"namespace": "default", "name": "api", "port": 443}}}),
    ]
    async with aiohttp.ClientSession() as http:
        for path, obj in objects:
            async with http.post(https + path, json=obj, ssl=admin) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"POST {path}: {resp.status} {await resp.text()}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            async with http.get(f"{https}/apis/apiregistration.k8s.io/v1/apiservices/{VERSION}.{GROUP}",
                                ssl=admin) as resp:
                conditions = (await resp.json()).get("status", {}).get("conditions", [])
            if any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
                return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"APIService never Available: {conditions}")


async def run(children: Children, root: Path, sizes: dict[str, int], ops: list[str], impls: list[str],
              workers: int = WORKERS) -> bool:
    https = children.all[0].listening(SERVING)
    port = int(children.all[1].listening(BACKEND))
    certs = pki.CertDir(root / "data" / "pki")
    admin = ssl.create_default_context(cafile=certs.ca_cert)
    admin.load_cert_chain(certs.admin_cert, certs.admin_key)
    ip = _host_ip()
    await _setup(https, admin, ip, port, (root / "backend-ca.crt").read_bytes())
    direct_context = ssl.create_default_context(cafile=str(root / "backend-ca.crt"))
    direct_context.load_cert_chain(certs.front_proxy_client_cert, certs.front_proxy_client_key)
    targets = {
        "direct": Target("direct", f"https://{ip}:{port}", direct_context,
                         {"X-Remote-User": "kubernetes-admin", "X-Remote-Group": "system:masters"}, SERVER_NAME),
        "proxied": Target("proxied", https, admin, {}),
    }
    _, one, listed = _bodies()
    expected = {"get": (BASE + "/one", len(one)), "list": (BASE, len(listed))}
    ok = True
    for op in ops:
        path, size = expected[op]
        results = {impl: Rounds() for impl in impls}
        for number in range(sizes["rounds"]):
            for impl in impls:
                note(f"{op} round {number + 1}/{sizes['rounds']}: {impl}")
                await _round(targets[impl], path, sizes[op], size,
                             children if impl == "proxied" else None, results[impl], workers)
        medians = {impl: statistics.median(r.ms_p50) for impl, r in results.items()}
        for impl, rounds in results.items():
            extra: dict[str, Any] = {
                "ms_p99": round(statistics.median(rounds.ms_p99), 3),
                "mb_per_s": round(statistics.median(rounds.mb_per_s), 1),
                "rounds_ms": [round(x, 3) for x in rounds.ms_p50], "workers": workers, "bytes": size,
            }
            if impl == "proxied":
                extra["server_cpu_us"] = round(statistics.median(rounds.cpu_us), 1)
                if "direct" in medians:
                    extra["added_ms"] = round(medians["proxied"] - medians["direct"], 3)
            ok &= emit(op, impl, "ms_p50", medians[impl], CEILING if impl == "direct" else context("aggregation"),
                       **extra)
    return ok


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregation", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"workloads, of {','.join(OPS)}")
    parser.add_argument("--impls", default=",".join(IMPLS), help=f"of {','.join(IMPLS)}")
    parser.add_argument("--workers", type=int, default=WORKERS, help=f"concurrent clients (default {WORKERS})")
    parser.add_argument("--serve-backend", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bind", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS, impls=IMPLS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_backend is not None:
        asyncio.run(serve_backend(args.serve_backend, args.bind))
        return 0
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    ops = [op for op in OPS if op in args.only.split(",")]
    impls = [impl for impl in IMPLS if impl in args.impls.split(",")]

    def body(root: Path, children: Children) -> bool:
        (root / "backend-ca.crt").write_bytes(_issue_backend(root))
        children.start("capstan", "-m", "capstan", "serve", "--workers", "1",
                       "--data-dir", str(root / "data"), "--secure-port", "0",
                       "--grpc-port", "0", "--grpc-mtls-port", "0", "--sync", "false")
        children.all[0].listening(SERVING)
        shutil.copy(root / "data" / "pki" / "front-proxy-ca.crt", root / "front-proxy-ca.crt")
        children.start("backend", "-m", "bench.aggregation", "--serve-backend", str(root), "--bind", _host_ip())
        return asyncio.run(run(children, root, sizes, ops, impls, args.workers))

    return with_children("capstan-bench-aggregation-", body)


if __name__ == "__main__":
    sys.exit(main())
