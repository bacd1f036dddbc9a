"""kube-apiserver 1.28's API Priority and Fairness configuration, written at start as its
priority-and-fairness-config-producer post-start hook writes it (pkg/registry/flowcontrol/ensurer, objects from
k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go).

Mandatory objects (the `exempt` and `catch-all` FlowSchemas and priority levels) are always restored to kube's
spec. Suggested ones are created when missing; a stored one is brought back to kube's spec only while its
`apf.kubernetes.io/autoupdate-spec` annotation says "true" (or, with no boolean there, while it was never changed:
generation 1), and one whose annotation says "true" but that kube no longer suggests is deleted. The exempt level's
`exempt` member is the user's to tune and is kept.

    kubectl annotate flowschema service-accounts apf.kubernetes.io/autoupdate-spec=false --overwrite
    # now edits to the service-accounts FlowSchema survive a restart

The Dangling condition of each FlowSchema is server/controllers/flowcontrol.py's; how requests are classified by
these objects, server/auth/apf.py's.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds.flowcontrol import AUTO_UPDATE_ANNOTATION, GROUP, VERSION, default_flow_schema, default_priority_level
from server.kinds.templates import semantic_form
from server.machinery import errors, meta
from server.machinery.concurrently import each
from server.objects.core import Core

Obj = dict[str, Any]

ALL_AUTHENTICATED, ALL_UNAUTHENTICATED = "system:authenticated", "system:unauthenticated"
KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER = "system:kube-controller-manager", "system:kube-scheduler"
NODES, MASTERS, SERVICE_ACCOUNTS = "system:nodes", "system:masters", "system:serviceaccounts"
RESOURCE_ALL = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}]
NON_RESOURCE_ALL = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": name}} for name in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": name}} for name in names]


def _kube_system_accounts(*names: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}} for name in names]


def _flow_schema(name: str, level: str, precedence: int, method: str, *rules: Obj) -> Obj:
    spec: Obj = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if method:
        spec["distinguisherMethod"] = {"type": method}
    spec["rules"] = list(rules)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FlowSchema", "metadata": {"name": name}, "spec": spec}


def _all(name: str, level: str, precedence: int, method: str, subjects: list[Obj]) -> Obj:
    """NewFSAll: the subjects, whatever they ask."""
    return _flow_schema(name, level, precedence, method, {"subjects": subjects, "resourceRules": RESOURCE_ALL,
                                                          "nonResourceRules": NON_RESOURCE_ALL})


def _rule(verbs: list[str], groups: list[str], resources: list[str], namespaces: list[str],
          cluster_scope: bool = False) -> Obj:
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if cluster_scope:
        rule["clusterScope"] = True
    rule["namespaces"] = namespaces
    return rule


def _limited(name: str, shares: int, lendable: int, queuing: tuple[int, int, int] | None) -> Obj:
    response: Obj = {"type": "Reject"}
    if queuing is not None:
        queues, hand_size, queue_length_limit = queuing
        response = {"type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "limitResponse": response,
                                                    "lendablePercent": lendable}}}


EXEMPT_LEVEL: Obj = {
    "apiVersion": f"{GROUP}/{VERSION}", "kind": "PriorityLevelConfiguration", "metadata": {"name": "exempt"},
    "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
}
LEASES = _rule(["get", "create", "update"], ["coordination.k8s.io"], ["leases"], ["*"])

MANDATORY_LEVELS: tuple[Obj, ...] = (EXEMPT_LEVEL, _limited("catch-all", 5, 0, None))
MANDATORY_FLOW_SCHEMAS: tuple[Obj, ...] = (
    _all("exempt", "exempt", 1, "", _groups(MASTERS)),
    _all("catch-all", "catch-all", 10000, "ByUser", _groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED)),
)
SUGGESTED_LEVELS: tuple[Obj, ...] = (
    _limited("system", 30, 33, (64, 6, 50)),
    _limited("node-high", 40, 25, (64, 6, 50)),
    _limited("leader-election", 10, 0, (16, 4, 50)),
    _limited("workload-high", 40, 50, (128, 6, 50)),
    _limited("workload-low", 100, 90, (128, 6, 50)),
    _limited("global-default", 20, 50, (128, 6, 50)),
)
SUGGESTED_FLOW_SCHEMAS: tuple[Obj, ...] = (
    _all("system-nodes", "system", 500, "ByUser", _groups(NODES)),
    _flow_schema("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups(NODES),
        "resourceRules": [_rule(["*"], [""], ["nodes", "nodes/status"], [], cluster_scope=True),
                          _rule(["*"], ["coordination.k8s.io"], ["leases"], ["*"])]}),
    _flow_schema("probes", "exempt", 2, "", {
        "subjects": _groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED),
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    _flow_schema("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": [*_users(KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER), *_kube_system_accounts("*")],
        "resourceRules": [LEASES]}),
    _flow_schema("workload-leader-election", "leader-election", 200, "ByUser", {
        "subjects": _kube_system_accounts("*"), "resourceRules": [LEASES]}),
    _flow_schema("endpoint-controller", "workload-high", 150, "ByUser", {
        "subjects": [*_users(KUBE_CONTROLLER_MANAGER),
                     *_kube_system_accounts("endpoint-controller", "endpointslicemirroring-controller")],
        "resourceRules": [_rule(["get", "create", "update"], [""], ["endpoints"], ["*"])]}),
    _all("kube-controller-manager", "workload-high", 800, "ByNamespace", _users(KUBE_CONTROLLER_MANAGER)),
    _all("kube-scheduler", "workload-high", 800, "ByNamespace", _users(KUBE_SCHEDULER)),
    _all("kube-system-service-accounts", "workload-high", 900, "ByNamespace", _kube_system_accounts("*")),
    _all("service-accounts", "workload-low", 9000, "ByUser", _groups(SERVICE_ACCOUNTS)),
    _all("global-default", "global-default", 9900, "ByUser", _groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED)),
)

_PATHS = {kind: core_pb2.ResourcePath(group=GROUP, version=VERSION, resource=resource)
          for kind, resource in (("FlowSchema", "flowschemas"),
                                 ("PriorityLevelConfiguration", "prioritylevelconfigurations"))}
_GO_TRUE, _GO_FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")


def _go_bool(value: str) -> bool | None:
    """strconv.ParseBool; None for anything else."""
    return True if value in _GO_TRUE else False if value in _GO_FALSE else None


def should_update_spec(obj: Obj) -> bool:
    """The ensurer's shouldUpdateSpec for a suggested object: the annotation's boolean, else whether the object is
    unchanged since it was written (generation 1)."""
    m = meta.meta(obj)
    value = _go_bool(str((m.get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION, "")))
    return value if value is not None else m.get("generation") == 1


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def _named(kind: str, name: str, subresource: str = "") -> core_pb2.ResourcePath:
    path = core_pb2.ResourcePath()
    path.CopyFrom(_PATHS[kind])
    path.name, path.subresource = name, subresource
    return path


async def _stored(core: Core, kind: str) -> dict[str, Obj]:
    listed = await core.list(core_pb2.ListRequest(path=_PATHS[kind]))
    items = [orjson.loads(item) for item in listed.items]
    return {meta.meta(item).get("name", ""): item for item in items}


def _wanted_spec(bootstrap: Obj, stored: Obj) -> Obj:
    """The spec the ensurer writes: kube's, with the exempt level's `exempt` member as the user left it."""
    spec: Obj = copy.deepcopy(bootstrap["spec"])
    if _users_part(bootstrap):
        spec["exempt"] = {**spec["exempt"], **((stored.get("spec") or {}).get("exempt") or {})}
    return spec


def _users_part(bootstrap: Obj) -> bool:
    """Whether part of the object's wanted spec is the stored object's: the exempt level's `exempt` member."""
    return bool(meta.meta(bootstrap).get("name") == "exempt" and bootstrap["kind"] == "PriorityLevelConfiguration")


