"""The index kept current: one informer per RBAC kind (server/runtime/informer.py), its handlers feeding the
index's methods for that kind. A relist reaches the index as the changes it makes, like any watch event."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.rbac.index import CLUSTER_ROLE_BINDING, ROLE_BINDING, RbacIndex
from server.objects.core import Core
from server.runtime.informer import Handlers, Informer

GROUP, VERSION = "rbac.authorization.k8s.io", "v1"
Obj = dict[str, Any]


def _handlers(put: Callable[[Obj], None], remove: Callable[[Obj], None]) -> Handlers[Obj]:
    return Handlers(on_add=lambda obj, _: put(obj), on_update=lambda _, obj: put(obj), on_delete=remove)


def _feeds(index: RbacIndex) -> dict[str, Handlers[Obj]]:
    def bindings(kind: str) -> Handlers[Obj]:
        return _handlers(functools.partial(index.put_binding, kind), functools.partial(index.remove_binding, kind))

    return {
        "roles": _handlers(index.put_role, index.remove_role),
        "clusterroles": _handlers(index.put_cluster_role, index.remove_cluster_role),
        "rolebindings": bindings(ROLE_BINDING),
        "clusterrolebindings": bindings(CLUSTER_ROLE_BINDING),
    }


class RbacCache:
    def __init__(self, core: Core, index: RbacIndex) -> None:
        self.index = index
        self._informers: list[Informer[Obj]] = []
        for resource, handlers in _feeds(index).items():
            informer = Informer(core, core_pb2.ResourcePath(group=GROUP, version=VERSION, resource=resource))
            informer.add_handlers(handlers)
            self._informers.append(informer)

    async def start(self) -> None:
        """Every kind listed into the index before returning; watched from then on."""
        for informer in self._informers:
            await informer.start()

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
