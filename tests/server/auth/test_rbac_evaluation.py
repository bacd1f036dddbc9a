"""RbacAuthorizer's decisions against kube's RBAC semantics (rbac.go, rule.go), over objects written through
a real core and read by the index's watches."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import NonResourceRule, ResourceRule
from server.auth.rbac.authorizer import RbacAuthorizer
from server.auth.rbac.start import RunningRbac
from server.machinery.user import UserInfo
from server.objects.core import Core
from tests.server.auth.conftest import binding, create, eventually, group, path, raw, role, service_account, user

CLUSTER_ROLES = [
    role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    role("pods-status", [{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}]),
    role("star-status", [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
    role("named", [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"], "verbs": ["get"]}]),
    role("urls", [{"nonResourceURLs": ["/healthz", "/logs/*"], "verbs": ["get"]}]),
    role("everything", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    role("cm-c1", [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c1"], "verbs": ["get"]}]),
]
CLUSTER_BINDINGS = [
    binding("alice-cm", "ClusterRole", "cm-reader", [user("alice")]),
    binding("devs-pods-status", "ClusterRole", "pods-status", [group("devs")]),
    binding("carol-star", "ClusterRole", "star-status", [user("carol")]),
    binding("dave-named", "ClusterRole", "named", [user("dave")]),
    binding("erin-urls", "ClusterRole", "urls", [user("erin")]),
    binding("ghost", "ClusterRole", "missing", [group("ghosts")]),
    binding("admins", "ClusterRole", "everything", [user("nobody"), group("admins")]),
    binding("hana-c1", "ClusterRole", "cm-c1", [user("hana")]),  # before hana-cm: its named rule is reached first
    binding("hana-cm", "ClusterRole", "cm-reader", [user("hana")]),
]
ROLES = [role("deployer", [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "update"]}],
              namespace="team")]
ROLE_BINDINGS = [
    binding("bot-deploy", "Role", "deployer", [service_account("bot")], namespace="team"),
    binding("frank-cm", "ClusterRole", "cm-reader", [user("frank")], namespace="team"),
    binding("missing-role", "Role", "nope", [user("frank")], namespace="team"),
]


async def _seed(core: Core, rbac: RunningRbac) -> None:
    for namespace in ("team", "other"):
        await core.create(core_pb2.CreateRequest(
            path=path("namespaces", group=""), object=raw({"metadata": {"name": namespace}})))
    for obj in CLUSTER_ROLES:
        await create(core, "clusterroles", obj)
    for obj in ROLES:
        await create(core, "roles", obj)
    for obj in CLUSTER_BINDINGS:
        await create(core, "clusterrolebindings", obj)
    for obj in ROLE_BINDINGS:
        await create(core, "rolebindings", obj)
    await eventually(lambda: ("RoleBinding", "team", "missing-role") in rbac.index.bindings
                     and ("ClusterRoleBinding", "", "admins") in rbac.index.bindings)


def _resource(verb: str, resource: str, *, group: str = "", namespace: str = "", name: str = "",
              subresource: str = "") -> dict[str, Any]:
    return {"verb": verb, "resource": resource, "api_group": group, "namespace": namespace, "name": name,
            "subresource": subresource}


def _url(verb: str, url: str) -> dict[str, Any]:
    return {"verb": verb, "resource_request": False, "path": url}


ALLOW, NO = Decision.ALLOW, Decision.NO_OPINION
SA_BOT = "system:serviceaccount:team:bot"
MISSING_NOPE = 'RBAC: role.rbac.authorization.k8s.io "nope" not found'

CASES = [
    ("alice", (), _resource("list", "configmaps", namespace="team"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "alice-cm" of ClusterRole "cm-reader" to User "alice"'),
    ("alice", (), _resource("get", "configmaps", name="x"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "alice-cm" of ClusterRole "cm-reader" to User "alice"'),
    ("alice", (), _resource("delete", "configmaps", namespace="team"), NO, ""),
    ("alice", (), _resource("list", "secrets", namespace="team"), NO, ""),
    ("alice", (), _resource("list", "configmaps", group="apps"), NO, ""),
    ("alice", (), _resource("get", "configmaps", subresource="status"), NO, ""),
    ("bob", ("devs",), _resource("get", "pods", namespace="team", name="p", subresource="status"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "devs-pods-status" of ClusterRole "pods-status" to Group "devs"'),
    ("bob", ("devs",), _resource("get", "pods", namespace="team", name="p"), NO, ""),
    ("bob", (), _resource("get", "pods", namespace="team", name="p", subresource="status"), NO, ""),
    ("carol", (), _resource("get", "deployments", group="apps", name="d", subresource="status"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "carol-star" of ClusterRole "star-status" to User "carol"'),
    ("carol", (), _resource("get", "deployments", group="apps", name="d"), NO, ""),
    ("carol", (), _resource("get", "deployments", group="apps", name="d", subresource="scale"), NO, ""),
    ("dave", (), _resource("get", "secrets", namespace="team", name="s1"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "dave-named" of ClusterRole "named" to User "dave"'),
    ("dave", (), _resource("get", "secrets", namespace="team", name="s2"), NO, ""),
    ("dave", (), _resource("list", "secrets", namespace="team"), NO, ""),
    ("erin", (), _url("get", "/healthz"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "erin-urls" of ClusterRole "urls" to User "erin"'),
    ("erin", (), _url("get", "/healthz/etcd"), NO, ""),
    ("erin", (), _url("get", "/logs/kube.log"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "erin-urls" of ClusterRole "urls" to User "erin"'),
    ("erin", (), _url("get", "/logs"), NO, ""),
    ("erin", (), _url("post", "/healthz"), NO, ""),
    ("erin", (), _resource("get", "healthz"), NO, ""),
    (SA_BOT, (), _resource("create", "deployments", group="apps", namespace="team"), ALLOW,
     'RBAC: allowed by RoleBinding "bot-deploy/team" of Role "deployer" to ServiceAccount "bot/team"'),
    (SA_BOT, (), _resource("create", "deployments", group="apps", namespace="other"), NO, ""),
    (SA_BOT, (), _resource("create", "deployments", group="apps"), NO, ""),
    ("system:serviceaccount:other:bot", (), _resource("create", "deployments", group="apps", namespace="team"), NO,
     ""),
    ("frank", (), _resource("list", "configmaps", namespace="team"), ALLOW,
     'RBAC: allowed by RoleBinding "frank-cm/team" of ClusterRole "cm-reader" to User "frank"'),
    ("frank", (), _resource("list", "configmaps", namespace="other"), NO, ""),
    ("frank", (), _resource("list", "configmaps"), NO, ""),
    ("frank", (), _resource("list", "secrets", namespace="team"), NO, MISSING_NOPE),
    ("casper", ("ghosts",), _resource("get", "pods", namespace="team"), NO,
     'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found'),
    ("frank", ("ghosts",), _resource("list", "secrets", namespace="team"), NO,
     'RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, '
     'role.rbac.authorization.k8s.io "nope" not found]'),
    ("frank", ("ghosts",), _resource("get", "configmaps", namespace="team"), ALLOW,
     'RBAC: allowed by RoleBinding "frank-cm/team" of ClusterRole "cm-reader" to User "frank"'),
    ("root", ("admins",), _resource("deletecollection", "widgets", group="example.com", namespace="x"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "everything" to Group "admins"'),
    ("nobody", ("admins",), _resource("get", "pods", subresource="log"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "everything" to User "nobody"'),
    ("root", ("admins",), _url("get", "/healthz"), NO, ""),
    ("someone", ("system:authenticated",), _url("get", "/apis/apps"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group '
     '"system:authenticated"'),
    ("system:anonymous", ("system:unauthenticated",), _url("get", "/version"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" '
     'to Group "system:unauthenticated"'),
    ("system:anonymous", ("system:unauthenticated",), _url("get", "/apis"), NO, ""),
    ("admin", ("system:masters",), _resource("delete", "nodes", name="n"), ALLOW,
     'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"'),
]


@pytest.mark.parametrize(("name", "groups", "request_", "decision", "reason"), CASES)
async def test_authorize(core: Core, rbac: RunningRbac, name: str, groups: tuple[str, ...],
                         request_: dict[str, Any], decision: Decision, reason: str) -> None:
    await _seed(core, rbac)
    attributes = Attributes(UserInfo(name, groups=groups), **request_)
    assert rbac.authorize(attributes) == (decision, reason)


# One client's decisions about many objects of one kind, asked in this order of one authorizer, which caches, and
# each of a new one, which cannot have: (who, groups, resource, names asked, the binding each answer names; "" for
# no opinion).
NAMES = [
    ("alice", (), "configmaps", ["a", "b", "c", "a"], ["alice-cm"] * 4),
    ("dave", (), "secrets", ["s2", "s1", "s2", "s1"], ["", "dave-named", "", "dave-named"]),
    ("hana", (), "configmaps", ["c2", "c1", "c3", "c1", "c2"], ["hana-cm", "hana-c1", "hana-cm", "hana-c1", "hana-cm"]),
    ("hana", (), "secrets", ["c1", "c2"], ["", ""]),
    ("admin", ("system:masters",), "configmaps", ["a", "b"], ["cluster-admin"] * 2),
]


@pytest.mark.parametrize(("name", "groups", "resource", "names", "bindings"), NAMES,
                         ids=["no named rule", "a named rule only", "a named rule before another",
                              "nothing applies", "a group"])
async def test_a_decision_kept_for_every_name_is_the_one_each_name_gets(
        core: Core, rbac: RunningRbac, name: str, groups: tuple[str, ...], resource: str, names: list[str],
        bindings: list[str]) -> None:
    """A decision no resourceNames rule took part in is kept for every name of the kind; one that a named rule
    took part in is kept for its name alone: each answer, reason included, is the one an uncached authorizer
    gives."""
    await _seed(core, rbac)
    for asked, expected in zip(names, bindings, strict=True):
        attributes = Attributes(UserInfo(name, groups=groups), "get", resource=resource, namespace="team", name=asked)
        decision, reason = rbac.authorize(attributes)
        assert (decision, reason) == RbacAuthorizer(rbac.index).authorize(attributes)
        assert decision is (ALLOW if expected else NO)
        assert (f'ClusterRoleBinding "{expected}"' in reason) if expected else reason == ""


async def test_rules_for(core: Core, rbac: RunningRbac) -> None:
    """RulesFor: cluster rules, then the namespace's; resource and non-resource rules apart; missing roles
    as the evaluation error."""
    await _seed(core, rbac)
    rules = rbac.rules_for(UserInfo("frank", groups=()), "team")
    assert rules.resource_rules == (ResourceRule(("get", "list"), ("",), ("configmaps",)),)
    assert rules.evaluation_error == 'role.rbac.authorization.k8s.io "nope" not found'
    assert not rules.incomplete
    cluster = rbac.rules_for(UserInfo("erin"), "")
    assert cluster.non_resource_rules == (NonResourceRule(("get",), ("/healthz", "/logs/*")),)
    assert cluster.resource_rules == () and cluster.evaluation_error == ""


async def _delete(core: Core, resource: str, name: str, namespace: str = "") -> None:
    await core.delete(core_pb2.DeleteRequest(path=path(resource, namespace, name)))


# Each change flips a decision the authorizer has already made (and cached): (who, request, decision before,
# the change, decision after).
CHANGES = [
    ("alice", _resource("get", "configmaps", namespace="team"), ALLOW, "delete ClusterRoleBinding alice-cm", NO),
    ("alice", _resource("get", "configmaps", namespace="team"), ALLOW, "delete ClusterRole cm-reader", NO),
    ("frank", _resource("get", "configmaps", namespace="team"), ALLOW, "delete RoleBinding frank-cm", NO),
    ("frank", _resource("create", "secrets", namespace="team"), NO, "create Role nope", ALLOW),
    ("grace", _resource("get", "pods", namespace="team", subresource="status"), NO,
     "create ClusterRoleBinding grace-devs", ALLOW),
]


async def _change(core: Core, change: str) -> None:
    if change.startswith("delete "):
        kind, name = change.split()[1:]
        resource = {"ClusterRoleBinding": "clusterrolebindings", "ClusterRole": "clusterroles",
                    "RoleBinding": "rolebindings"}[kind]
        await _delete(core, resource, name, "team" if kind == "RoleBinding" else "")
    elif change == "create Role nope":
        await create(core, "roles", role("nope", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}],
                                         namespace="team"))
    else:
        await create(core, "clusterrolebindings", binding("grace-devs", "ClusterRole", "pods-status",
                                                          [user("grace")]))


@pytest.mark.parametrize(("name", "request_", "before", "change", "after"), CHANGES)
async def test_cached_decision_follows_the_index(core: Core, rbac: RunningRbac, name: str, request_: dict[str, Any],
                                                 before: Decision, change: str, after: Decision) -> None:
    """A decision is cached (asked twice), then the change reaches the index by its watch: the very next decision
    is the new one."""
    await _seed(core, rbac)
    attributes = Attributes(UserInfo(name), **request_)
    for _ in range(2):
        assert rbac.authorize(attributes)[0] is before
    generation = rbac.index.generation
    await _change(core, change)
    await eventually(lambda: rbac.index.generation > generation)
    assert rbac.authorize(attributes)[0] is after
