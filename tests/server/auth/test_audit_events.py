"""Audit events as kube-apiserver writes them, from calls through the real guard (static tokens, RBAC) over a real
core on LMDB: each level's keys as in a recorded kube 1.28 event, 401 and 403 events, watch stages, a direct gRPC
call's requestURI, and a log that cannot be written refusing the request before its verb runs."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.auth.setup import Security, start_security
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError
from server.objects.core import Core

Obj = dict[str, Any]
ADMIN, ALICE = "admin-token", "alice-token"
URI = "/api/v1/namespaces/default/configmaps"
MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")

# The keys of events a kube-apiserver 1.28 wrote for `kubectl create configmap` (Metadata level).
KUBE_RECEIVED = ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "sourceIPs",
                 "userAgent", "objectRef", "requestReceivedTimestamp", "stageTimestamp"]
KUBE_COMPLETE = ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "sourceIPs",
                 "userAgent", "objectRef", "responseStatus", "requestReceivedTimestamp", "stageTimestamp",
                 "annotations"]

Start = Callable[..., Awaitable[Security]]


@pytest.fixture
async def start(core: Core, tmp_path: Path) -> AsyncIterator[Start]:
    """Starts the security chain with a policy of these rules, auditing into tmp_path/audit.log."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{ADMIN},admin,1,"system:masters"\n{ALICE},alice,42,"team-a"\n')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    started: list[Security] = []

    async def starter(*rules: Obj, log_path: str = "", **top: Any) -> Security:
        policy = tmp_path / "policy.json"
        policy.write_bytes(orjson.dumps({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules),
                                         **top}))
        security = await start_security(core, SecurityConfig(
            token_auth_file=tokens, service_account_signing_key_file=tmp_path / "sa.key",
            service_account_key_files=(tmp_path / "sa.key",), audit_policy_file=policy,
            audit_log_path=log_path or str(tmp_path / "audit.log")))
        started.append(security)
        return security

    try:
        yield starter
    finally:
        for security in started:
            await security.stop()


def events(tmp_path: Path) -> list[Obj]:
    file = tmp_path / "audit.log"
    return [orjson.loads(line) for line in file.read_bytes().splitlines()] if file.exists() else []


def credentials(token: str, uri: str = URI) -> Credentials:
    return Credentials(token=token, source_ip="10.1.2.3", user_agent="kubectl/v1.28.0", request_uri=uri)


def configmap(name: str) -> core_pb2.CreateRequest:
    return core_pb2.CreateRequest(
        path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default"),
        object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})))


@pytest.mark.parametrize(("level", "request_object", "response_object"), [
    ("Metadata", False, False),
    ("Request", True, False),
    ("RequestResponse", True, True),
])
async def test_create_event_at_each_level(start: Start, tmp_path: Path, level: str, request_object: bool,
                                          response_object: bool) -> None:
    security = await start({"level": level})
    await security.guard.create(configmap("c1"), credentials(ADMIN))
    received, complete = events(tmp_path)
    assert list(received) == KUBE_RECEIVED
    extra = [k for k, present in (("requestObject", request_object), ("responseObject", response_object))
             if present]
    assert list(complete) == KUBE_COMPLETE[:12] + extra + KUBE_COMPLETE[12:]
    assert received["auditID"] == complete["auditID"]
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert received["stageTimestamp"] == received["requestReceivedTimestamp"]
    assert MICRO.fullmatch(complete["stageTimestamp"]) and MICRO.fullmatch(complete["requestReceivedTimestamp"])
    assert complete["level"] == level and complete["verb"] == "create" and complete["requestURI"] == URI
    assert complete["user"] == {"username": "admin", "uid": "1", "groups": ["system:masters",
                                                                           "system:authenticated"]}
    assert (complete["sourceIPs"], complete["userAgent"]) == (["10.1.2.3"], "kubectl/v1.28.0")
    assert received["objectRef"] == {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}
    # kube completes objectRef from the object it read: a create's name
    assert complete["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "c1",
                                     "apiVersion": "v1"}
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["annotations"] == {
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": ""}  # system:masters: kube's privileged-groups authorizer gives none
    if request_object:
        assert complete["requestObject"]["metadata"] == {"name": "c1"}
    if response_object:
        assert complete["responseObject"]["kind"] == "ConfigMap"
        assert complete["responseObject"]["metadata"]["uid"]


async def test_omit_managed_fields_and_stages(start: Start, tmp_path: Path) -> None:
    security = await start({"level": "RequestResponse", "omitStages": ["RequestReceived"]}, omitManagedFields=True)
    request = configmap("c2")
    request.options.fieldManager = "kubectl"
    await security.guard.create(request, credentials(ADMIN))
    [complete] = events(tmp_path)
    assert complete["stage"] == "ResponseComplete"
    assert "managedFields" not in complete["responseObject"]["metadata"]


async def test_failed_authentication(start: Start, tmp_path: Path) -> None:
    """kube's WithFailedAuthenticationAudit: one ResponseStarted event, an empty user, what was attempted."""
    security = await start({"level": "Metadata"})
    with pytest.raises(ApiError) as refused:
        await security.guard.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(
            version="v1", resource="configmaps", namespace="default", name="c1")), credentials("forged"))
    assert refused.value.code == 401
    [event] = events(tmp_path)
    assert event["stage"] == "ResponseStarted" and event["user"] == {}
    assert event["responseStatus"] == {"metadata": {}, "message": "Authentication failed, attempted: bearer",
                                       "code": 401}
    assert event["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "c1",
                                  "apiVersion": "v1"}
    assert "forged" not in (tmp_path / "audit.log").read_text()


