"""`capstan serve` secure by default: the cert dir it generates (and reuses), HTTPS and TLS gRPC with it, the
kubeconfig kubectl uses, and --insecure's limits (loopback binds only, loopback Host names only)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from aiohttp import ClientSession
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from capstan.cli import pki
from gateway.hostcheck import is_loopback_host

ROOT = Path(__file__).resolve().parents[2]
SECURE = re.compile(r"capstan serving: HTTPS https://\S+:(\d+) gRPC \S+:(\d+) gRPC-mTLS \S+:(\d+)")
INSECURE = re.compile(r"capstan serving: HTTP http://\S+:(\d+) gRPC \S+:(\d+)")
KUBECTL = shutil.which("kubectl")


@dataclass
class Server:
    proc: subprocess.Popen[str]
    ports: tuple[int, ...]
    data: Path
    said: str = ""  # what it logged until it served


def start(data: Path, *flags: str, pattern: re.Pattern[str] = SECURE) -> Server:
    ports = ("--http-port", "0") if "--insecure" in flags else ("--secure-port", "0", "--grpc-mtls-port", "0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(data), "--grpc-port", "0", *ports,
         "--sync", "false", *flags],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    said = []
    for line in proc.stderr:
        said.append(line)
        match = pattern.search(line)
        if match:
            return Server(proc, tuple(int(port) for port in match.groups()), data, "".join(said))
    raise AssertionError(f"capstan serve exited with {proc.wait()} before listening:\n" + "".join(said[-30:]))


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One secure server for the module's tests that only read from it."""
    server = start(tmp_path_factory.mktemp("serving") / "data")
    try:
        yield server
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _subject(cert: x509.Certificate) -> tuple[str, list[str]]:
    common = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    groups = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return str(common), groups


# --- the cert dir ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "mode"), [
    ("ca.crt", 0o644), ("ca.key", 0o600), ("apiserver.crt", 0o644), ("apiserver.key", 0o600),
    ("admin.crt", 0o644), ("admin.key", 0o600), ("front-proxy-ca.crt", 0o644), ("front-proxy-ca.key", 0o600),
    ("front-proxy-client.crt", 0o644), ("front-proxy-client.key", 0o600), ("sa.key", 0o600), ("sa.pub", 0o644),
])
def test_first_start_writes_every_file_private_keys_0600(tmp_path: Path, name: str, mode: int) -> None:
    pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.96.0.1")
    assert (tmp_path / "pki" / name).stat().st_mode & 0o777 == mode
    assert not [p for p in (tmp_path / "pki").iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize(("cert", "issuer", "subject"), [
    ("apiserver.crt", "ca.crt", ("kube-apiserver", [])),
    ("admin.crt", "ca.crt", ("kubernetes-admin", ["system:masters"])),
    ("front-proxy-client.crt", "front-proxy-ca.crt", ("front-proxy-client", [])),
])
def test_certificates_name_kubes_users_and_are_signed_by_their_ca(tmp_path: Path, cert: str, issuer: str,
                                                                  subject: tuple[str, list[str]]) -> None:
    certs = pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.96.0.1")
    leaf = _cert(certs.path / cert)
    leaf.verify_directly_issued_by(_cert(certs.path / issuer))
    assert _subject(leaf) == subject


def test_serving_certificate_covers_kubes_names_the_service_ip_and_the_bind_address(tmp_path: Path) -> None:
    certs = pki.ensure(tmp_path / "pki", bind_address="192.0.2.7", service_ip="172.20.0.1")
    sans = _cert(certs.serving_cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "172.20.0.1", "192.0.2.7"]


def test_service_account_key_is_rsa_2048(tmp_path: Path) -> None:
    certs = pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.96.0.1")
    key: Any = serialization.load_pem_private_key(certs.sa_key.read_bytes(), password=None)
    assert key.key_size == 2048
    assert serialization.load_pem_public_key(certs.sa_pub.read_bytes()) == key.public_key()


@pytest.mark.parametrize(("bind", "service_ip", "changed"), [
    ("127.0.0.1", "10.96.0.1", set()),
    ("0.0.0.0", "10.96.0.1", set()),  # a wildcard bind is covered by 127.0.0.1
    ("192.0.2.7", "10.96.0.1", {"apiserver.crt"}),
    ("127.0.0.1", "172.20.0.1", {"apiserver.crt"}),
])
def test_restart_reuses_files_and_reissues_only_an_uncovering_serving_cert(
        tmp_path: Path, bind: str, service_ip: str, changed: set[str]) -> None:
    pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.96.0.1")
    before = {p.name: p.read_bytes() for p in (tmp_path / "pki").iterdir()}
    pki.ensure(tmp_path / "pki", bind_address=bind, service_ip=service_ip)
    after = {p.name: p.read_bytes() for p in (tmp_path / "pki").iterdir()}
    assert {name for name in before if before[name] != after[name]} == changed


# --- serving over TLS ------------------------------------------------------------------------------------------


def _kubeconfig(data: Path, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "capstan", "kubeconfig", "--data-dir", str(data), *extra],
                         cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    config: dict[str, Any] = yaml.safe_load(out.stdout)
    return config


def test_kubeconfig_names_the_server_the_ca_and_the_admin(serving: Server) -> None:
    config = _kubeconfig(serving.data)
    certs = pki.CertDir(serving.data / "pki")
    assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{serving.ports[0]}"
    assert config["users"][0]["name"] == "admin"
    assert config["contexts"][0]["context"]["user"] == "admin"
    assert config["current-context"] == "capstan"
    user = config["users"][0]["user"]
    assert base64.b64decode(user["client-certificate-data"]) == certs.admin_cert.read_bytes()
    assert base64.b64decode(user["client-key-data"]) == certs.admin_key.read_bytes()
    assert base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]) == (
        certs.ca_cert.read_bytes())


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")
@pytest.mark.parametrize("mode", [[], ["--authorization-mode", "AlwaysAllow"], ["--bind-address", "0.0.0.0"]])
def test_kubectl_works_over_https_with_the_kubeconfig(tmp_path: Path, mode: list[str]) -> None:
    """The default (RBAC: the admin is in system:masters), AlwaysAllow, and a wildcard bind (named 127.0.0.1)."""
    server = start(tmp_path / "data", *mode)
    try:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(server.data)))
        outs = [subprocess.run([str(KUBECTL), f"--kubeconfig={path}", f"--cache-dir={tmp_path / 'cache'}", *args],
                               capture_output=True, text=True, timeout=60)
                for args in (["version"], ["get", "ns", "-o", "name"])]
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)
    assert [out.returncode for out in outs] == [0, 0], [out.stderr for out in outs]
    assert "Server Version: v1." in outs[0].stdout
    assert "namespace/kube-system" in outs[1].stdout.splitlines()


