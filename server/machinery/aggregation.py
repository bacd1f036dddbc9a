"""Dialing an extension API server as kube-apiserver's aggregator dials it, shared by the gateway (which proxies
requests) and the core (whose availability checks and discovery fetches call the backend).

- TLS: the backend's serving certificate is verified against the APIService's caBundle with the server name
  `<service>.<namespace>.svc`, or not at all with insecureSkipTLSVerify; the aggregator presents the front-proxy
  client certificate (kube's --proxy-client-cert-file/--proxy-client-key-file), which the backend trusts through
  its requestheader client CA.
- Identity: the user goes as kube's front-proxy headers (client-go's transport.SetAuthProxyHeaders): any
  X-Remote-* the client sent are removed, then X-Remote-User, one X-Remote-Group per group and one
  X-Remote-Extra-<key, path-escaped> per value are set. The caller's own credentials (Authorization,
  Impersonate-*) are not forwarded: kube's authentication and impersonation filters remove them before the proxy.
"""

from __future__ import annotations

import ssl
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from server.machinery.tlsroots import as_go_pool

REMOTE_USER = "X-Remote-User"
REMOTE_GROUP = "X-Remote-Group"
REMOTE_EXTRA = "X-Remote-Extra-"

# The identity the availability check presents (kube's available_controller: system:masters, so the check is
# never refused for want of rights).
CHECKER_USER = "system:kube-aggregator"
CHECKER_GROUPS = ("system:masters",)

# Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy replaces, never copied to the backend. A request's
# Content-Length is kept: its body is relayed byte for byte, so the backend reads it as the client sent it.
_DROPPED = frozenset({
    "authorization", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host",
})
# Hop-by-hop headers and what the proxy's server sets itself, never copied back to the client. The body is relayed
# as the backend encoded it, so its Content-Encoding is kept.
RESPONSE_DROPPED = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
    "upgrade", "content-length", "date", "server",
})


@dataclass(frozen=True, slots=True)
class ProxyClientCertificate:
    """The certificate the aggregator presents to extension API servers (PEM files)."""

    cert_file: Path
    key_file: Path


def service_server_name(name: str, namespace: str) -> str:
    """The name a Service's serving certificate is verified for, as the aggregator's TLS config names it."""
    return f"{name}.{namespace}.svc"


class ClientContexts:
    """One TLS client context per (caBundle, insecure) pair: building one parses the CA and the client key, which
    costs more than the request it serves; the client certificate is read once."""

    def __init__(self, client: ProxyClientCertificate | None) -> None:
        self._client = client
        self._contexts: dict[tuple[bytes, bool], ssl.SSLContext] = {}

    def context(self, ca_bundle: bytes, insecure: bool) -> ssl.SSLContext:
        """The context for a backend: verified against the caBundle alone (as Go's TLS config with RootCAs), the
        system's roots when it is empty, nothing when insecure. ssl.SSLError for a caBundle that holds no
        certificate Python can read (kube's transport building error)."""
        key = (b"" if insecure else ca_bundle, insecure)
        found = self._contexts.get(key)
        if found is not None:
            return found
        context = as_go_pool(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))  # hostname checked, a certificate required
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif ca_bundle:
            context.load_verify_locations(cadata=ca_bundle.decode("ascii", "replace"))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self._client is not None:
            context.load_cert_chain(str(self._client.cert_file), str(self._client.key_file))
        if len(self._contexts) > 256:
            self._contexts.clear()
        self._contexts[key] = context
        return context


def forwarded_headers(headers: Iterable[tuple[str, str]], user: str, groups: Iterable[str],
                      extra: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """The request headers sent to the backend: the client's, less hop-by-hop headers, credentials and any
    front-proxy or impersonation headers it sent, plus the front-proxy headers for `user`."""
    out: list[tuple[str, str]] = []
    for name, value in headers:
        lowered = name.lower()
        if lowered in _DROPPED or lowered.startswith(("x-remote-", "impersonate-")):
            continue
        out.append((name, value))
    out.append((REMOTE_USER, user))
    out.extend((REMOTE_GROUP, group) for group in groups)
    for key, values in extra.items():
        escaped = urllib.parse.quote(key, safe="")
        out.extend((REMOTE_EXTRA + escaped, value) for value in values)
    return out
