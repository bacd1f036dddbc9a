"""End to end, the security matrix: one secure `capstan serve` (HTTPS, TLS gRPC, mutual TLS gRPC, RBAC,
static tokens, audit) driven by the real kubectl 1.28 and 1.32, the official Python client and gRPC stubs.

The admin (the kubeconfig's system:masters certificate) sets up namespace `team`: ServiceAccount `bot` may
get/list/watch ConfigMaps there (and create Roles, to try escalating), user `alice` (a client certificate) may
too, group `devs` may list Pods. Every other request gets kube-apiserver 1.28's exact 401 or 403, on every
interface, and a request's identity is its own even when many share one connection pool or one channel.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import yaml
from kubernetes import client

from capstan.cli import pki
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from gateway.transport.grpc import status_of
from tests.e2e.conftest import (
    ROOT,
    START_TIMEOUT,
    Kubectl,
    Obj,
    Ran,
    _Lines,
    bounded,
    client_certificate,
    terminate,
    write_kubeconfig,
)

SERVING = re.compile(r"capstan serving: HTTPS (https://\S+) gRPC (\S+) gRPC-mTLS (\S+)")
BOT = "system:serviceaccount:team:bot"
BOT_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:team" "system:authenticated"]'
ROOT_TOKEN = "root-token-0123456789"  # a static token user in system:masters
CAROL_TOKEN = "carol-token-0123456789"  # a static token user in group devs
TOKENS_CSV = f'{ROOT_TOKEN},root,uid-root,system:masters\n{CAROL_TOKEN},carol,uid-carol,"devs,qa"\n'
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata"}]}
SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bot, namespace: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: gone, namespace: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {mode: secure}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: team}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-writer, namespace: team}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-lister, namespace: team}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-reader, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {kind: ServiceAccount, name: bot, namespace: team}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: role-writer, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-writer}
subjects: [{kind: ServiceAccount, name: bot, namespace: team}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: devs-list-pods, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-lister}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}]
"""


def forbidden(user: str, verb: str, resource: str, where: str, name: str = "") -> str:
    """kube-apiserver's Forbidden message for a core-group resource (`where`: a namespace, "" the cluster)."""
    subject = f'{resource} "{name}"' if name else resource
    scope = f'in the namespace "{where}"' if where else "at the cluster scope"
    return f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group "" {scope}'


@dataclass(frozen=True)
class Secure:
    """The module's server: its addresses, cert dir and audit log, and the tokens the setup obtained."""

    https: str
    grpc: str
    grpc_mtls: str
    certs: pki.CertDir
    admin: Kubectl  # the kubeconfig's admin certificate
    bare: Kubectl  # the same cluster, no credential: every request names its own --token
    bot_token: str
    gone_token: str  # of a ServiceAccount deleted since
    audit_log: Path
    alice: tuple[bytes, bytes]  # (key, certificate) PEM: CN=alice, O=devs, signed by the cert dir's CA


def _ok(ran: Ran) -> str:
    assert ran.code == 0, ran.err
    return ran.out


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    base = tmp_path_factory.mktemp("secure")
    data = base / "data"
    (base / "tokens.csv").write_text(TOKENS_CSV)
    (base / "audit.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(data), "--secure-port", "0", "--grpc-port", "0",
         "--grpc-mtls-port", "0", "--sync", "false", "--token-auth-file", str(base / "tokens.csv"),
         "--audit-log-path", str(base / "audit.log"), "--audit-policy-file", str(base / "audit.yaml")],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    log = _Lines(proc.stderr)
    try:
        match = log.expect(SERVING, START_TIMEOUT)
        if match is None:
            pytest.fail(f"capstan serve did not start listening within {START_TIMEOUT}s:\n{log.rest()}")
        admin_config = yaml.safe_load(write_kubeconfig(data, base / "admin.kubeconfig"))
        admin_config["users"][0]["user"] = {}
        (base / "bare.kubeconfig").write_text(yaml.safe_dump(admin_config))
        admin = Kubectl(base / "admin.kubeconfig", base / "cache-admin")
        _ok(admin("apply", "-f", "-", input=SETUP, version="1.28"))
        bot_token = _ok(admin("create", "token", "bot", "-n", "team", version="1.28")).strip()
        gone_token = _ok(admin("create", "token", "gone", "-n", "team", version="1.32")).strip()
        _ok(admin("delete", "serviceaccount", "gone", "-n", "team", version="1.32"))
        certs = pki.CertDir(data / "pki")
        bare = Kubectl(base / "bare.kubeconfig", base / "cache")
        # Discovery cached before any row runs, whichever rows this worker gets first: with an empty cache, an
        # impersonated command's discovery is refused before its own request, and client-go prints that refusal
        # as "Forbidden: unknown", not the Status the server sent.
        for version in ("1.28", "1.32"):
            _ok(bare(f"--token={bot_token}", "api-resources", "-o", "name", version=version))
        yield Secure(match[1], match[2], match[3], certs, admin, bare,
                     bot_token, gone_token, base / "audit.log", client_certificate(certs, "alice", "devs"))
    finally:
        terminate(proc)


