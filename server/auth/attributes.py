"""What an authorizer decides on: kube's authorizer.Attributes, a frozen value built once per request."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from server.machinery.user import UserInfo


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True, slots=True)
class Attributes:
    """A resource request names group/version/resource (and namespace, name, subresource); a non-resource
    request names its path. `verb` is the API verb for resources (get, list, watch, create, update, patch,
    delete, deletecollection, impersonate, bind, escalate, ...) and the lower-cased HTTP method's verb for
    non-resource paths (get, post, put, delete, ...)."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