async def test_https_refuses_plain_http_and_answers_tls(serving: Server) -> None:
    certs = pki.CertDir(serving.data / "pki")
    context = ssl.create_default_context(cafile=certs.ca_cert)
    async with ClientSession() as http:
        async with http.get(f"https://127.0.0.1:{serving.ports[0]}/healthz", ssl=context) as resp:
            assert resp.status == 200
        with pytest.raises(Exception):  # noqa: B017 (aiohttp's disconnect error types vary)
            async with http.get(f"http://127.0.0.1:{serving.ports[0]}/healthz") as resp:
                await resp.read()


def _health(address: str, credentials: grpc.ChannelCredentials) -> Any:
    async def check() -> Any:
        async with grpc.aio.secure_channel(address, credentials) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            return (await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)).status
    return check()


@pytest.mark.parametrize(("port_index", "client_cert", "serves"), [
    (1, False, True),  # --grpc-port: TLS, no client certificate asked
    (2, True, True),  # --grpc-mtls-port with the admin certificate
    (2, False, False),  # --grpc-mtls-port refuses a client without one
])
async def test_grpc_ports_serve_tls_and_mutual_tls(serving: Server, port_index: int, client_cert: bool,
                                                   serves: bool) -> None:
    certs = pki.CertDir(serving.data / "pki")
    pair = {"private_key": certs.admin_key.read_bytes(), "certificate_chain": certs.admin_cert.read_bytes()}
    credentials = grpc.ssl_channel_credentials(certs.ca_cert.read_bytes(), **(pair if client_cert else {}))
    address = f"127.0.0.1:{serving.ports[port_index]}"
    if serves:
        assert await _health(address, credentials) == health_pb2.HealthCheckResponse.SERVING
    else:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await _health(address, credentials)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE


# --- user-provided certificates, reloaded ----------------------------------------------------------------------