async def test_forbidden(start: Start, tmp_path: Path) -> None:
    security = await start({"level": "RequestResponse", "users": ["alice"]})
    await security.guard.create(configmap("unaudited"), credentials(ADMIN))  # no rule for admin: not recorded
    with pytest.raises(ApiError) as refused:
        await security.guard.create(configmap("c3"), credentials(ALICE))
    assert refused.value.code == 403
    received, complete = events(tmp_path)
    assert received["user"]["username"] == "alice" and received["stage"] == "RequestReceived"
    assert complete["responseStatus"] == {
        "metadata": {}, "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": 'configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in '
                   'the namespace "default"'}
    assert complete["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert complete["responseObject"]["kind"] == "Status" and complete["responseObject"]["code"] == 403
    assert "requestObject" not in complete  # the body is never read for a request refused before its verb


async def test_impersonated_user(start: Start, tmp_path: Path) -> None:
    from server.machinery.credentials import Impersonation

    security = await start({"level": "Metadata"})
    creds = Credentials(token=ADMIN, request_uri=URI, impersonation=Impersonation(user="bob", requested=True))
    with pytest.raises(ApiError):
        await security.guard.create(configmap("c4"), creds)
    complete = events(tmp_path)[-1]
    assert complete["user"]["username"] == "admin"
    assert complete["impersonatedUser"] == {"username": "bob", "groups": ["system:authenticated"]}
    assert list(complete).index("impersonatedUser") == list(complete).index("user") + 1


async def test_grpc_call_and_verb_error(start: Start, tmp_path: Path) -> None:
    """A direct gRPC call has no URI: its method is the requestURI. A verb's own error is its code."""
    security = await start({"level": "Metadata"})
    with pytest.raises(ApiError):
        await security.guard.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(
            version="v1", resource="configmaps", namespace="default", name="none")), Credentials(token=ADMIN))
    received, complete = events(tmp_path)
    assert received["requestURI"] == "/capstan.core.v1.CoreService/Get"
    assert "sourceIPs" not in received and "userAgent" not in received
    assert complete["responseStatus"]["code"] == 404 and complete["responseStatus"]["reason"] == "NotFound"


async def test_non_resource_access(start: Start, tmp_path: Path) -> None:
    security = await start({"level": "Metadata", "nonResourceURLs": ["/version"]})
    await security.guard.access(core_pb2.AccessRequest(verb="get", path="/version"), credentials(ALICE, "/version"))
    await security.guard.access(core_pb2.AccessRequest(verb="get", path="/healthz"), credentials(ALICE, "/healthz"))
    _, complete = events(tmp_path)
    assert (complete["verb"], complete["requestURI"], "objectRef" in complete) == ("get", "/version", False)
    assert complete["responseStatus"] == {"metadata": {}, "code": 200}


async def test_watch_stages(start: Start, tmp_path: Path) -> None:
    security = await start({"level": "Metadata"})
    request = core_pb2.WatchRequest(path=core_pb2.ResourcePath(version="v1", resource="configmaps",
                                                               namespace="default"))
    stream = await security.guard.watch(request, credentials(ADMIN, URI + "?watch=1"))
    stages = [e["stage"] for e in events(tmp_path)]
    assert stages == ["RequestReceived", "ResponseStarted"]
    await security.guard.create(configmap("w1"), credentials(ADMIN))
    got = await anext(aiter(stream))
    assert got.events
    await stream.aclose()  # type: ignore[attr-defined]
    watch_events = [e for e in events(tmp_path) if e["verb"] == "watch"]
    assert [e["stage"] for e in watch_events] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert watch_events[1]["responseStatus"] == watch_events[2]["responseStatus"] == {"metadata": {}, "code": 200}


async def test_unwritable_log_refuses_the_request(start: Start, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Nothing passes unaudited: RequestReceived that cannot be written is kube's 500 before the verb runs, and
    the failure is logged once for the burst."""
    (tmp_path / "not-a-dir").write_text("")
    security = await start({"level": "Metadata"}, log_path=str(tmp_path / "not-a-dir" / "audit.log"))
    caplog.set_level(logging.ERROR)
    for name in ("x1", "x2"):
        with pytest.raises(ApiError) as refused:
            await security.guard.create(configmap(name), credentials(ADMIN))
        assert refused.value.code == 500
        assert refused.value.status.message == "Internal error occurred: failed to store audit event"
    with pytest.raises(ApiError) as missing:
        await security.guard.core.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(
            version="v1", resource="configmaps", namespace="default", name="x1")))
    assert missing.value.code == 404
    assert len([r for r in caplog.records if "cannot write the audit log" in r.getMessage()]) == 1
