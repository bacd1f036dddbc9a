"""The bootstrap policy written at start, as kube-apiserver's reconciler does (reconciliation/, union mode):

- a missing object is created;
- an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left as it is;
- any other keeps everything it has and gains what it lacks: labels and annotations it does not set, the
  policy's rules it does not cover (as atomic rules), its aggregationRule selectors, a binding's subjects. A
  role the policy does not aggregate loses an aggregationRule; a binding whose roleRef differs is recreated
  (roleRef never changes in place).

It runs as the core itself (system:masters), so escalation checks do not apply.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.rbac.controllerpolicy import CONTROLLER_ROLE_BINDINGS, CONTROLLER_ROLES
from server.auth.rbac.covers import uncovered
from server.auth.rbac.policy import AUTOUPDATE, CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, GROUP, ROLE_BINDINGS, ROLES
from server.auth.rbac.rules import rules_of
from server.machinery import errors
from server.machinery.concurrently import each
from server.objects.core import Core

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ATTEMPTS = 5  # conflicts retried per object (another writer between our read and write)


def _path(resource: str, name: str = "", namespace: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=GROUP, version="v1", resource=resource, name=name, namespace=namespace)


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def _merged_metadata(existing: Obj, expected: Obj) -> Obj:
    """Expected labels and annotations added; the existing values win."""
    metadata = dict(existing.get("metadata") or {})
    for key in ("labels", "annotations"):
        merged = {**(expected["metadata"].get(key) or {}), **(metadata.get(key) or {})}
        if merged:
            metadata[key] = merged
    return metadata


def reconciled_role(existing: Obj, expected: Obj) -> Obj:
    role = dict(existing)
    role["metadata"] = _merged_metadata(existing, expected)
    # Rules equal to the policy's cover it: a restart's every role, without parsing and comparing each rule.
    same = existing.get("rules") == expected.get("rules")
    missing = [] if same else uncovered(rules_of(existing), rules_of(expected))
    if missing:
        role["rules"] = [*(existing.get("rules") or []), *(rule.to_json() for rule in missing)]
    wanted = expected.get("aggregationRule")
    if wanted is None:
        role.pop("aggregationRule", None)
    else:
        have = list((existing.get("aggregationRule") or {}).get("clusterRoleSelectors") or [])
        lacking = [s for s in wanted["clusterRoleSelectors"] if s not in have]
        if lacking or existing.get("aggregationRule") is None:
            role["aggregationRule"] = {"clusterRoleSelectors": have + lacking}
    return role


def reconciled_binding(existing: Obj, expected: Obj) -> Obj:
    binding = dict(existing)
    binding["metadata"] = _merged_metadata(existing, expected)
    have = list(existing.get("subjects") or [])
    lacking = [s for s in expected.get("subjects") or [] if s not in have]
    if lacking:
        binding["subjects"] = have + lacking
    return binding


async def _reconcile(core: Core, resource: str, expected: Obj) -> None:
    name, namespace = expected["metadata"]["name"], expected["metadata"].get("namespace", "")
    for _ in range(ATTEMPTS):
        try:
            got = await core.get(core_pb2.GetRequest(path=_path(resource, name, namespace)))
        except errors.ApiError as err:
            if err.code != 404:
                raise
            try:
                await core.create(core_pb2.CreateRequest(path=_path(resource, namespace=namespace),
                                                         object=_raw(expected)))
                return
            except errors.ApiError as created:
                if created.code == 409:
                    continue
                raise
        existing: Obj = orjson.loads(got.object.data)
        if ((existing.get("metadata") or {}).get("annotations") or {}).get(AUTOUPDATE) == "false":
            return
        if resource in ("clusterroles", "roles"):
            wanted = reconciled_role(existing, expected)
        elif existing.get("roleRef") != expected["roleRef"]:
            await core.delete(core_pb2.DeleteRequest(path=_path(resource, name, namespace)))
            continue
        else:
            wanted = reconciled_binding(existing, expected)
        if wanted == existing:
            return
        try:
            await core.update(core_pb2.UpdateRequest(path=_path(resource, name, namespace), object=_raw(wanted)))
            return
        except errors.ApiError as err:
            if err.code not in (404, 409):
                raise
    log.warning("RBAC bootstrap: %s %s kept changing while reconciled; left as it is", resource, name)


async def reconcile(core: Core) -> None:
    """Every bootstrap ClusterRole, Role, ClusterRoleBinding and RoleBinding, all concurrently: a first start's
    ~150 creates share a few commits (and their fsyncs) instead of waiting for one each. A binding may be
    written before its role, as kube allows any binding to name a role that does not exist yet."""
    await each((
        *(_reconcile(core, "clusterroles", role) for role in (*CLUSTER_ROLES, *CONTROLLER_ROLES)),
        *(_reconcile(core, "roles", role) for role in ROLES),
        *(_reconcile(core, "clusterrolebindings", binding) for binding in (*CLUSTER_ROLE_BINDINGS,
                                                                            *CONTROLLER_ROLE_BINDINGS)),
        *(_reconcile(core, "rolebindings", binding) for binding in ROLE_BINDINGS),
    ))
