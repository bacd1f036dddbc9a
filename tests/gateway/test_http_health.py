"""The non-resource paths: which answer and which 404 with or without a trailing slash, and the health
endpoints' checks, as kube-apiserver 1.28 serves them.

Where each answer comes from in kube-apiserver: /api..., /apis... and /version are go-restful web
services, whose CurlyRouter trims a trailing slash (go-restful <= 3.9 and >= 3.11), and whose 404 and
405 are Status documents; /healthz, /livez, /readyz, /metrics and /openapi/* are PathRecorderMux
paths registered exactly (only /openapi/v3/ as a prefix), and any other path reaches the
NotFoundHandler: Go's http.NotFound, "404 page not found" as text.
"""

from __future__ import annotations

import asyncio

import pytest

from gateway.app import build_app, start_http
from tests.gateway import kube
from tests.gateway.conftest import Response, Server

TEXT = "text/plain; charset=utf-8"
GO_NOT_FOUND = (404, TEXT, b"404 page not found\n")

HOOKS = [  # what start_core starts, in kube-apiserver 1.28's order (kube's e2e "health handlers" test requires
    # the most of them), then Capstan's own by name
    "poststarthook/start-kube-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-service-ip-repair-controllers",
    # (poststarthook/rbac/bootstrap-roles comes here with the RBAC authorizer: not this AlwaysAllow server's)
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-status-available-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/start-garbage-collector-controller",
    "poststarthook/start-namespace-controller",
    "poststarthook/start-pod-terminator",
]
CHECKS = {
    "healthz": ["ping", "log", "etcd", *HOOKS],
    "livez": ["ping", "log", "etcd", *HOOKS],
    "readyz": ["ping", "log", "etcd", "etcd-readiness", "etcd-quota", "informer-sync", *HOOKS, "shutdown"],
}


async def ready(server: Server) -> None:
    """readyz's informer-sync waits for the garbage collector's first list, done just after start."""
    for _ in range(200):
        if server.core.garbage_collector.synced():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the garbage collector never listed")


def text(resp: Response) -> tuple[int, str, bytes]:
    return resp.status, resp.content_type, resp.body


@pytest.mark.parametrize(("path", "expected"), [
    ("/healthz", (200, TEXT, b"ok")),
    ("/livez", (200, TEXT, b"ok")),
    ("/readyz", (200, TEXT, b"ok")),
    ("/healthz/", GO_NOT_FOUND),
    ("/livez/", GO_NOT_FOUND),
    ("/readyz/", GO_NOT_FOUND),
    ("/healthz/ping/", GO_NOT_FOUND),
    ("/metrics/", GO_NOT_FOUND),
    ("/openapi/v2/", GO_NOT_FOUND),
    ("/nope", GO_NOT_FOUND),
    ("/healthzz", GO_NOT_FOUND),
])
async def test_mux_paths(server: Server, path: str, expected: tuple[int, str, bytes]) -> None:
    await ready(server)
    assert text(await server.request("GET", path)) == expected


@pytest.mark.parametrize("path", ["/version", "/version/"])
async def test_version_with_or_without_trailing_slash(server: Server, path: str) -> None:
    resp = await server.request("GET", path)
    assert (resp.status, resp.content_type, resp.json()["gitVersion"]) == (200, "application/json", "v1.28.15")


@pytest.mark.parametrize(("method", "path", "code", "expected"), [
    ("GET", "/version/foo", 404, kube.not_found_path()),  # under the /version web service: go-restful's 404
    ("POST", "/version", 405, kube.method_not_allowed()),  # the route takes GET only
    ("POST", "/version/", 405, kube.method_not_allowed()),
    ("DELETE", "/version", 405, kube.method_not_allowed()),
])
async def test_go_restful_refusals(server: Server, method: str, path: str, code: int, expected: kube.Obj) -> None:
    resp = await server.request(method, path)
    assert (resp.status, resp.content_type, resp.json()) == (code, "application/json", expected)


async def test_an_unknown_openapi_v3_document_is_a_bare_404(server: Server) -> None:
    """kube-apiserver 1.28.7's OpenAPI v3 handler answers a group version it does not serve, "" included, with
    a 404 and no body."""
    resp = await server.request("GET", "/openapi/v3/")
    assert (resp.status, resp.body) == (404, b"")


@pytest.mark.parametrize(("path", "kind"), [
    ("/api", "APIVersions"), ("/api/", "APIVersions"), ("/apis", "APIGroupList"), ("/apis/", "APIGroupList"),
    ("/openapi/v2", None), ("/openapi/v3", None), ("/metrics", None),
])
async def test_served_paths(server: Server, path: str, kind: str | None) -> None:
    resp = await server.request("GET", path)
    assert resp.status == 200, resp.body
    if kind is not None:
        assert resp.json()["kind"] == kind


