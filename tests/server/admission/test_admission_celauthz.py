"""The CEL `authorizer` variable of webhook matchConditions (server/admission/celauthz.py), as kube's authz
library: checks asked of the server's RBAC authorizer for the request's user, a service account, a path or
the request's own resource, against real HTTPS webhook servers and a real core's guard."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.testing.webhooks import serve
from server.auth.attributes import Attributes, Decision
from server.auth.config import SecurityConfig
from server.auth.setup import Security, start_security
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError
from server.machinery.user import UserInfo
from tests.server.admission.test_admission_webhooks import configmap, configure, deny, webhook
from tests.server.client import Client, path

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
async def guarded(client: Client, tmp_path: Path) -> AsyncIterator[Security]:
    """RBAC over the core: admin (system:masters) and bob (group writers: may create configmaps in default)."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('admin-token,admin,1,"system:masters"\nbob-token,bob,2,"writers"\n')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    security = await start_security(client.running.core, SecurityConfig(
        token_auth_file=tokens, service_account_signing_key_file=tmp_path / "sa.key",
        service_account_key_files=(tmp_path / "sa.key",)))
    await client.create(path("clusterroles", group=RBAC), {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]})
    await client.create(path("clusterrolebindings", group=RBAC), {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "writers"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "writer"},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "writers"}]})
    await client.create(path("rolebindings", "default", group=RBAC), {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "builder", "namespace": "default"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}]})
    asked = Attributes(UserInfo("bob", groups=("writers",)), "create", resource="configmaps", namespace="default")
    for _ in range(300):
        if security.guard.authorizer.authorize(asked)[0] is Decision.ALLOW:
            break
        await asyncio.sleep(0.01)
    try:
        yield security
    finally:
        await security.stop()


SECRETS = "authorizer.group('').resource('secrets').namespace('default').check('get')"
# (case, matchCondition, who asks, whether the webhook (which denies) is called, or the failure's text)
CASES: list[tuple[str, str, str, bool | str]] = [
    ("resource check allowed", f"{SECRETS}.allowed()", "admin", True),
    ("resource check not allowed", f"{SECRETS}.allowed()", "bob", False),
    ("reason of a denial is RBAC's", f"{SECRETS}.reason() == ''", "bob", True),
    ("no error", f"{SECRETS}.errored() || {SECRETS}.error() != ''", "admin", False),
    ("named, subresource", "authorizer.group('').resource('configmaps').namespace('default').name('c')"
     ".subresource('status').check('create').allowed()", "bob", False),
    ("requestResource", "authorizer.requestResource.check('create').allowed()", "bob", True),
    ("requestResource another verb", "authorizer.requestResource.check('delete').allowed()", "bob", False),
    ("path", "authorizer.path('/metrics').check('get').allowed()", "admin", True),
    ("path not allowed", "authorizer.path('/metrics').check('get').allowed()", "bob", False),
    ("serviceAccount", "authorizer.serviceAccount('default', 'builder').group('').resource('configmaps')"
     ".namespace('default').check('create').allowed()", "bob", True),
    ("serviceAccount elsewhere", "authorizer.serviceAccount('default', 'builder').group('')"
     ".resource('configmaps').namespace('other').check('create').allowed()", "bob", False),
    ("empty path", "authorizer.path('').check('get').allowed()", "admin", "path must not be empty"),
    ("empty resource", "authorizer.group('').resource(' ').check('get').allowed()", "admin",
     "resource must not be empty"),
    ("invalid service account", "authorizer.serviceAccount('Not_A_Namespace', 'x').path('/a').check('get')"
     ".allowed()", "admin", "Invalid service account namespace"),
    ("wrong receiver", "object.group('x').resource('y').check('get').allowed()", "admin", "no such overload"),
]


@pytest.mark.parametrize(("case", "expression", "who", "called"), CASES, ids=[c[0] for c in CASES])
async def test_authorizer_in_match_conditions(client: Client, guarded: Security, case: str, expression: str,
                                              who: str, called: bool | str) -> None:
    async with serve(deny) as hook:
        await configure(client, "validatingwebhookconfigurations", "config", [webhook(
            "v.example.com", hook.client_config(), matchConditions=[{"name": "authz", "expression": expression}])])
        request = core_pb2.CreateRequest(
            path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default"),
            object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(configmap("c"))))
        credentials = Credentials(token=f"{who}-token", request_uri="/api/v1/namespaces/default/configmaps")
        if called is False:
            await guarded.guard.create(request, credentials)
            assert not hook.requests
            return
        with pytest.raises(ApiError) as failed:
            await guarded.guard.create(request, credentials)
        message = failed.value.status.message
        if called is True:
            assert 'admission webhook "v.example.com" denied the request' in message
            assert len(hook.requests) == 1
        else:
            assert failed.value.status.code == 500 and called in message
            assert not hook.requests
