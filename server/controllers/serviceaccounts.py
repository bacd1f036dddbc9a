"""The `default` ServiceAccount in every namespace (kube-controller-manager's serviceaccounts-controller):
created when a namespace appears, created again when deleted. A singleton: one per cluster, run by the elected
core only (server/runtime/election.py), as kube-controller-manager runs it under leader election.
"""

from __future__ import annotations

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.perns import PerNamespace
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import SharedInformers

DEFAULT = "default"
SERVICE_ACCOUNTS = core_pb2.ResourcePath(version="v1", resource="serviceaccounts")
MANAGER = "kube-controller-manager"


class ServiceAccountsController:
    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        self._core = core
        self._loop = PerNamespace(core, kept=SERVICE_ACCOUNTS, name=DEFAULT, sync=self._sync,
                                  label="serviceaccounts-controller", informers=informers)

    async def start(self) -> None:
        await self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def running(self) -> bool:
        return self._loop.running()

    async def _sync(self, namespace: str) -> None:
        path = core_pb2.ResourcePath(version="v1", resource="serviceaccounts", namespace=namespace, name=DEFAULT)
        try:
            await self._core.get(core_pb2.GetRequest(path=path))
            return
        except errors.ApiError as err:
            if err.status.code != 404:
                raise
        path.name = ""
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}}
        request = core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(account)))
        request.options.fieldManager = MANAGER
        try:
            await self._core.create(request)
        except errors.ApiError as err:
            if err.status.code != 409:  # created meanwhile
                raise
