"""Admission webhooks as kube-apiserver 1.28 calls them, against real HTTPS webhook servers
(capstan/testing/webhooks.py) and a real core over gRPC: matching, failure policies, mutation and
reinvocation, dry run, warnings, denial texts, audit annotations."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.testing.webhooks import WebhookServer, serve
from server import admission
from server.auth.config import SecurityConfig
from server.auth.setup import start_security
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError
from tests.server.client import Client, Failed, path, raw

Obj = dict[str, Any]
ADMISSION = "admissionregistration.k8s.io"
CONFIGMAPS = path("configmaps", "default")
RULE = {"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}


def webhook(name: str, client: Obj, **fields: Any) -> Obj:
    hook = {"name": name, "clientConfig": client, "rules": [RULE], "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}  # room for a loaded machine
    hook.update(fields)
    return hook


async def configure(client: Client, resource: str, name: str, hooks: list[Obj]) -> None:
    """Create the configuration and wait until admission follows it."""
    kind = "MutatingWebhookConfiguration" if resource.startswith("mutating") else "ValidatingWebhookConfiguration"
    await client.create(path(resource, group=ADMISSION), {
        "apiVersion": f"{ADMISSION}/v1", "kind": kind, "metadata": {"name": name}, "webhooks": hooks})
    webhooks = client.running.webhooks
    assert webhooks is not None
    for _ in range(200):
        if any(h.configuration == name for h in webhooks.hooks(resource.startswith("mutating"))):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the configuration never reached admission")


def configmap(name: str, labels: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": name, "labels": labels} if labels else {"name": name}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": "1"}}


def deny(request: Obj) -> Obj:
    return {"allowed": False, "status": {"message": "no configmaps today", "code": 403, "reason": "Forbidden"}}


def allow_warning(request: Obj) -> Obj:
    return {"allowed": True, "warnings": ["careful with " + request["name"]]}


def add_label(request: Obj) -> Obj:
    return {"allowed": True, "patch": [{"op": "add", "path": "/metadata/labels", "value": {"stamped": "yes"}}]}


UNREACHABLE = {"url": "https://127.0.0.1:9/"}

# (case, kind, handler, webhook fields, create options, expected code (0: created), expected message part)
CASES: list[tuple[str, str, Callable[[Obj], Obj], Obj, Obj, int, str]] = [
    ("denied", "validatingwebhookconfigurations", deny, {}, {}, 403,
     'admission webhook "v.example.com" denied the request: no configmaps today'),
    ("allowed with a warning", "validatingwebhookconfigurations", allow_warning, {}, {}, 0, ""),
    ("rules do not match", "validatingwebhookconfigurations", deny,
     {"rules": [{**RULE, "resources": ["secrets"]}]}, {}, 0, ""),
    ("objectSelector does not match", "validatingwebhookconfigurations", deny,
     {"objectSelector": {"matchLabels": {"checked": "yes"}}}, {}, 0, ""),
    ("matchCondition false", "validatingwebhookconfigurations", deny,
     {"matchConditions": [{"name": "skip-c", "expression": "object.metadata.name != 'c'"}]}, {}, 0, ""),
    ("matchCondition on request, which has no object", "validatingwebhookconfigurations", deny,
     {"matchConditions": [{"name": "r", "expression": "!has(request.object) && request.name == 'c' && "
                                                      "request.operation == 'CREATE'"}]}, {}, 403,
     'admission webhook "v.example.com" denied the request: no configmaps today'),
    ("unreachable, failurePolicy Fail", "validatingwebhookconfigurations", deny,
     {"clientConfig": UNREACHABLE, "failurePolicy": "Fail"}, {}, 500,
     'Internal error occurred: failed calling webhook "v.example.com": failed to call webhook: '
     'Post "https://127.0.0.1:9/?timeout=10s": dial tcp 127.0.0.1:9: connect: connection refused'),
    ("unreachable, failurePolicy Ignore", "validatingwebhookconfigurations", deny,
     {"clientConfig": UNREACHABLE, "failurePolicy": "Ignore"}, {}, 0, ""),
    ("caBundle of another CA", "validatingwebhookconfigurations", deny,
     {"clientConfig": "other-ca"}, {}, 500, "x509: certificate signed by unknown authority"),
    ("dry run with sideEffects NoneOnDryRun", "validatingwebhookconfigurations", deny,
     {"sideEffects": "NoneOnDryRun"}, {"dryRun": ["All"]}, 403, "denied the request"),
    ("dry run with sideEffects None", "validatingwebhookconfigurations", deny, {}, {"dryRun": ["All"]}, 403,
     "denied the request"),
    ("mutated", "mutatingwebhookconfigurations", add_label, {}, {}, 0, ""),
]


@pytest.mark.parametrize(("case", "resource", "handler", "fields", "options", "code", "message"), CASES,
                         ids=[c[0] for c in CASES])
async def test_webhook_cases(client: Client, case: str, resource: str, handler: Callable[[Obj], Obj],
                             fields: Obj, options: Obj, code: int, message: str) -> None:
    async with serve(handler) as hook, serve(handler) as other:
        hook_fields = dict(fields)
        if hook_fields.get("clientConfig") == "other-ca":
            hook_fields["clientConfig"] = {**hook.client_config(), "caBundle": other.client_config()["caBundle"]}
        name = "m.example.com" if resource.startswith("mutating") else "v.example.com"
        await configure(client, resource, "config", [webhook(name, hook.client_config(), **hook_fields)])
        if not code:
            response = await client.create_response(CONFIGMAPS, raw(configmap("c")), **options)
            if handler is allow_warning and "rules" not in fields:
                assert list(response.warnings) == ["careful with c"]
            if handler is add_label:
                created = await client.get(path("configmaps", "default", "c"))
                assert created["metadata"]["labels"] == {"stamped": "yes"}
            return
        with pytest.raises(Failed) as failed:
            await client.create(CONFIGMAPS, configmap("c"), **options)
        assert failed.value.status["code"] == code
        assert message in failed.value.status["message"]


# client-go's rest client cleans every webhook call's path (path.Join("/", path)): envtest writes its URLs as
# "https://host:port/" + "/validate", a double slash. Go trusts any certificate of the caBundle as an anchor:
# envtest's caBundle is its webhook server's own serving certificate, not the CA that signed it.
@pytest.mark.parametrize(("url_path", "bundle", "called"), [
    ("//validate", "ca", "/validate"),
    ("/validate/", "ca", "/validate"),
    ("/a/./b/../validate", "ca", "/a/validate"),
    ("", "ca", "/"),
    ("/validate", "serving certificate", "/validate"),
])
async def test_webhook_calls_as_client_go_makes_them(client: Client, url_path: str, bundle: str,
                                                      called: str) -> None:
    async with serve(deny) as hook:
        config = hook.client_config(url_path)
        if bundle != "ca":
            config["caBundle"] = base64.b64encode(hook.cert_pem).decode()
        await configure(client, "validatingwebhookconfigurations", "paths", [webhook("v.example.com", config)])
        with pytest.raises(Failed) as failed:
            await client.create(CONFIGMAPS, configmap("cm"))
        assert failed.value.status["message"].endswith("denied the request: no configmaps today")
        assert [p.split("?")[0] for p in hook.paths] == [called]


async def test_review_carries_kube_fields(client: Client) -> None:
    """An AdmissionReview v1 request names the object, the operation, the user and the options; an update
    sends the old object; a delete sends only the old object."""
    async with serve(lambda request: {"allowed": True}) as hook:
        await configure(client, "validatingwebhookconfigurations", "config", [webhook(
            "v.example.com", hook.client_config(),
            rules=[{**RULE, "operations": ["*"]}])])
        created = await client.create(CONFIGMAPS, configmap("c"))
        await client.update(path("configmaps", "default", "c"), {**created, "data": {"a": "2"}})
        await client.delete(path("configmaps", "default", "c"))
        operations = [r["request"]["operation"] for r in hook.requests]
        assert operations == ["CREATE", "UPDATE", "DELETE"]
        create, update, delete = (r["request"] for r in hook.requests)
        assert hook.requests[0]["apiVersion"] == "admission.k8s.io/v1"
        assert create["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert create["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert create["namespace"] == "default" and create["name"] == "c"
        assert create["oldObject"] is None and create["object"]["data"] == {"a": "1"}
        assert create["options"]["kind"] == "CreateOptions" and create["dryRun"] is False
        assert update["oldObject"]["data"] == {"a": "1"} and update["object"]["data"] == {"a": "2"}
        assert update["options"]["kind"] == "UpdateOptions"
        assert delete["object"] is None and delete["oldObject"]["data"] == {"a": "2"}
        assert delete["options"]["kind"] == "DeleteOptions"


async def test_reinvocation_if_needed(client: Client) -> None:
    """A webhook with reinvocationPolicy IfNeeded runs again when a later webhook changed the object."""
    seen: list[Obj] = []

    def first(request: Obj) -> Obj:
        seen.append(request["object"]["metadata"].get("labels") or {})
        return {"allowed": True}

    async with serve(first) as a, serve(add_label) as b:
        await configure(client, "mutatingwebhookconfigurations", "a-config", [webhook(
            "a.example.com", a.client_config(), reinvocationPolicy="IfNeeded")])
        await configure(client, "mutatingwebhookconfigurations", "b-config", [webhook(
            "b.example.com", b.client_config())])
        await client.create(CONFIGMAPS, configmap("c"))
    assert seen == [{}, {"stamped": "yes"}]


async def test_validating_sees_mutation_and_malformed_patch_fails(client: Client) -> None:
    """Validating webhooks see what mutating ones made; a patch that is not base64 follows failurePolicy."""
    validated: list[Obj] = []

    def check(request: Obj) -> Obj:
        validated.append(request["object"]["metadata"]["labels"])
        return {"allowed": True}

    async with serve(add_label) as m, serve(check) as v:
        await configure(client, "mutatingwebhookconfigurations", "m", [webhook("m.example.com", m.client_config())])
        await configure(client, "validatingwebhookconfigurations", "v", [webhook("v.example.com", v.client_config())])
        await client.create(CONFIGMAPS, configmap("c"))
    assert validated == [{"stamped": "yes"}]


def test_client_config_bundle_is_base64() -> None:
    assert base64.b64decode(WebhookServer(1, b"pem").client_config()["caBundle"]) == b"pem"


@pytest.mark.parametrize(("enable", "disable", "on", "off", "error"), [
    ([], [], {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota"}, {"AlwaysPullImages"}, ""),
    (["AlwaysPullImages"], ["ValidatingAdmissionWebhook"], {"AlwaysPullImages"}, {"ValidatingAdmissionWebhook"}, ""),
    (["Nope"], [], set(), set(), 'enable-admission-plugins plugin "Nope" is unknown'),
])
def test_admission_plugin_flags(enable: list[str], disable: list[str], on: set[str], off: set[str],
                                error: str) -> None:
    if error:
        with pytest.raises(ValueError, match=error):
            admission.enabled(enable, disable)
        return
    chosen = admission.enabled(enable, disable)
    assert on <= chosen and not off & chosen


def annotated(allowed: bool) -> Callable[[Obj], Obj]:
    def handler(request: Obj) -> Obj:
        answer: Obj = {"allowed": allowed, "auditAnnotations": {"checked": "yes", "by": request["name"]}}
        if not allowed:
            answer["status"] = {"message": "no", "code": 403}
        return answer
    return handler


# (case, kind, webhook name, allowed, expected response code in the event)
AUDIT_CASES: list[tuple[str, str, str, bool, int]] = [
    ("validating, allowed", "validatingwebhookconfigurations", "v.example.com", True, 201),
    ("validating, denied", "validatingwebhookconfigurations", "v.example.com", False, 403),
    ("mutating, allowed", "mutatingwebhookconfigurations", "m.example.com", True, 201),
]


@pytest.mark.parametrize(("case", "resource", "name", "allowed", "code"), AUDIT_CASES, ids=[c[0] for c in AUDIT_CASES])
async def test_audit_annotations_reach_the_audit_event(client: Client, tmp_path: Path, case: str, resource: str,
                                                       name: str, allowed: bool, code: int) -> None:
    """kube adds a webhook's auditAnnotations to the request's audit event as `<webhook name>/<key>`."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('admin-token,admin,1,"system:masters"\n')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    policy = tmp_path / "policy.json"
    policy.write_bytes(orjson.dumps({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                     "rules": [{"level": "Metadata", "resources": [{"resources": ["configmaps"]}]}]}))
    log = tmp_path / "audit.log"
    security = await start_security(client.running.core, SecurityConfig(
        token_auth_file=tokens, service_account_signing_key_file=tmp_path / "sa.key",
        service_account_key_files=(tmp_path / "sa.key",), audit_policy_file=policy, audit_log_path=str(log)))
    try:
        async with serve(annotated(allowed)) as hook:
            await configure(client, resource, "config", [webhook(name, hook.client_config())])
            request = core_pb2.CreateRequest(
                path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default"),
                object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(configmap("c"))))
            credentials = Credentials(token="admin-token", request_uri="/api/v1/namespaces/default/configmaps")
            if allowed:
                await security.guard.create(request, credentials)
            else:
                with pytest.raises(ApiError):
                    await security.guard.create(request, credentials)
    finally:
        await security.stop()
    ended = [orjson.loads(line) for line in log.read_bytes().splitlines()][-1]
    assert ended["stage"] == "ResponseComplete"
    assert ended["responseStatus"]["code"] == code
    assert ended["annotations"][f"{name}/checked"] == "yes"
    assert ended["annotations"][f"{name}/by"] == "c"
    assert ended["annotations"]["authorization.k8s.io/decision"] == "allow"
