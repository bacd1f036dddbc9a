"""ValidatingAdmissionPolicy over HTTP, through both transports, as kube-apiserver 1.28 serves and runs it: off
by default, served with the feature gate and --runtime-config; kube's validation texts; Deny, Warn and Audit;
params, variables, matchConditions, match and exclude rules, namespaceSelector, failurePolicy; status; Tables."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from capstan.cli.commands import parse_args
from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.client import CoreClient
from gateway.transport.grpc import GrpcClient
from server.admission.policies import BINDINGS, FAILURE_KEY, POLICIES
from server.auth import caller
from server.auth.authorizer import AlwaysAllow, AlwaysDeny, Authorizer
from server.auth.config import INSECURE
from server.machinery.errors import ApiError
from server.machinery.user import UserInfo
from server.objects.admitting import Attributes
from server.startup import apienablement
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.gateway.conftest import Server

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
V1BETA1 = f"/apis/{GROUP}/v1beta1"
V1ALPHA1 = f"/apis/{GROUP}/v1alpha1"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
RULES = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]
ENABLED = apienablement.runtime_config(
    [f"{GROUP}/v1beta1=true,{GROUP}/v1alpha1=true"],
    apienablement.feature_gates(["ValidatingAdmissionPolicy=true"]))


@pytest.fixture(params=["inprocess", "grpc"])
async def enabled(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Server]:
    """A gateway whose core serves and runs the policies (the gate and both group versions on)."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=0.5))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            api=ENABLED)
    client: CoreClient = (
        InProcessClient(core.guard) if request.param == "inprocess" else GrpcClient(f"127.0.0.1:{core.grpc_port}"))
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        yield Server(f"http://127.0.0.1:{port}", session, core, client, request.param)
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()


def policy(name: str = "p", **spec: Any) -> Obj:
    body: Obj = {"matchConstraints": {"resourceRules": RULES},
                 "validations": [{"expression": "object.data.a == '1'"}]}
    body.update(spec)
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": body}


def binding(name: str = "b", policy_name: str = "p", **spec: Any) -> Obj:
    body: Obj = {"policyName": policy_name, "validationActions": ["Deny"]}
    body.update(spec)
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": body}


