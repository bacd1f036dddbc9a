"""The `authorizer` CEL variable of ValidatingAdmissionPolicy expressions: kube's Authz library
(k8s.io/apiserver/pkg/cel/library/authz.go, as of 1.28) over the request's authorizer.

    authorizer.group('apps').resource('deployments').namespace('ns').name('web').check('update').allowed()
    authorizer.path('/healthz').check('get').allowed()
    authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').reason()
    authorizer.requestResource.check('delete').allowed()

Each value is a CEL map tagged with `__authz__` (its kind: authorizer, group, resource, path, decision); the
member functions take it as their first argument, as the engine calls them. `check` asks the caller's authorizer
(server.auth.caller) for the user of the request (or the service account named), with apiVersion `*` as kube does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.auth import caller
from server.auth.attributes import Attributes, Decision
from server.machinery.user import UserInfo

TAG = "__authz__"
Obj = dict[str, Any]


def _tagged(kind: str, **fields: Any) -> Obj:
    return {TAG: kind, **fields}


def authorizer(group: str, resource: str, subresource: str, namespace: str, name: str) -> Obj:
    """The `authorizer` value of a request (its requestResource: the request's own resource)."""
    return _tagged("authorizer", serviceAccount="", requestResource=_tagged(
        "resource", serviceAccount="", group=group, resource=resource, subresource=subresource,
        namespace=namespace, name=name))


def _user(account: str) -> UserInfo:
    """The request's user, or the service account `account` ("namespace/name") names."""
    if not account:
        return caller.current().user
    namespace, _, name = account.partition("/")
    return UserInfo(f"system:serviceaccount:{namespace}:{name}",
                    groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"))


def _decision(attributes: Attributes) -> Obj:
    decision, reason = caller.current().authorizer.authorize(attributes)
    return _tagged("decision", allowed=decision is Decision.ALLOW, reason=reason)


def _expect(value: Any, kind: str, function: str) -> Obj:
    if not isinstance(value, dict) or value.get(TAG) != kind:
        raise ValueError(f"no such overload: {function}")
    return value


def _path(authz: Any, path: str) -> Obj:
    return _tagged("path", serviceAccount=_expect(authz, "authorizer", "path")["serviceAccount"], path=path)


def _group(authz: Any, group: str) -> Obj:
    return _tagged("group", serviceAccount=_expect(authz, "authorizer", "group")["serviceAccount"], group=group)


def _service_account(authz: Any, namespace: str, name: str) -> Obj:
    _expect(authz, "authorizer", "serviceAccount")
    return _tagged("authorizer", serviceAccount=f"{namespace}/{name}")


def _resource(group: Any, resource: str) -> Obj:
    found = _expect(group, "group", "resource")
    return _tagged("resource", serviceAccount=found["serviceAccount"], group=found["group"], resource=resource,
                   subresource="", namespace="", name="")


def _with(field: str) -> Callable[[Any, str], Obj]:
    def set_field(check: Any, value: str) -> Obj:
        return {**_expect(check, "resource", field), field: value}

    return set_field


def _check(target: Any, verb: str) -> Obj:
    if isinstance(target, dict) and target.get(TAG) == "path":
        return _decision(Attributes(_user(target["serviceAccount"]), verb, resource_request=False,
                                    path=target["path"]))
    found = _expect(target, "resource", "check")
    return _decision(Attributes(_user(found["serviceAccount"]), verb, api_group=found["group"], api_version="*",
                                resource=found["resource"], subresource=found["subresource"],
                                namespace=found["namespace"], name=found["name"]))


def _allowed(decision: Any) -> bool:
    return bool(_expect(decision, "decision", "allowed")["allowed"])


def _reason(decision: Any) -> str:
    return str(_expect(decision, "decision", "reason")["reason"])


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "path": _path, "group": _group, "serviceAccount": _service_account, "resource": _resource,
    "subresource": _with("subresource"), "namespace": _with("namespace"), "name": _with("name"), "check": _check,
    "allowed": _allowed, "reason": _reason,
}
