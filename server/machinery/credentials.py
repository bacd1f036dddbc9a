"""What a caller presented, as the core receives it from either transport (kube's authenticator.Request).

The gateway and the gRPC servicer only collect these; authenticators (server/auth/authn/) decide who they
prove. Contract of each field:
- token: the bearer token as sent (`Authorization: Bearer ...` over REST, `authorization` metadata over gRPC).
- certificate: the DER client certificate whose key the peer proved it holds on its TLS connection (the
  HTTPS listener's or the gRPC mTLS port's handshake). Who issued it is checked by the x509 authenticator.
- proxy: set only when the TLS peer is itself a client certificate; the requestheader authenticator then
  trusts `proxy_user`/`proxy_groups`/`proxy_extra` if that certificate is one of a front proxy's.
- impersonation: Impersonate-* headers (or metadata); authorized after authentication (impersonation.py).
- source_ip, user_agent, request_uri: what audit records (a REST request's URI; a gRPC call's method).
"""

from __future__ import annotations

from dataclasses import dataclass

from server.machinery.user import Extra


@dataclass(frozen=True, slots=True)
class Impersonation:
    user: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Extra = ()
    # A header was sent: an Impersonate-Group or -Extra without Impersonate-User is a 400/500 in kube.
    requested: bool = False


@dataclass(frozen=True, slots=True)
class ProxyAssertion:
    """An identity a front proxy asserts (X-Remote-User/-Group/-Extra-*), with the proxy's own certificate."""

    certificate: bytes
    user: str
    groups: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str = ""
    certificate: bytes = b""
    proxy: ProxyAssertion | None = None
    impersonation: Impersonation = Impersonation()
    # Facts about the request for audit, not credentials: where it came from and what it asked for.
    source_ip: str = ""
    user_agent: str = ""
    request_uri: str = ""


NONE = Credentials()
