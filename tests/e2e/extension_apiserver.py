"""A small extension API server, as one built on k8s.io/apiserver behaves toward the aggregator, for the
aggregation tests: HTTPS with its own CA and a serving certificate for `<service>.<namespace>.svc`; a request
counts only when it comes with a client certificate the front-proxy CA signed for CN front-proxy-client (else
401, as k8s.io/apiserver's requestheader authenticator refuses it), the caller being the X-Remote-* headers.

It serves group wardle.example.com version v1alpha1 with one namespaced resource, flunders: discovery, its
OpenAPI v3 document, LIST (JSON
or a meta.k8s.io Table), GET, POST and WATCH (the current objects as ADDED, then each created one). Every answer
echoes the identity it saw in headers X-Seen-User, X-Seen-Groups and X-Seen-Extra-Scopes; `seen` keeps the
headers of every authenticated request.

It runs its own event loop on a thread, so a synchronous test (kubectl) and an asynchronous one share it.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

GROUP, VERSION = "wardle.example.com", "v1alpha1"
GV = f"{GROUP}/{VERSION}"
BASE = f"/apis/{GROUP}/{VERSION}"
FRONT_PROXY_CN = "front-proxy-client"

Obj = dict[str, Any]

RESOURCES: Obj = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV,
    "resources": [
        {"name": "flunders", "singularName": "flunder", "namespaced": True, "kind": "Flunder",
         "verbs": ["create", "get", "list", "watch"], "shortNames": ["fl"]},
        {"name": "flunders/status", "singularName": "", "namespaced": True, "kind": "Flunder",
         "verbs": ["get"]},
    ],
}


OPENAPI_V3: Obj = {
    "openapi": "3.0.0", "info": {"title": "wardle", "version": "v0.1"},
    "paths": {f"{BASE}/namespaces/{{namespace}}/flunders/{{name}}": {
        "get": {"operationId": "readFlunder", "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/com.example.wardle.v1alpha1.Flunder"}}}}},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": "Flunder"}},
        "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]}},
    "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": {
        "type": "object", "description": "A flunder.",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "metadata": {"allOf": [
                           {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                       "spec": {"type": "object", "properties": {"reference": {"type": "string"}}}},
        "x-kubernetes-group-version-kind": [{"group": GROUP, "version": VERSION, "kind": "Flunder"}]}}},
}


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(name: str) -> tuple[bytes, ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA: its PEM, key and certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), key, cert


def serving_pair(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, dns: str) -> tuple[bytes, bytes]:
    """(certificate, key) PEM for `dns`, signed by the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(hours=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _flunder(namespace: str, name: str, created: str) -> Obj:
    return {"apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created,
                         "resourceVersion": "1", "uid": f"uid-{name}"},
            "spec": {"reference": name}}


@dataclass
class ExtensionServer:
    """The running server: its port, its CA (the APIService's caBundle) and what it saw."""

    port: int
    ca_pem: bytes
    seen: list[dict[str, list[str]]] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _thread: threading.Thread | None = None
    _state: dict[str, Any] = field(default_factory=dict)

    def last_post(self) -> tuple[str | None, str | None]:
        """The last POST's Content-Length and Transfer-Encoding headers, as the server received them."""
        found: tuple[str | None, str | None] = self._state["last_post"]
        return found

    def watching(self) -> int:
        """How many watches are open on the server now."""
        return len(self._state["watchers"])

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if loop is None or runner is None:
            return
        self._loop = self._runner = None  # stopped once; a second stop does nothing
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)


