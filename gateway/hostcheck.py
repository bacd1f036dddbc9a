"""The Host check of `capstan serve --insecure`: plain HTTP that trusts everyone must not be reachable from a
web page through DNS rebinding (a hostile name resolving to 127.0.0.1 makes a browser send the API requests
with that name as Host). Only loopback names are answered: localhost, 127.0.0.0/8 and [::1], with any port.

Contract: any other Host, or none, is a 403 Status before routing; nothing else changes.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Callable

from aiohttp import web

from gateway.client import failure
from gateway.handlers import respond

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@functools.lru_cache(maxsize=256)  # a server is asked under a few names; an address is parsed once, not per request
def is_loopback_host(host: str) -> bool:
    """`host` is a Host header's value: a name or address, maybe bracketed (IPv6), maybe with a port."""
    name = host.strip()
    if name.startswith("["):
        name, bracket, rest = name[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and _is_port(rest[1:]))):
            return False
    elif ":" in name:
        name, _, port = name.partition(":")
        if not _is_port(port):
            return False  # a second colon: an IPv6 address without its brackets is no Host
    name = name.lower().removesuffix(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5


@web.middleware
async def loopback_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    host = request.headers.get("Host", "")
    if not is_loopback_host(host):
        return respond.status(None, failure(
            403, "Forbidden",
            f'forbidden: Host "{host}" is not a loopback name: an insecure server answers only requests '
            "to localhost, 127.0.0.1 or [::1]"))
    return await handler(request)


def guard(app: web.Application) -> None:
    """Check every request to `app` first (before it is started)."""
    app.middlewares.insert(0, loopback_only)