# --- kubectl 1.28 and 1.32 -------------------------------------------------------------------------------------

SECRETS_FORBIDDEN = forbidden(BOT, "list", "secrets", "team")
ESCALATION = (f'roles.rbac.authorization.k8s.io "grab" is forbidden: user "{BOT}" (groups={BOT_GROUPS}) is '
              "attempting to grant RBAC permissions not currently held:\n"
              '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
UNAUTHORIZED = "error: You must be logged in to the server (Unauthorized)\n"

# (who, kubectl arguments, exit code, what stdout holds, what stderr holds). who: "bot", "carol" (a static
# token), "admin" (the certificate), "gone" (a deleted ServiceAccount's token), "garbage", "long" (10 KB).
KUBECTL_ROWS = [
    ("bot", ["get", "cm", "-n", "team", "-o", "name"], 0, "configmap/kube-root-ca.crt\nconfigmap/settings\n", ""),
    ("bot", ["get", "cm", "settings", "-n", "team", "-o", "jsonpath={.data.mode}"], 0, "secure", ""),
    ("bot", ["get", "secrets", "-n", "team"], 1, "", f"Error from server (Forbidden): {SECRETS_FORBIDDEN}\n"),
    ("bot", ["get", "cm", "-n", "default"], 1, "",
     f"Error from server (Forbidden): {forbidden(BOT, 'list', 'configmaps', 'default')}\n"),
    ("bot", ["create", "cm", "new", "-n", "team"], 1, "", forbidden(BOT, "create", "configmaps", "team")),
    ("bot", ["delete", "cm", "settings", "-n", "team"], 1, "",
     forbidden(BOT, "delete", "configmaps", "team", name="settings")),
    ("bot", ["get", "ns"], 1, "", f"Error from server (Forbidden): {forbidden(BOT, 'list', 'namespaces', '')}\n"),
    ("bot", ["get", "cm", "-n", "team", "--as=alice"], 1, "",
     forbidden(BOT, "impersonate", "users", "", name="alice")),
    ("bot", ["get", "cm", "-n", "team", f"--as={BOT}"], 1, "",
     forbidden(BOT, "impersonate", "serviceaccounts", "team", name="bot")),
    ("admin", ["get", "cm", "settings", "-n", "team", "-o", "name", f"--as={BOT}"], 0, "configmap/settings\n", ""),
    ("admin", ["get", "secrets", "-n", "team", f"--as={BOT}"], 1, "", SECRETS_FORBIDDEN),
    ("admin", ["get", "secrets", "-n", "team", "--as=alice", "--as-group=devs"], 1, "",
     forbidden("alice", "list", "secrets", "team")),
    ("bot", ["create", "role", "grab", "--verb=get", "--resource=secrets", "-n", "team"], 1, "", ESCALATION),
    ("bot", ["create", "role", "fine", "--verb=get", "--resource=configmaps", "-n", "team", "--dry-run=server"], 0,
     "role.rbac.authorization.k8s.io/fine created (server dry run)\n", ""),
    ("carol", ["get", "pods", "-n", "team"], 0, "", "No resources found in team namespace.\n"),
    ("carol", ["get", "cm", "-n", "team"], 1, "", forbidden("carol", "list", "configmaps", "team")),
    ("gone", ["get", "cm", "-n", "team"], 1, "", UNAUTHORIZED),
    ("garbage", ["get", "cm", "-n", "team"], 1, "", UNAUTHORIZED),
    ("long", ["get", "cm", "-n", "team"], 1, "", UNAUTHORIZED),
]

CAN_I_ROWS = [
    ("bot", ["list", "configmaps", "-n", "team"], 0, "yes\n"),
    ("bot", ["watch", "configmaps/settings", "-n", "team"], 0, "yes\n"),
    ("bot", ["create", "configmaps", "-n", "team"], 1, "no\n"),
    ("bot", ["list", "secrets", "-n", "team"], 1, "no\n"),
    ("bot", ["list", "configmaps", "-n", "default"], 1, "no\n"),
    ("admin", ["list", "secrets", "-n", "team", f"--as={BOT}"], 1, "no\n"),
    ("admin", ["delete", "namespaces"], 0, "yes\n"),
    ("carol", ["list", "pods", "-n", "team"], 0, "yes\n"),
]


def _ids(rows: list[Any]) -> list[str]:
    return [f"{row[0]}: {' '.join(row[1])}" for row in rows]


def _as(secure: Secure, who: str, args: list[str], version: str) -> Ran:
    if who == "admin":
        return secure.admin(*args, version=version)
    token = {"bot": secure.bot_token, "carol": CAROL_TOKEN, "gone": secure.gone_token, "garbage": "garbage",
             "long": "x" * 10240}[who]
    return secure.bare(f"--token={token}", *args, version=version)


@pytest.mark.parametrize("version", ["1.28", "1.32"])
@pytest.mark.parametrize(("who", "args", "code", "out", "err"), KUBECTL_ROWS, ids=_ids(KUBECTL_ROWS))
def test_kubectl(secure: Secure, version: str, who: str, args: list[str], code: int, out: str, err: str) -> None:
    ran = _as(secure, who, args, version)
    assert ran.code == code, ran.err
    assert ran.out == out
    if err.endswith("\n"):  # the whole of what kubectl prints
        assert ran.err == err
    else:  # the server's message, within kubectl's own wording
        assert err in ran.err


@pytest.mark.parametrize("version", ["1.28", "1.32"])
@pytest.mark.parametrize(("who", "args", "code", "out"), CAN_I_ROWS, ids=_ids(CAN_I_ROWS))
def test_kubectl_auth_can_i(secure: Secure, version: str, who: str, args: list[str], code: int, out: str) -> None:
    ran = _as(secure, who, ["auth", "can-i", *args], version)
    assert (ran.code, ran.out) == (code, out), ran.err


@pytest.mark.parametrize("version", ["1.28", "1.32"])
def test_kubectl_auth_can_i_list(secure: Secure, version: str) -> None:
    lines = [" ".join(line.split()) for line in _ok(_as(secure, "bot", ["auth", "can-i", "--list", "-n", "team"],
                                                        version)).splitlines()]
    assert lines[0] == "Resources Non-Resource URLs Resource Names Verbs"
    assert {line for line in lines[1:] if not line.startswith("[")} == {  # the resource rows
        "configmaps [] [] [get list watch]",
        "roles.rbac.authorization.k8s.io [] [] [create]",
        "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]",
        "selfsubjectreviews.authentication.k8s.io [] [] [create]",
        "selfsubjectrulesreviews.authorization.k8s.io [] [] [create]",
    }
    assert {"[/api] [] [get]", "[/version] [] [get]", "[/healthz] [] [get]"} <= set(lines)


@pytest.mark.parametrize("version", ["1.28", "1.32"])
@pytest.mark.parametrize(("who", "user", "groups"), [
    ("bot", BOT, ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]),
    ("carol", "carol", ["devs", "qa", "system:authenticated"]),
    ("admin", "kubernetes-admin", ["system:masters", "system:authenticated"]),
])
def test_kubectl_auth_whoami(secure: Secure, version: str, who: str, user: str, groups: list[str]) -> None:
    review = json.loads(_ok(_as(secure, who, ["auth", "whoami", "-o", "json"], version)))
    assert review["kind"] == "SelfSubjectReview"
    assert (review["status"]["userInfo"]["username"], review["status"]["userInfo"]["groups"]) == (user, groups)


