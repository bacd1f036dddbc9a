"""What exists from first start: the namespaces every Kubernetes cluster has."""

from __future__ import annotations

import orjson

from capstan.core.v1 import core_pb2
from server import errors
from server.core import Core

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


async def ensure_default_namespaces(core: Core) -> None:
    for name in DEFAULT_NAMESPACES:
        body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            await core.create(core_pb2.CreateRequest(
                path=core_pb2.ResourcePath(version="v1", resource="namespaces"),
                object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=body),
            ))
        except errors.ApiError as err:
            if err.code != 409:
                raise
