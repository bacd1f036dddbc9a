"""Service account tokens against a real core over LMDB: the issued JWT's header and claims, the
authenticator's answers (through the union, as the chain asks), TokenRequest's validation and the OIDC
documents."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.authn.union import UnionAuthenticator
from server.auth.config import SecurityConfig
from server.auth.errors import Unauthorized
from server.auth.serviceaccounts import ServiceAccounts, start_service_accounts
from server.auth.serviceaccounts.issuer import Account
from server.machinery import errors
from server.machinery.credentials import Credentials
from server.machinery.user import AUTHENTICATED, UserInfo
from server.objects.core import Core

ISSUER = "https://kubernetes.default.svc.cluster.local"
NS = "default"


def _write_key(path: Path) -> rsa.RSAPrivateKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


@dataclass
class Setup:
    core: Core
    started: ServiceAccounts
    key: rsa.RSAPrivateKey
    other_key: rsa.RSAPrivateKey

    async def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        got = await self.core.create(core_pb2.CreateRequest(
            path=core_pb2.ResourcePath(version="v1", resource=resource, namespace=NS),
            object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))))
        created: dict[str, Any] = orjson.loads(got.object.data)
        return created

    async def delete(self, resource: str, name: str) -> None:
        await self.core.delete(core_pb2.DeleteRequest(
            path=core_pb2.ResourcePath(version="v1", resource=resource, namespace=NS, name=name)))

    async def token_request(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        path = core_pb2.ResourcePath(version="v1", resource="serviceaccounts", namespace=NS, name=name,
                                     subresource="token")
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        got = await self.core.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))))
        answer: dict[str, Any] = orjson.loads(got.object.data)
        return answer

    async def authenticate(self, token: str) -> UserInfo:
        assert self.started.authenticator is not None
        union = UnionAuthenticator(connection=(), tokens=(self.started.authenticator,), anonymous=True)
        return await union.authenticate(Credentials(token=token))


@pytest.fixture
async def setup(core: Core, tmp_path: Path) -> AsyncIterator[Setup]:
    key = _write_key(tmp_path / "sa.key")
    other = _write_key(tmp_path / "other.key")
    config = SecurityConfig(service_account_signing_key_file=tmp_path / "sa.key",
                            service_account_key_files=(tmp_path / "sa.key",))
    started = await start_service_accounts(core, config)
    try:
        yield Setup(core, started, key, other)
    finally:
        await started.stop()


def _account(sa: dict[str, Any]) -> Account:
    return Account(NS, sa["metadata"]["name"], sa["metadata"]["uid"])


async def test_token_header_and_claims(setup: Setup) -> None:
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    pod = await setup.create("pods", {"metadata": {"name": "p"}, "spec": {
        "serviceAccountName": "robot", "containers": [{"name": "c", "image": "busybox"}]}})
    answer = await setup.token_request("robot", {"boundObjectRef": {
        "kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod["metadata"]["uid"]}})
    token = answer["status"]["token"]
    der = setup.key.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "kid": kid}  # go-jose writes no typ
    claims = jwt.decode(token, setup.key.public_key(), algorithms=["RS256"], audience=ISSUER)
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert abs(claims["iat"] - time.time()) < 5
    assert {k: v for k, v in claims.items() if k not in ("exp", "iat", "nbf")} == {
        "aud": [ISSUER], "iss": ISSUER, "sub": "system:serviceaccount:default:robot",
        "kubernetes.io": {"namespace": NS, "serviceaccount": {"name": "robot", "uid": sa["metadata"]["uid"]},
                          "pod": {"name": "p", "uid": pod["metadata"]["uid"]}}}
    assert answer["kind"] == "TokenRequest" and answer["apiVersion"] == "authentication.k8s.io/v1"
    assert answer["metadata"]["name"] == "robot" and answer["metadata"]["namespace"] == NS
    assert answer["spec"]["audiences"] == [ISSUER] and answer["spec"]["expirationSeconds"] == 3600
    assert answer["status"]["expirationTimestamp"] == time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                    time.gmtime(claims["exp"]))
    user = await setup.authenticate(token)
    assert user == UserInfo("system:serviceaccount:default:robot", sa["metadata"]["uid"],
                            ("system:serviceaccounts", "system:serviceaccounts:default", AUTHENTICATED),
                            (("authentication.kubernetes.io/pod-name", ("p",)),
                             ("authentication.kubernetes.io/pod-uid", (pod["metadata"]["uid"],))))


def _forge(setup: Setup, sa: dict[str, Any], case: str) -> str:
    """A token for `sa` spoiled as `case` says ("valid" spoils nothing)."""
    assert setup.started.issuer is not None
    now = int(time.time())
    claims = setup.started.issuer.claims(_account(sa), audiences=(ISSUER,), expiration_seconds=3600, now=now)
    if case == "expired":
        claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 120)
    elif case == "expired within leeway":
        claims.update(exp=now - 30)
    elif case == "nbf in the future":
        claims.update(nbf=now + 600)
    elif case == "wrong issuer":
        claims.update(iss="https://elsewhere.example")
    elif case == "legacy issuer":
        claims.update(iss="kubernetes/serviceaccount")
    elif case == "wrong audience":
        claims.update(aud=["https://elsewhere.example"])
    elif case == "uid mismatch":
        claims["kubernetes.io"]["serviceaccount"]["uid"] = "00000000-0000-0000-0000-000000000000"
    public_pem = setup.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
    if case == "alg none":
        return jwt.encode(claims, None, algorithm="none")  # type: ignore[arg-type]
    if case == "HS256 with the public key":
        header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
        payload = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=")
        sig = hmac.new(public_pem, header + b"." + payload, hashlib.sha256).digest()
        return (header + b"." + payload + b"." + base64.urlsafe_b64encode(sig).rstrip(b"=")).decode()
    if case == "wrong key":
        return jwt.encode(claims, setup.other_key, algorithm="RS256")
    if case == "garbage":
        return "not.a.jwt"
    if case == "10 KB":
        return "x" * 10240
    if case == "10 KB of dots":
        return ("a" * 5000) + "." + ("b" * 5000) + "." + "c"
    return setup.started.issuer.sign(claims)


@pytest.mark.parametrize(("case", "authenticated"), [
    ("valid", True),
    ("expired within leeway", True),
    ("expired", False),
    ("nbf in the future", False),
    ("wrong issuer", False),
    ("legacy issuer", False),
    ("wrong audience", False),
    ("alg none", False),
    ("HS256 with the public key", False),
    ("wrong key", False),
    ("garbage", False),
    ("10 KB", False),
    ("10 KB of dots", False),
    ("uid mismatch", False),
])
async def test_authenticator(setup: Setup, case: str, authenticated: bool) -> None:
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    token = _forge(setup, sa, case)
    if authenticated:
        user = await setup.authenticate(token)
        assert user.name == "system:serviceaccount:default:robot"
    else:
        with pytest.raises(Unauthorized):
            await setup.authenticate(token)


@pytest.mark.parametrize("change", ["deleted account", "recreated account", "deleted bound pod",
                                    "recreated bound secret"])
async def test_token_dies_with_what_it_names(setup: Setup, change: str) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    await setup.create("pods", {"metadata": {"name": "p"}, "spec": {
        "serviceAccountName": "robot", "containers": [{"name": "c", "image": "busybox"}]}})
    await setup.create("secrets", {"metadata": {"name": "s"}})
    kind = "Secret" if "secret" in change else "Pod"
    name = "s" if kind == "Secret" else "p"
    token = (await setup.token_request("robot", {"boundObjectRef": {"kind": kind, "apiVersion": "v1",
                                                                    "name": name}}))["status"]["token"]
    assert (await setup.authenticate(token)).name == "system:serviceaccount:default:robot"
    if "account" in change:
        await setup.delete("serviceaccounts", "robot")
        if change == "recreated account":
            await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    elif kind == "Pod":
        await setup.delete("pods", "p")
    else:
        await setup.delete("secrets", "s")
        await setup.create("secrets", {"metadata": {"name": "s"}})
    for _ in range(100):  # the indexes follow a watch
        try:
            await setup.authenticate(token)
        except Unauthorized:
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"the token still authenticates after: {change}")


@pytest.mark.parametrize(("name", "spec", "code", "message"), [
    ("robot", {"expirationSeconds": 60}, 422,
     'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not '
     "specify a duration less than 10 minutes"),
    ("robot", {"expirationSeconds": 2**32 + 1}, 422,
     'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may '
     "not specify a duration larger than 2^32 seconds"),
    ("nobody", {}, 404, 'serviceaccounts "nobody" not found'),
    ("robot", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "missing"}}, 404,
     'pods "missing" not found'),
    ("robot", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "other"}}, 400,
     'cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.'),
    ("robot", {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}, 400,
     "cannot bind token to object of type /v1, Kind=ConfigMap"),
    ("robot", {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1", "name": "x"}}, 400,
     "cannot bind token to object of type apps/v1, Kind=Deployment"),
    ("robot", {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s", "uid": "nope"}}, 409,
     'Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (nope) does not match '
     "the UID in record. The object might have been deleted and then recreated"),
])
async def test_token_request_refusals(setup: Setup, name: str, spec: dict[str, Any], code: int,
                                      message: str) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    await setup.create("pods", {"metadata": {"name": "other"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    await setup.create("secrets", {"metadata": {"name": "s"}})
    with pytest.raises(errors.ApiError) as raised:
        await setup.token_request(name, spec)
    assert (raised.value.status.code, raised.value.status.message) == (code, message)


async def test_requested_audiences_and_expiration(setup: Setup) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    answer = await setup.token_request("robot", {"audiences": ["vault"], "expirationSeconds": 600})
    claims = jwt.decode(answer["status"]["token"], setup.key.public_key(), algorithms=["RS256"], audience="vault")
    assert claims["exp"] - claims["iat"] == 600
    with pytest.raises(Unauthorized):  # a token for vault is not one for the API server
        await setup.authenticate(answer["status"]["token"])


async def test_oidc_documents(setup: Setup) -> None:
    documents = setup.started.documents
    assert documents is not None
    assert orjson.loads(documents.configuration) == {
        "issuer": ISSUER, "jwks_uri": ISSUER + "/openid/v1/jwks", "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"]}
    (key,) = orjson.loads(documents.jwks)["keys"]
    assert (key["use"], key["kty"], key["alg"], key["e"]) == ("sig", "RSA", "RS256", "AQAB")
    public = jwt.PyJWK(key).key
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    token = _forge(setup, sa, "valid")
    assert jwt.get_unverified_header(token)["kid"] == key["kid"]
    jwt.decode(token, public, algorithms=["RS256"], audience=ISSUER)


async def _until_indexed(setup: Setup, resource: str, name: str, uid: str | None) -> None:
    """Wait until the authenticator's index holds `name` with `uid` (None: holds nothing by that name)."""
    lookups = setup.started.lookups
    assert lookups is not None
    for _ in range(200):
        found = lookups.peek(resource, NS, name)
        if (found is None and uid is None) or (found is not None and found.uid == uid):
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"the index did not follow {resource}/{name}")


