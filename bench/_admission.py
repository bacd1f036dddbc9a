"""What authentication and authorization cost a request on their own, measured in-process (bench/security.py's
`admit` workload), so that the figure is not lost in the noise of a process's CPU time.

Two parts of the chain, each timed by calling it back to back on one event loop:
- `GuardedCore._admit`, the core's link: authentication (a static token found in the token cache, a ServiceAccount
  token issued by TokenRequest, whose verification is cached and whose objects are looked up every call, or the
  admin's client certificate, whose verification is cached), impersonation (none asked) and the RBAC decision, on a core
  started as `capstan serve` starts it (server.startup.app.start_core with the command's SecurityConfig) whose index
  holds
  kube's bootstrap policy, the bench user's Role and RoleBinding in `default`, and BINDINGS more RoleBindings
  spread over other namespaces (written through the core, followed by the index's watch).
- `gateway.credentials.of_request`, the gateway's link: collecting the credentials of a real aiohttp request
  that came over a real HTTPS connection (client certificate or bearer token, and a client's usual headers).
"""

from __future__ import annotations

import asyncio
import ssl
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from capstan.cli import pki
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.credentials import of_request
from server.auth.attributes import Attributes, Decision
from server.auth.config import SecurityConfig
from server.auth.guard import GuardedCore
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.objects.core import Core
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

BENCH_USER = "bench"
BENCH_SA = "bench-sa"  # a ServiceAccount in `default`, bound to the same Role as the bench user
BENCH_TOKEN = "bench-token-0123456789abcdef0123456789abcdef"
BINDINGS = 1_000  # RoleBindings in other namespaces, 20 a namespace
PER_NAMESPACE = 20
RBAC = "rbac.authorization.k8s.io"
# What kubectl sends besides the credential: the headers of_request reads through.
CLIENT_HEADERS = {"User-Agent": "kubectl/v1.28.0 (linux/amd64) kubernetes/a1a87a0",
                  "Accept": "application/json", "Accept-Encoding": "gzip"}


@dataclass(frozen=True, slots=True)
class Figures:
    """µs a call: medians over rounds, and every round's figure."""

    median_us: float
    rounds: list[float]


def bench_config(certs: pki.CertDir, token_file: Path) -> SecurityConfig:
    """What `capstan serve --token-auth-file <token_file>` configures with a generated cert dir
    (capstan/cli/commands.py)."""
    return SecurityConfig(client_ca_file=certs.ca_cert, token_auth_file=token_file,
                          service_account_key_files=(certs.sa_key,), service_account_signing_key_file=certs.sa_key,
                          requestheader_client_ca_file=certs.front_proxy_ca_cert,
                          requestheader_allowed_names=(pki.FRONT_PROXY_CLIENT,), root_ca_file=certs.ca_cert)


def write_token_file(path: Path) -> Path:
    path.write_text(f"{BENCH_TOKEN},{BENCH_USER},uid-{BENCH_USER}\n")
    return path


def bench_role(namespace: str = "default") -> tuple[bytes, bytes]:
    """A Role allowing get, list and create of ConfigMaps, and its RoleBinding to the (ordinary) bench user and
    the bench ServiceAccount."""
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": "configmap-writer", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"]}]}
    binding = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
               "metadata": {"name": "bench-configmap-writer", "namespace": namespace},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "configmap-writer"},
               "subjects": [{"kind": "User", "apiGroup": RBAC, "name": BENCH_USER},
                            {"kind": "ServiceAccount", "name": BENCH_SA, "namespace": namespace}]}
    return orjson.dumps(role), orjson.dumps(binding)


def token_request() -> bytes:
    """What `kubectl create token` posts to serviceaccounts/<name>/token (audiences and expiry defaulted)."""
    return orjson.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})


def service_account() -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": BENCH_SA}})


def _path(resource: str, namespace: str = "", group: str = "", version: str = "v1") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version=version, resource=resource, namespace=namespace)


async def _create(core: Core, path: core_pb2.ResourcePath, data: bytes) -> None:
    await core.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON,
                                                                                  data=data)))


async def _fill(core: Core, guard: GuardedCore, bindings: int) -> str:
    """The bench user's Role and RoleBinding in `default`, the bench ServiceAccount, and `bindings` RoleBindings of
    other users and groups to kube's `edit` and `view` in other namespaces; returns, once the index allows what
    the last one grants, a token for the ServiceAccount from TokenRequest."""
    role, binding = bench_role()
    await _create(core, _path("serviceaccounts", "default"), service_account())
    await _create(core, _path("roles", "default", RBAC), role)
    await _create(core, _path("rolebindings", "default", RBAC), binding)
    for n in range(0, bindings, PER_NAMESPACE):
        namespace = f"bench-ns-{n // PER_NAMESPACE:03}"
        await _create(core, _path("namespaces"), orjson.dumps({"metadata": {"name": namespace}}))
        for i in range(n, min(n + PER_NAMESPACE, bindings)):
            await _create(core, _path("rolebindings", namespace, RBAC), orjson.dumps({
                "metadata": {"name": f"binding-{i:04}", "namespace": namespace},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit" if i % 2 else "view"},
                "subjects": [{"kind": "User", "apiGroup": RBAC, "name": f"user-{i:04}"},
                             {"kind": "Group", "apiGroup": RBAC, "name": f"team-{i % 50:02}"}]}))
    last = bindings - 1
    wanted = [Attributes(UserInfo(f"user-{last:04}"), "get", api_version="v1", resource="configmaps",
                         namespace=f"bench-ns-{last // PER_NAMESPACE:03}"),
              Attributes(UserInfo(BENCH_USER), "get", api_version="v1", resource="configmaps", namespace="default")]
    deadline = time.monotonic() + 30
    while not all(guard.authorizer.authorize(a)[0] is Decision.ALLOW for a in wanted):
        if time.monotonic() > deadline:
            raise RuntimeError("the RBAC index did not follow the bench's bindings within 30 s")
        await asyncio.sleep(0.05)
    path = core_pb2.ResourcePath(version="v1", resource="serviceaccounts", namespace="default", name=BENCH_SA,
                                 subresource="token")
    issued = await core.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=token_request())))
    token: str = orjson.loads(issued.object.data)["status"]["token"]
    return token


