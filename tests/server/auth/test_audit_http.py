"""End to end: HTTP requests through the real gateway app (in-process, as `capstan serve` runs it) to a core
started with a token file, RBAC and an audit policy write the events kube-apiserver would for them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from yarl import URL

from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from server.auth.config import SecurityConfig
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

Obj = dict[str, Any]
POLICY = b"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*"]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
"""


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('admin-token,admin,1,"system:masters"\n')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (tmp_path / "policy.yaml").write_bytes(POLICY)
    config = SecurityConfig(token_auth_file=tokens, service_account_signing_key_file=tmp_path / "sa.key",
                            service_account_key_files=(tmp_path / "sa.key",),
                            audit_policy_file=tmp_path / "policy.yaml", audit_log_path=str(tmp_path / "audit.log"))
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=0.5))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=config)
    client = InProcessClient(core.guard)
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()


def events(tmp_path: Path) -> list[Obj]:
    return [orjson.loads(line) for line in (tmp_path / "audit.log").read_bytes().splitlines()]


@pytest.mark.parametrize(("method", "path", "token", "body", "code", "verb", "level"), [
    ("POST", "/api/v1/namespaces/default/configmaps", "admin-token",
     {"metadata": {"name": "web"}, "data": {"a": "1"}}, 201, "create", "RequestResponse"),
    ("GET", "/api/v1/namespaces/default/configmaps?limit=500", "admin-token", None, 200, "list",
     "RequestResponse"),
    # the URI as sent, its escapes kept (Go's URL.RequestURI(): the raw query as it came)
    ("GET", "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dweb%2Ctier%21%3Ddb&x=%2F", "admin-token",
     None, 200, "list", "RequestResponse"),
    ("GET", "/api/v1/namespaces/default/secrets", "", None, 403, "list", "Metadata"),
    ("GET", "/api/v1/namespaces/default/pods/none", "admin-token", None, 404, "get", "Metadata"),
    ("GET", "/api/v1/namespaces/default/pods", "garbage", None, 401, "list", "Metadata"),
    ("GET", "/version", "admin-token", None, 200, "get", "Metadata"),
])
async def test_http_request_is_audited(url: str, tmp_path: Path, method: str, path: str, token: str,
                                       body: Obj | None, code: int, verb: str, level: str) -> None:
    headers = {"User-Agent": "audit-test/1.0"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/healthz", headers=headers) as health:
            assert health.status in (200, 401)
        async with session.request(method, URL(url + path, encoded=True), headers=headers, json=body) as resp:
            assert resp.status == code, await resp.text()
    [event] = events(tmp_path)  # /healthz at level None and RequestReceived omitted: one event
    assert event["requestURI"] == path and event["verb"] == verb and event["level"] == level
    assert event["responseStatus"]["code"] == code
    assert event["stage"] == ("ResponseStarted" if code == 401 else "ResponseComplete")
    assert event["sourceIPs"] == ["127.0.0.1"] and event["userAgent"] == "audit-test/1.0"
    assert event["user"] == ({} if code == 401 else {"username": "system:anonymous",
                                                      "groups": ["system:unauthenticated"]} if not token else
                             {"username": "admin", "uid": "1", "groups": ["system:masters", "system:authenticated"]})
    if level == "RequestResponse":
        assert event["responseObject"]["kind"] in ("ConfigMap", "ConfigMapList")
    text = (tmp_path / "audit.log").read_text()
    assert "admin-token" not in text and "garbage" not in text