@pytest.mark.parametrize(("bound", "change"), [
    ("", "delete account"),
    ("", "recreate account"),
    ("Pod", "delete account"),
    ("Pod", "delete bound"),
    ("Pod", "recreate bound"),
    ("Secret", "delete bound"),
    ("Secret", "recreate bound"),
])
async def test_cached_token_fails_once_its_objects_change(setup: Setup, bound: str, change: str) -> None:
    """The token is verified and cached by its first use; the very request after the index sees the change
    is refused, with no TTL to wait out."""
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    pod = {"metadata": {"name": "p"}, "spec": {"serviceAccountName": "robot",
                                               "containers": [{"name": "c", "image": "busybox"}]}}
    objects: dict[str, tuple[str, str, dict[str, Any]]] = {
        "Pod": ("pods", "p", pod), "Secret": ("secrets", "s", {"metadata": {"name": "s"}})}
    spec: dict[str, Any] = {}
    if bound:
        resource, name, obj = objects[bound]
        await setup.create(resource, obj)
        spec = {"boundObjectRef": {"kind": bound, "apiVersion": "v1", "name": name}}
    token = (await setup.token_request("robot", spec))["status"]["token"]
    for _ in range(2):  # the second answer comes from the cache
        assert (await setup.authenticate(token)).name == "system:serviceaccount:default:robot"
    resource, name, obj = ("serviceaccounts", "robot", {"metadata": {"name": "robot"}}) \
        if change.endswith("account") else objects[bound]
    await setup.delete(resource, name)
    uid = None
    if change.startswith("recreate"):
        uid = (await setup.create(resource, obj))["metadata"]["uid"]
    await _until_indexed(setup, resource, name, uid)
    with pytest.raises(Unauthorized):
        await setup.authenticate(token)