# --- HTTP without kubectl: anonymous, the official Python client, the audit log --------------------------------


def _tls(secure: Secure) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=secure.certs.ca_cert)


@pytest.mark.parametrize(("path", "code", "body"), [
    ("/version", 200, None),
    ("/healthz", 200, None),
    ("/api/v1/namespaces", 403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden",
        "details": {"kind": "namespaces"}, "code": 403,
        "message": forbidden("system:anonymous", "list", "namespaces", "")}),
    ("/api/v1/namespaces/team/configmaps/settings", 403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden",
        "details": {"kind": "configmaps", "name": "settings"}, "code": 403,
        "message": forbidden("system:anonymous", "get", "configmaps", "team", name="settings")}),
])
async def test_anonymous(secure: Secure, path: str, code: int, body: Obj | None) -> None:
    async with aiohttp.ClientSession() as http, http.get(secure.https + path, ssl=_tls(secure)) as resp:
        assert resp.status == code
        if body is not None:
            assert await resp.json() == body


@pytest.mark.parametrize("token", ["garbage", "x" * 10240, "Bearer", "a.b.c", "é"])
async def test_bad_tokens_are_401_status(secure: Secure, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http, http.get(
            secure.https + "/api/v1/namespaces/team/configmaps", headers=headers, ssl=_tls(secure)) as resp:
        assert resp.status == 401
        assert await resp.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                     "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def _python_client(secure: Secure, token: str) -> client.CoreV1Api:
    configuration = client.Configuration()
    configuration.host = secure.https
    configuration.ssl_ca_cert = str(secure.certs.ca_cert)
    configuration.api_key = {"authorization": token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return client.CoreV1Api(bounded(client.ApiClient(configuration)))


def test_python_client_with_the_bots_token(secure: Secure) -> None:
    core = _python_client(secure, secure.bot_token)
    listed = core.list_namespaced_config_map("team").items
    assert [cm.metadata.name if cm.metadata else None for cm in listed] == ["kube-root-ca.crt", "settings"]
    assert core.read_namespaced_config_map("settings", "team").data == {"mode": "secure"}
    with pytest.raises(client.ApiException) as refused:
        core.list_namespaced_secret("team")
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "") == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden",
        "details": {"kind": "secrets"}, "code": 403, "message": SECRETS_FORBIDDEN}
    with pytest.raises(client.ApiException) as unauthorized:
        _python_client(secure, secure.gone_token).list_namespaced_config_map("team")
    assert (unauthorized.value.status, json.loads(unauthorized.value.body or "")["reason"]) == (401, "Unauthorized")


