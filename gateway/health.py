"""/healthz, /livez and /readyz, answered as kube-apiserver answers them (k8s.io/apiserver
pkg/server/healthz/healthz.go, pkg/server/healthz.go).

Each endpoint is a list of named checks, in kube-apiserver's order:

  /healthz, /livez   ping, log, etcd, kms-providers, poststarthook/...
  /readyz            ping, log, etcd, etcd-readiness, kms-providers, informer-sync, poststarthook/..., shutdown

(kms-providers only with an --encryption-provider-config that has KMS v2 providers, or reloads itself.)

ping, log and shutdown are the gateway's own (ping always passes; log flushes the log handlers;
shutdown fails once the gateway is stopping). The others are the core's (server/objects/health.py), asked
through the CoreClient, so `capstan gateway --core` reports the same; a core that cannot be reached
fails `etcd`, the check that stands for the gateway's storage.

  GET /readyz                      200 "ok", or 500 listing every check and "readyz check failed"
  GET /readyz?verbose              every check ("[+]ping ok") then "readyz check passed"
  GET /readyz?exclude=etcd         etcd is not run: "[+]etcd excluded: ok" (a name matching no check
                                   adds "warn: some health checks cannot be excluded: ...")
  GET /readyz/etcd                 that check alone: "ok", or 500 "internal server error: <reason>"

kube-apiserver registers these paths exactly (PathRecorderMux.Handle): /readyz/ or an unknown check
name falls through to its NotFoundHandler, Go's http.NotFound.

`--health-port` serves the same answers from a thread of its own (gateway/health_listener.py), from the core's
checks as `Health.core` last returned them; `Health.assemble` lays out both.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import orjson
from aiohttp import web

from gateway import params
from gateway.client import CoreClient, CoreError
from gateway.handlers import respond
from gateway.handlers.request import query_of

log = logging.getLogger(__name__)

ENDPOINTS = ("healthz", "livez", "readyz")
STORE = "etcd"  # kube's name for its storage check (EtcdOptions.addEtcdHealthEndpoint); clients look for it
READINESS_ONLY = frozenset({"etcd-readiness", "etcd-quota", "informer-sync"})  # AddReadyzChecks in kube
# kube-apiserver's registration order: storage checks, informer-sync, then the post-start hooks in the order kube
# 1.28 adds them; Capstan's own hooks after those, by name.
_ORDER = {name: i for i, name in enumerate((
    STORE, "etcd-readiness", "etcd-quota", "kms-providers", "informer-sync",
    *(f"poststarthook/{hook}" for hook in (
        "start-kube-apiserver-admission-initializer", "generic-apiserver-start-informers",
        "priority-and-fairness-config-consumer", "priority-and-fairness-filter", "storage-object-count-tracker-hook",
        "start-apiextensions-informers", "start-apiextensions-controllers", "crd-informer-synced",
        "start-service-ip-repair-controllers", "rbac/bootstrap-roles", "scheduling/bootstrap-system-priority-classes",
        "priority-and-fairness-config-producer", "start-system-namespaces-controller", "bootstrap-controller",
        "start-cluster-authentication-info-controller", "start-kube-apiserver-identity-lease-controller",
        "start-deprecated-kube-apiserver-identity-lease-garbage-collector",
        "start-kube-apiserver-identity-lease-garbage-collector", "start-legacy-token-tracking-controller",
        "start-kube-aggregator-informers", "apiservice-registration-controller",
        "apiservice-status-available-controller", "kube-apiserver-autoregistration")),
    "autoregister-completion",
    *(f"poststarthook/{hook}" for hook in (
        "apiservice-openapi-controller", "apiservice-openapiv3-controller", "apiservice-discovery-controller")),
))}
_TEXT = "text/plain; charset=utf-8"
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}

Handler = Callable[[web.Request], Awaitable[web.Response]]


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    ok: bool
    reason: str = ""  # why it failed, for the check's own path; the endpoint itself withholds it


class Health:
    """The gateway's side of the health endpoints: its own checks, and the core's through `client`."""

    def __init__(self, client: CoreClient) -> None:
        self._client = client
        self.shutting_down = False

    async def results(self, endpoint: str) -> list[Result]:
        return self.assemble(endpoint, await self.core())

    def assemble(self, endpoint: str, core: list[Result]) -> list[Result]:
        """The endpoint's checks: the gateway's own around the core's `core` results."""
        if endpoint != "readyz":
            core = [r for r in core if r.name not in READINESS_ONLY]
        own = [Result("ping", True), _log_check()]
        if endpoint == "readyz":
            return [*own, *core, Result("shutdown", not self.shutting_down, "process is shutting down")]
        return [*own, *core]

    async def core(self) -> list[Result]:
        """The core's checks, asked now."""
        try:
            checks = await self._client.health()
        except CoreError as err:
            log.warning("health: the core did not answer: %s", err)
            return [Result(STORE, False, f"the core did not answer: {err}")]
        return [Result(name, ok, f"the core reports {name} failing; its log says why")
                for name, ok in sorted(checks.items(), key=lambda item: (_ORDER.get(item[0], len(_ORDER)), item[0]))]


