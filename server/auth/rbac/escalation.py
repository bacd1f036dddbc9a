"""Escalation prevention on writes of the four RBAC kinds (kube's policybased storages and escalation_check.go),
run as their admission (server/kinds/rbac.py) with the caller of the call in progress (server.auth.caller).

A Role or ClusterRole may be written by a caller who holds every permission it grants, or who may `escalate`
on it; a binding, by a caller who holds every permission of the role it binds, or who may `bind` that role.
Members of system:masters — the core's own controllers and bootstrap among them — are never checked
(EscalationAllowed). An update that changes only ownerReferences and finalizers is never refused, so the
garbage collector can finish with any object. Refusals are kube's 403:

    clusterroles.rbac.authorization.k8s.io "x" is forbidden: user "bob" (groups=["g" "system:authenticated"])
    is attempting to grant RBAC permissions not currently held:
    {APIGroups:[""], Resources:["secrets"], Verbs:["get"]}

What the caller holds is read from the caller's authorizer (rules_for), the same one that authorizes its
requests; the rules a binding grants are read from the store, as kube's registry-backed role getters do, so
a binding of a missing role is 404 NotFound for anyone who must be checked.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from server.auth import caller as calls
from server.auth.attributes import Attributes, Decision
from server.auth.rbac.covers import compact, compact_string, uncovered
from server.auth.rbac.rules import PolicyRule, rules_of
from server.machinery import errors, stored
from server.machinery.user import MASTERS
from server.machinery.validation.names import go_quote
from server.objects.storeerrors import store_call

GROUP = "rbac.authorization.k8s.io"
Obj = dict[str, Any]

# Everything: what setting an aggregationRule requires, since it can gather any rule.
FULL_AUTHORITY = (PolicyRule(("*",), ("*",), ("*",)), PolicyRule(("*",), non_resource_urls=("*",)))
AGGREGATION_REFUSED = "must have cluster-admin privileges to use the aggregationRule"


def _metadata(obj: Obj) -> Obj:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _go_strings(values: tuple[str, ...]) -> str:
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def only_gc_fields_changed(obj: Obj, old: Obj) -> bool:
    """kube's IsOnlyMutatingGCFields: the objects differ at most in ownerReferences and finalizers (and in what
    the server sets on every write)."""
    def stripped(o: Obj) -> Obj:
        o = copy.deepcopy(o)
        metadata = o.setdefault("metadata", {})
        for key in ("ownerReferences", "finalizers", "resourceVersion", "managedFields", "generation"):
            metadata.pop(key, None)
        return o
    return stripped(obj) == stripped(old)


def _authorized(caller: calls.Caller, verb: str, resource: str, namespace: str, name: str) -> bool:
    attributes = Attributes(caller.user, verb, api_group=GROUP, api_version="*", resource=resource,
                            namespace=namespace, name=name)
    decision, _ = caller.authorizer.authorize(attributes)
    return decision is Decision.ALLOW


def confirm_no_escalation(caller: calls.Caller, namespace: str, rules: tuple[PolicyRule, ...]) -> str:
    """kube's ConfirmNoEscalation: "" when the caller holds every rule in the namespace, else why not."""
    held = caller.authorizer.rules_for(caller.user, namespace)
    owner = [PolicyRule(r.verbs, r.api_groups, r.resources, r.resource_names) for r in held.resource_rules]
    owner += [PolicyRule(r.verbs, non_resource_urls=r.non_resource_urls) for r in held.non_resource_rules]
    missing = uncovered(owner, rules)
    if not missing:
        return ""
    described = "\n".join(sorted({compact_string(rule) for rule in compact(missing)}))
    user = caller.user
    message = (f"user {go_quote(user.name)} (groups={_go_strings(user.groups)}) is attempting to grant RBAC "
               f"permissions not currently held:\n{described}")
    if held.evaluation_error:
        message += f"; resolution errors: [{held.evaluation_error}]"
    return message


async def _admit_role(resource: str, obj: Obj, old: Obj | None) -> None:
    caller = calls.current()
    if MASTERS in caller.user.groups:
        return
    metadata = _metadata(obj)
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    if _authorized(caller, "escalate", resource, namespace, name):
        return
    if old is not None and only_gc_fields_changed(obj, old):
        return
    refusal = confirm_no_escalation(caller, namespace, rules_of(obj))
    if refusal:
        raise errors.forbidden(resource, GROUP, name, refusal)
    aggregates = obj.get("aggregationRule") is not None or (old is not None and old.get("aggregationRule") is not None)
    if resource == "clusterroles" and aggregates and confirm_no_escalation(caller, namespace, FULL_AUTHORITY):
        raise errors.forbidden(resource, GROUP, name, AGGREGATION_REFUSED)


async def _role_reference_rules(ctx: Any, role_ref: Obj, namespace: str) -> tuple[PolicyRule, ...]:
    """kube's GetRoleReferenceRules through the registry: the role's rules, or the store's 404."""
    kind, name = role_ref.get("kind"), str(role_ref.get("name") or "")
    resource = ctx.registry.get(GROUP, "v1", "roles" if kind == "Role" else "clusterroles")
    got = await store_call(ctx.store.get(resource.key(namespace if kind == "Role" else "", name)))
    if got.kv is None:
        raise errors.not_found(resource.resource, GROUP, name)
    role: Obj = orjson.loads(stored.json_of(got.kv.value))
    return rules_of(role)


async def _admit_binding(resource: str, ctx: Any, obj: Obj, old: Obj | None) -> None:
    caller = calls.current()
    if MASTERS in caller.user.groups:
        return
    if old is not None and only_gc_fields_changed(obj, old):
        return
    metadata = _metadata(obj)
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    role_ref = obj.get("roleRef")
    role_ref = role_ref if isinstance(role_ref, dict) else {}
    kind = role_ref.get("kind")
    if kind in ("Role", "ClusterRole") and _authorized(
            caller, "bind", "roles" if kind == "Role" else "clusterroles", namespace, str(role_ref.get("name") or "")):
        return
    refusal = confirm_no_escalation(caller, namespace, await _role_reference_rules(ctx, role_ref, namespace))
    if refusal:
        raise errors.forbidden(resource, GROUP, name, refusal)


async def admit_role(ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
    await _admit_role("roles", obj, old)


async def admit_cluster_role(ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
    await _admit_role("clusterroles", obj, old)


async def admit_role_binding(ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
    await _admit_binding("rolebindings", ctx, obj, old)


async def admit_cluster_role_binding(ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
    await _admit_binding("clusterrolebindings", ctx, obj, old)
