"""The index kept current: one informer per RBAC kind, each feeding the index's methods for its kind."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.rbac.index import CLUSTER_ROLE_BINDING, ROLE_BINDING, RbacIndex
from server.core import Core
from server.runtime.informer import Informer

GROUP, VERSION = "rbac.authorization.k8s.io", "v1"
Objs = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Feed:
    replace: Callable[[Objs], None]
    put: Callable[[dict[str, Any]], None]
    remove: Callable[[dict[str, Any]], None]


def _feeds(index: RbacIndex) -> dict[str, _Feed]:
    def bindings(kind: str) -> _Feed:
        return _Feed(functools.partial(index.replace_bindings, kind), functools.partial(index.put_binding, kind),
                     functools.partial(index.remove_binding, kind))

    return {
        "roles": _Feed(index.replace_roles, index.put_role, index.remove_role),
        "clusterroles": _Feed(index.replace_cluster_roles, index.put_cluster_role, index.remove_cluster_role),
        "rolebindings": bindings(ROLE_BINDING),
        "clusterrolebindings": bindings(CLUSTER_ROLE_BINDING),
    }


class RbacCache:
    def __init__(self, core: Core, index: RbacIndex) -> None:
        self.index = index
        self._informers = [Informer(core, core_pb2.ResourcePath(group=GROUP, version=VERSION, resource=resource),
                                    feed) for resource, feed in _feeds(index).items()]

    async def start(self) -> None:
        """Every kind listed into the index before returning; watched from then on."""
        for informer in self._informers:
            await informer.start()

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