def configmap(name: str, a: str = "1", labels: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": a}}


async def put(server: Server, resource: str, obj: Obj) -> Obj:
    """Create (or replace) the policy or binding and wait until admission follows it."""
    name = obj["metadata"]["name"]
    answer = await server.request("GET", f"{V1BETA1}/{resource}/{name}")
    if answer.status == 200:
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": answer.json()["metadata"]["resourceVersion"]}}
        answer = await server.request("PUT", f"{V1BETA1}/{resource}/{name}", json=obj)
    else:
        answer = await server.request("POST", f"{V1BETA1}/{resource}", json=obj)
    assert answer.status in (200, 201), answer.body
    written = answer.json()
    policies = server.core.policies
    assert policies is not None
    for _ in range(1000):
        if policies.follows(resource, name, written["metadata"]["resourceVersion"]):
            return written
        await asyncio.sleep(0.01)
    raise AssertionError(f"{resource}/{name} never reached admission")


# --- served only when enabled --------------------------------------------------------------------------------------


async def test_off_by_default(server: Server) -> None:
    answer = await server.request("GET", f"{V1BETA1}/validatingadmissionpolicies")
    assert answer.status == 404
    group = (await server.request("GET", f"/apis/{GROUP}")).json()
    assert [v["version"] for v in group["versions"]] == ["v1"]
    assert server.core.policies is None


async def test_served_when_enabled(enabled: Server) -> None:
    group = (await enabled.request("GET", f"/apis/{GROUP}")).json()
    assert {v["version"] for v in group["versions"]} == {"v1", "v1beta1", "v1alpha1"}
    resources = (await enabled.request("GET", V1BETA1)).json()["resources"]
    assert {r["name"] for r in resources} == {"validatingadmissionpolicies", "validatingadmissionpolicies/status",
                                               "validatingadmissionpolicybindings"}
    created = await enabled.create(f"{V1ALPHA1}/validatingadmissionpolicies",
                                   {**policy(), "apiVersion": f"{GROUP}/v1alpha1"})
    assert created["spec"]["failurePolicy"] == "Fail"
    assert created["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert created["metadata"]["generation"] == 1
    read = (await enabled.request("GET", f"{V1BETA1}/validatingadmissionpolicies/p")).json()
    assert (read["apiVersion"], read["spec"]) == (f"{GROUP}/v1beta1", created["spec"])
    for _ in range(1000):  # kube's Local APIServices, with kube's priorities
        answer = await enabled.request("GET", f"/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.{GROUP}")
        if answer.status == 200:
            break
        await asyncio.sleep(0.01)
    spec = answer.json()["spec"]
    assert (spec["groupPriorityMinimum"], spec["versionPriority"]) == (16700, 12)
    for _ in range(1000):  # status written as the policy arrives, without a request
        status = (await enabled.request("GET", f"{V1BETA1}/validatingadmissionpolicies/p")).json().get("status")
        if status:
            break
        await asyncio.sleep(0.01)
    assert status == {"observedGeneration": 1, "typeChecking": {}}
    document = (await enabled.request("GET", f"/openapi/v3/apis/{GROUP}/v1beta1")).json()
    schemas = document["components"]["schemas"]
    spec_schema = schemas["io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicySpec"]
    assert spec_schema["properties"]["validations"]["x-kubernetes-list-type"] == "atomic"
    assert schemas["io.k8s.api.admissionregistration.v1beta1.Validation"]["required"] == ["expression"]


@pytest.mark.parametrize(("texts", "message"), [
    (["--feature-gates=Nope=true"], "unrecognized feature gate: Nope"),
    (["--runtime-config=nope.example.com/v1=true"], "unknown api groups nope.example.com"),
    (["--runtime-config=admissionregistration.k8s.io/v9=true"],
     "group version admissionregistration.k8s.io/v9 that has not been registered"),
    (["--runtime-config=admissionregistration.k8s.io/v1beta1=maybe"],
     'invalid value of admissionregistration.k8s.io/v1beta1: maybe, err: strconv.ParseBool: parsing "maybe": '
     "invalid syntax"),
], ids=["unknown gate", "unknown group", "unknown version", "not a bool"])
def test_flags_refused_as_kube_refuses_them(texts: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["serve", *texts])
    assert capsys.readouterr().err.strip().endswith(message)


# --- validation ----------------------------------------------------------------------------------------------------

VALIDATION_CASES: list[tuple[str, str, Obj, str]] = [
    ("expression does not compile", "validatingadmissionpolicies",
     policy(validations=[{"expression": "object.data.a =="}]),
     'spec.validations[0].expression: Invalid value: "object.data.a ==": compilation failed: ERROR: <input>:1:17:'),
    ("undeclared name", "validatingadmissionpolicies",
     policy(validations=[{"expression": "params.x == 1"}]),
     "undeclared reference to 'params'"),
    ("bad failurePolicy", "validatingadmissionpolicies", policy(failurePolicy="Sometimes"),
     'spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'),
    ("no rules", "validatingadmissionpolicies", policy(matchConstraints={}),
     "spec.matchConstraints.resourceRules: Required value"),
    ("nothing to check", "validatingadmissionpolicies", policy(validations=[]),
     "spec.validations: Required value: validations or auditAnnotations must contain at least one item"),
    ("bad reason", "validatingadmissionpolicies",
     policy(validations=[{"expression": "true", "reason": "Teapot"}]),
     'spec.validations[0].reason: Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", '
     '"RequestEntityTooLarge", "Unauthorized"'),
    ("no actions", "validatingadmissionpolicybindings", binding(validationActions=[]),
     "spec.validationActions: Required value: at least one validation action is required"),
    ("deny and warn", "validatingadmissionpolicybindings", binding(validationActions=["Deny", "Warn"]),
     "must not contain both Deny and Warn"),
    ("bad action", "validatingadmissionpolicybindings", binding(validationActions=["Shout"]),
     'spec.validationActions[0]: Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn"'),
    ("paramRef without name or selector", "validatingadmissionpolicybindings", binding(paramRef={}),
     "spec.paramRef: Required value: one of name or selector must be specified"),
]


@pytest.mark.parametrize(("resource", "obj", "message"), [c[1:] for c in VALIDATION_CASES],
                         ids=[c[0] for c in VALIDATION_CASES])
async def test_validation(enabled: Server, resource: str, obj: Obj, message: str) -> None:
    answer = await enabled.request("POST", f"{V1BETA1}/{resource}", json=obj)
    assert answer.status == 422, answer.body
    body = answer.json()
    assert body["reason"] == "Invalid"
    assert message in body["message"], body["message"]


# --- enforcement ---------------------------------------------------------------------------------------------------

PARAMS: Obj = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
          "validations": [{"expression": "object.data.a == params.data.want",
                           "messageExpression": "'a must be ' + params.data.want"}]}
DENIED = "configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "

# (case, policy spec, binding spec, configmap a, labels, status, Status message or "", Warning headers)
ENFORCE_CASES: list[tuple[str, Obj, Obj, str, dict[str, str] | None, int, str, list[str]]] = [
    ("deny", {}, {}, "2", None, 422, DENIED + "failed expression: object.data.a == '1'", []),
    ("allowed", {}, {}, "1", None, 201, "", []),
    ("message and reason",
     {"validations": [{"expression": "object.data.a == '1'", "message": "a is not 1", "reason": "Forbidden"}]}, {},
     "2", None, 403, DENIED + "a is not 1", []),
    ("warn", {}, {"validationActions": ["Warn"]}, "2", None, 201, "",
     ["299 - \"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: "
      "object.data.a == '1'\""]),
    ("audit only", {}, {"validationActions": ["Audit"]}, "2", None, 201, "", []),
    ("variables", {"variables": [{"name": "a", "expression": "object.data.a"},
                                 {"name": "big", "expression": "int(variables.a) > 5"}],
                   "validations": [{"expression": "variables.big", "messageExpression": "'a=' + variables.a"}]},
     {}, "2", None, 422, DENIED + "a=2", []),
    ("matchConditions skip", {"matchConditions": [{"name": "other", "expression": "object.metadata.name == 'o'"}]},
     {}, "2", None, 201, "", []),
    ("matchConditions match", {"matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}]},
     {}, "2", {"check": "yes"}, 422, DENIED + "failed expression: object.data.a == '1'", []),
    ("excluded by name", {"matchConstraints": {"resourceRules": RULES, "excludeResourceRules": [
        {**RULES[0], "resourceNames": ["c"]}]}}, {}, "2", None, 201, "", []),
    ("binding matches other objects",
     {}, {"matchResources": {"objectSelector": {"matchLabels": {"strict": "yes"}}}}, "2", None, 201, "", []),
    ("namespaceSelector does not match",
     {"matchConstraints": {"resourceRules": RULES, "namespaceSelector": {"matchLabels": {"env": "prod"}}}}, {},
     "2", None, 201, "", []),
    ("params", PARAMS, {"paramRef": {"name": "wanted", "namespace": "default"}}, "2", None, 422, DENIED + "a must be 3",
     []),
    ("params allowed", PARAMS, {"paramRef": {"name": "wanted", "namespace": "default"}}, "3", None, 201, "", []),
    ("params by selector", PARAMS, {"paramRef": {"selector": {"matchLabels": {"role": "wanted"}}}}, "2", None, 422,
     DENIED + "a must be 3", []),
    ("params missing, Deny", PARAMS, {"paramRef": {"name": "absent", "namespace": "default"}}, "3", None, 422,
     DENIED + "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
     []),
    ("params missing, Allow", PARAMS,
     {"paramRef": {"name": "absent", "namespace": "default", "parameterNotFoundAction": "Allow"}}, "2", None, 201, "",
     []),
    ("params missing, failurePolicy Ignore", {**PARAMS, "failurePolicy": "Ignore"},
     {"paramRef": {"name": "absent", "namespace": "default"}}, "2", None, 201, "", []),
    ("unknown paramKind", {**PARAMS, "paramKind": {"apiVersion": "example.com/v1", "kind": "Nothing"}},
     {"paramRef": {"name": "x", "namespace": "default"}}, "2", None, 422,
     "configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: "
     "failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nothing'", []),
    ("authorizer", {"validations": [{"expression": "!authorizer.requestResource.check('create').allowed()",
                                     "message": "creators may not create"}]}, {}, "1", None, 422,
     DENIED + "creators may not create", []),
    ("authorizer paths and groups", {"validations": [{"expression": "authorizer.path('/healthz').check('get')"
                                                                     ".allowed() && authorizer.group('apps')"
                                                                     ".resource('deployments').namespace('default')"
                                                                     ".check('list').reason() == ''"}]},
     {}, "2", None, 201, "", []),
    ("evaluation error, Fail", {"validations": [{"expression": "object.data.nothere == '1'"}]}, {}, "2", None, 422,
     DENIED + "expression 'object.data.nothere == '1'' resulted in error:", []),
    ("evaluation error, Ignore", {"failurePolicy": "Ignore", "validations": [{"expression": "object.data.nothere == "
                                                                                            "'1'"}]},
     {}, "2", None, 201, "", []),
]


@pytest.mark.parametrize(("spec", "binding_spec", "a", "labels", "code", "message", "warnings"),
                         [c[1:] for c in ENFORCE_CASES], ids=[c[0] for c in ENFORCE_CASES])
async def test_enforcement(enabled: Server, spec: Obj, binding_spec: Obj, a: str, labels: dict[str, str] | None,
                           code: int, message: str, warnings: list[str]) -> None:
    await enabled.create(CONFIGMAPS, {**configmap("wanted", "x"), "data": {"want": "3"},
                                      "metadata": {"name": "wanted", "labels": {"role": "wanted"}}})
    await put(enabled, POLICIES, policy(**spec))
    await put(enabled, BINDINGS, binding(**binding_spec))
    answer = await enabled.request("POST", CONFIGMAPS, json=configmap("c", a, labels))
    assert answer.status == code, answer.body
    assert answer.headers.getall("Warning", []) == warnings
    body = answer.json()
    if message:
        assert body["kind"] == "Status"
        assert body["message"].startswith(message), body["message"]
        assert body["details"]["causes"][0]["message"] == body["message"].split("is forbidden: ", 1)[1]


async def test_audit_annotations(enabled: Server) -> None:
    """Audit: the validation_failure annotation; auditAnnotations: `<policy>/<key>`."""
    await put(enabled, POLICIES, policy(auditAnnotations=[{"key": "seen", "valueExpression": "'a=' + object.data.a"}]))
    await put(enabled, BINDINGS, binding(validationActions=["Audit"]))
    policies = enabled.core.policies
    assert policies is not None
    resource = enabled.core.core.registry.get("", "v1", "configmaps")
    assert resource is not None
    attrs = Attributes(resource, "CREATE", "c", "default", configmap("c", "2"), None, False)
    await policies.validate(enabled.core.core.context, attrs)
    assert attrs.audit_annotations == {
        "p/seen": "a=2",
        FAILURE_KEY: '[{"message":"failed expression: object.data.a == \'1\'","policy":"p","binding":"b",'
                     '"expressionIndex":0,"validationActions":["Audit"]}]'}


@pytest.mark.parametrize(("authorizer", "code"), [(AlwaysAllow(), 201), (AlwaysDeny(), 403)],
                         ids=["allowed", "denied"])
async def test_authorizer_asks_the_callers_authorizer(enabled: Server, authorizer: Authorizer, code: int) -> None:
    """`authorizer` checks the request's user with the caller's authorizer; a service account by its name."""
    await put(enabled, POLICIES, policy(validations=[{
        "expression": "authorizer.serviceAccount('default', 'builder').group('').resource('secrets')"
                      ".check('get').allowed()",
        "reason": "Forbidden", "message": "the builder may not read secrets"}]))
    await put(enabled, BINDINGS, binding())
    policies = enabled.core.policies
    assert policies is not None
    resource = enabled.core.core.registry.get("", "v1", "configmaps")
    assert resource is not None
    token = caller.bind(caller.Caller(UserInfo("someone"), authorizer))
    try:
        attrs = Attributes(resource, "CREATE", "c", "default", configmap("c"), None, False)
        if code == 201:
            await policies.validate(enabled.core.core.context, attrs)
        else:
            with pytest.raises(ApiError) as raised:
                await policies.validate(enabled.core.core.context, attrs)
            assert (raised.value.code, raised.value.status.message) == (code, DENIED + "the builder may not read "
                                                                               "secrets")
    finally:
        caller.unbind(token)


async def test_changes_take_effect_without_restart(enabled: Server) -> None:
    """A new policy generation is compiled and followed; a deleted binding stops enforcing; status follows."""
    await put(enabled, POLICIES, policy())
    await put(enabled, BINDINGS, binding())
    assert (await enabled.request("POST", CONFIGMAPS, json=configmap("c", "2"))).status == 422
    changed = await put(enabled, POLICIES, policy(validations=[{"expression": "object.data.a == '2'"}]))
    assert changed["metadata"]["generation"] == 2
    assert (await enabled.request("POST", CONFIGMAPS, json=configmap("c", "2"))).status == 201
    for _ in range(1000):
        status = (await enabled.request("GET", f"{V1BETA1}/validatingadmissionpolicies/p")).json().get("status")
        if status and status.get("observedGeneration") == 2:
            break
        await asyncio.sleep(0.01)
    assert status == {"observedGeneration": 2, "typeChecking": {}}
    answer = await enabled.request("DELETE", f"{V1BETA1}/validatingadmissionpolicybindings/b")
    assert answer.status == 200
    policies = enabled.core.policies
    assert policies is not None
    for _ in range(1000):
        if policies.follows(BINDINGS, "b", ""):
            break
        await asyncio.sleep(0.01)
    assert (await enabled.request("POST", CONFIGMAPS, json=configmap("d", "3"))).status == 201


async def test_tables(enabled: Server) -> None:
    await put(enabled, POLICIES, policy(**PARAMS))
    await put(enabled, BINDINGS, binding(paramRef={"name": "wanted", "namespace": "default"}))
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    rows = {}
    for resource in (POLICIES, BINDINGS):
        table = (await enabled.request("GET", f"{V1BETA1}/{resource}", headers=accept)).json()
        rows[resource] = ([c["name"] for c in table["columnDefinitions"]], table["rows"][0]["cells"][:3])
    assert rows[POLICIES] == (["Name", "Validations", "ParamKind", "Age"], ["p", 1, "v1/ConfigMap"])
    assert rows[BINDINGS] == (["Name", "PolicyName", "ParamRef", "Age"], ["b", "p", "default/wanted"])