@pytest.mark.parametrize("endpoint", ["healthz", "livez", "readyz"])
@pytest.mark.parametrize("method", ["GET", "POST"])  # kube's mux serves them whatever the method
async def test_verbose_lists_every_check(server: Server, endpoint: str, method: str) -> None:
    await ready(server)
    resp = await server.request(method, f"/{endpoint}?verbose")
    lines = [f"[+]{name} ok" for name in CHECKS[endpoint]]
    assert text(resp) == (200, TEXT, "\n".join([*lines, f"{endpoint} check passed", ""]).encode())
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("query", "tail"), [
    ("exclude=etcd&verbose=1", []),
    ("exclude=nope&exclude=etcd&exclude=a%22b&verbose",
     ['warn: some health checks cannot be excluded: no matches for "a\\"b","nope"']),
])
async def test_exclude(server: Server, query: str, tail: list[str]) -> None:
    resp = await server.request("GET", f"/livez?{query}")
    lines = ["[+]ping ok", "[+]log ok", "[+]etcd excluded: ok", *[f"[+]{name} ok" for name in HOOKS], *tail]
    assert text(resp) == (200, TEXT, "\n".join([*lines, "livez check passed", ""]).encode())


@pytest.mark.parametrize(("path", "expected"), [
    ("/readyz/ping", (200, TEXT, b"ok")),
    ("/healthz/log", (200, TEXT, b"ok")),
    ("/healthz/etcd", (200, TEXT, b"ok")),
    ("/readyz/etcd-readiness", (200, TEXT, b"ok")),
    ("/readyz/informer-sync", (200, TEXT, b"ok")),
    ("/readyz/shutdown", (200, TEXT, b"ok")),
    ("/livez/poststarthook/start-apiextensions-controllers", (200, TEXT, b"ok")),
    ("/healthz/shutdown", GO_NOT_FOUND),  # readyz's alone
    ("/livez/informer-sync", GO_NOT_FOUND),
    ("/healthz/etcd-readiness", GO_NOT_FOUND),
    ("/readyz/nope", GO_NOT_FOUND),
    ("/readyz/poststarthook", GO_NOT_FOUND),
])
async def test_single_checks(server: Server, path: str, expected: tuple[int, str, bytes]) -> None:
    await ready(server)
    assert text(await server.request("GET", path)) == expected


async def test_a_stopped_controller_fails_its_check(server: Server) -> None:
    await server.core.garbage_collector.stop()
    hook = "poststarthook/start-garbage-collector-controller"
    resp = await server.request("GET", "/healthz")
    lines = [f"[-]{name} failed: reason withheld" if name == hook else f"[+]{name} ok" for name in CHECKS["healthz"]]
    assert text(resp) == (500, TEXT, "\n".join([*lines, "healthz check failed", ""]).encode())
    single = await server.request("GET", f"/healthz/{hook}")
    assert (single.status, single.body.decode().startswith("internal server error: ")) == (500, True)
    excluded = await server.request("GET", f"/healthz?exclude={hook}")
    assert text(excluded) == (200, TEXT, b"ok")


async def test_a_closed_store_fails_etcd(server: Server) -> None:
    await ready(server)
    await server.core.core.context.store.close()
    resp = await server.request("GET", "/readyz?verbose")
    failed = [line for line in resp.body.decode().splitlines() if line.startswith("[-]")]
    # (the garbage collector stops on a closed store too, and may have noticed already)
    assert (resp.status, failed[:2], resp.body.decode().splitlines()[-1]) == (500, [
        "[-]etcd failed: reason withheld", "[-]etcd-readiness failed: reason withheld"], "readyz check failed")
    assert (await server.request("GET", "/livez/etcd")).status == 500
    assert (await server.request("GET", "/livez/ping")).status == 200


async def test_readyz_fails_once_the_gateway_shuts_down(server: Server) -> None:
    """AppRunner.cleanup shuts the app down first; until the listener closes, readyz says so."""
    await ready(server)
    app = build_app(server.client)
    runner, port = await start_http(app, "127.0.0.1", 0)
    try:
        await app.shutdown()
        async with server.session.get(f"http://127.0.0.1:{port}/readyz?verbose") as resp:
            lines = (await resp.read()).decode().splitlines()
        assert (resp.status, lines[-2:]) == (500, ["[-]shutdown failed: reason withheld", "readyz check failed"])
        async with server.session.get(f"http://127.0.0.1:{port}/livez") as resp:
            assert resp.status == 200
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("path", "code"), [("/healthz?timeout=10", 400), ("/readyz/ping?timeout=1s", 200)])
async def test_request_deadline_applies(server: Server, path: str, code: int) -> None:
    await ready(server)
    assert (await server.request("GET", path)).status == code