def _issue(certs: pki.CertDir, common_name: str, cert_file: Path, key_file: Path) -> None:
    ca_key: Any = serialization.load_pem_private_key(certs.ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(_cert(certs.ca_cert).subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _served_common_name(port: int, alpn: str) -> str:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([alpn])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return _subject(x509.load_der_x509_certificate(der))[0]


CONSECUTIVE = 12  # connections in a row: with 2 workers, all twelve reach one worker with odds below 1 in 2,000


def test_user_certificate_is_served_and_reloaded_when_its_files_change(tmp_path: Path) -> None:
    data = tmp_path / "data"
    certs = pki.ensure(data / "pki", bind_address="127.0.0.1", service_ip="10.96.0.1", serving=False)
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    _issue(certs, "first", cert_file, key_file)
    server = start(data, "--authorization-mode", "AlwaysAllow", "--tls-cert-file", str(cert_file),
                   "--tls-private-key-file", str(key_file))
    try:
        assert not certs.serving_cert.exists()  # the user's certificate replaces the generated one
        https, grpc_port = server.ports[0], server.ports[1]
        assert (_served_common_name(https, "http/1.1"), _served_common_name(grpc_port, "h2")) == ("first", "first")
        _issue(certs, "second", tmp_path / "next.crt", tmp_path / "next.key")
        os.replace(tmp_path / "next.key", key_file)
        os.replace(tmp_path / "next.crt", cert_file)
        # Each worker looks at the files at its first handshake 2 s after its last look: wait until a run of
        # connections, spread by the kernel over every worker, all get the new certificate.
        deadline = time.monotonic() + 15
        for port, protocol in ((https, "http/1.1"), (grpc_port, "h2")):
            run = 0
            while run < CONSECUTIVE and time.monotonic() < deadline:
                run = run + 1 if _served_common_name(port, protocol) == "second" else 0
                time.sleep(0.1 if run else 0.5)
            assert run == CONSECUTIVE, f"{protocol}: a connection still gets the first certificate"
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)


# --- --insecure ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "192.0.2.7"])
def test_insecure_refuses_a_non_loopback_bind_address(tmp_path: Path, bind: str) -> None:
    out = subprocess.run([sys.executable, "-m", "capstan", "serve", "--insecure", "--bind-address", bind,
                          "--data-dir", str(tmp_path / "data"), "--http-port", "0", "--grpc-port", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert f"--insecure serves plain HTTP and gRPC that trust every caller, so it binds only a loopback address, " \
           f"not {bind}" in out.stderr


@pytest.fixture(scope="module")
def insecure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One insecure server for the module's tests that only read from it."""
    server = start(tmp_path_factory.mktemp("insecure") / "data", "--insecure", pattern=INSECURE)
    try:
        yield server
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)


@pytest.mark.parametrize(("host", "code"), [
    ("localhost", 200), ("localhost:8080", 200), ("127.0.0.1", 200), ("127.9.8.7:1", 200), ("[::1]:6443", 200),
    ("attacker.example", 403), ("attacker.example:8080", 403), ("localhost.attacker.example", 403),
    ("0.0.0.0", 403), ("10.0.0.1:8080", 403), ("::1", 403),
])
async def test_insecure_answers_only_loopback_host_names(insecure: Server, host: str, code: int) -> None:
    async with ClientSession() as http, http.get(f"http://127.0.0.1:{insecure.ports[0]}/api/v1/namespaces",
                        headers={"Host": host}) as resp:
        body = await resp.json()
    assert resp.status == code
    if code == 403:
        assert body == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden",
            "code": 403, "message": f'forbidden: Host "{host}" is not a loopback name: an insecure server '
                                    "answers only requests to localhost, 127.0.0.1 or [::1]"}


def test_insecure_kubeconfig_is_plain_http_with_a_named_user(insecure: Server) -> None:
    config = _kubeconfig(insecure.data)
    assert config["clusters"][0]["cluster"] == {"server": f"http://127.0.0.1:{insecure.ports[0]}"}
    assert config["users"] == [{"name": "capstan", "user": {}}]


@pytest.mark.parametrize(("host", "loopback"), [
    ("localhost", True), ("LOCALHOST.", True), ("127.0.0.1:80", True), ("[::1]", True), ("", False),
    ("[::1]x", False), ("localhost:", False), ("localhost:http", False), ("127.0.0.1.nip.io", False),
])
def test_host_names_taken_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_wildcard_bind_is_named_by_its_loopback_address() -> None:
    assert [pki.reachable_address(a) for a in ("0.0.0.0", "::", "192.0.2.7")] == ["127.0.0.1", "127.0.0.1",
                                                                                   "192.0.2.7"]


async def test_restart_reuses_the_cert_dir(tmp_path: Path) -> None:
    first = start(tmp_path / "data", "--authorization-mode", "AlwaysAllow")
    first.proc.send_signal(signal.SIGTERM)
    await asyncio.to_thread(first.proc.wait, 10)
    before = {p.name: p.read_bytes() for p in (tmp_path / "data" / "pki").iterdir()}
    second = start(tmp_path / "data", "--authorization-mode", "AlwaysAllow")
    second.proc.send_signal(signal.SIGTERM)
    await asyncio.to_thread(second.proc.wait, 10)
    assert {p.name: p.read_bytes() for p in (tmp_path / "data" / "pki").iterdir()} == before


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")
def test_split_form_gateway_reaches_the_core_over_mutual_tls(tmp_path: Path) -> None:
    """`capstan core` and `capstan gateway --core <mTLS port>` sharing a cert dir: the gateway proves itself
    with the front-proxy client certificate, kubectl reaches the gateway over HTTPS as the admin."""
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs: list[subprocess.Popen[str]] = []

    def launch(*args: str, pattern: str) -> re.Match[str]:
        proc = subprocess.Popen([sys.executable, "-m", "capstan", *args], cwd=ROOT, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, env=env)
        procs.append(proc)
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f"capstan {args[0]} exited with {proc.wait()} before listening")

    try:
        core = launch("core", "--data-dir", str(data), "--grpc-port", "0", "--grpc-mtls-port", "0", "--sync", "false",
                      pattern=r"gRPC-mTLS (\S+)")
        gateway = launch("gateway", "--core", core[1], "--data-dir", str(data), "--secure-port", "0",
                         pattern=r"HTTPS (https://\S+)")
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(data, "--server", gateway[1])))
        out = subprocess.run([str(KUBECTL), f"--kubeconfig={path}", f"--cache-dir={tmp_path / 'cache'}", "get", "ns",
                              "-o", "name"], capture_output=True, text=True, timeout=60)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    assert out.returncode == 0, out.stderr
    assert "namespace/default" in out.stdout.splitlines()