def start(directory: Path, front_proxy_ca: Path, *, bind: str, server_name: str) -> ExtensionServer:
    """Serve on `bind`, a free port, with a fresh CA and a serving certificate for `server_name`."""
    ca_pem, ca_key, ca = make_ca("wardle-ca")
    cert_pem, key_pem = serving_pair(ca_key, ca, server_name)
    (directory / "wardle.crt").write_bytes(cert_pem)
    (directory / "wardle.key").write_bytes(key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(directory / "wardle.crt", directory / "wardle.key")
    context.load_verify_locations(cafile=str(front_proxy_ca))
    context.verify_mode = ssl.CERT_OPTIONAL
    state: dict[str, Any] = {"objects": {}, "watchers": []}
    server = ExtensionServer(0, ca_pem, _state=state)

    def identity(request: web.Request) -> tuple[str, list[str], list[str]] | None:
        transport = request.transport
        tls = transport.get_extra_info("ssl_object") if transport is not None else None
        peer = tls.getpeercert() if tls is not None else None
        if not peer:
            return None
        common_names = [v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"]
        user = request.headers.get("X-Remote-User", "")
        if common_names != [FRONT_PROXY_CN] or not user:
            return None
        server.seen.append({k: request.headers.getall(k) for k in set(request.headers.keys())})
        return user, request.headers.getall("X-Remote-Group", []), request.headers.getall(
            "X-Remote-Extra-Scopes", [])

    @web.middleware
    async def authenticate(request: web.Request, handler: Any) -> web.StreamResponse:
        who = identity(request)
        if who is None:
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "message": "Unauthorized", "reason": "Unauthorized", "code": 401}, status=401)
        user, groups, scopes = who
        response: web.StreamResponse = await handler(request)
        if not response.prepared:
            response.headers["X-Seen-User"] = user
            response.headers["X-Seen-Groups"] = ",".join(groups)
            response.headers["X-Seen-Extra-Scopes"] = ",".join(scopes)
        return response

    async def discovery(request: web.Request) -> web.Response:
        return web.json_response(RESOURCES)

    async def openapi(request: web.Request) -> web.Response:
        return web.json_response(OPENAPI_V3)

    def listed(namespace: str) -> list[Obj]:
        return [o for (ns, _), o in sorted(state["objects"].items()) if ns == namespace]

    async def collection(request: web.Request) -> web.StreamResponse:
        namespace = request.match_info["namespace"]
        if request.method == "POST":
            body = orjson.loads(await request.read())
            state["last_post"] = (request.headers.get("Content-Length"), request.headers.get("Transfer-Encoding"))
            name = body["metadata"]["name"]
            obj = _flunder(namespace, name, datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            state["objects"][(namespace, name)] = obj
            for watcher in state["watchers"]:
                watcher.put_nowait(obj)
            return web.json_response(obj, status=201)
        if request.query.get("watch") in ("1", "true"):
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            queue: asyncio.Queue[Obj] = asyncio.Queue()
            state["watchers"].append(queue)
            try:
                for obj in listed(namespace):
                    await response.write(orjson.dumps({"type": "ADDED", "object": obj}) + b"\n")
                while True:
                    obj = await queue.get()
                    if obj["metadata"]["namespace"] == namespace:
                        await response.write(orjson.dumps({"type": "ADDED", "object": obj}) + b"\n")
            finally:
                state["watchers"].remove(queue)
        items = listed(namespace)
        if "as=Table" in request.headers.get("Accept", ""):
            return web.json_response({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "1"},
                "columnDefinitions": [
                    {"name": "Name", "type": "string", "format": "name", "description": "name", "priority": 0},
                    {"name": "Created At", "type": "date", "format": "", "description": "created", "priority": 0}],
                "rows": [{"cells": [o["metadata"]["name"], o["metadata"]["creationTimestamp"]],
                          "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                     "metadata": o["metadata"]}} for o in items]})
        answer = web.json_response({"kind": "FlunderList", "apiVersion": GV, "metadata": {"resourceVersion": "1"},
                                   "items": items})
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            answer.enable_compression(web.ContentCoding.gzip)  # as k8s.io/apiserver compresses (large) lists
        return answer

    async def one(request: web.Request) -> web.Response:
        found = state["objects"].get((request.match_info["namespace"], request.match_info["name"]))
        if found is None:
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                      "reason": "NotFound",
                                      "message": f'flunders.{GROUP} "{request.match_info["name"]}" not found'},
                                     status=404)
        return web.json_response(found)

    app = web.Application(middlewares=[authenticate])
    app.router.add_get(BASE, discovery)
    app.router.add_get(f"/openapi/v3/apis/{GROUP}/{VERSION}", openapi)
    app.router.add_route("*", BASE + "/namespaces/{namespace}/flunders", collection)
    app.router.add_get(BASE + "/namespaces/{namespace}/flunders/{name}", one)
    ready = threading.Event()

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(app, handler_cancellation=True)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, bind, 0, ssl_context=context)
        loop.run_until_complete(site.start())
        server.port = runner.addresses[0][1]
        server._loop, server._runner = loop, runner
        ready.set()
        loop.run_forever()
        loop.close()

    server._thread = threading.Thread(target=run, name="extension-apiserver", daemon=True)
    server._thread.start()
    if not ready.wait(10):
        raise RuntimeError("the extension API server did not start")
    return server
