"""Admission and CRD conversion webhooks as real HTTPS servers, for tests: a user's handler (the review's
request -> its response fields) behind aiohttp with a certificate of its own CA, and the clientConfig that
reaches it.

    async with serve(lambda request: {"allowed": True}) as hook:
        hook.client_config()  # {"url": "https://127.0.0.1:PORT/", "caBundle": ...}

A handler returns the AdmissionResponse's fields (`allowed`, `status`, `warnings`, `auditAnnotations`) and, for
a mutation, `patch` as a list of JSON Patch operations (encoded here, patchType JSONPatch); uid, kind and
apiVersion are filled in. A handler for a ConversionReview gets its request (`desiredAPIVersion`, `objects`)
and returns `convertedObjects` and `result` ({"status": "Success"}); the answer's kind follows the review's.
Returning an aiohttp `web.Response` answers it as is (malformed answers, errors).
The certificate names 127.0.0.1, localhost and the Service names given, as `<name>.<namespace>.svc`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import inspect
import json
import socket
import ssl
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Obj = dict[str, Any]
STARTUP_TIMEOUT = 30.0  # seconds a background server may take to start or stop
Handler = Callable[[Obj], "Obj | web.Response | Awaitable[Obj | web.Response]"]


@dataclass
class WebhookServer:
    port: int
    ca_pem: bytes
    cert_pem: bytes = b""  # the serving certificate (envtest puts it, not its CA, in the caBundle)
    requests: list[Obj] = field(default_factory=list)  # every AdmissionReview received, in order
    paths: list[str] = field(default_factory=list)  # the path and query of each (kube's ?timeout= among them)
    headers: list[dict[str, str]] = field(default_factory=list)  # the HTTP headers of each (a traceparent among them)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    def client_config(self, path: str = "/") -> Obj:
        return {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": base64.b64encode(self.ca_pem).decode()}


def _certificates(names: Iterable[str]) -> tuple[bytes, bytes, bytes]:
    """(CA PEM, serving certificate PEM, its key PEM)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    alt = [x509.IPAddress(IPv4Address("127.0.0.1")), x509.DNSName("localhost"), *(x509.DNSName(n) for n in names)]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False).sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


@asynccontextmanager
async def serve(handler: Handler, *, services: Iterable[tuple[str, str]] = ()) -> AsyncIterator[WebhookServer]:
    """Run `handler` as an HTTPS admission webhook on 127.0.0.1 (a free port) until the block ends. services:
    (namespace, name) pairs the certificate also names, for a clientConfig.service."""
    ca_pem, cert_pem, key_pem = _certificates(f"{name}.{namespace}.svc" for namespace, name in services)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        tls.load_cert_chain(cert_file, key_file)
    server = WebhookServer(0, ca_pem, cert_pem)

    async def review(request: web.Request) -> web.StreamResponse:
        sent = await request.json()
        server.requests.append(sent)
        server.paths.append(request.path_qs)
        server.headers.append({key.lower(): value for key, value in request.headers.items()})
        answer = handler(sent.get("request") or {})
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, web.StreamResponse):
            return answer
        response = {"uid": (sent.get("request") or {}).get("uid", ""), **answer}
        if isinstance(response.get("patch"), list):
            response["patch"] = base64.b64encode(json.dumps(response["patch"]).encode()).decode()
            response["patchType"] = "JSONPatch"
        return web.json_response({"apiVersion": sent.get("apiVersion"), "kind": sent.get("kind") or "AdmissionReview",
                                  "response": response})

    app = web.Application()
    app.router.add_post("/{tail:.*}", review)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server.port = listener.getsockname()[1]
    site = web.SockSite(runner, listener, ssl_context=tls)
    await site.start()
    try:
        yield server
    finally:
        await runner.cleanup()


class Background:
    """`serve` on an event loop of its own thread, for tests that block (the official client is synchronous):
    handlers run on that loop. Servers started stop at close()."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stack = contextlib.AsyncExitStack()

    def start(self, handler: Handler, *, services: Iterable[tuple[str, str]] = ()) -> WebhookServer:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="capstan-webhooks", daemon=True)
            self._thread.start()

        async def enter() -> WebhookServer:
            return await self._stack.enter_async_context(serve(handler, services=tuple(services)))

        return asyncio.run_coroutine_threadsafe(enter(), self._loop).result(STARTUP_TIMEOUT)

    def close(self) -> None:
        loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._stack.aclose(), loop).result(STARTUP_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
