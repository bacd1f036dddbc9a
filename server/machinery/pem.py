"""Certificates as the authenticators need them: CA bundles read from PEM files, and "did one of these CAs
issue this certificate, and is it valid now", answered once per certificate (the answer is cached by the
certificate's bytes, so a client that keeps its certificate pays for one signature check per validity)."""

from __future__ import annotations

import datetime
from collections import OrderedDict
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CACHE_SIZE = 4096


def load_bundle(path: Path | None) -> tuple[x509.Certificate, ...]:
    """Every certificate in a PEM file; an absent path is an empty bundle."""
    if path is None:
        return ()
    return tuple(x509.load_pem_x509_certificates(path.read_bytes()))


class Verifier:
    """Verifies client certificates against a CA bundle (kube's x509 VerifyOptions with KeyUsages ClientAuth)."""

    def __init__(self, roots: tuple[x509.Certificate, ...]) -> None:
        self._roots = roots
        self._verified: OrderedDict[bytes, x509.Certificate | None] = OrderedDict()

    def issued(self, der: bytes) -> x509.Certificate | None:
        """The certificate when one of the roots issued it and it allows client auth, whatever the time; else
        None."""
        if der in self._verified:
            self._verified.move_to_end(der)
            return self._verified[der]
        cert = self._check(der)
        self._verified[der] = cert
        if len(self._verified) > CACHE_SIZE:
            self._verified.popitem(last=False)
        return cert

    def verify(self, der: bytes) -> x509.Certificate | None:
        """The certificate when one of the roots issued it, it is valid now and allows client auth; else None."""
        cert = self.issued(der)
        if cert is None:
            return None
        now = datetime.datetime.now(datetime.UTC)
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            return None
        return cert

    def _check(self, der: bytes) -> x509.Certificate | None:
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError:
            return None
        try:
            usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
            if ExtendedKeyUsageOID.CLIENT_AUTH not in usages:
                return None
        except x509.ExtensionNotFound:
            pass
        for root in self._roots:
            try:
                cert.verify_directly_issued_by(root)
            except (ValueError, TypeError, Exception):  # InvalidSignature and friends: not this root
                continue
            return cert
        return None


def common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def organizations(cert: x509.Certificate) -> tuple[str, ...]:
    return tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
