"""URL + method -> what a request is about: a pure function, as kube-apiserver's RequestInfoFactory.

Examples:
  GET /api/v1/namespaces/default/configmaps/a   -> get configmaps "a" in "default"
  GET /api/v1/configmaps?watch=1                -> watch configmaps in all namespaces
  GET /api/v1/namespaces/default/configmaps/a?watch=1 -> get configmaps "a" (?watch only turns lists into watches)
  GET /api/v1/watch/namespaces/default/configmaps/a   -> watch configmaps "a" (the deprecated /watch/ paths)
  PUT /api/v1/namespaces/ns1/finalize           -> update namespaces "ns1", subresource finalize
  GET /apis/apps/v1                             -> discovery of the apps/v1 group version
  GET /api/v1/namespaces/ns/services/x:80/proxy/a/b -> get services "x:80", subresource proxy, path "/a/b"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Subresources of the namespaces resource itself: /api/v1/namespaces/{name}/{sub}.
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """A resource request. `verb` is get, list, watch, create, update, patch, delete or deletecollection."""

    verb: str
    group: str
    version: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    # What follows a connecter's subresource that takes a path (kube's proxy subresources, whose
    # NewConnectOptions names the "path" option): "/a/b" for .../proxy/a/b, "/" kept when the URL ends in one.
    subpath: str = ""


# Subresources whose routes take a trailing path (kube registers {resource}/{name}/proxy/{path:*}).
SUBPATH_SUBRESOURCES = frozenset({"proxy"})


@dataclass(frozen=True, slots=True)
class DiscoveryInfo:
    """A discovery request: /api, /api/v1, /apis, /apis/{group} or /apis/{group}/{version}."""

    prefix: str  # "api" or "apis"
    group: str = ""
    version: str = ""


def parse(method: str, path: str, query: Mapping[str, str]) -> RequestInfo | DiscoveryInfo | None:
    """None for paths that are neither resources nor discovery (the caller answers 404)."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    prefix, parts = parts[0], parts[1:]
    if prefix == "api":
        if not parts:
            return DiscoveryInfo("api")
        group, version, parts = "", parts[0], parts[1:]
        if not parts:
            return DiscoveryInfo("api", "", version)
    else:
        if not parts:
            return DiscoveryInfo("apis")
        if len(parts) == 1:
            return DiscoveryInfo("apis", parts[0])
        group, version, parts = parts[0], parts[1], parts[2:]
        if not parts:
            return DiscoveryInfo("apis", group, version)
    watch_prefix = False
    if parts[0] == "watch":  # the deprecated /watch/ path form
        watch_prefix, parts = True, parts[1:]
        if not parts:
            return None
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
        else:
            namespace = ""  # the namespace object itself: /namespaces/{name}[/{sub}]
    subpath = ""
    if len(parts) > 3:
        if parts[2] not in SUBPATH_SUBRESOURCES or watch_prefix:
            return None
        subpath = "/" + "/".join(parts[3:])
    if len(parts) >= 3 and parts[2] in SUBPATH_SUBRESOURCES and path.endswith("/") and not subpath.endswith("/"):
        subpath += "/"
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 else ""
    verb = _verb(method, bool(name), watch_prefix=watch_prefix, watch_query=watch_query(query))
    if verb is None:
        return None
    return RequestInfo(verb, group, version, resource, namespace, name, subresource, subpath)


def watch_query(query: Mapping[str, str]) -> bool:
    """?watch as apimachinery reads a bool parameter: present and neither "0" nor "false" (any case)."""
    value = query.get("watch")
    return value is not None and value != "0" and value.lower() != "false"


def named_verb(method: str) -> str | None:
    """The verb of `method` on one object's path outside the /watch/ form: what parse gives such a path."""
    return _verb(method, True, watch_prefix=False, watch_query=False)


def _verb(method: str, named: bool, *, watch_prefix: bool, watch_query: bool) -> str | None:
    """kube-apiserver's RequestInfoFactory: ?watch makes a watch of a collection GET only; a GET of one
    object stays a get whatever the query says, and only the /watch/ path watches one object."""
    if watch_prefix:
        return "watch" if method in ("GET", "HEAD") else None
    if method in ("GET", "HEAD"):
        if named:
            return "get"
        return "watch" if watch_query else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return _VERBS.get(method)