async def _timed(call: Callable[[], Awaitable[object]], calls: int, rounds: int) -> Figures:
    await call()  # caches filled (token, certificate verification) as on a keep-alive connection's second request
    figures = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            await call()
        figures.append((time.perf_counter() - started) / calls * 1e6)
    return Figures(statistics.median(figures), [round(f, 2) for f in figures])


def _der(pem_file: Path) -> bytes:
    return x509.load_pem_x509_certificate(pem_file.read_bytes()).public_bytes(Encoding.DER)


async def bench_admit(root: Path, certs: pki.CertDir, *, calls: int, rounds: int) -> dict[str, Figures]:
    """µs per `_admit` call: a GET and a create of a ConfigMap in `default` by the bench user's cached static token,
    a GET by the bench ServiceAccount's token and one by the admin's client certificate."""
    store = await LmdbStore.open(root / "lmdb", StoreOptions(sync=False))
    running: RunningCore | None = None
    try:
        running = await start_core(store, listen="127.0.0.1", grpc_port=0,
                                   security=bench_config(certs, write_token_file(root / "tokens.csv")))
        guard = running.guard
        sa_token = await _fill(running.core, guard, BINDINGS)
        token = Credentials(token=BENCH_TOKEN, source_ip="127.0.0.1", user_agent=CLIENT_HEADERS["User-Agent"],
                            request_uri="/api/v1/namespaces/default/configmaps/bench-get")
        admin = Credentials(certificate=_der(certs.admin_cert), source_ip="127.0.0.1",
                            user_agent=CLIENT_HEADERS["User-Agent"], request_uri=token.request_uri)
        account = Credentials(token=sa_token, source_ip="127.0.0.1", user_agent=CLIENT_HEADERS["User-Agent"],
                              request_uri=token.request_uri)

        def admit(credentials: Credentials, verb: str, name: str) -> Callable[[], Awaitable[object]]:
            def attributes(user: UserInfo) -> Attributes:
                return Attributes(user, verb, api_version="v1", resource="configmaps", namespace="default", name=name)

            return lambda: guard._admit(credentials, attributes)

        return {"token-get": await _timed(admit(token, "get", "bench-get"), calls, rounds),
                "token-create": await _timed(admit(token, "create", ""), calls, rounds),
                "sa-token-get": await _timed(admit(account, "get", "bench-get"), calls, rounds),
                "cert-get": await _timed(admit(admin, "get", "bench-get"), calls, rounds)}
    finally:
        if running is not None:
            await running.stop()
        await store.close()


async def bench_credentials(certs: pki.CertDir, *, calls: int, rounds: int) -> dict[str, Figures]:
    """µs per of_request call on real requests over HTTPS: one with a bearer token, one with a client certificate.
    The handler runs of_request `calls` times per request and answers the µs a call; one request per round."""
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(certs.serving_cert, certs.serving_key)
    server_tls.load_verify_locations(certs.ca_cert)
    server_tls.verify_mode = ssl.CERT_OPTIONAL  # as capstan/cli/tls.py asks

    async def handler(request: web.Request) -> web.Response:
        of_request(request)
        started = time.perf_counter()
        for _ in range(calls):
            of_request(request)
        return web.Response(body=orjson.dumps((time.perf_counter() - started) / calls * 1e6))

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/configmaps/bench-get", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_tls)
    await site.start()
    port = runner.addresses[0][1]
    client_tls = ssl.create_default_context(cafile=certs.ca_cert)
    admin_tls = ssl.create_default_context(cafile=certs.ca_cert)
    admin_tls.load_cert_chain(certs.admin_cert, certs.admin_key)
    url = f"https://127.0.0.1:{port}/api/v1/namespaces/default/configmaps/bench-get"
    results = {}
    try:
        for label, tls, headers in (("token", client_tls, {**CLIENT_HEADERS, "Authorization": f"Bearer {BENCH_TOKEN}"}),
                                    ("cert", admin_tls, CLIENT_HEADERS)):
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls)) as session:
                figures = []
                for _ in range(rounds):
                    async with session.get(url, headers=headers) as response:
                        figures.append(float(orjson.loads(await response.read())))
            results[label] = Figures(statistics.median(figures), [round(f, 2) for f in figures])
    finally:
        await runner.cleanup()
    return results
