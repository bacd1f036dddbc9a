"""x509 client certificates (kube's --client-ca-file): CN is the user, each O a group.

The certificate reaches the core already proven to belong to the caller (the TLS handshake checked possession of
its key); this authenticator decides whether a CA the server trusts for users issued it. A certificate it did
not issue is an error (401), so a bad certificate never falls through to anonymous.

What a certificate proves is worked out once per certificate and kept (bounded, the oldest out): whether
a trusted CA issued it, its validity window and its user. A request then costs one lookup by the certificate's
bytes and a comparison of the clock with the window, which is checked on every request.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

from server.auth.errors import Unauthorized
from server.machinery.credentials import Credentials
from server.machinery.pem import CACHE_SIZE, Verifier, common_name, organizations
from server.machinery.user import UserInfo

UNTRUSTED = "x509: certificate signed by unknown authority, expired or not for client auth"


@dataclass(frozen=True, slots=True)
class _Identity:
    """A certificate's verdict: its user (None when refused, `why` says why) and when it is valid (unix s)."""

    user: UserInfo | None
    why: str = ""
    not_before: float = 0.0
    not_after: float = 0.0


class X509Authenticator:
    def __init__(self, verifier: Verifier) -> None:
        self._verifier = verifier
        self._known: OrderedDict[bytes, _Identity] = OrderedDict()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        der = credentials.certificate
        if not der:
            return None
        identity = self._known.get(der)
        if identity is None:
            identity = self._identify(der)
            self._known[der] = identity
            if len(self._known) > CACHE_SIZE:
                self._known.popitem(last=False)
        if identity.user is None:
            raise Unauthorized(identity.why)
        if not identity.not_before <= time.time() <= identity.not_after:
            raise Unauthorized(UNTRUSTED)
        return identity.user

    def _identify(self, der: bytes) -> _Identity:
        cert = self._verifier.issued(der)
        if cert is None:
            return _Identity(None, UNTRUSTED)
        name = common_name(cert)
        if not name:
            return _Identity(None, "x509: certificate has no common name")
        return _Identity(UserInfo(name, groups=organizations(cert)), "", cert.not_valid_before_utc.timestamp(),
                         cert.not_valid_after_utc.timestamp())
