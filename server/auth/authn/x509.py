"""x509 client certificates (kube's --client-ca-file): CN is the user, each O a group.

The certificate reaches the core already proven to belong to the caller (the TLS handshake checked possession of
its key); this authenticator decides whether a CA the server trusts for users issued it. A certificate it did
not issue is an error (401), so a bad certificate never falls through to anonymous.
"""

from __future__ import annotations

from server.auth.errors import Unauthorized
from server.machinery.credentials import Credentials
from server.machinery.pem import Verifier, common_name, organizations
from server.machinery.user import UserInfo


class X509Authenticator:
    def __init__(self, verifier: Verifier) -> None:
        self._verifier = verifier

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        if not credentials.certificate:
            return None
        cert = self._verifier.verify(credentials.certificate)
        if cert is None:
            raise Unauthorized("x509: certificate signed by unknown authority, expired or not for client auth")
        name = common_name(cert)
        if not name:
            raise Unauthorized("x509: certificate has no common name")
        return UserInfo(name, groups=organizations(cert))
