"""A small test client for the CoreService: JSON objects in and out, Kubernetes Status on failure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import orjson
from google.protobuf import json_format
from grpc_status import rpc_status

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_pb2, core_pb2_grpc
from server.app import RunningCore

JSON = core_pb2.ENCODING_JSON
Obj = dict[str, Any]


class Failed(Exception):
    """The call failed; `status` is the Kubernetes Status from the rich error details, as a dict."""

    def __init__(self, code: grpc.StatusCode, status: Obj) -> None:
        super().__init__(f"{code}: {status}")
        self.grpc_code = code
        self.status = status


def path(
    resource: str, namespace: str = "", name: str = "", *, group: str = "", version: str = "v1", subresource: str = ""
) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(
        group=group, version=version, resource=resource, namespace=namespace, name=name, subresource=subresource
    )


def raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=JSON, data=orjson.dumps(obj))


async def status_of(err: grpc.aio.AioRpcError) -> Obj:
    rich = await rpc_status.aio.from_call(err)
    assert rich is not None, f"no rich status on {err}"
    status = meta_pb2.Status()
    assert rich.details[0].Unpack(status)
    out: Obj = json_format.MessageToDict(status, preserving_proto_field_name=True)
    return out


@dataclass
class Client:
    stub: core_pb2_grpc.CoreServiceStub
    running: RunningCore

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request)
        except grpc.aio.AioRpcError as err:
            raise Failed(err.code(), await status_of(err)) from None

    async def create(self, p: core_pb2.ResourcePath, obj: Obj, **options: Any) -> Obj:
        resp = await self._call(self.stub.Create, core_pb2.CreateRequest(path=p, object=raw(obj), options=options))
        return orjson.loads(resp.object.data)  # type: ignore[no-any-return]

    async def get(self, p: core_pb2.ResourcePath, **options: Any) -> Obj:
        resp = await self._call(self.stub.Get, core_pb2.GetRequest(path=p, options=options))
        return orjson.loads(resp.object.data)  # type: ignore[no-any-return]

    async def update(self, p: core_pb2.ResourcePath, obj: Obj, **options: Any) -> tuple[Obj, bool]:
        resp = await self._call(self.stub.Update, core_pb2.UpdateRequest(path=p, object=raw(obj), options=options))
        return orjson.loads(resp.object.data), resp.created

    async def delete(self, p: core_pb2.ResourcePath, **options: Any) -> Obj:
        resp = await self._call(self.stub.Delete, core_pb2.DeleteRequest(path=p, options=options))
        if resp.HasField("object"):
            return orjson.loads(resp.object.data)  # type: ignore[no-any-return]
        out: Obj = json_format.MessageToDict(resp.status, preserving_proto_field_name=True)
        return out

    async def list(self, p: core_pb2.ResourcePath, **options: Any) -> tuple[Obj, list[Obj]]:
        resp = await self._call(self.stub.List, core_pb2.ListRequest(path=p, options=options))
        meta: Obj = json_format.MessageToDict(resp.metadata, preserving_proto_field_name=True)
        return meta, [orjson.loads(item) for item in resp.items]

    async def watch(self, p: core_pb2.ResourcePath, **options: Any) -> AsyncIterator[tuple[str, Obj]]:
        call = self.stub.Watch(core_pb2.WatchRequest(path=p, options=options))
        try:
            async for response in call:
                for event in response.events:
                    yield event.type, orjson.loads(event.object.data)
        except grpc.aio.AioRpcError as err:
            raise Failed(err.code(), await status_of(err)) from None
        finally:
            call.cancel()
