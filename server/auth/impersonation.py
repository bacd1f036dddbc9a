"""Impersonation (kube's filters/impersonation.go): a caller acts as another user when it may `impersonate`
each part it asks for — the user (or the service account), every group, every extra value and the uid.

Contract: the answer is the user the request then runs as; the caller is refused with the first part it may
not impersonate, worded as kube's Forbidden (`users "alice" is forbidden: User "bob" cannot impersonate resource
"users" in API group "" at the cluster scope`). Asking for groups, extra or a uid without a user is a 400
(kube answers it as an internal error; it is the client's mistake). The impersonated user gets
system:authenticated unless it is anonymous or a group says system:unauthenticated, as kube adds it.
"""

from __future__ import annotations

from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import Authorizer, decide
from server.auth.errors import forbidden
from server.machinery import errors
from server.machinery.credentials import Impersonation
from server.machinery.user import (
    ANONYMOUS,
    AUTHENTICATED,
    SERVICE_ACCOUNT_PREFIX,
    UNAUTHENTICATED,
    UserInfo,
    service_account_groups,
)


async def impersonate(caller: UserInfo, request: Impersonation, authorizer: Authorizer) -> UserInfo:
    if not request.requested:
        return caller
    if not request.user:
        asked = [*(f"groups={g}" for g in request.groups), *(f"extra[{k}]" for k, _ in request.extra)]
        if request.uid:
            asked.append(f"uid={request.uid}")
        raise errors.bad_request(f"requested {asked} without impersonating a user")
    groups = list(request.groups)
    checks = [_user_check(caller, request.user)]
    service_account = _service_account(request.user)
    if service_account is not None and not groups:
        groups = list(service_account_groups(service_account[0]))
    checks += [Attributes(caller, "impersonate", api_group="", resource="groups", name=g) for g in request.groups]
    checks += [Attributes(caller, "impersonate", api_group="authentication.k8s.io", resource="userextras",
                          subresource=key, name=value)
               for key, values in request.extra for value in values]
    if request.uid:
        checks.append(Attributes(caller, "impersonate", api_group="authentication.k8s.io", resource="uids",
                                 name=request.uid))
    for attributes in checks:
        decision, reason = await decide(authorizer, attributes)
        if decision is not Decision.ALLOW:
            raise forbidden(attributes, reason)
    if request.user != ANONYMOUS:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    return UserInfo(request.user, request.uid, tuple(groups), request.extra)


def _service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's username, None for any other user."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


def _user_check(caller: UserInfo, username: str) -> Attributes:
    service_account = _service_account(username)
    if service_account is not None:
        return Attributes(caller, "impersonate", resource="serviceaccounts", namespace=service_account[0],
                          name=service_account[1])
    return Attributes(caller, "impersonate", resource="users", name=username)
