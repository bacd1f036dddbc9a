"""POST serviceaccounts/{name}/token over HTTP (both transports): 201 with the TokenRequest and its token,
kube's Statuses for refused requests, and 404 where no signing key is configured."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from server.auth.config import SecurityConfig
from server.auth.serviceaccounts import start_service_accounts
from tests.gateway.conftest import Server

TOKEN = "/api/v1/namespaces/default/serviceaccounts/robot/token"
ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture
async def signed(server: Server, tmp_path: Path) -> AsyncIterator[rsa.RSAPrivateKey]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    started = await start_service_accounts(server.core.core, SecurityConfig(
        service_account_signing_key_file=tmp_path / "sa.key"))
    try:
        await server.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}})
        yield key
    finally:
        await started.stop()


def _request(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


async def test_token_issued(server: Server, signed: rsa.RSAPrivateKey) -> None:
    resp = await server.request("POST", TOKEN, json=_request({"audiences": ["api", ISSUER]}))
    assert resp.status == 201, resp.body
    answer = resp.json()
    assert (answer["apiVersion"], answer["kind"]) == ("authentication.k8s.io/v1", "TokenRequest")
    assert answer["spec"] == {"audiences": ["api", ISSUER], "expirationSeconds": 3600}
    claims = jwt.decode(answer["status"]["token"], signed.public_key(), algorithms=["RS256"], audience="api")
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert set(answer["status"]) == {"token", "expirationTimestamp"}


@pytest.mark.parametrize(("path", "spec", "code", "reason", "message"), [
    (TOKEN, {"expirationSeconds": 599}, 422, "Invalid",
     'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not '
     "specify a duration less than 10 minutes"),
    ("/api/v1/namespaces/default/serviceaccounts/nobody/token", {}, 404, "NotFound",
     'serviceaccounts "nobody" not found'),
    (TOKEN, {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n"}}, 400, "BadRequest",
     "cannot bind token to object of type /v1, Kind=Node"),
])
async def test_token_refused(server: Server, signed: rsa.RSAPrivateKey, path: str, spec: dict[str, Any],
                             code: int, reason: str, message: str) -> None:
    resp = await server.request("POST", path, json=_request(spec))
    assert resp.status == code, resp.body
    status = resp.json()
    assert (status["kind"], status["reason"], status["message"]) == ("Status", reason, message)


async def test_no_signing_key_no_subresource(server: Server) -> None:
    await server.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}})
    resp = await server.request("POST", TOKEN, json=_request({}))
    assert resp.status == 404, resp.body