# Kube's objects are constants, so the semantic form of each one's defaulted spec is made once a process, not at
# every start (a test process starts hundreds of cores).
_KUBES_FORMS: dict[tuple[str, str], object] = {}


def _wanted_form(kind: str, bootstrap: Obj, stored: Obj) -> object:
    """The semantic form (templates.semantic_form) of the wanted spec once defaults apply: what kube's ensurer
    compares the stored spec with (the defaulted bootstrap object, apiequality.Semantic.DeepEqual)."""
    if _users_part(bootstrap):
        return semantic_form(_defaulted(kind, _wanted_spec(bootstrap, stored)))
    key = (kind, meta.meta(bootstrap)["name"])
    form = _KUBES_FORMS.get(key)
    if form is None:
        form = _KUBES_FORMS[key] = semantic_form(_defaulted(kind, bootstrap["spec"]))
    return form


async def _ensure(core: Core, bootstrap: Obj, stored: Obj | None, *, mandatory: bool) -> None:
    kind, name = bootstrap["kind"], meta.meta(bootstrap)["name"]
    if stored is None:
        fresh = copy.deepcopy(bootstrap)
        fresh["metadata"]["annotations"] = {AUTO_UPDATE_ANNOTATION: "true"}
        try:
            await core.create(core_pb2.CreateRequest(path=_PATHS[kind], object=_raw(fresh)))
        except errors.ApiError as err:
            if err.code != 409:
                raise
        return
    auto_update = mandatory or should_update_spec(stored)
    annotations = meta.meta(stored).setdefault("annotations", {})
    changed = annotations.get(AUTO_UPDATE_ANNOTATION) != ("true" if auto_update else "false")
    annotations[AUTO_UPDATE_ANNOTATION] = "true" if auto_update else "false"
    if auto_update and semantic_form(stored.get("spec")) != _wanted_form(kind, bootstrap, stored):
        stored["spec"] = _wanted_spec(bootstrap, stored)
        changed = True
    if changed:
        await core.update(core_pb2.UpdateRequest(path=_named(kind, name), object=_raw(stored)))


