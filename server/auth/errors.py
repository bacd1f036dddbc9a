"""The two Statuses security answers with, worded as kube-apiserver words them.

- 401 Unauthorized (responsewriters.Unauthorized): a credential was sent and proves nobody, or nothing was sent
  and anonymous requests are off. Message "Unauthorized", no details, whatever the cause (kube says no more, so
  a caller learns nothing about which part of a token was wrong).
- 403 Forbidden (responsewriters.Forbidden): the authorizer did not allow the request, e.g.
  `configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team"`
  followed by `: <reason>` when the authorizer gave one.
"""

from __future__ import annotations

from server.auth.attributes import Attributes
from server.machinery.errors import ApiError, qualified, status


class Unauthorized(Exception):
    """An authenticator found its credential bad; `why` goes to the log, never to the caller."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def unauthorized() -> ApiError:
    return ApiError(status(401, "Unauthorized", "Unauthorized", with_details=False))


def forbidden_message(attributes: Attributes) -> str:
    """kube's forbiddenMessage: who cannot do what, where."""
    user = attributes.user.name
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    where = (f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope")
    return (f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group '
            f'"{attributes.api_group}" {where}')


def forbidden(attributes: Attributes, reason: str) -> ApiError:
    """apierrors.NewForbidden over the request's group resource and name, as the authorization filter answers."""
    detail = forbidden_message(attributes)
    if reason:
        detail += ": " + reason
    group, resource, name = attributes.api_group, attributes.resource, attributes.name
    if not attributes.resource_request or not resource:
        return ApiError(status(403, "Forbidden", f"forbidden: {detail}"))
    subject = qualified(resource, group)
    message = f'{subject} "{name}" is forbidden: {detail}' if name else f"{subject} is forbidden: {detail}"
    return ApiError(status(403, "Forbidden", message, name=name, group=group, kind=resource))
