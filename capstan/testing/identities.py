"""Real servers for the identity tests and benchmarks: a test CA and its certificates, an OpenID Connect issuer
(discovery and JWKS over HTTPS, signing ID tokens with the keys the caller makes) and review webhooks
(TokenReview and SubjectAccessReview over HTTPS requiring the client certificate the test CA signed), each an
aiohttp server on its own thread, so the same server serves an in-process authenticator and a `capstan serve`
child."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Obj = dict[str, Any]


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def make(cls, name: str = "identity-test-ca") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
                .not_valid_after(now + datetime.timedelta(hours=2))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256()))
        return cls(key, cert)

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, name: str, *, server: bool) -> tuple[bytes, bytes]:
        """(certificate, key) PEM: a serving certificate for 127.0.0.1, or a client certificate CN=name."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(self.cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
                   .not_valid_after(now + datetime.timedelta(hours=2))
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)

    def server_context(self, directory: Path, *, client_ca: bool) -> ssl.SSLContext:
        cert, key = self.issue("127.0.0.1", server=True)
        (directory / "server.crt").write_bytes(cert)
        (directory / "server.key").write_bytes(key)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(directory / "server.crt", directory / "server.key")
        if client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cadata=self.pem.decode())
        return context


class Threaded:
    """An aiohttp application served over HTTPS on 127.0.0.1 by a thread of its own."""

    def __init__(self, app: web.Application, context: ssl.SSLContext) -> None:
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app)
        self.port = 0
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
            self._loop.run_until_complete(site.start())
            self.port = self._runner.addresses[0][1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@dataclass
class SigningKey:
    kid: str
    alg: str
    key: Any  # a private key

    def jwk(self) -> Obj:
        public = self.key.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            raw: Obj = orjson.loads(jwt.algorithms.RSAAlgorithm.to_jwk(public))
        else:
            raw = orjson.loads(jwt.algorithms.ECAlgorithm.to_jwk(public))
        return {**raw, "kid": self.kid, "use": "sig", "alg": self.alg}

    @classmethod
    def make(cls, kid: str, alg: str = "RS256") -> SigningKey:
        if alg.startswith(("RS", "PS")):
            return cls(kid, alg, rsa.generate_private_key(public_exponent=65537, key_size=2048))
        return cls(kid, alg, ec.generate_private_key(ec.SECP256R1()))


@dataclass
class Issuer:
    """The issuer's published keys may change while it serves; fetches counts each document's requests."""

    server: Threaded
    published: list[SigningKey] = field(default_factory=list)
    fetches: dict[str, int] = field(default_factory=lambda: {"discovery": 0, "jwks": 0})
    issuer_override: str = ""

    @property
    def url(self) -> str:
        return self.server.url

    def token(self, key: SigningKey, claims: Obj, *, header: Obj | None = None, alg: str = "") -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": "capstan", "sub": "alice", "iat": now, "exp": now + 300, **claims}
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, key.key, algorithm=alg or key.alg, headers={"kid": key.kid, **(header or {})})


def start_issuer(ca: Authority, directory: Path) -> Issuer:
    holder: list[Issuer] = []

    async def discovery(request: web.Request) -> web.Response:
        issuer = holder[0]
        issuer.fetches["discovery"] += 1
        return web.json_response({"issuer": issuer.issuer_override or issuer.url, "jwks_uri": issuer.url + "/keys",
                                  "id_token_signing_alg_values_supported": ["RS256", "ES256"]})

    async def keys(request: web.Request) -> web.Response:
        issuer = holder[0]
        issuer.fetches["jwks"] += 1
        return web.json_response({"keys": [k.jwk() for k in issuer.published]})

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", discovery)
    app.router.add_get("/keys", keys)
    holder.append(Issuer(Threaded(app, ca.server_context(directory, client_ca=False))))
    return holder[0]


Answer = Callable[[Obj], Obj]  # the review's spec -> its status


@dataclass
class ReviewWebhook:
    """A TokenReview or SubjectAccessReview webhook: `answer` decides each review's status, `seen` keeps them."""

    server: Threaded
    answer: Answer
    seen: list[Obj] = field(default_factory=list)
    fail: bool = False  # answer 500

    def kubeconfig(self, path: Path, ca: Authority, client: tuple[bytes, bytes]) -> Path:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        path.write_text(orjson.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "webhook",
            "clusters": [{"name": "remote", "cluster": {"server": self.server.url + "/review",
                                                        "certificate-authority-data": b64(ca.pem)}}],
            "users": [{"name": "apiserver", "user": {"client-certificate-data": b64(client[0]),
                                                     "client-key-data": b64(client[1])}}],
            "contexts": [{"name": "webhook", "context": {"cluster": "remote", "user": "apiserver"}}],
        }).decode())
        return path


def start_review_webhook(ca: Authority, directory: Path, answer: Answer) -> ReviewWebhook:
    holder: list[ReviewWebhook] = []

    async def review(request: web.Request) -> web.Response:
        hook = holder[0]
        body: Obj = await request.json()
        hook.seen.append(body)
        if hook.fail:
            return web.Response(status=500, text="broken")
        return web.json_response({"apiVersion": body["apiVersion"], "kind": body["kind"],
                                  "status": hook.answer(body["spec"])})

    app = web.Application()
    app.router.add_post("/review", review)
    directory.mkdir(parents=True, exist_ok=True)
    holder.append(ReviewWebhook(Threaded(app, ca.server_context(directory, client_ca=True)), answer))
    return holder[0]
