"""The cert dir: the CA, certificates and keys a secure Capstan needs, generated on first start as kube-apiserver
self-signs into its --cert-dir (and as kubeadm lays them out), reused on every later start.

Contract:
- Files present are reused, never regenerated: a CA is made once, and certificates it signed keep verifying.
- A leaf certificate (serving, admin, front-proxy client) is issued again only when it is missing, expired,
  not signed by the CA beside it, or, for the serving certificate, does not cover the bind address or the
  `kubernetes` Service IP; its key is kept.
- Private keys are written 0600 and every file atomically (a crash leaves the old file or the new, never half).
- Keys are EC P-256 (milliseconds to generate), except the service-account key: RSA 2048, as kube's RS256.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
LEAF_DAYS = 365
# The names kube-apiserver's self-signed certificate carries (alternateDNS), beside localhost.
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
               "kubernetes.default.svc.cluster.local")
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUP = "system:masters"
FRONT_PROXY_CLIENT = "front-proxy-client"

SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True, slots=True)
class CertDir:
    """The files of one cert dir, by kubeadm's names."""

    path: Path

    @property
    def ca_cert(self) -> Path:
        return self.path / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.path / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.path / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.path / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.path / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.path / "admin.key"

    @property
    def front_proxy_ca_cert(self) -> Path:
        return self.path / "front-proxy-ca.crt"

    @property
    def front_proxy_ca_key(self) -> Path:
        return self.path / "front-proxy-ca.key"

    @property
    def front_proxy_client_cert(self) -> Path:
        return self.path / "front-proxy-client.crt"

    @property
    def front_proxy_client_key(self) -> Path:
        return self.path / "front-proxy-client.key"

    @property
    def sa_key(self) -> Path:
        return self.path / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.path / "sa.pub"


def ensure(path: Path, *, bind_address: str, service_ip: str, serving: bool = True,
           service_account: bool = True) -> CertDir:
    """Make `path` hold every file (see the module docstring); `serving` False when the user brings the
    serving certificate (--tls-cert-file), `service_account` False when the user brings the service-account
    signing key (--service-account-signing-key-file). OSError when the directory cannot be written."""
    certs = CertDir(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca = _Authority.ensure(certs.ca_cert, certs.ca_key, "kubernetes")
    if serving:
        ips = _serving_ips(bind_address, service_ip)
        ca.ensure_leaf(certs.serving_cert, certs.serving_key, _name("kube-apiserver"),
                       ExtendedKeyUsageOID.SERVER_AUTH, dns=SERVING_DNS, ips=ips)
    ca.ensure_leaf(certs.admin_cert, certs.admin_key, _name(ADMIN_USER, ADMIN_GROUP),
                   ExtendedKeyUsageOID.CLIENT_AUTH)
    front_proxy = _Authority.ensure(certs.front_proxy_ca_cert, certs.front_proxy_ca_key, "front-proxy-ca")
    front_proxy.ensure_leaf(certs.front_proxy_client_cert, certs.front_proxy_client_key,
                            _name(FRONT_PROXY_CLIENT), ExtendedKeyUsageOID.CLIENT_AUTH)
    if service_account:
        _ensure_service_account_key(certs.sa_key, certs.sa_pub)
    return certs


def reachable_address(bind_address: str) -> str:
    """The address a local client dials for `bind_address`: a wildcard bind becomes the loopback address
    the serving certificate covers."""
    ip = ipaddress.ip_address(bind_address)
    if ip.is_unspecified:
        return "127.0.0.1"
    return bind_address


def _serving_ips(bind_address: str, service_ip: str) -> tuple[str, ...]:
    ips = ["127.0.0.1", service_ip]
    if not ipaddress.ip_address(bind_address).is_unspecified:
        ips.append(bind_address)
    return tuple(dict.fromkeys(str(ipaddress.ip_address(ip)) for ip in ips))


def _name(common_name: str, organization: str = "") -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True, slots=True)
class _Authority:
    cert: x509.Certificate
    key_file: Path

    @classmethod
    def ensure(cls, cert_file: Path, key_file: Path, common_name: str) -> _Authority:
        cert = _read_cert(cert_file)
        if cert is not None:
            return cls(cert, key_file)
        key = _ensure_key(key_file)
        now = _now()
        cert = (x509.CertificateBuilder()
                .subject_name(_name(common_name)).issuer_name(_name(common_name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                             content_commitment=False, data_encipherment=False,
                                             key_agreement=False, crl_sign=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        _write(cert_file, cert.public_bytes(serialization.Encoding.PEM), private=False)
        return cls(cert, key_file)

    def ensure_leaf(self, cert_file: Path, key_file: Path, subject: x509.Name, usage: x509.ObjectIdentifier, *,
                    dns: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> None:
        current = _read_cert(cert_file)
        if current is not None and self._still_good(current, ips):
            return
        key = _ensure_key(key_file)
        ca_key = _read_key(self.key_file)
        if ca_key is None:
            raise OSError(f"{self.key_file}: the CA's key is missing, so {cert_file} cannot be issued again")
        now = _now()
        builder = (x509.CertificateBuilder()
                   .subject_name(subject).issuer_name(self.cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=LEAF_DAYS))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True,
                                                key_cert_sign=False, content_commitment=False,
                                                data_encipherment=False, key_agreement=False, crl_sign=False,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                       ca_key.public_key()), critical=False))
        if dns or ips:
            names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
            names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        _write(cert_file, cert.public_bytes(serialization.Encoding.PEM), private=False)

    def _still_good(self, cert: x509.Certificate, ips: tuple[str, ...]) -> bool:
        if cert.not_valid_after_utc <= _now():
            return False
        try:
            cert.verify_directly_issued_by(self.cert)
        except (ValueError, TypeError, InvalidSignature):
            return False
        if not ips:
            return True
        try:
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            return False
        covered = set(sans.get_values_for_type(x509.IPAddress))
        return all(ipaddress.ip_address(ip) in covered for ip in ips)


def _ensure_service_account_key(key_file: Path, pub_file: Path) -> None:
    if key_file.exists() and pub_file.exists():
        return  # not parsed here: loading an RSA key costs tens of milliseconds
    key = _read_key(key_file)
    if key is None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write(key_file, _private_pem(key), private=True)
    if not pub_file.exists():
        _write(pub_file, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo),
               private=False)


def _ensure_key(key_file: Path) -> SigningKey:
    key = _read_key(key_file)
    if key is None:
        key = ec.generate_private_key(ec.SECP256R1())
        _write(key_file, _private_pem(key), private=True)
    return key


def _private_pem(key: SigningKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _read_cert(path: Path) -> x509.Certificate | None:
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError as err:
        raise OSError(f"{path}: not a PEM certificate ({err})") from None


def _read_key(path: Path) -> SigningKey | None:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as err:
        raise OSError(f"{path}: not an unencrypted PEM private key ({err})") from None
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise OSError(f"{path}: an EC or RSA key was expected")
    return key


def _write(path: Path, data: bytes, *, private: bool) -> None:
    """Atomically: a temporary file in the same directory (0600 from its creation), fsynced, renamed."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if not private:
            os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