def _log_check() -> Result:
    """kube's log check fails when logging is blocked; here, when a log handler cannot flush."""
    try:
        for handler in logging.getLogger().handlers:
            handler.flush()
    except Exception as err:
        return Result("log", False, f"logging blocked: {err}")
    return Result("log", True)


def report(endpoint: str, results: list[Result], query: Mapping[str, object], excluded: list[str]) -> web.Response:
    """handleRootHealth's answer for the endpoint's results."""
    left = set(excluded)
    lines, failed = [], False
    for result in results:
        if result.name in left:
            left.discard(result.name)
            lines.append(f"[+]{result.name} excluded: ok\n")
        elif result.ok:
            lines.append(f"[+]{result.name} ok\n")
        else:
            failed = True
            lines.append(f"[-]{result.name} failed: reason withheld\n")
    if left:
        names = ",".join(_go_quote(name) for name in sorted(left))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}\n")
    if failed:  # http.Error: the body ends in a newline
        return _text(500, "".join(lines) + f"{endpoint} check failed\n", nosniff=True)
    if "verbose" not in query:
        return _text(200, "ok", nosniff=True)
    return _text(200, "".join(lines) + f"{endpoint} check passed\n", nosniff=True)


def single(result: Result) -> web.Response:
    """adaptCheckToHandler's answer for one check."""
    if result.ok:
        return _text(200, "ok", nosniff=False)
    return _text(500, f"internal server error: {result.reason}\n", nosniff=True)


HEALTH_KEY: web.AppKey[Health] = web.AppKey("health", Health)


def add_routes(app: web.Application, client: CoreClient) -> Health:
    """Route the three endpoints and their checks on app, every method (kube's mux does not look at
    it); register before any catch-all route."""
    health = Health(client)
    app[HEALTH_KEY] = health

    async def on_shutdown(_: web.Application) -> None:
        health.shutting_down = True

    app.on_shutdown.append(on_shutdown)
    for endpoint in ENDPOINTS:
        app.router.add_route("*", f"/{endpoint}", _root(health, endpoint))
        app.router.add_route("*", f"/{endpoint}/{{check:.+}}", _check(health, endpoint))
    return health


def _root(health: Health, endpoint: str) -> Handler:
    async def handle(http: web.Request) -> web.Response:
        if (refused := _deadline(http)) is not None:
            return refused
        excluded = http.query.getall("exclude", [])
        return report(endpoint, await health.results(endpoint), http.query, excluded)

    return handle


def _check(health: Health, endpoint: str) -> Handler:
    async def handle(http: web.Request) -> web.Response:
        if (refused := _deadline(http)) is not None:
            return refused
        name = http.match_info["check"]
        found = [r for r in await health.results(endpoint) if r.name == name]
        return single(found[0]) if found else respond.go_not_found()

    return handle


def _deadline(http: web.Request) -> web.Response | None:
    """WithRequestDeadline runs before these handlers too: a malformed ?timeout is its 400."""
    try:
        params.deadline(query_of(http))
    except CoreError as err:
        return respond.status(None, err.status)
    return None


def _text(code: int, body: str, *, nosniff: bool) -> web.Response:
    headers = {"Content-Type": _TEXT, **(_NOSNIFF if nosniff else {})}
    return web.Response(status=code, body=body.encode(), headers=headers)


def _go_quote(name: str) -> str:
    """Go's %q for the names a client sent (near enough: JSON's escapes for control characters)."""
    return orjson.dumps(name).decode()
