"""Request-header authentication (kube's --requestheader-*): a front proxy that proves itself with a client
certificate from the requestheader CA (and, when names are configured, with an allowed common name) asserts the
user, groups and extra of the request it forwards. Without such a certificate the headers mean nothing.

A ProxyAssertion whose certificate is not a front proxy's is an error (401): someone sent X-Remote-User headers
with a certificate the server does not trust for that.
"""

from __future__ import annotations

from server.auth.errors import Unauthorized
from server.machinery.credentials import Credentials
from server.machinery.pem import Verifier, common_name
from server.machinery.user import UserInfo


class RequestHeaderAuthenticator:
    def __init__(self, verifier: Verifier, allowed_names: tuple[str, ...]) -> None:
        self._verifier = verifier
        self._allowed = frozenset(allowed_names)

    def is_proxy(self, der: bytes) -> bool:
        """The certificate is a front proxy's: issued by the requestheader CA, with an allowed name."""
        if not der:
            return False
        cert = self._verifier.verify(der)
        return cert is not None and (not self._allowed or common_name(cert) in self._allowed)

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        proxy = credentials.proxy
        if proxy is None:
            return None
        if not self.is_proxy(proxy.certificate):
            raise Unauthorized("request-header assertion from a certificate that is not a front proxy's")
        if not proxy.user:
            return None
        return UserInfo(proxy.user, groups=proxy.groups, extra=proxy.extra)
