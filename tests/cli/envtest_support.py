"""controller-runtime 0.16's envtest start-up, in Python, for the envtest tests and bench.envtest: its tiny CA
(pkg/internal/testing/certs/tinyca.go), the files it writes into --cert-dir and the flags it passes
(controlplane/apiserver.go, auth.go), its `--help` probe and its readiness polling (process/process.go).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_FILES = ("apiserver.crt", "apiserver.key", "sa-signer.crt", "sa-signer.key", "client-cert-auth-ca.crt")


@dataclass(frozen=True)
class Pair:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:  # PKCS#8, as tinyca's AsBytes
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())


class TinyCA:
    """envtest's certs.TinyCA: a self-signed P-256 CA "envtest-environment" (O envtest), leaves for a week."""

    def __init__(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "envtest"),
                          x509.NameAttribute(NameOID.COMMON_NAME, "envtest-environment")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now)
                .not_valid_after(now + datetime.timedelta(days=3650))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                             content_commitment=False, data_encipherment=False, key_agreement=False,
                                             crl_sign=False, encipher_only=False, decipher_only=False),
                               critical=True)
                .sign(key, hashes.SHA256()))
        self.ca = Pair(cert, key)
        self.serial = 1

    def _leaf(self, common_name: str, organizations: list[str], usage: x509.ObjectIdentifier,
              names: list[x509.GeneralName]) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                             x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.ca.cert.subject)
                   .public_key(key.public_key()).serial_number(self.serial).not_valid_before(now)
                   .not_valid_after(now + datetime.timedelta(hours=168))
                   .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False,
                                                content_commitment=False, data_encipherment=False,
                                                key_agreement=False, crl_sign=False, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        self.serial += 1
        return Pair(builder.sign(self.ca.key, hashes.SHA256()), key)

    def serving(self) -> Pair:
        """NewServingCert(): "localhost", with the addresses localhost resolves to."""
        return self._leaf("localhost", ["envtest"], ExtendedKeyUsageOID.SERVER_AUTH,
                          [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])

    def client(self, name: str, groups: list[str]) -> Pair:
        return self._leaf(name, groups, ExtendedKeyUsageOID.CLIENT_AUTH, [])


@dataclass(frozen=True)
class CertDir:
    """What envtest writes into --cert-dir before it starts kube-apiserver, and the CAs it keeps."""

    serving_ca: TinyCA  # signed apiserver.crt; the clients trust it
    users: TinyCA  # client-cert-auth-ca.crt: AddUser's certificates come from it


def write_cert_dir(cert_dir: Path) -> CertDir:
    """populateAPIServerCerts and CertAuthn.Start: the serving pair, the service-account signer, the client CA,
    each 0640."""
    serving_ca = TinyCA()
    serving = serving_ca.serving()
    (cert_dir / "apiserver.crt").write_bytes(serving.cert_pem())
    (cert_dir / "apiserver.key").write_bytes(serving.key_pem())
    signer = TinyCA().ca
    (cert_dir / "sa-signer.crt").write_bytes(signer.cert_pem())
    (cert_dir / "sa-signer.key").write_bytes(signer.key_pem())
    users = TinyCA()
    (cert_dir / "client-cert-auth-ca.crt").write_bytes(users.ca.cert_pem())
    for name in CERT_FILES:
        (cert_dir / name).chmod(0o640)
    return CertDir(serving_ca, users)


def envtest_flags(cert_dir: Path, etcd_url: str, port: int, binary: Path) -> list[str]:
    """APIServer.defaultArgs with CertAuthn's client CA, --insecure-port only if `--help` lists it, rendered as
    Arguments.AsStrings does."""
    address = f"https://127.0.0.1:{port}"
    values = {
        "allow-privileged": ["true"], "authorization-mode": ["RBAC"], "bind-address": ["127.0.0.1"],
        "cert-dir": [str(cert_dir)], "client-ca-file": [str(cert_dir / "client-cert-auth-ca.crt")],
        "disable-admission-plugins": ["ServiceAccount"], "etcd-servers": [etcd_url], "secure-port": [str(port)],
        "service-account-issuer": [address + "/"],
        "service-account-key-file": [str(cert_dir / "sa-signer.crt")],
        "service-account-signing-key-file": [str(cert_dir / "sa-signer.key")],
        "service-cluster-ip-range": ["10.0.0.0/24"],
    }
    if has_flag(binary, "insecure-port"):
        values["insecure-port"] = ["0"]
    return as_strings(values)


def has_flag(binary: Path, flag: str) -> bool:
    """process.State.CheckFlag: `binary --help` (combined output) matched by (?m)^\\s*--flag\\b."""
    ran = subprocess.run([str(binary), "--help"], capture_output=True, timeout=60, check=True)
    return re.search(rf"(?m)^\s*--{re.escape(flag)}\b", (ran.stdout + ran.stderr).decode()) is not None


def as_strings(values: dict[str, list[str]]) -> list[str]:
    """process.Arguments.AsStrings: sorted by name, `--name=value` per value, `--name` for an empty list."""
    out: list[str] = []
    for name in sorted(values):
        out.extend([f"--{name}={v}" for v in values[name]] or [f"--{name}"])
    return out


def poll_healthz(url: str, process: subprocess.Popen[bytes], timeout: float) -> float:
    """pollURLUntilOK: GET every 100 ms, TLS unverified, no credentials, until 200; the seconds it took."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"kube-apiserver exited with {process.returncode} before it was ready")
        with contextlib.suppress(OSError, urllib.error.URLError), \
                urllib.request.urlopen(url, context=context, timeout=2) as answer:
            if answer.status == 200:
                return time.monotonic() - started
        time.sleep(0.1)
    raise TimeoutError(f"kube-apiserver was not healthy within {timeout}s")
