"""The serving certificate as the listeners use it: read again when its files change (--tls-cert-file and
--tls-private-key-file are reloaded as kube-apiserver's dynamic serving content is), for the HTTPS listener
(an ssl.SSLContext) and the gRPC ports (server.service.grpc_server.KeyPair); and the credential the split form's
gateway proves itself with to the core.

Contract: a change is noticed at the first handshake after it (files are looked at most every `interval`
seconds); a pair that does not load (a key not matching its certificate, a half-written file) is refused with
a warning and the last good pair keeps serving. Safe to call from gRPC's threads.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from capstan.cli import clientcas, pki
from server.machinery.tlsroots import as_go_pool

log = logging.getLogger(__name__)

Stamp = tuple[tuple[int, int, int], ...]


class ServingFiles:
    """A certificate chain and its key, as files; `current()` is the last pair that loaded."""

    def __init__(self, cert_file: Path, key_file: Path, *, interval: float = 2.0) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._interval = interval
        self._lock = threading.Lock()
        self._checked = 0.0
        self._stamp: Stamp = ()
        self._version = 0
        self._pair = (b"", b"")
        if not self._reload():
            raise OSError(f"{cert_file}, {key_file}: not a certificate and its private key")

    def current(self) -> tuple[int, bytes, bytes]:
        """(version, PEM key, PEM chain); the version grows by one at every reload."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self._interval:
                self._checked = now
                if self._files_stamp() != self._stamp:
                    self._reload()
            return self._version, *self._pair

    def _files_stamp(self) -> Stamp:
        try:
            stats = [path.stat() for path in (self.cert_file, self.key_file)]
        except OSError:
            return self._stamp  # a file being replaced: look again at the next check
        return tuple((st.st_ino, st.st_mtime_ns, st.st_size) for st in stats)

    def _reload(self) -> bool:
        stamp = self._files_stamp()
        try:
            chain = self.cert_file.read_bytes()
            key = self.key_file.read_bytes()
            certificate = x509.load_pem_x509_certificates(chain)[0]
            private = serialization.load_pem_private_key(key, password=None)
            if certificate.public_key() != private.public_key():
                raise ValueError("the private key is not the certificate's")
        except (OSError, ValueError, TypeError) as err:
            log.warning("serving certificate %s not (re)loaded, the previous one stays: %s", self.cert_file, err)
            self._stamp = stamp
            return False
        self._stamp = stamp
        self._version += 1
        self._pair = (key, chain)
        if self._version > 1:
            log.info("serving certificate %s reloaded", self.cert_file)
        return True


def server_context(files: ServingFiles, client_ca: bytes) -> ssl.SSLContext:
    """TLS 1.2+ for the HTTPS listener: a client certificate is requested, naming the CAs of `client_ca` (PEM
    bundle; empty requests none), and, when sent, verified against them. Each handshake serves the files' current
    pair."""
    contexts: dict[int, ssl.SSLContext] = {}

    def build() -> ssl.SSLContext:
        context = as_go_pool(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))  # client certificates as Go verifies them
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(files.cert_file, files.key_file)
        if client_ca:
            context.load_verify_locations(cadata=client_ca.decode())
            context.verify_mode = ssl.CERT_OPTIONAL
            clientcas.advertise(context, client_ca)  # the CertificateRequest names them, as Go's server does
        return context

    def choose(connection: ssl.SSLObject, _name: str | None, _context: ssl.SSLContext) -> None:
        version = files.current()[0]
        if version not in contexts:
            try:
                fresh = build()
            except (OSError, ssl.SSLError) as err:
                log.warning("serving certificate %s not reloaded: %s", files.cert_file, err)
                return
            contexts.clear()
            contexts[version] = fresh
        connection.context = contexts[version]

    first = build()
    contexts[files.current()[0]] = first
    first.sni_callback = choose
    return first


def front_proxy_credentials(certs: pki.CertDir, cert_file: Path | None, key_file: Path | None
                            ) -> grpc.ChannelCredentials:
    """What the split form's gateway presents to the core's mTLS port: the front-proxy client certificate,
    and the cert dir's CA to verify the core's serving certificate."""
    return grpc.ssl_channel_credentials(
        root_certificates=certs.ca_cert.read_bytes(),
        private_key=(key_file or certs.front_proxy_client_key).read_bytes(),
        certificate_chain=(cert_file or certs.front_proxy_client_cert).read_bytes())