def _audit_events(secure: Secure, match: dict[str, Any]) -> list[Obj]:
    """The audit log's events whose fields hold `match` (nested dicts compared key by key), waited for."""
    def holds(event: Any, want: Any) -> bool:
        if isinstance(want, dict):
            return isinstance(event, dict) and all(holds(event.get(k), v) for k, v in want.items())
        return bool(event == want)

    deadline = time.monotonic() + 5
    while True:
        lines = secure.audit_log.read_text().splitlines() if secure.audit_log.exists() else []
        found = [event for event in map(json.loads, lines) if holds(event, match)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


async def test_audit_log_records_who_was_refused_and_never_the_token(secure: Secure) -> None:
    uri = "/api/v1/namespaces/team/{}?labelSelector=audit%3Dme"
    async with aiohttp.ClientSession() as http:
        for resource, headers in [
            ("configmaps", {"Authorization": f"Bearer {secure.bot_token}"}),
            ("secrets", {"Authorization": f"Bearer {secure.bot_token}"}),
            ("secrets", {"Authorization": f"Bearer {ROOT_TOKEN}", "Impersonate-User": "alice"}),
        ]:
            async with http.get(secure.https + uri.format(resource), headers=headers, ssl=_tls(secure)) as resp:
                await resp.read()

    def seen(**match: Any) -> list[tuple[Any, ...]]:
        return [(e["kind"], e["apiVersion"], e["level"], e["stage"], e["user"]["username"],
                 e.get("impersonatedUser", {}).get("username"), e["responseStatus"]["code"],
                 e["annotations"]["authorization.k8s.io/decision"]) for e in _audit_events(secure, match)]

    assert seen(requestURI=uri.format("configmaps"), objectRef={"resource": "configmaps", "namespace": "team"}) == [
        ("Event", "audit.k8s.io/v1", "Metadata", "ResponseComplete", BOT, None, 200, "allow")]
    assert seen(requestURI=uri.format("secrets"), verb="list", user={"username": BOT}) == [
        ("Event", "audit.k8s.io/v1", "Metadata", "ResponseComplete", BOT, None, 403, "forbid")]
    assert seen(requestURI=uri.format("secrets"), impersonatedUser={"username": "alice"}) == [
        ("Event", "audit.k8s.io/v1", "Metadata", "ResponseComplete", "root", "alice", 403, "forbid")]
    text = secure.audit_log.read_text()
    assert secure.bot_token not in text and ROOT_TOKEN not in text
    assert '"stage":"RequestReceived"' not in text  # the policy omits the stage


# --- gRPC: bearer metadata on --grpc-port, client certificates on --grpc-mtls-port -----------------------------


def _list(resource: str, namespace: str) -> core_pb2.ListRequest:
    return core_pb2.ListRequest(path=core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace))


