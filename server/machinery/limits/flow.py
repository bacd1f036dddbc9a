"""Who a request's flow is, for fair queuing: kube's APF classifies by the authenticated user; at the front of
a transport, before authentication, the credential stands for the user. A bearer token, a front proxy's
asserted user, a client certificate, else the source address (without port) — hashed, so no credential is
kept, and the same on both transports (a split gateway forwards its client's credential and address)."""

from __future__ import annotations

import hashlib

from server.machinery.credentials import Credentials


def of(credentials: Credentials) -> int:
    """A 64-bit flow key; two requests with the same credential share it."""
    if credentials.token:
        material = b"token\0" + credentials.token.encode("utf-8", "replace")
    elif credentials.proxy is not None and credentials.proxy.user:
        material = b"user\0" + credentials.proxy.user.encode("utf-8", "replace")
    elif credentials.certificate:
        material = b"cert\0" + credentials.certificate
    else:
        material = b"addr\0" + host(credentials.source_ip).encode("utf-8", "replace")
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big")


def host(address: str) -> str:
    """The host of a peer address: `10.0.0.1`, gRPC's `ipv4:10.0.0.1:5000` and `ipv6:[::1]:5000` alike."""
    scheme, colon, rest = address.partition(":")
    if not colon or scheme not in ("ipv4", "ipv6"):
        return address
    if rest.startswith("["):
        return rest[1:].partition("]")[0]
    return rest.rpartition(":")[0] if ":" in rest else rest
