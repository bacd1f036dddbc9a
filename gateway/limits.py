"""The first link of the gateway's chain after metrics: load shedding (server/machinery/limits/). Every request but
the long-running ones (watches, `?watch=true` lists) and the health probes (APF's exempt `probes` schema)
is counted as read-only (GET/HEAD, get and list) or mutating before its credentials are judged, so a flood
costs no authentication; over the limit it waits in its flow's queue or gets kube's 429 Status with
Retry-After. The in-process transport reaches the core without the gRPC servicer's limiter, so a request
is counted here once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway import metrics, parsed, requestinfo
from gateway.credentials import of as credentials_of
from gateway.handlers import respond
from gateway.parking import ParkingLot
from server.machinery import errors
from server.machinery.limits import flow
from server.machinery.limits.config import Kind
from server.machinery.limits.limiter import Limiter

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_PROBES = ("/healthz", "/livez", "/readyz")
_PROBE_PATHS = tuple(probe + "/" for probe in _PROBES)
_READ_ONLY_VERBS = frozenset({"get", "list"})


def kind_of(http: web.Request) -> Kind | None:
    """The request's kind, or None for a request the limits do not count."""
    path = http.path
    if path in _PROBES or path.startswith(_PROBE_PATHS):
        return None
    info = parsed.info_of(http)
    if isinstance(info, requestinfo.RequestInfo):
        if info.verb == "watch":
            return None
        http[metrics.INFO_KEY] = info  # so a refusal is counted in apiserver_request_total
        return Kind.READ_ONLY if info.verb in _READ_ONLY_VERBS else Kind.MUTATING
    return Kind.READ_ONLY if http.method in ("GET", "HEAD") else Kind.MUTATING


def middleware(limiter: Limiter, lot: ParkingLot | None = None) -> Middleware:
    """`lot` parks the connections of flooding flows once answered (gateway/parking.py); None: none is."""
    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        kind = kind_of(request)
        if kind is None:
            return await handler(request)
        key = flow.of(credentials_of(request))
        if not limiter.try_acquire(kind):  # nearly always admitted at once, without a coroutine
            try:
                await limiter.acquire(kind, key)
            except errors.ApiError as err:
                if lot is not None:
                    lot.answered(request, key)
                return respond.status(None, err.status)
        try:
            return await handler(request)
        finally:
            limiter.release(kind)
            if lot is not None:
                lot.answered(request, key)
                lot.finished()

    return limit