async def _grpc_list(channel: grpc.aio.Channel, resource: str, namespace: str,
                     metadata: list[tuple[str, str]]) -> tuple[grpc.StatusCode, Obj]:
    """(OK, {"items": names}) or the error's code and its Status (code, reason, message, details)."""
    stub: Any = core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]
    try:
        listed = await stub.List(_list(resource, namespace), metadata=metadata, timeout=10)
    except grpc.aio.AioRpcError as err:
        status = status_of(err)
        details = {"kind": status.details.kind, "name": status.details.name} if status.HasField("details") else {}
        return err.code(), {"code": status.code, "reason": status.reason, "message": status.message,
                            "details": details}
    return grpc.StatusCode.OK, {"items": sorted(json.loads(item)["metadata"]["name"] for item in listed.items)}


def _denied(message: str, kind: str, name: str = "") -> tuple[grpc.StatusCode, Obj]:
    return grpc.StatusCode.PERMISSION_DENIED, {"code": 403, "reason": "Forbidden", "message": message,
                                               "details": {"kind": kind, "name": name}}


UNAUTHENTICATED = (grpc.StatusCode.UNAUTHENTICATED,
                   {"code": 401, "reason": "Unauthorized", "message": "Unauthorized", "details": {}})
LISTED = (grpc.StatusCode.OK, {"items": ["kube-root-ca.crt", "settings"]})

# (credential, impersonated user, resource, namespace, expected). credential: a token name or "anonymous".
GRPC_BEARER_ROWS = [
    ("bot", "", "configmaps", "team", LISTED),
    ("bot", "", "secrets", "team", _denied(SECRETS_FORBIDDEN, "secrets")),
    ("bot", "", "configmaps", "default", _denied(forbidden(BOT, "list", "configmaps", "default"), "configmaps")),
    ("bot", "", "namespaces", "", _denied(forbidden(BOT, "list", "namespaces", ""), "namespaces")),
    ("bot", "alice", "configmaps", "team",
     _denied(forbidden(BOT, "impersonate", "users", "", name="alice"), "users", "alice")),
    ("root", BOT, "configmaps", "team", LISTED),
    ("root", BOT, "secrets", "team", _denied(SECRETS_FORBIDDEN, "secrets")),
    ("carol", "", "configmaps", "team", _denied(forbidden("carol", "list", "configmaps", "team"), "configmaps")),
    ("anonymous", "", "configmaps", "team",
     _denied(forbidden("system:anonymous", "list", "configmaps", "team"), "configmaps")),
    ("gone", "", "configmaps", "team", UNAUTHENTICATED),
    ("garbage", "", "configmaps", "team", UNAUTHENTICATED),
    ("long", "", "configmaps", "team", UNAUTHENTICATED),
]


