"""The review APIs against a real core over LMDB behind the real security chain (RBAC, static tokens from a token
file, service account tokens): SubjectAccessReview and friends answer what the authorizer decides for the subject
they name, SelfSubjectRulesReview lists the caller's rules, TokenReview authenticates a token, SelfSubjectReview
says who the caller is; all are 201 answers that are never stored, with kube's validation Statuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.auth.setup import Security, start_security
from server.machinery import errors
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.objects.core import Core
from tests.server.auth.conftest import binding, create, eventually, role, user

Obj = dict[str, Any]
AUTHZ, AUTHN = "authorization.k8s.io", "authentication.k8s.io"
ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN, ALICE, NOBODY = "admin-token", "alice-token", "unknown-token"
ALICE_GROUPS = ["system:authenticated"]


@pytest.fixture
async def security(core: Core, tmp_path: Path) -> AsyncIterator[Security]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{ADMIN},admin,1,"system:masters"\n{ALICE},alice,42,"team-a"\n')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    started = await start_security(core, SecurityConfig(
        token_auth_file=tokens, service_account_signing_key_file=tmp_path / "sa.key",
        service_account_key_files=(tmp_path / "sa.key",)))
    await _create_v1(core, "namespaces", "team")
    await create(core, "roles", role("pod-reader", [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["update"]},
    ], namespace="team"))
    await create(core, "rolebindings", binding("alice-reads", "Role", "pod-reader", [user("alice")], "team"))
    await create(core, "rolebindings", binding("dangling", "Role", "gone", [user("alice")], "team"))
    rbac = started.guard.authorizer
    await eventually(lambda: rbac.rules_for(_alice(), "team").evaluation_error != "")
    try:
        yield started
    finally:
        await started.stop()


async def _create_v1(core: Core, resource: str, name: str, namespace: str = "") -> None:
    await core.create(core_pb2.CreateRequest(
        path=core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace),
        object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps({"metadata": {"name": name}}))))


def _alice() -> UserInfo:
    return UserInfo("alice", "42", ("team-a", "system:authenticated"))


def _path(group: str, resource: str, namespace: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace)


async def _post(security: Security, token: str, group: str, resource: str, body: Obj, namespace: str = "",
                dry_run: bool = False) -> Obj:
    request = core_pb2.CreateRequest(path=_path(group, resource, namespace), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body)))
    if dry_run:
        request.options.dryRun.append("All")
    created = await security.guard.create(request, Credentials(token=token))
    answer: Obj = orjson.loads(created.object.data)
    return answer


async def _refused(security: Security, token: str, group: str, resource: str, body: Obj,
                   namespace: str = "") -> meta_pb2.Status:
    with pytest.raises(errors.ApiError) as refused:
        await _post(security, token, group, resource, body, namespace)
    return refused.value.status


def _resource(verb: str, resource: str, namespace: str = "team", **more: str) -> Obj:
    return {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource, **more}}


ALLOWED_BY_ROLE = 'RBAC: allowed by RoleBinding "alice-reads/team" of Role "pod-reader" to User "alice"'
MISSING = 'RBAC: role.rbac.authorization.k8s.io "gone" not found'


@pytest.mark.parametrize(("token", "spec", "status"), [
    (ALICE, _resource("list", "pods"), {"allowed": True, "reason": ALLOWED_BY_ROLE}),
    (ALICE, _resource("delete", "pods"), {"allowed": False, "reason": MISSING}),
    (ALICE, _resource("update", "deployments", group="apps", name="web"), {"allowed": True, "reason": ALLOWED_BY_ROLE}),
    (ALICE, _resource("update", "deployments", group="apps", name="db"), {"allowed": False, "reason": MISSING}),
    (ALICE, _resource("list", "pods", namespace="other"), {"allowed": False}),
    (ALICE, {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
     {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole '
                                 '"system:discovery" to Group "system:authenticated"'}),
    # system:masters is allowed by kube's privileged-groups authorizer, before RBAC and without a reason
    # (kube-apiserver 1.28.7 answers {"allowed": true}).
    (ADMIN, _resource("delete", "secrets", namespace="kube-system"), {"allowed": True}),
])
async def test_self_subject_access_review_answers_for_the_caller(security: Security, token: str, spec: Obj,
                                                                 status: Obj) -> None:
    body = {"apiVersion": f"{AUTHZ}/v1", "kind": "SelfSubjectAccessReview", "spec": spec}
    answer = await _post(security, token, AUTHZ, "selfsubjectaccessreviews", body)
    assert answer["kind"] == "SelfSubjectAccessReview" and answer["apiVersion"] == f"{AUTHZ}/v1"
    assert answer["metadata"]["creationTimestamp"] is None
    assert answer["spec"] == spec
    assert answer["status"] == status


@pytest.mark.parametrize(("spec", "status"), [
    ({"user": "alice", **_resource("get", "pods")}, {"allowed": True, "reason": ALLOWED_BY_ROLE}),
    ({"user": "bob", **_resource("get", "pods")}, {"allowed": False}),
    ({"user": "bob", "groups": ["system:masters"], **_resource("get", "pods")}, {"allowed": True}),
    # The subject is only what the spec says: no system:authenticated added.
    ({"user": "bob", "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}, {"allowed": False}),
])
async def test_subject_access_review_answers_for_the_spec_subject(security: Security, spec: Obj, status: Obj) -> None:
    body = {"apiVersion": f"{AUTHZ}/v1", "kind": "SubjectAccessReview", "spec": spec}
    answer = await _post(security, ADMIN, AUTHZ, "subjectaccessreviews", body)
    assert answer["spec"] == spec
    assert answer["status"] == status


async def test_local_subject_access_review_takes_the_path_namespace(security: Security) -> None:
    spec = {"user": "alice", **_resource("list", "pods")}
    answer = await _post(security, ADMIN, AUTHZ, "localsubjectaccessreviews",
                         {"kind": "LocalSubjectAccessReview", "apiVersion": f"{AUTHZ}/v1", "spec": spec}, "team")
    assert answer["metadata"]["namespace"] == "team"
    assert answer["status"] == {"allowed": True, "reason": ALLOWED_BY_ROLE}


INVALID = "Invalid"


@pytest.mark.parametrize(("resource", "namespace", "body", "code", "message"), [
    ("selfsubjectaccessreviews", "", {"spec": {}}, 422,
     '.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of '
     "nonResourceAttributes or resourceAttributes must be specified"),
    ("selfsubjectaccessreviews", "", {"spec": {**_resource("get", "pods"),
                                               "nonResourceAttributes": {"path": "/api", "verb": "get"}}}, 422,
     '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
     'authorization.NonResourceAttributes{Path:"/api", Verb:"get"}: cannot be specified in combination with '
     "resourceAttributes"),
    ("subjectaccessreviews", "", {"spec": _resource("get", "pods")}, 422,
     '.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be '
     "specified"),
    ("subjectaccessreviews", "", {"spec": {}}, 422,
     '.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: "null": exactly one of '
     'nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "": at least one '
     "of user or group must be specified]"),
    ("subjectaccessreviews", "", {"metadata": {"name": "x"}, "spec": {"user": "a", **_resource("get", "pods")}},
     422, '.authorization.k8s.io "" is invalid: metadata: Invalid value: v1.ObjectMeta{Name:"x", GenerateName:"", '
          'Namespace:"", SelfLink:"", UID:"", ResourceVersion:"", Generation:0, CreationTimestamp:time.Date(1, '
          "time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), "
          "Labels:map[string]string(nil), Annotations:map[string]string(nil), "
          "OwnerReferences:[]v1.OwnerReference(nil), Finalizers:[]string(nil), "
          "ManagedFields:[]v1.ManagedFieldsEntry(nil)}: must be empty"),
    ("localsubjectaccessreviews", "team", {"spec": {"user": "a", **_resource("get", "pods", namespace="other")}},
     422, '.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must '
          "match metadata.namespace"),
    ("localsubjectaccessreviews", "team", {"spec": {"user": "a", "nonResourceAttributes": {"path": "/x"}}},
     422, '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
          'authorization.NonResourceAttributes{Path:"/x", Verb:""}: disallowed on this kind of request'),
    ("localsubjectaccessreviews", "team", {"metadata": {"namespace": "other"},
                                           "spec": {"user": "a", **_resource("get", "pods")}}, 400,
     "the namespace of the provided object does not match the namespace sent on the request"),
    ("selfsubjectrulesreviews", "", {"spec": {}}, 400, "no namespace on request"),
])
async def test_bad_reviews_get_kube_statuses(security: Security, resource: str, namespace: str, body: Obj,
                                             code: int, message: str) -> None:
    status = await _refused(security, ADMIN, AUTHZ, resource, body, namespace)
    assert (status.code, status.message) == (code, message)
    if code == 422:
        assert status.reason == INVALID and status.details.group == AUTHZ
        assert (status.details.kind, status.details.name) == ("", "")


async def test_self_subject_rules_review_lists_the_callers_rules(security: Security) -> None:
    answer = await _post(security, ALICE, AUTHZ, "selfsubjectrulesreviews",
                         {"apiVersion": f"{AUTHZ}/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}})
    assert answer["metadata"] == {"creationTimestamp": None} and answer["spec"] == {}
    status = answer["status"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in status["resourceRules"]
    assert {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["web"]} in status["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": [AUTHZ],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in status["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} \
        in status["nonResourceRules"]
    assert status["incomplete"] is False
    assert status["evaluationError"] == 'role.rbac.authorization.k8s.io "gone" not found'


async def test_self_subject_rules_review_elsewhere_lists_only_cluster_rules(security: Security) -> None:
    answer = await _post(security, ALICE, AUTHZ, "selfsubjectrulesreviews", {"spec": {"namespace": "other"}})
    resources = {r for rule in answer["status"]["resourceRules"] for r in rule.get("resources", [])}
    assert "pods" not in resources and "selfsubjectaccessreviews" in resources
    assert "evaluationError" not in answer["status"]


@pytest.mark.parametrize(("token", "spec_audiences", "status"), [
    (ALICE, None, {"authenticated": True, "user": {"username": "alice", "uid": "42",
                                                   "groups": ["team-a", "system:authenticated"]},
                   "audiences": [ISSUER]}),
    (ALICE, ["other", ISSUER], {"authenticated": True, "user": {"username": "alice", "uid": "42",
                                                                "groups": ["team-a", "system:authenticated"]},
                                "audiences": [ISSUER]}),
    (ALICE, ["other"], {"user": {}, "error": "invalid bearer token"}),
    (NOBODY, None, {"user": {}, "error": "invalid bearer token"}),
])
async def test_token_review_authenticates_the_spec_token(security: Security, token: str,
                                                         spec_audiences: list[str] | None, status: Obj) -> None:
    spec: Obj = {"token": token, **({"audiences": spec_audiences} if spec_audiences else {})}
    answer = await _post(security, ADMIN, AUTHN, "tokenreviews",
                         {"apiVersion": f"{AUTHN}/v1", "kind": "TokenReview", "spec": spec})
    assert answer["kind"] == "TokenReview" and answer["spec"] == spec
    assert answer["status"] == status


async def test_token_review_of_a_service_account_token(security: Security, core: Core) -> None:
    await _create_v1(core, "serviceaccounts", "bot", "team")
    path = core_pb2.ResourcePath(version="v1", resource="serviceaccounts", namespace="team", name="bot",
                                 subresource="token")
    issued = await core.create(core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=b'{"spec": {}}')))
    token = orjson.loads(issued.object.data)["status"]["token"]
    answer = await _post(security, ADMIN, AUTHN, "tokenreviews", {"spec": {"token": token}})
    info = answer["status"]["user"]
    assert answer["status"]["authenticated"] is True
    assert info["username"] == "system:serviceaccount:team:bot"
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]


async def test_token_review_needs_a_token(security: Security) -> None:
    status = await _refused(security, ADMIN, AUTHN, "tokenreviews", {"spec": {}})
    assert (status.code, status.reason, status.message) == (
        400, "BadRequest", "token is required for TokenReview in authentication")


@pytest.mark.parametrize(("token", "user_info"), [
    (ALICE, {"username": "alice", "uid": "42", "groups": ["team-a", "system:authenticated"]}),
    (ADMIN, {"username": "admin", "uid": "1", "groups": ["system:masters", "system:authenticated"]}),
    ("", {"username": "system:anonymous", "groups": ["system:unauthenticated"]}),
])
async def test_self_subject_review_says_who_the_caller_is(security: Security, token: str, user_info: Obj) -> None:
    if not token:  # anonymous may not create it (kube's bootstrap policy grants it to system:authenticated)
        status = await _refused(security, token, AUTHN, "selfsubjectreviews", {})
        assert status.code == 403
        return
    answer = await _post(security, token, AUTHN, "selfsubjectreviews",
                         {"apiVersion": f"{AUTHN}/v1", "kind": "SelfSubjectReview"})
    assert answer["kind"] == "SelfSubjectReview" and answer["apiVersion"] == f"{AUTHN}/v1"
    assert isinstance(answer["metadata"]["creationTimestamp"], str)
    assert answer["status"] == {"userInfo": user_info}


@pytest.mark.parametrize(("token", "resource", "code"), [
    (ALICE, "subjectaccessreviews", 403),
    (ALICE, "tokenreviews", 403),
    (ALICE, "selfsubjectaccessreviews", 201),
    (ALICE, "selfsubjectrulesreviews", 201),
    (ALICE, "selfsubjectreviews", 201),
])
async def test_who_may_ask(security: Security, token: str, resource: str, code: int) -> None:
    group = AUTHN if resource in ("tokenreviews", "selfsubjectreviews") else AUTHZ
    body = {"spec": {**_resource("get", "pods"), "user": "x", "token": "t", "namespace": "team"}}
    body = {"spec": {"token": "t"}} if resource == "tokenreviews" else body
    body = {"spec": {"namespace": "team"}} if resource == "selfsubjectrulesreviews" else body
    body = {"spec": _resource("get", "pods")} if resource == "selfsubjectaccessreviews" else body
    body = {} if resource == "selfsubjectreviews" else body
    if code == 403:
        status = await _refused(security, token, group, resource, body)
        assert status.message == (f'{resource}.{group} is forbidden: User "alice" cannot create resource '
                                     f'"{resource}" in API group "{group}" at the cluster scope')
    else:
        await _post(security, token, group, resource, body)


async def test_reviews_are_never_stored_and_dry_run_answers_alike(security: Security, core: Core) -> None:
    body = {"spec": _resource("list", "pods")}
    wet = await _post(security, ALICE, AUTHZ, "selfsubjectaccessreviews", body)
    dry = await _post(security, ALICE, AUTHZ, "selfsubjectaccessreviews", body, dry_run=True)
    assert wet["status"] == dry["status"] == {"allowed": True, "reason": ALLOWED_BY_ROLE}
    with pytest.raises(errors.ApiError) as refused:
        await core.list(core_pb2.ListRequest(path=_path(AUTHZ, "selfsubjectaccessreviews")))
    assert refused.value.status.code == 405
