"""What an HTTP request presents, collected for the core to judge (server/machinery/credentials.py): the bearer
token, the TLS client certificate, a front proxy's X-Remote-* assertion, Impersonate-* headers, and the facts
audit records. The gateway decides nothing from them.

A connection's client certificate is read from its TLS object once and the same bytes handed to every request
on it (the core's caches then find it without hashing it again).

The request URI audit records is the one sent, its escapes as they came (Go's URL.RequestURI()).

X-Remote-* headers are read only from a request that came with a client certificate (the core then checks that
certificate is a front proxy's); kube's default header names are used (X-Remote-User, X-Remote-Group,
X-Remote-Extra-<key>).
"""

from __future__ import annotations

import ssl
import urllib.parse
import weakref

from aiohttp import web

from server.machinery.credentials import Credentials, Impersonation, ProxyAssertion

_EXTRA = "impersonate-extra-"
_REMOTE_EXTRA = "x-remote-extra-"


# A request's credentials, collected once: the limits' flow key and the core's calls read the same.
CREDENTIALS_KEY = web.RequestKey("capstan_credentials", Credentials)

_NO_IMPERSONATION = Impersonation()  # what nearly every request asks: shared, as values are

# Each TLS connection's client certificate (DER, b"" without one), for as long as the connection lives.
_PEERS: weakref.WeakKeyDictionary[ssl.SSLObject, bytes] = weakref.WeakKeyDictionary()


def _peer_certificate(http: web.Request) -> bytes:
    transport = http.transport
    if transport is None:
        return b""
    tls = transport.get_extra_info("ssl_object")
    if not isinstance(tls, ssl.SSLObject):
        return b""
    der = _PEERS.get(tls)
    if der is None:
        der = _PEERS[tls] = tls.getpeercert(binary_form=True) or b""
    return der


def _extra(http: web.Request, prefix: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    found: dict[str, list[str]] = {}
    for name, value in http.headers.items():
        lowered = name.lower()
        if lowered.startswith(prefix):
            found.setdefault(urllib.parse.unquote(lowered[len(prefix):]), []).append(value)
    return tuple((k, tuple(v)) for k, v in sorted(found.items()))


def of(http: web.Request) -> Credentials:
    """The request's credentials, collected at its first asking and kept with it."""
    try:  # not http.get: see gateway/parsed.py
        return http[CREDENTIALS_KEY]
    except KeyError:
        found = http[CREDENTIALS_KEY] = of_request(http)
        return found


def of_request(http: web.Request) -> Credentials:
    headers = http.headers
    token = ""
    scheme, _, rest = headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        token = rest.strip()
    certificate = _peer_certificate(http)
    proxy = None
    if certificate and "X-Remote-User" in headers:
        proxy = ProxyAssertion(certificate, headers["X-Remote-User"], tuple(headers.getall("X-Remote-Group", ())),
                               _extra(http, _REMOTE_EXTRA))
    impersonation = _NO_IMPERSONATION
    # One scan of the names joined finds most requests, which impersonate no one; a hit is then checked name by name.
    if "impersonate-" in " ".join(headers).lower() and any(
            name.lower().startswith("impersonate-") for name in headers):
        impersonation = Impersonation(
            user=headers.get("Impersonate-User", ""),
            uid=headers.get("Impersonate-Uid", ""),
            groups=tuple(headers.getall("Impersonate-Group", ())),
            extra=_extra(http, _EXTRA),
            requested=True,
        )
    return Credentials(token=token, certificate=certificate, proxy=proxy, impersonation=impersonation,
                       source_ip=http.remote or "", user_agent=headers.get("User-Agent", ""),
                       request_uri=http.raw_path)