def _defaulted(kind: str, spec: Obj) -> Obj:
    """The spec as stored once defaults apply (kube compares the defaulted bootstrap object)."""
    obj = {"spec": copy.deepcopy(spec)}
    (default_flow_schema if kind == "FlowSchema" else default_priority_level)(obj)
    spec_out: Obj = obj["spec"]
    return spec_out


async def ensure_apf_configuration(core: Core) -> None:
    """Write the mandatory and suggested objects and remove stale auto-updated ones (see the module docstring)."""
    for kind, mandatory, suggested in (
            ("PriorityLevelConfiguration", MANDATORY_LEVELS, SUGGESTED_LEVELS),
            ("FlowSchema", MANDATORY_FLOW_SCHEMAS, SUGGESTED_FLOW_SCHEMAS)):
        stored = await _stored(core, kind)
        await each([
            *(_ensure(core, bootstrap, stored.get(bootstrap["metadata"]["name"]), mandatory=True)
              for bootstrap in mandatory),
            *(_ensure(core, bootstrap, stored.get(bootstrap["metadata"]["name"]), mandatory=False)
              for bootstrap in suggested),
        ])
        known = {b["metadata"]["name"] for b in (*mandatory, *suggested)}
        await each(_delete(core, kind, name) for name, obj in stored.items() if name not in known and _auto(obj))


def _auto(obj: Obj) -> bool:
    """Whether the object is marked as the ensurer's to update (and so to remove once it is not bootstrap)."""
    return _go_bool(str((meta.meta(obj).get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION, ""))) is True


async def _delete(core: Core, kind: str, name: str) -> None:
    try:
        await core.delete(core_pb2.DeleteRequest(path=_named(kind, name)))
    except errors.ApiError as err:
        if err.code != 404:
            raise
