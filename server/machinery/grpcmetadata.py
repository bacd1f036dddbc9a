"""Credentials as gRPC metadata, both ways: what a gRPC client (or the split form's gateway) sends, and what
the servicer makes of a call's metadata and TLS peer. One module, so the two sides cannot drift.

A direct gRPC client sends `authorization: Bearer <token>` and/or presents a client certificate on the mTLS
port, and may send Impersonate-* as metadata (`impersonate-user`, `impersonate-group` (repeated),
`impersonate-uid`, `impersonate-extra-<key>`).

A front proxy (the split form's HTTP gateway, proving itself with a requestheader-CA certificate on the mTLS
port) forwards the credentials of the request it serves and marks the call with `capstan-forwarded-for`
(the client's address): the client's token in `authorization`, its TLS client certificate in
`capstan-client-certificate-bin`, its X-Remote-* assertions as `x-remote-user`/`x-remote-group`/
`x-remote-extra-<key>` (trusted only if that forwarded certificate is itself a front proxy's), and its
Impersonate-* as above. A call from a front proxy without the mark is the proxy acting as itself (its
discovery lookups). From any other peer, the forwarding keys are ignored.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from functools import lru_cache

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from server.machinery.credentials import Credentials, Impersonation, ProxyAssertion
from server.machinery.pem import common_name, organizations

FORWARDED_FOR = "capstan-forwarded-for"
CLIENT_CERTIFICATE = "capstan-client-certificate-bin"
REQUEST_URI = "capstan-request-uri"
IMPERSONATE_USER = "impersonate-user"
IMPERSONATE_UID = "impersonate-uid"
IMPERSONATE_GROUP = "impersonate-group"
IMPERSONATE_EXTRA = "impersonate-extra-"
REMOTE_USER = "x-remote-user"
REMOTE_GROUP = "x-remote-group"
REMOTE_EXTRA = "x-remote-extra-"

Metadata = Sequence[tuple[str, str | bytes]]


def to_metadata(credentials: Credentials, *, forwarded: bool) -> list[tuple[str, str | bytes]]:
    """The metadata that carries `credentials` (forwarded: as a front proxy forwarding a request)."""
    out: list[tuple[str, str | bytes]] = []
    if credentials.token:
        out.append(("authorization", "Bearer " + credentials.token))
    imp = credentials.impersonation
    if imp.user:
        out.append((IMPERSONATE_USER, imp.user))
    if imp.uid:
        out.append((IMPERSONATE_UID, imp.uid))
    out += [(IMPERSONATE_GROUP, g) for g in imp.groups]
    out += [(IMPERSONATE_EXTRA + _key(k), v) for k, values in imp.extra for v in values]
    if forwarded:
        out.append((FORWARDED_FOR, credentials.source_ip or "unknown"))
        if credentials.request_uri:
            out.append((REQUEST_URI, urllib.parse.quote(credentials.request_uri, safe="/?&=:,;+@!$'()*~%")))
        if credentials.certificate:
            out.append((CLIENT_CERTIFICATE, credentials.certificate))
        proxy = credentials.proxy
        if proxy is not None and proxy.user:
            out.append((REMOTE_USER, proxy.user))
            out += [(REMOTE_GROUP, g) for g in proxy.groups]
            out += [(REMOTE_EXTRA + _key(k), v) for k, values in proxy.extra for v in values]
    return out


def _key(key: str) -> str:
    """An extra key as a metadata key suffix (percent-encoded, as kube encodes header names)."""
    return urllib.parse.quote(key.lower(), safe="")


def _unkey(suffix: str) -> str:
    return urllib.parse.unquote(suffix).lower()


@lru_cache(maxsize=1024)
def pem_to_der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)


@lru_cache(maxsize=256)
def _subject(der: bytes) -> tuple[str, tuple[str, ...]]:
    cert = x509.load_der_x509_certificate(der)
    return common_name(cert), organizations(cert)


def from_call(metadata: Metadata, peer_der: bytes, user_agent: str, peer_address: str,
              is_proxy: Callable[[bytes], bool]) -> Credentials:
    """The credentials a call presents: peer_der is the verified TLS client certificate (b"" without one)."""
    token = ""
    impersonation: dict[str, list[str]] = {}
    extra: dict[str, list[str]] = {}
    remote: dict[str, list[str]] = {}
    remote_extra: dict[str, list[str]] = {}
    forwarded_for = ""
    forwarded_cert = b""
    request_uri = ""
    for key, value in metadata:
        if isinstance(value, bytes):
            if key == CLIENT_CERTIFICATE:
                forwarded_cert = value
            continue
        if key == "authorization":
            scheme, _, rest = value.partition(" ")
            if scheme.lower() == "bearer":
                token = rest.strip()
        elif key in (IMPERSONATE_USER, IMPERSONATE_UID, IMPERSONATE_GROUP):
            impersonation.setdefault(key, []).append(value)
        elif key.startswith(IMPERSONATE_EXTRA):
            extra.setdefault(_unkey(key[len(IMPERSONATE_EXTRA):]), []).append(value)
        elif key in (REMOTE_USER, REMOTE_GROUP):
            remote.setdefault(key, []).append(value)
        elif key.startswith(REMOTE_EXTRA):
            remote_extra.setdefault(_unkey(key[len(REMOTE_EXTRA):]), []).append(value)
        elif key == FORWARDED_FOR:
            forwarded_for = value
        elif key == REQUEST_URI:
            request_uri = urllib.parse.unquote(value)
    imp = Impersonation(
        user=(impersonation.get(IMPERSONATE_USER) or [""])[0],
        uid=(impersonation.get(IMPERSONATE_UID) or [""])[0],
        groups=tuple(impersonation.get(IMPERSONATE_GROUP, ())),
        extra=tuple((k, tuple(v)) for k, v in sorted(extra.items())),
        requested=bool(impersonation or extra),
    )
    proxy_peer = bool(peer_der) and is_proxy(peer_der)
    if proxy_peer and forwarded_for:  # a front proxy forwarding its client's request
        proxy = None
        if remote.get(REMOTE_USER):
            proxy = ProxyAssertion(forwarded_cert, remote[REMOTE_USER][0], tuple(remote.get(REMOTE_GROUP, ())),
                                   tuple((k, tuple(v)) for k, v in sorted(remote_extra.items())))
        return Credentials(token=token, certificate=forwarded_cert, proxy=proxy, impersonation=imp,
                           source_ip=forwarded_for, user_agent=user_agent, request_uri=request_uri)
    if proxy_peer:  # the front proxy as itself
        name, groups = _subject(peer_der)
        return Credentials(token=token, proxy=ProxyAssertion(peer_der, name, groups), impersonation=imp,
                           source_ip=peer_address, user_agent=user_agent)
    return Credentials(token=token, certificate=peer_der, impersonation=imp, source_ip=peer_address,
                       user_agent=user_agent)