# kube-apiserver resets --anonymous-auth to false beside the AlwaysAllow authorizer (a request naming nobody would
# otherwise be allowed everything), saying so; other modes keep anonymous requests, which RBAC then judges.
@pytest.mark.parametrize(("flags", "status", "warned"), [
    ((), 200, False),
    (("--authorization-mode", "AlwaysAllow"), 401, True),
    (("--authorization-mode", "RBAC,AlwaysAllow"), 401, True),
    (("--authorization-mode", "AlwaysAllow", "--anonymous-auth", "false"), 401, False),
])
async def test_anonymous_requests_are_refused_beside_always_allow(tmp_path: Path, flags: tuple[str, ...],
                                                                  status: int, warned: bool) -> None:
    server = start(tmp_path / "data", *flags)
    try:
        context = ssl.create_default_context(cafile=pki.CertDir(server.data / "pki").ca_cert)
        async with ClientSession() as http, http.get(f"https://127.0.0.1:{server.ports[0]}/version",
                                                     ssl=context) as resp:
            assert resp.status == status
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)
    assert ("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You "
            "should use a different authorizer" in server.said) == warned


def _signing_ca(directory: Path) -> tuple[Path, Path, x509.Name]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cluster signer")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "signer.crt", directory / "signer.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, name


# kube-controller-manager's --cluster-signing-cert-file/--cluster-signing-key-file: the CA the csrsigning controller
# signs with (kube's test-cmd gives its own); without them, the cert dir's.
@pytest.mark.parametrize("own_ca", [True, False])
async def test_approved_requests_are_signed_by_the_cluster_signing_ca(tmp_path: Path, own_ca: bool) -> None:
    cert_file, key_file, name = _signing_ca(tmp_path)
    flags = ("--cluster-signing-cert-file", str(cert_file), "--cluster-signing-key-file", str(key_file)) if own_ca \
        else ()
    server = start(tmp_path / "data", *flags)
    try:
        certs = pki.CertDir(server.data / "pki")
        context = ssl.create_default_context(cafile=certs.ca_cert)
        context.load_cert_chain(certs.admin_cert, certs.admin_key)
        key = ec.generate_private_key(ec.SECP256R1())
        request = (x509.CertificateSigningRequestBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "erin")]))
                   .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
        base = f"https://127.0.0.1:{server.ports[0]}/apis/certificates.k8s.io/v1/certificatesigningrequests"
        async with ClientSession() as http:
            async with http.post(base, ssl=context, json={
                    "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                    "metadata": {"name": "erin"},
                    "spec": {"request": base64.b64encode(request).decode(), "usages": ["client auth"],
                             "signerName": "kubernetes.io/kube-apiserver-client"}}) as resp:
                made = await resp.json()
                assert resp.status == 201, made
            made["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Test",
                                              "message": "approved by the test"}]}
            async with http.put(f"{base}/erin/approval", ssl=context, json=made) as resp:
                assert resp.status == 200, await resp.text()
            issued = ""
            for _ in range(200):
                async with http.get(f"{base}/erin", ssl=context) as resp:
                    issued = (await resp.json()).get("status", {}).get("certificate", "")
                if issued:
                    break
                await asyncio.sleep(0.05)
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(10)
    assert issued, "the signer never issued the certificate"
    issuer = x509.load_pem_x509_certificate(base64.b64decode(issued)).issuer
    assert issuer == (name if own_ca else _cert(certs.ca_cert).subject)
