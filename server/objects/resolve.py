"""From a ResourcePath and a verb to the registered Resource, or the Status kube-apiserver answers."""

from __future__ import annotations

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.registry.resources import Registry, Resource

# Verbs that address one named object.
OBJECT_VERBS = frozenset({"get", "update", "patch", "delete"})


def resolve(registry: Registry, path: core_pb2.ResourcePath, verb: str) -> Resource:
    resource = registry.get(path.group, path.version, path.resource)
    if resource is None:
        raise errors.resource_not_found()
    if path.namespace and not resource.namespaced:
        raise errors.resource_not_found()
    if resource.namespaced and not path.namespace and verb in OBJECT_VERBS | {"create"}:
        raise errors.resource_not_found()
    if verb in OBJECT_VERBS and not path.name:
        raise errors.method_not_supported(resource.resource, resource.group, verb)
    if path.subresource:
        sub = resource.subresource(path.subresource)
        if sub is None:
            raise errors.resource_not_found()
        if verb not in sub.verbs:
            raise errors.method_not_allowed()
    elif verb == "watch" and "watch" not in resource.verbs and "list" in resource.verbs:
        # a lister that is no watcher: kube's list handler refuses ?watch itself (ListResource)
        raise errors.method_not_supported(resource.resource, resource.group, "watch")
    elif verb not in resource.verbs:
        raise errors.method_not_allowed()
    return resource