def _metadata(secure: Secure, credential: str, impersonate: str = "") -> list[tuple[str, str]]:
    tokens = {"bot": secure.bot_token, "root": ROOT_TOKEN, "carol": CAROL_TOKEN, "gone": secure.gone_token,
              "garbage": "garbage", "long": "x" * 10240}
    metadata = [] if credential == "anonymous" else [("authorization", f"Bearer {tokens[credential]}")]
    return metadata + ([("impersonate-user", impersonate)] if impersonate else [])


@pytest.mark.parametrize(("credential", "impersonate", "resource", "namespace", "expected"), GRPC_BEARER_ROWS)
async def test_grpc_bearer(secure: Secure, credential: str, impersonate: str, resource: str, namespace: str,
                           expected: tuple[grpc.StatusCode, Obj]) -> None:
    credentials = grpc.ssl_channel_credentials(secure.certs.ca_cert.read_bytes())
    async with grpc.aio.secure_channel(secure.grpc, credentials) as channel:
        got = await _grpc_list(channel, resource, namespace, _metadata(secure, credential, impersonate))
    assert got == expected


@pytest.mark.parametrize(("resource", "expected"), [
    ("configmaps", LISTED),  # the RoleBinding's User alice (the certificate's CN)
    ("pods", (grpc.StatusCode.OK, {"items": []})),  # the RoleBinding's Group devs (its O)
    ("secrets", _denied(forbidden("alice", "list", "secrets", "team"), "secrets")),
    ("services", _denied(forbidden("alice", "list", "services", "team"), "services")),
])
async def test_grpc_client_certificate(secure: Secure, resource: str, expected: tuple[grpc.StatusCode, Obj]) -> None:
    key, cert = secure.alice
    credentials = grpc.ssl_channel_credentials(secure.certs.ca_cert.read_bytes(), key, cert)
    async with grpc.aio.secure_channel(secure.grpc_mtls, credentials) as channel:
        assert await _grpc_list(channel, resource, "team", []) == expected


# --- a request's identity is its own ---------------------------------------------------------------------------

# (credential, impersonated user) -> what listing Secrets in team answers: 200, or 403 naming whom.
IDENTITIES = [("root", "", ""), ("bot", "", BOT), ("root", BOT, BOT), ("carol", "", "carol"),
              ("anonymous", "", "system:anonymous"), ("root", "alice", "alice")]


async def test_http_identities_interleaved_on_shared_connections(secure: Secure) -> None:
    async def one(credential: str, impersonate: str) -> tuple[int, str]:
        headers = dict(_metadata(secure, credential, impersonate))  # HTTP names its headers as gRPC's keys
        async with http.get(secure.https + "/api/v1/namespaces/team/secrets", headers=headers) as resp:
            body = await resp.json()
            return resp.status, body.get("message", "")

    connector = aiohttp.TCPConnector(limit=3, ssl=_tls(secure))  # 3 connections carry 120 requests
    async with aiohttp.ClientSession(connector=connector) as http:
        calls = [IDENTITIES[i % len(IDENTITIES)] for i in range(120)]
        answers = await asyncio.gather(*(one(credential, impersonate) for credential, impersonate, _ in calls))
    assert answers == [(200, "") if not user else (403, forbidden(user, "list", "secrets", "team"))
                       for _, _, user in calls]


async def test_grpc_identities_interleaved_on_one_channel(secure: Secure) -> None:
    credentials = grpc.ssl_channel_credentials(secure.certs.ca_cert.read_bytes())
    async with grpc.aio.secure_channel(secure.grpc, credentials) as channel:
        calls = [IDENTITIES[i % len(IDENTITIES)] for i in range(120)]
        answers = await asyncio.gather(*(_grpc_list(channel, "secrets", "team", _metadata(secure, cred, imp))
                                         for cred, imp, _ in calls))
    assert [(code, body.get("message", "")) for code, body in answers] == [
        (grpc.StatusCode.OK, "") if not user else
        (grpc.StatusCode.PERMISSION_DENIED, forbidden(user, "list", "secrets", "team")) for _, _, user in calls]
