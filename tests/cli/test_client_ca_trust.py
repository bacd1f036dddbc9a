"""Client certificates verified as kube-apiserver's x509 authenticator verifies them: Go's crypto/x509 takes any
certificate of the --client-ca-file as a trust anchor, so a bundle that holds only the intermediate CA that
signed a client's certificate (not its self-signed root) accepts that client. Real TLS handshakes against the
HTTPS listener's context (capstan/cli/tls.py), over loopback sockets."""

from __future__ import annotations

import datetime
import itertools
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from capstan.cli.tls import ServingFiles, server_context

PEM = serialization.Encoding.PEM
Issued = tuple[x509.Certificate, ec.EllipticCurvePrivateKey]


def issue(name: str, issuer: Issued | None, *, ca: bool) -> Issued:
    """A certificate named `name` signed by `issuer` (self-signed when None)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_name, signer_key = (issuer[0].subject, issuer[1]) if issuer else (subject, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(signer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
    return builder.sign(signer_key, hashes.SHA256()), key


def pem(issued: Issued) -> bytes:
    return issued[0].public_bytes(PEM)


def key_pem(issued: Issued) -> bytes:
    return issued[1].private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> str:
    """The common name of the client certificate the server verified ("" when it refused the handshake)."""
    left, right = socket.socketpair()
    seen: list[str] = []

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                der = tls.getpeercert(binary_form=True)
                if der:
                    names = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
                    seen.extend(str(name.value) for name in names)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(right, server_hostname="localhost") as tls:
            tls.recv(1)  # the server closes after the handshake; a refused certificate fails here or before
    except (ssl.SSLError, OSError):
        pass
    thread.join(10)
    return seen[0] if seen else ""


@pytest.mark.parametrize(("trusted", "expected"), [
    ("root", "alice"),
    ("intermediate", "alice"),
    ("root and intermediate", "alice"),
    ("another root", ""),
])
def test_a_client_certificate_is_verified_against_any_certificate_of_the_client_ca(
        tmp_path: Path, trusted: str, expected: str) -> None:
    root = issue("root", None, ca=True)
    intermediate = issue("intermediate", root, ca=True)
    alice = issue("alice", intermediate, ca=False)
    bundles = {"root": pem(root), "intermediate": pem(intermediate),
               "root and intermediate": pem(root) + pem(intermediate),
               "another root": pem(issue("another", None, ca=True))}
    serving = issue("localhost", root, ca=False)
    (tmp_path / "tls.crt").write_bytes(pem(serving))
    (tmp_path / "tls.key").write_bytes(key_pem(serving))
    (tmp_path / "alice.pem").write_bytes(pem(alice) + pem(intermediate) + key_pem(alice))
    server = server_context(ServingFiles(tmp_path / "tls.crt", tmp_path / "tls.key"), bundles[trusted])
    client = ssl.create_default_context(cadata=pem(root).decode())
    client.load_cert_chain(tmp_path / "alice.pem")
    assert handshake(server, client) == expected


def accepted_names(server: ssl.SSLContext) -> list[str]:
    """What `openssl s_client` prints under "Acceptable client certificate CA names" from the listener."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to read the CertificateRequest (Debian's openssl)")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        try:
            with server.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        shown = subprocess.run([openssl, "s_client", "-connect", f"127.0.0.1:{port}"], input="", capture_output=True,
                               text=True, timeout=30, check=False).stdout
    finally:
        thread.join(10)
        listener.close()
    lines = shown.splitlines()
    if "Acceptable client certificate CA names" not in lines:
        return []
    names = lines[lines.index("Acceptable client certificate CA names") + 1:]
    return [line for line in itertools.takewhile(lambda line: line.startswith(("CN", "/CN")), names)]


# kube-apiserver's TLS server (Go's) lists its client CA pool's subjects in the CertificateRequest: a client with
# several certificates picks one by them, and kube's test-cmd checks for them before it tests client certificates.
@pytest.mark.parametrize(("bundle", "expected"), [
    (("root",), ["CN = root"]),
    (("root", "intermediate"), ["CN = root", "CN = intermediate"]),
    ((), []),
])
def test_the_listener_names_the_client_cas_it_accepts(tmp_path: Path, bundle: tuple[str, ...],
                                                       expected: list[str]) -> None:
    root = issue("root", None, ca=True)
    cas = {"root": root, "intermediate": issue("intermediate", root, ca=True)}
    serving = issue("localhost", root, ca=False)
    (tmp_path / "tls.crt").write_bytes(pem(serving))
    (tmp_path / "tls.key").write_bytes(key_pem(serving))
    server = server_context(ServingFiles(tmp_path / "tls.crt", tmp_path / "tls.key"),
                            b"".join(pem(cas[name]) for name in bundle))
    assert accepted_names(server) == expected
    client = ssl.create_default_context(cadata=pem(root).decode())
    assert handshake(server, client) == ""  # and a handshake without a certificate still succeeds as before