async def test_cached_token_expires(setup: Setup) -> None:
    """A token one second from the end of its leeway is accepted, cached, and refused once that second passed."""
    assert setup.started.issuer is not None
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    now = int(time.time())
    claims = setup.started.issuer.claims(_account(sa), audiences=(ISSUER,), expiration_seconds=3600, now=now - 3600)
    claims["exp"] = now - 59  # valid until exp + the 60 s leeway
    token = setup.started.issuer.sign(claims)
    assert (await setup.authenticate(token)).name == "system:serviceaccount:default:robot"
    await asyncio.sleep(max(0.0, now + 1.05 - time.time()))
    with pytest.raises(Unauthorized, match="expired"):
        await setup.authenticate(token)


@pytest.mark.parametrize("case", ["wrong key", "signature of another token", "flipped signature byte",
                                  "HS256 with the public key", "alg none"])
async def test_bad_signature_never_cached_as_success(setup: Setup, case: str) -> None:
    """The valid token is cached first; a forgery with its claims is refused on every try, and the valid token
    is still accepted after the forgery's refusal is cached."""
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    valid = _forge(setup, sa, "valid")
    assert (await setup.authenticate(valid)).name == "system:serviceaccount:default:robot"
    signing_input, _, signature = valid.rpartition(".")
    if case == "signature of another token":
        forged = signing_input + "." + _forge(setup, sa, "wrong audience").rpartition(".")[2]
    elif case == "flipped signature byte":
        raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
        raw[len(raw) // 2] ^= 1
        forged = signing_input + "." + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    else:
        forged = _forge(setup, sa, case)
    for _ in range(3):
        with pytest.raises(Unauthorized):
            await setup.authenticate(forged)
    assert (await setup.authenticate(valid)).name == "system:serviceaccount:default:robot"
