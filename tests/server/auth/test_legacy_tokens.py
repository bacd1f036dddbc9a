"""Secret-based service account tokens against a real core over LMDB: the tokens controller
(server/controllers/tokens.py) filling and removing `kubernetes.io/service-account-token` Secrets, the
authenticator accepting their tokens as kube's legacy validator does (server/auth/serviceaccounts/), the
last-used label it sets, and the legacy token tracking ConfigMap (server/controllers/legacytokentracking.py).

Expected answers are kube 1.28.7's: a token this code signed with a kube-apiserver's key was accepted by it and
labelled by it the same way (field manager kube-apiserver)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
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
from server.auth.serviceaccounts import ServiceAccounts, legacy, start_service_accounts
from server.controllers import legacytokentracking
from server.controllers.legacytokentracking import LegacyTokenTracking
from server.controllers.tokens import TokensController
from server.machinery import errors
from server.machinery.credentials import Credentials
from server.machinery.user import AUTHENTICATED, UserInfo
from server.objects.core import Core
from server.runtime.informer import SharedInformers

NS = "default"
ROOT_CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
Obj = dict[str, Any]


def _key(path: Path) -> rsa.RSAPrivateKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


def _path(resource: str, name: str = "", namespace: str = NS) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace, name=name)


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def token_secret(name: str = "robot-token", account: str = "robot", **annotations: str) -> Obj:
    return {"metadata": {"name": name, "annotations": {legacy.NAME_ANNOTATION: account, **annotations}},
            "type": legacy.SECRET_TYPE}


@dataclass
class Setup:
    core: Core
    started: ServiceAccounts
    key: rsa.RSAPrivateKey

    async def create(self, resource: str, obj: Obj) -> Obj:
        got = await self.core.create(core_pb2.CreateRequest(path=_path(resource), object=_raw(obj)))
        created: Obj = orjson.loads(got.object.data)
        return created

    async def get(self, resource: str, name: str, namespace: str = NS) -> Obj | None:
        try:
            got = await self.core.get(core_pb2.GetRequest(path=_path(resource, name, namespace)))
        except errors.ApiError as err:
            assert err.code == 404
            return None
        found: Obj = orjson.loads(got.object.data)
        return found

    async def put(self, resource: str, obj: Obj) -> Obj:
        got = await self.core.update(core_pb2.UpdateRequest(path=_path(resource, obj["metadata"]["name"]),
                                                            object=_raw(obj)))
        updated: Obj = orjson.loads(got.object.data)
        return updated

    async def delete(self, resource: str, name: str) -> None:
        await self.core.delete(core_pb2.DeleteRequest(path=_path(resource, name)))

    async def authenticate(self, token: str) -> UserInfo:
        assert self.started.authenticator is not None
        union = UnionAuthenticator(connection=(), tokens=(self.started.authenticator,), anonymous=True)
        return await union.authenticate(Credentials(token=token))

    async def token(self, secret: str = "robot-token") -> str:
        found = await until(lambda: self.get("secrets", secret),
                            lambda s: s is not None and "token" in (s.get("data") or {}))
        assert found is not None
        return base64.b64decode(found["data"]["token"]).decode()


async def until(read: Callable[[], Awaitable[Any]], done: Callable[[Any], bool], tries: int = 150) -> Any:
    """What `read` answers once `done` says so (the controller and indexes follow a watch)."""
    value = None
    for _ in range(tries):
        value = await read()
        if done(value):
            return value
        await asyncio.sleep(0.02)
    pytest.fail(f"never came to pass; last read: {value!r}")


@pytest.fixture
async def setup(core: Core, tmp_path: Path) -> AsyncIterator[Setup]:
    key = _key(tmp_path / "sa.key")
    config = SecurityConfig(service_account_signing_key_file=tmp_path / "sa.key",
                            service_account_key_files=(tmp_path / "sa.key",))
    started = await start_service_accounts(core, config)
    controller = TokensController(core, key, ROOT_CA, SharedInformers(core))
    await controller.start()
    try:
        yield Setup(core, started, key)
    finally:
        await controller.stop()
        await started.stop()


async def test_secret_is_filled_and_its_token_authenticates(setup: Setup) -> None:
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    uid = sa["metadata"]["uid"]
    await setup.create("secrets", token_secret())
    token = await setup.token()
    secret = await setup.get("secrets", "robot-token")
    assert secret is not None
    assert base64.b64decode(secret["data"]["ca.crt"]) == ROOT_CA
    assert base64.b64decode(secret["data"]["namespace"]) == NS.encode()
    assert secret["metadata"]["annotations"] == {legacy.NAME_ANNOTATION: "robot", legacy.UID_ANNOTATION: uid}
    assert [m.get("manager") for m in secret["metadata"]["managedFields"]][-1] == "kube-controller-manager"
    der = setup.key.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "kid": kid}
    assert jwt.decode(token, setup.key.public_key(), algorithms=["RS256"]) == {
        "iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:default:robot",
        "kubernetes.io/serviceaccount/namespace": NS, "kubernetes.io/serviceaccount/secret.name": "robot-token",
        "kubernetes.io/serviceaccount/service-account.name": "robot",
        "kubernetes.io/serviceaccount/service-account.uid": uid}
    assert await setup.authenticate(token) == UserInfo(
        "system:serviceaccount:default:robot", uid, ("system:serviceaccounts", "system:serviceaccounts:default",
                                                     AUTHENTICATED))
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    labelled = await until(lambda: setup.get("secrets", "robot-token"),
                           lambda s: (s["metadata"].get("labels") or {}).get(legacy.LAST_USED_LABEL) == today)
    by_manager = {m.get("manager"): m for m in labelled["metadata"]["managedFields"]}
    assert by_manager["kube-apiserver"]["fieldsV1"] == {"f:metadata": {"f:labels": {
        ".": {}, f"f:{legacy.LAST_USED_LABEL}": {}}}}
    assert labelled["data"]["token"] == secret["data"]["token"]  # the label is all the use changed


@pytest.mark.parametrize("change", [
    "secret deleted", "token in the secret replaced", "account deleted", "account recreated", "secret being deleted",
])
async def test_token_stops_with_what_it_names(setup: Setup, change: str) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    await setup.create("secrets", token_secret())
    token = await setup.token()
    assert (await setup.authenticate(token)).name == "system:serviceaccount:default:robot"
    if change == "secret deleted":
        await setup.delete("secrets", "robot-token")
    elif change == "token in the secret replaced":
        secret = await setup.get("secrets", "robot-token")
        assert secret is not None
        secret["data"]["token"] = base64.b64encode(b"something.else.entirely").decode()
        await setup.put("secrets", secret)
    elif change == "secret being deleted":
        secret = await setup.get("secrets", "robot-token")
        assert secret is not None
        secret["metadata"]["finalizers"] = ["example.com/hold"]
        await setup.put("secrets", secret)
        await setup.delete("secrets", "robot-token")
    else:
        await setup.delete("serviceaccounts", "robot")
        if change == "account recreated":
            await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})

    async def refused() -> bool:
        try:
            await setup.authenticate(token)
        except Unauthorized:
            return True
        return False

    await until(refused, bool)
    if change == "secret being deleted":  # let it go
        secret = await setup.get("secrets", "robot-token")
        assert secret is not None
        secret["metadata"]["finalizers"] = []
        await setup.put("secrets", secret)


def _signed(setup: Setup, claims: Obj, key: rsa.RSAPrivateKey | None = None) -> str:
    return legacy.signed(claims, key or setup.key)


@pytest.mark.parametrize(("case", "accepted"), [
    ("as the controller signs it", True),
    ("an audience of the API server", True),
    ("an empty audience list", True),
    ("another audience", False),
    ("no sub", False),
    ("sub of another account", False),
    ("no namespace claim", False),
    ("no secret claim", False),
    ("no account uid claim", False),
    ("another account's uid", False),
    ("a secret that does not exist", False),
    ("signed by another key", False),
])
async def test_legacy_claims(setup: Setup, case: str, accepted: bool, tmp_path: Path) -> None:
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    await setup.create("secrets", token_secret())
    await setup.create("secrets", token_secret("other-token"))
    await setup.token()
    claims: Obj = {"iss": legacy.ISSUER, "sub": "system:serviceaccount:default:robot",
                   "kubernetes.io/serviceaccount/namespace": NS,
                   "kubernetes.io/serviceaccount/secret.name": "robot-token",
                   "kubernetes.io/serviceaccount/service-account.name": "robot",
                   "kubernetes.io/serviceaccount/service-account.uid": sa["metadata"]["uid"]}
    key = None
    if case == "an audience of the API server":
        claims["aud"] = ["https://kubernetes.default.svc.cluster.local", "elsewhere"]
    elif case == "an empty audience list":
        claims["aud"] = []
    elif case == "another audience":
        claims["aud"] = "elsewhere"
    elif case == "no sub":
        del claims["sub"]
    elif case == "sub of another account":
        claims["sub"] = "system:serviceaccount:default:other"
    elif case == "no namespace claim":
        del claims["kubernetes.io/serviceaccount/namespace"]
    elif case == "no secret claim":
        del claims["kubernetes.io/serviceaccount/secret.name"]
    elif case == "no account uid claim":
        del claims["kubernetes.io/serviceaccount/service-account.uid"]
    elif case == "another account's uid":
        claims["kubernetes.io/serviceaccount/service-account.uid"] = "00000000-0000-0000-0000-000000000000"
    elif case == "a secret that does not exist":
        claims["kubernetes.io/serviceaccount/secret.name"] = "missing-token"
    elif case == "signed by another key":
        key = _key(tmp_path / "other.key")
    token = _signed(setup, claims, key)
    secret = await setup.get("secrets", "robot-token")
    assert secret is not None
    secret["data"]["token"] = base64.b64encode(token.encode()).decode()  # the Secret holds exactly this token
    await setup.put("secrets", secret)
    if accepted:
        user = await until(lambda: _answer(setup, token), lambda u: isinstance(u, UserInfo))
        assert user.name == "system:serviceaccount:default:robot"
    else:
        await asyncio.sleep(0.1)  # the indexes have the Secret's new token
        with pytest.raises(Unauthorized):
            await setup.authenticate(token)


async def _answer(setup: Setup, token: str) -> UserInfo | None:
    try:
        return await setup.authenticate(token)
    except Unauthorized:
        return None


@pytest.mark.parametrize(("case", "kept"), [
    ("its account exists", True),
    ("no such account", False),
    ("the uid of another account", False),
    ("the account's own uid", True),
])
async def test_controller_keeps_only_secrets_of_existing_accounts(setup: Setup, case: str, kept: bool) -> None:
    sa = await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    annotations = {}
    if case == "the uid of another account":
        annotations[legacy.UID_ANNOTATION] = "00000000-0000-0000-0000-000000000000"
    elif case == "the account's own uid":
        annotations[legacy.UID_ANNOTATION] = sa["metadata"]["uid"]
    account = "nobody" if case == "no such account" else "robot"
    await setup.create("secrets", token_secret(account=account, **annotations))
    if kept:
        await setup.token()
    else:
        await until(lambda: setup.get("secrets", "robot-token"), lambda s: s is None)


async def test_account_deletion_takes_only_its_own_tokens(setup: Setup) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    await setup.create("serviceaccounts", {"metadata": {"name": "other"}})
    await setup.create("secrets", token_secret("robot-token"))
    await setup.create("secrets", token_secret("other-token", account="other"))
    await setup.create("secrets", {"metadata": {"name": "plain", "annotations": {legacy.NAME_ANNOTATION: "robot"}}})
    await setup.token("robot-token")
    await setup.token("other-token")
    await setup.delete("serviceaccounts", "robot")
    await until(lambda: setup.get("secrets", "robot-token"), lambda s: s is None)
    assert await setup.get("secrets", "other-token") is not None
    assert await setup.get("secrets", "plain") is not None  # not a token Secret: not the controller's


async def test_what_a_secret_has_is_kept_and_a_stale_ca_replaced(setup: Setup) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}})
    secret = token_secret()
    secret["data"] = {"token": base64.b64encode(b"given").decode(), "ca.crt": base64.b64encode(b"old").decode()}
    await setup.create("secrets", secret)
    filled = await until(lambda: setup.get("secrets", "robot-token"),
                         lambda s: "namespace" in (s.get("data") or {}))
    assert base64.b64decode(filled["data"]["token"]) == b"given"
    assert base64.b64decode(filled["data"]["ca.crt"]) == ROOT_CA


async def test_deleted_secret_leaves_its_accounts_list(setup: Setup) -> None:
    await setup.create("serviceaccounts", {"metadata": {"name": "robot"}, "secrets": [
        {"name": "robot-token"}, {"name": "kept"}]})
    await setup.create("secrets", token_secret())
    await setup.token()
    await setup.delete("secrets", "robot-token")
    account = await until(lambda: setup.get("serviceaccounts", "robot"), lambda a: len(a.get("secrets") or []) == 1)
    assert account["secrets"] == [{"name": "kept"}]


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 3, 4, 12, tzinfo=datetime.UTC).timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("since", "after"), [
    (None, "2026-03-04"),  # created
    ("2025-01-02", "2025-01-02"),  # a date: kept
    ("yesterday", "2026-03-04"),
    ("2025-1-2", "2026-03-04"),
    ("2025-13-02", "2026-03-04"),
    ("", "2026-03-04"),
])
async def test_tracking_config_map(core: Core, since: str | None, after: str) -> None:
    config_maps = _path("configmaps", namespace="kube-system")
    if since is not None:
        await core.create(core_pb2.CreateRequest(path=config_maps, object=_raw({
            "metadata": {"name": legacytokentracking.NAME}, "data": {"since": since}})))
    clock = Clock()
    controller = LegacyTokenTracking(core, SharedInformers(core), clock=clock)
    await controller.start()
    try:
        named = _path("configmaps", legacytokentracking.NAME, "kube-system")

        async def read() -> Obj:
            found: Obj = orjson.loads((await core.get(core_pb2.GetRequest(path=named))).object.data)
            return found

        async def read_or_none() -> Obj | None:
            try:
                return await read()
            except errors.ApiError:
                return None

        found = await until(read_or_none, lambda c: c is not None and c["data"]["since"] == after)
        if since is None:
            assert found["metadata"]["managedFields"][0]["manager"] == "kube-apiserver"
            await core.delete(core_pb2.DeleteRequest(path=named))  # not made again within 30 minutes
            await asyncio.sleep(0.2)
            assert await read_or_none() is None
            clock.now += 30 * 60
            controller.queue(legacytokentracking.KEY)
            await until(read_or_none, lambda c: c is not None)
    finally:
        await controller.stop()
