"""Escalation prevention on writes of the RBAC kinds, with kube's 403 messages (policybased storages,
ConfirmNoEscalation), for a caller authorized by the RBAC authorizer itself."""

from __future__ import annotations

from typing import Any

import pytest

from server.auth.rbac.start import RunningRbac
from server.machinery import errors
from server.machinery.user import UserInfo
from server.objects.core import Core
from tests.server.auth.conftest import binding, create, eventually, role, user

Obj = dict[str, Any]
BOB = UserInfo("bob", groups=("g", "system:authenticated"))
SECRETS_GET = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
CM_READ = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
RBAC_WRITE = [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings", "clusterroles",
                                                                         "clusterrolebindings"],
               "verbs": ["create", "update"]}]
HEADER = ('user "bob" (groups=["g" "system:authenticated"]) is attempting to grant RBAC permissions not currently '
          'held:\n')


async def _grant(core: Core, rbac: RunningRbac, name: str, rules: list[Obj]) -> None:
    """A ClusterRole with these rules bound to bob cluster-wide, in the index before returning."""
    await create(core, "clusterroles", role(name, rules))
    await create(core, "clusterrolebindings", binding(name, "ClusterRole", name, [user("bob")]))
    await eventually(lambda: ("ClusterRoleBinding", "", name) in rbac.index.bindings)


async def _as_bob(core: Core, rbac: RunningRbac, resource: str, obj: Obj) -> Obj:
    return await create(core, resource, obj, as_user=BOB, authorizer=rbac)


@pytest.mark.parametrize(("extra_rules", "resource", "obj", "status"), [
    # A role granting what bob lacks.
    ([], "clusterroles", role("x", SECRETS_GET),
     (403, 'clusterroles.rbac.authorization.k8s.io "x" is forbidden: ' + HEADER
      + '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')),
    ([], "roles", role("x", [*SECRETS_GET, {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
                                         {"apiGroups": ["apps"], "resources": ["deployments"],
                                          "verbs": ["get"], "resourceNames": ["d"]}], namespace="default"),
     (403, 'roles.rbac.authorization.k8s.io "x" is forbidden: ' + HEADER
      + '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}\n'
      + '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}')),
    # What bob holds he may grant.
    ([], "roles", role("x", CM_READ, namespace="default"), None),
    ([], "clusterroles", role("x", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]), None),
    # `escalate` on the role resource lets him grant anything.
    ([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate"]}],
     "clusterroles", role("x", SECRETS_GET), None),
    # An aggregationRule needs everything.
    ([], "clusterroles", role("x", CM_READ, aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}),
     (403, 'clusterroles.rbac.authorization.k8s.io "x" is forbidden: must have cluster-admin privileges to use '
           'the aggregationRule')),
    # Bindings: the bound role's permissions, or `bind`.
    ([], "rolebindings", binding("x", "ClusterRole", "secret-getter", [user("eve")], namespace="default"),
     (403, 'rolebindings.rbac.authorization.k8s.io "x" is forbidden: ' + HEADER
      + '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')),
    ([], "clusterrolebindings", binding("x", "ClusterRole", "secret-getter", [user("eve")]),
     (403, 'clusterrolebindings.rbac.authorization.k8s.io "x" is forbidden: ' + HEADER
      + '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')),
    ([], "rolebindings", binding("x", "ClusterRole", "cm-reader", [user("eve")], namespace="default"), None),
    ([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
       "resourceNames": ["secret-getter"]}],
     "clusterrolebindings", binding("x", "ClusterRole", "secret-getter", [user("eve")]), None),
    ([], "rolebindings", binding("x", "Role", "absent", [user("eve")], namespace="default"),
     (404, 'roles.rbac.authorization.k8s.io "absent" not found')),
])
async def test_escalation(core: Core, rbac: RunningRbac, extra_rules: list[Obj], resource: str, obj: Obj,
                          status: tuple[int, str] | None) -> None:
    await _grant(core, rbac, "bob-rbac-writer", RBAC_WRITE + CM_READ + extra_rules)
    await create(core, "clusterroles", role("secret-getter", SECRETS_GET))
    await create(core, "clusterroles", role("cm-reader", CM_READ))
    if status is None:
        await _as_bob(core, rbac, resource, obj)
        return
    with pytest.raises(errors.ApiError) as refused:
        await _as_bob(core, rbac, resource, obj)
    assert (refused.value.code, refused.value.status.message) == status
    if status[0] == 403:
        assert refused.value.reason == "Forbidden"


async def test_masters_bypass(core: Core, rbac: RunningRbac) -> None:
    admin = UserInfo("root", groups=("system:masters",))
    await create(core, "clusterroles", role("x", SECRETS_GET), as_user=admin, authorizer=rbac)
    await create(core, "clusterrolebindings", binding("x", "ClusterRole", "nowhere", [user("eve")]), as_user=admin,
                 authorizer=rbac)
