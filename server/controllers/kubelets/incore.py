"""Simulated nodes inside a core (`capstan serve --nodes N`): the simulator over the core's own verbs, fed by the
core's shared Pod and Node informers, run as an elected singleton so that exactly one core plays the kubelets
and a new leader takes them up (it registers the Nodes again, which finds them, and follows their Pods from its
informers' list).

Writes carry the kubelet's field manager, `kubelet`.
"""

from __future__ import annotations

from typing import Any

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.kubelets.api import ApiFailure, Kind
from server.controllers.kubelets.config import NodesConfig
from server.controllers.kubelets.simulator import Simulator
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import Handlers, SharedInformers, Subscriptions

Obj = dict[str, Any]
MANAGER = "kubelet"


def _path(kind: Kind, namespace: str, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=kind.group, version=kind.version, resource=kind.resource,
                                 namespace=namespace, name=name, subresource=subresource)


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def _failure(err: errors.ApiError) -> ApiFailure:
    return ApiFailure(err.code, err.status.message)


class CoreNodeApi:
    """NodeApi over a Core's verbs (no authentication: the core's own controllers' path)."""

    def __init__(self, core: Core) -> None:
        self._core = core

    async def create(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        request = core_pb2.CreateRequest(path=_path(kind, namespace), object=_raw(body))
        request.options.fieldManager = MANAGER
        try:
            return dict(orjson.loads((await self._core.create(request)).object.data))
        except errors.ApiError as err:
            raise _failure(err) from None

    async def get(self, kind: Kind, namespace: str, name: str, *, node: str) -> Obj:
        try:
            return dict(orjson.loads((await self._core.get(
                core_pb2.GetRequest(path=_path(kind, namespace, name)))).object.data))
        except errors.ApiError as err:
            raise _failure(err) from None

    async def update(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        name = str((body.get("metadata") or {}).get("name", ""))
        request = core_pb2.UpdateRequest(path=_path(kind, namespace, name), object=_raw(body))
        request.options.fieldManager = MANAGER
        try:
            return dict(orjson.loads((await self._core.update(request)).object.data))
        except errors.ApiError as err:
            raise _failure(err) from None

    async def patch(self, kind: Kind, namespace: str, name: str, patch: Obj, *, node: str,
                    subresource: str = "") -> Obj:
        request = core_pb2.PatchRequest(path=_path(kind, namespace, name, subresource),
                                        type=core_pb2.PATCH_TYPE_MERGE, patch=orjson.dumps(patch))
        request.options.fieldManager = MANAGER
        try:
            return dict(orjson.loads((await self._core.patch(request)).object.data))
        except errors.ApiError as err:
            raise _failure(err) from None

    async def delete(self, kind: Kind, namespace: str, name: str, *, node: str, uid: str, grace: int) -> None:
        options = meta_pb2.DeleteOptions(gracePeriodSeconds=grace, preconditions=meta_pb2.Preconditions(uid=uid))
        try:
            await self._core.delete(core_pb2.DeleteRequest(path=_path(kind, namespace, name), options=options))
        except errors.ApiError as err:
            raise _failure(err) from None


class InCoreNodes:
    """The simulator fed by the core's shared informers."""

    def __init__(self, core: Core, informers: SharedInformers, config: NodesConfig) -> None:
        self.simulator = Simulator(CoreNodeApi(core), config.count, shape=config.shape, timing=config.timing)
        sim = self.simulator
        self._subscriptions = Subscriptions()
        self._subscriptions.add(informers.informer(_path(Kind("", "v1", "nodes"), "")), Handlers(
            on_add=lambda node, _: sim.node_changed(node), on_update=lambda _, node: sim.node_changed(node),
            on_delete=sim.node_deleted))
        self._subscriptions.add(informers.informer(_path(Kind("", "v1", "pods"), "")), Handlers(
            on_add=lambda pod, _: sim.pod_changed(pod), on_update=lambda _, pod: sim.pod_changed(pod),
            on_delete=sim.pod_deleted))

    async def start(self) -> None:
        await self._subscriptions.start()
        await self.simulator.start()

    async def stop(self) -> None:
        await self._subscriptions.stop()  # no change is fed to a stopped simulator
        await self.simulator.stop()

    def running(self) -> bool:
        return self.simulator.running()

    def singletons(self) -> list[Singleton]:
        return [Singleton("SimulatedNodes", self.start, self.stop)]
