"""The CEL `authorizer` variable of admission expressions (webhook matchConditions, ValidatingAdmissionPolicy),
as kube-apiserver 1.28's authz library (k8s.io/apiserver/pkg/cel/library/authz.go) gives it.

    authorizer.group(g).resource(r).namespace(ns).name(n).subresource(s).check(verb)  -> Decision
    authorizer.path(p).check(httpVerb)                                                -> Decision
    authorizer.serviceAccount(ns, name)                                               -> Authorizer
    authorizer.requestResource  (the request's group, resource, subresource, namespace and name)
    Decision.allowed(), .reason(), .errored(), .error()

Checks ask the same authorizer the guard asks (RBAC by default), for the request's user, or for the service
account `serviceAccount` names (kube's ServiceAccountInfo: its username and the groups system:serviceaccounts
and system:serviceaccounts:<namespace>); a resource check asks for API version "*", as kube's does.

The engine works on plain values, so the library's values are maps tagged by `TYPE_KEY` with kube's type names
(kubernetes.authorization.Authorizer, ...), and its functions are bound per evaluation to the authorizer and
the user (`Authz.functions()`), beside the other library functions. A function given a receiver of another type
raises kube's `no such overload`; an empty path or resource, or an invalid service account name or namespace,
raises kube's error text. A map literal shaped like a tagged value gains nothing: the only principals it can
name are the request's user and service accounts, which `serviceAccount` names anyway.

Usage: `Authz(authorizer, user)`; `variables = {"authorizer": authz.variable(RequestResource(...)), ...}` and
`functions = {**library.FUNCTIONS, **authz.functions()}` for the engine's Context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from server.auth import caller
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import Authorizer
from server.machinery.user import SERVICE_ACCOUNTS, UserInfo, service_account_username
from server.machinery.validation.names import is_dns1123_label, is_dns1123_subdomain

TYPE_KEY = "@type"
AUTHORIZER = "kubernetes.authorization.Authorizer"
PATH_CHECK = "kubernetes.authorization.PathCheck"
GROUP_CHECK = "kubernetes.authorization.GroupCheck"
RESOURCE_CHECK = "kubernetes.authorization.ResourceCheck"
DECISION = "kubernetes.authorization.Decision"

# The principal a value checks for: "" is the request's user, "<namespace>/<name>" a service account.
_PRINCIPAL = "principal"


class AuthzError(ValueError):
    """A library function's runtime error, worded as kube's library words it."""


@dataclass(frozen=True, slots=True)
class RequestResource:
    """What `authorizer.requestResource` checks: the admission request's resource (kube's
    NewResourceAuthorizerVal)."""

    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def _of(value: Any, kind: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or value.get(TYPE_KEY) != kind:
        raise AuthzError("no such overload")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise AuthzError("no such overload")
    return value


def _resource_check(principal: str, group: str, resource: str, subresource: str = "", namespace: str = "",
                    name: str = "") -> dict[str, Any]:
    return {TYPE_KEY: RESOURCE_CHECK, _PRINCIPAL: principal, "group": group, "resource": resource,
            "subresource": subresource, "namespace": namespace, "name": name}


def _decision(decision: Decision, reason: str, error: str = "") -> dict[str, Any]:
    return {TYPE_KEY: DECISION, "decision": decision.value, "reason": reason, "error": error}


def service_account_user(namespace: str, name: str) -> UserInfo:
    """kube's serviceaccount.ServiceAccountInfo.UserInfo() for a service account named without a token."""
    return UserInfo(service_account_username(namespace, name),
                    groups=(SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}"))


@dataclass(frozen=True, slots=True)
class Authz:
    """The library bound to one request: its user and the server's authorizer."""

    authorizer: Authorizer
    user: UserInfo

    def variable(self, request: RequestResource | None = None) -> dict[str, Any]:
        """The value of `authorizer`; with `request`, `authorizer.requestResource` is the request's check."""
        return current(request)

    def functions(self) -> dict[str, Callable[..., Any]]:
        """The library's member functions for the engine's Context, bound to this request."""
        return {**_UNBOUND, "check": self._check}

    def _principal(self, principal: Any) -> UserInfo:
        if not principal:
            return self.user
        namespace, _, name = str(principal).partition("/")
        return service_account_user(namespace, name)

    def _check(self, receiver: Any, verb: Any) -> dict[str, Any]:
        verb = _text(verb)
        if isinstance(receiver, Mapping) and receiver.get(TYPE_KEY) == PATH_CHECK:
            wanted = Attributes(self._principal(receiver.get(_PRINCIPAL)), verb, resource_request=False,
                                path=str(receiver.get("path") or ""))
        else:
            check = _of(receiver, RESOURCE_CHECK)
            wanted = Attributes(self._principal(check.get(_PRINCIPAL)), verb, api_group=str(check["group"]),
                                api_version="*", resource=str(check["resource"]),
                                subresource=str(check.get("subresource") or ""),
                                namespace=str(check.get("namespace") or ""), name=str(check.get("name") or ""))
        try:
            decision, reason = self.authorizer.authorize(wanted)
        except Exception as err:  # an authorizer's failure is the decision's error, as kube's Authorize returns it
            return _decision(Decision.NO_OPINION, "", str(err) or type(err).__name__)
        return _decision(decision, reason)


def _path(receiver: Any, path: Any) -> dict[str, Any]:
    authz = _of(receiver, AUTHORIZER)
    if not _text(path).strip():
        raise AuthzError("path must not be empty")
    return {TYPE_KEY: PATH_CHECK, _PRINCIPAL: authz.get(_PRINCIPAL) or "", "path": path}


def _group(receiver: Any, group: Any) -> dict[str, Any]:
    authz = _of(receiver, AUTHORIZER)
    return {TYPE_KEY: GROUP_CHECK, _PRINCIPAL: authz.get(_PRINCIPAL) or "", "group": _text(group)}


def _service_account(receiver: Any, namespace: Any, name: Any) -> dict[str, Any]:
    _of(receiver, AUTHORIZER)
    namespace, name = _text(namespace), _text(name)
    if not name or is_dns1123_subdomain(name):
        raise AuthzError("Invalid service account name")
    if not namespace or is_dns1123_label(namespace):
        raise AuthzError("Invalid service account namespace")
    return {TYPE_KEY: AUTHORIZER, _PRINCIPAL: f"{namespace}/{name}"}


def _resource(receiver: Any, resource: Any) -> dict[str, Any]:
    group = _of(receiver, GROUP_CHECK)
    if not _text(resource).strip():
        raise AuthzError("resource must not be empty")
    return _resource_check(str(group.get(_PRINCIPAL) or ""), str(group["group"]), resource)


def _setter(field: str) -> Callable[[Any, Any], dict[str, Any]]:
    def set_field(receiver: Any, value: Any) -> dict[str, Any]:
        return {**_of(receiver, RESOURCE_CHECK), field: _text(value)}

    set_field.__name__ = field
    return set_field


def _allowed(receiver: Any) -> bool:
    return _of(receiver, DECISION).get("decision") == Decision.ALLOW.value


def _reason(receiver: Any) -> str:
    return str(_of(receiver, DECISION).get("reason") or "")


def _errored(receiver: Any) -> bool:
    return bool(_of(receiver, DECISION).get("error"))


def _error(receiver: Any) -> str:
    return str(_of(receiver, DECISION).get("error") or "")


# The functions that need no request: every one but `check`.
_UNBOUND: dict[str, Callable[..., Any]] = {
    "path": _path, "group": _group, "serviceAccount": _service_account, "resource": _resource,
    "subresource": _setter("subresource"), "namespace": _setter("namespace"), "name": _setter("name"),
    "allowed": _allowed, "reason": _reason, "errored": _errored, "error": _error,
}


def current(request: RequestResource | None = None) -> dict[str, Any]:
    """The value of `authorizer` (it names no user: `check` asks for the request's own, or a service account's);
    with `request`, `authorizer.requestResource` is the request's check."""
    out: dict[str, Any] = {TYPE_KEY: AUTHORIZER, _PRINCIPAL: ""}
    if request is not None:
        out["requestResource"] = _resource_check("", request.group, request.resource, request.subresource,
                                                 request.namespace, request.name)
    return out


def _current_check(receiver: Any, verb: Any) -> dict[str, Any]:
    who = caller.current()
    return Authz(who.authorizer, who.user)._check(receiver, verb)


# The library for expressions compiled once and run for many requests (ValidatingAdmissionPolicy): `check` asks
# the authorizer of the request being served (server.auth.caller), as each request's bound Authz would.
FUNCTIONS: dict[str, Callable[..., Any]] = {**_UNBOUND, "check": _current_check}
