"""The `kube-root-ca.crt` ConfigMap in every namespace (kube-controller-manager's root-ca-cert-publisher):
`data: {ca.crt: <the root CA PEM>}` with kube's description annotation, created when a namespace appears and
put back when deleted, or when its data or annotation is changed (other annotations and labels are kept).
A singleton: one per cluster, run by the elected core only (server/runtime/election.py) when a root CA is
configured (--insecure has none).
"""

from __future__ import annotations

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.perns import PerNamespace
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import SharedInformers

NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")
CONFIG_MAPS = core_pb2.ResourcePath(version="v1", resource="configmaps")
MANAGER = "kube-controller-manager"


class RootCAPublisher:
    def __init__(self, core: Core, root_ca: str, informers: SharedInformers | None = None) -> None:
        self._core = core
        self._data = {"ca.crt": root_ca}
        self._loop = PerNamespace(core, kept=CONFIG_MAPS, name=NAME, sync=self._sync,
                                  label="root-ca-cert-publisher", informers=informers)

    async def start(self) -> None:
        await self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def running(self) -> bool:
        return self._loop.running()

    async def _sync(self, namespace: str) -> None:
        path = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace=namespace, name=NAME)
        try:
            got = await self._core.get(core_pb2.GetRequest(path=path))
        except errors.ApiError as err:
            if err.status.code != 404:
                raise
            await self._create(namespace)
            return
        cm = orjson.loads(got.object.data)
        annotations = cm.setdefault("metadata", {}).get("annotations") or {}
        if cm.get("data") == self._data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        cm["data"] = self._data
        cm.pop("binaryData", None)
        cm["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        request = core_pb2.UpdateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(cm)))
        request.options.fieldManager = MANAGER
        await self._core.update(request)

    async def _create(self, namespace: str) -> None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": NAME, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}}, "data": self._data}
        request = core_pb2.CreateRequest(
            path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace=namespace),
            object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(cm)))
        request.options.fieldManager = MANAGER
        try:
            await self._core.create(request)
        except errors.ApiError as err:
            if err.status.code != 409:
                raise
