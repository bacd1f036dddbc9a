"""The index follows writes of the RBAC kinds; kube's bootstrap policy is present and reconciled; ClusterRole
aggregation keeps aggregated roles current."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes, Decision
from server.auth.rbac.reconcile import reconcile
from server.auth.rbac.start import RunningRbac
from server.machinery.user import UserInfo
from server.objects.core import Core
from tests.server.auth.conftest import binding, create, eventually, get, path, raw, role, user

Obj = dict[str, Any]
LIST_CM = Attributes(UserInfo("zed"), "list", resource="configmaps", namespace="default")
READ = ["get", "list", "watch"]


async def _update(core: Core, resource: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    await core.update(core_pb2.UpdateRequest(path=path(resource, obj["metadata"].get("namespace", ""), name),
                                             object=raw(obj)))


async def _delete(core: Core, resource: str, name: str, namespace: str = "") -> None:
    await core.delete(core_pb2.DeleteRequest(path=path(resource, namespace, name)))


async def test_index_follows_writes(core: Core, rbac: RunningRbac) -> None:
    def allowed() -> bool:
        return rbac.authorize(LIST_CM)[0] is Decision.ALLOW

    await create(core, "roles", role("r", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
                                     namespace="default"))
    await create(core, "rolebindings", binding("b", "Role", "r", [user("zed")], namespace="default"))
    await eventually(lambda: ("RoleBinding", "default", "b") in rbac.index.bindings)
    assert not allowed()
    stored = await get(core, "roles", "r", "default")
    stored["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    await _update(core, "roles", stored)
    await eventually(allowed)
    await _delete(core, "rolebindings", "b", "default")
    await eventually(lambda: not allowed())
    await create(core, "rolebindings", binding("b", "Role", "r", [user("zed")], namespace="default"))
    await eventually(allowed)
    await _delete(core, "roles", "r", "default")
    await eventually(lambda: rbac.authorize(LIST_CM) == (Decision.NO_OPINION,
                                                         'RBAC: role.rbac.authorization.k8s.io "r" not found'))


@pytest.mark.parametrize(("name", "rules"), [
    ("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                       {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
    ("system:discovery", [{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                               "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
    ("system:public-info-viewer", [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                                    "verbs": ["get"]}]),
    ("system:basic-user", [
        {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]}]),
])
async def test_bootstrap_roles(core: Core, rbac: RunningRbac, name: str, rules: list[Obj]) -> None:
    got = await get(core, "clusterroles", name)
    assert got["rules"] == rules
    assert got["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
    assert got["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"


@pytest.mark.parametrize(("name", "subjects"), [
    ("cluster-admin", [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]),
    ("system:discovery", [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]),
    ("system:public-info-viewer", [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"},
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}]),
    ("system:kube-dns", [{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}]),
])
async def test_bootstrap_bindings(core: Core, rbac: RunningRbac, name: str, subjects: list[Obj]) -> None:
    got = await get(core, "clusterrolebindings", name)
    assert got["subjects"] == subjects
    assert got["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert got["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"


def _controller(name: str) -> UserInfo:
    """A kube-controller-manager controller as `--use-service-account-credentials` runs it."""
    return UserInfo(f"system:serviceaccount:kube-system:{name}",
                    groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"))


SCHEDULER = UserInfo("system:kube-scheduler", groups=("system:authenticated",))
CONTROLLER_MANAGER = UserInfo("system:kube-controller-manager", groups=("system:authenticated",))


# What kube-controller-manager's controllers and kube-scheduler may do, and may not, under the bootstrap policy.
@pytest.mark.parametrize(("who", "verb", "group", "resource", "namespace", "name", "allowed"), [
    (_controller("generic-garbage-collector"), "delete", "apps", "replicasets", "default", "", True),
    (_controller("generic-garbage-collector"), "list", "example.com", "widgets", "", "", True),
    (_controller("namespace-controller"), "deletecollection", "", "pods", "team", "", True),
    (_controller("namespace-controller"), "create", "", "pods", "team", "", False),
    (_controller("deployment-controller"), "create", "apps", "replicasets", "default", "", True),
    (_controller("deployment-controller"), "get", "", "secrets", "default", "", False),
    (_controller("replicaset-controller"), "create", "", "pods", "default", "", True),
    (_controller("job-controller"), "update", "batch", "jobs/status", "default", "", True),
    (_controller("statefulset-controller"), "create", "", "persistentvolumeclaims", "default", "", True),
    (_controller("endpointslice-controller"), "create", "discovery.k8s.io", "endpointslices", "default", "", True),
    (_controller("service-account-controller"), "create", "", "serviceaccounts", "default", "", True),
    (_controller("root-ca-cert-publisher"), "create", "", "configmaps", "default", "", True),
    (_controller("clusterrole-aggregation-controller"), "patch", "rbac.authorization.k8s.io", "clusterroles", "",
     "admin", True),
    (_controller("certificate-controller"), "sign", "certificates.k8s.io", "signers", "",
     "kubernetes.io/kube-apiserver-client", True),
    (_controller("node-controller"), "delete", "", "pods", "default", "", True),
    (_controller("bootstrap-signer"), "update", "", "configmaps", "kube-public", "cluster-info", True),
    (_controller("bootstrap-signer"), "update", "", "configmaps", "kube-public", "other", False),
    (_controller("token-cleaner"), "delete", "", "secrets", "kube-system", "bootstrap-token-abc", True),
    (_controller("token-cleaner"), "delete", "", "secrets", "default", "bootstrap-token-abc", False),
    (_controller("unknown-controller"), "list", "", "pods", "", "", False),
    (CONTROLLER_MANAGER, "get", "", "configmaps", "kube-system", "extension-apiserver-authentication", True),
    (CONTROLLER_MANAGER, "update", "", "configmaps", "kube-system", "kube-controller-manager", True),
    (CONTROLLER_MANAGER, "create", "", "serviceaccounts/token", "kube-system", "deployment-controller", True),
    (SCHEDULER, "get", "", "configmaps", "kube-system", "extension-apiserver-authentication", True),
    (SCHEDULER, "update", "coordination.k8s.io", "leases", "kube-system", "kube-scheduler", True),
    (SCHEDULER, "create", "", "pods/binding", "default", "", True),
    (SCHEDULER, "update", "", "configmaps", "kube-system", "kube-controller-manager", False),
])
async def test_kube_components_are_allowed_what_kube_allows_them(
    core: Core, rbac: RunningRbac, who: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str,
    allowed: bool,
) -> None:
    resource, _, subresource = resource.partition("/")
    attributes = Attributes(who, verb, api_group=group, resource=resource, subresource=subresource,
                            namespace=namespace, name=name)
    assert (rbac.authorize(attributes)[0] is Decision.ALLOW) is allowed


def _has(rules: list[Obj], group: str, resource: str, verb: str) -> bool:
    return any(group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r["verbs"]
               for r in rules)


@pytest.mark.parametrize(("name", "group", "resource", "verb", "expected"), [
    ("view", "", "pods", "list", True),
    ("view", "apps", "deployments/scale", "get", True),
    ("view", "", "secrets", "get", False),
    ("edit", "", "secrets", "get", True),
    ("edit", "apps", "deployments", "create", True),
    ("edit", "", "pods", "list", True),  # view's, aggregated into edit
    ("edit", "rbac.authorization.k8s.io", "roles", "create", False),
    ("admin", "rbac.authorization.k8s.io", "roles", "create", True),
    ("admin", "", "secrets", "update", True),  # edit's
    ("admin", "", "configmaps", "watch", True),  # view's through edit
])
async def test_aggregated_bootstrap_roles(core: Core, rbac: RunningRbac, name: str, group: str, resource: str,
                                          verb: str, expected: bool) -> None:
    async def holds() -> bool:
        return _has((await get(core, "clusterroles", name)).get("rules") or [], group, resource, verb)

    await rbac.aggregation.settled()
    assert await holds() is expected


async def test_aggregation_follows_labels(core: Core, rbac: RunningRbac) -> None:
    widgets = role("widget-viewer", [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": READ}],
                   metadata={"name": "widget-viewer",
                             "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}})
    await create(core, "clusterroles", widgets)
    await eventually(lambda: _has(rbac.index.cluster_roles["view"].get("rules") or [], "example.com", "widgets",
                                  "list"))
    await eventually(lambda: _has(rbac.index.cluster_roles["admin"].get("rules") or [], "example.com", "widgets",
                                  "list"))
    stored = await get(core, "clusterroles", "widget-viewer")
    stored["metadata"]["labels"] = {}
    await _update(core, "clusterroles", stored)
    await eventually(lambda: not _has(rbac.index.cluster_roles["view"].get("rules") or [], "example.com", "widgets",
                                      "list"))


async def test_reconcile_adds_what_is_missing_and_respects_autoupdate_false(core: Core, rbac: RunningRbac) -> None:
    discovery = await get(core, "clusterroles", "system:discovery")
    discovery["rules"] = [{"nonResourceURLs": ["/api"], "verbs": ["get"]}]
    discovery["metadata"]["labels"] = {"mine": "yes"}
    await _update(core, "clusterroles", discovery)
    basic = await get(core, "clusterroles", "system:basic-user")
    basic["rules"] = []
    basic["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    await _update(core, "clusterroles", basic)
    masters = await get(core, "clusterrolebindings", "cluster-admin")
    masters["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "root"}]
    await _update(core, "clusterrolebindings", masters)
    await _delete(core, "clusterroles", "system:monitoring")

    await reconcile(core)

    discovery = await get(core, "clusterroles", "system:discovery")
    assert discovery["rules"][0] == {"nonResourceURLs": ["/api"], "verbs": ["get"]}
    assert {"nonResourceURLs": ["/version/"], "verbs": ["get"]} in discovery["rules"]
    assert len(discovery["rules"]) == 11  # the ten missing, one URL each
    assert discovery["metadata"]["labels"] == {"mine": "yes", "kubernetes.io/bootstrapping": "rbac-defaults"}
    assert (await get(core, "clusterroles", "system:basic-user")).get("rules") in (None, [])
    subjects = (await get(core, "clusterrolebindings", "cluster-admin"))["subjects"]
    assert [s["name"] for s in subjects] == ["root", "system:masters"]
    assert (await get(core, "clusterroles", "system:monitoring"))["rules"][0]["nonResourceURLs"][0] == "/healthz"

