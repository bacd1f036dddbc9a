"""A small test client for the CoreService: JSON objects in and out, Kubernetes Status on failure.

Every call goes over a real gRPC channel. A failed call raises `Failed`, carrying the gRPC
code, the gRPC status message and the Kubernetes Status found in the rich error details,
as a dict shaped like kube-apiserver's JSON Status (without kind/apiVersion).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import orjson
from google.protobuf import json_format
from grpc_status import rpc_status

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.admission.protection import FINALIZERS
from server.startup.app import RunningCore

JSON = core_pb2.ENCODING_JSON
PROTOBUF = core_pb2.ENCODING_PROTOBUF
Obj = dict[str, Any]
Event = tuple[str, Obj]
Objs = list[Obj]
Strings = list[str]
Events = list[Event]


class Failed(Exception):
    """The call failed; `status` is the Kubernetes Status from the rich error details, as a dict."""

    def __init__(self, code: grpc.StatusCode, status: Obj, message: str = "") -> None:
        super().__init__(f"{code}: {status}")
        self.grpc_code = code
        self.grpc_message = message
        self.status = status


PROTECTION_FINALIZERS = tuple(FINALIZERS.values())


def path(
    resource: str, namespace: str = "", name: str = "", *, group: str = "", version: str = "v1", subresource: str = ""
) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(
        group=group, version=version, resource=resource, namespace=namespace, name=name, subresource=subresource
    )


def raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=JSON, data=orjson.dumps(obj))


def status_dict(status: meta_pb2.Status) -> Obj:
    """A Status as kube-apiserver's JSON shows it: empty strings are omitted (`omitempty`)."""
    out: Obj = json_format.MessageToDict(status, preserving_proto_field_name=True)
    return {k: v for k, v in out.items() if v != ""}


def status_of(err: grpc.aio.AioRpcError) -> Obj:
    rich = rpc_status.from_call(err)
    assert rich is not None, f"no rich status on {err}"
    assert len(rich.details) == 1, rich.details
    status = meta_pb2.Status()
    assert rich.details[0].Unpack(status), rich.details[0].type_url
    return status_dict(status)


def list_meta(meta: meta_pb2.ListMeta) -> Obj:
    """ListMeta as JSON shows it: resourceVersion, continue and remainingItemCount only when set."""
    out: Obj = {"resourceVersion": meta.resourceVersion}
    token = getattr(meta, "continue")
    if token:
        out["continue"] = token
    if meta.HasField("remainingItemCount"):
        out["remainingItemCount"] = meta.remainingItemCount
    return out


@dataclass
class Client:
    stub: core_pb2_grpc.CoreServiceStub
    running: RunningCore

    def revision(self) -> int:
        """The store's current revision: a write that happened raised it, a refused one did not."""
        return self.running.core.context.store.current_revision()

    async def call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request)
        except grpc.aio.AioRpcError as err:
            raise Failed(err.code(), status_of(err), err.details() or "") from None

    async def create_response(
        self, p: core_pb2.ResourcePath, body: core_pb2.RawObject, *, accept: int = JSON, **options: Any
    ) -> core_pb2.CreateResponse:
        request = core_pb2.CreateRequest(path=p, object=body, options=options, accept=accept)  # type: ignore[arg-type]
        response: core_pb2.CreateResponse = await self.call(self.stub.Create, request)
        return response

    async def create(self, p: core_pb2.ResourcePath, obj: Obj, **options: Any) -> Obj:
        resp = await self.create_response(p, raw(obj), **options)
        assert resp.object.encoding == JSON
        return orjson.loads(resp.object.data)  # type: ignore[no-any-return]

    async def create_unprotected(self, p: core_pb2.ResourcePath, obj: Obj) -> Obj:
        """The object created, and then without the storage protection finalizer StorageObjectInUseProtection gave
        it (a claim's or volume's), as kube-controller-manager's protection controllers leave an unused one: for
        tests of what a delete does to a kind, which no controller of the envtest-like core would finish."""
        created = await self.create(p, obj)
        finalizers = created["metadata"].get("finalizers") or []
        kept = [f for f in finalizers if f not in PROTECTION_FINALIZERS]
        if kept == finalizers:
            return created
        created["metadata"]["finalizers"] = kept
        updated, _ = await self.update(core_pb2.ResourcePath(
            group=p.group, version=p.version, resource=p.resource, namespace=p.namespace,
            name=created["metadata"]["name"]), created)
        return updated

    async def get_raw(self, p: core_pb2.ResourcePath, *, accept: int = JSON, **options: Any) -> core_pb2.RawObject:
        request = core_pb2.GetRequest(path=p, options=options, accept=accept)  # type: ignore[arg-type]
        resp: core_pb2.GetResponse = await self.call(self.stub.Get, request)
        return resp.object

    async def get(self, p: core_pb2.ResourcePath, **options: Any) -> Obj:
        return orjson.loads((await self.get_raw(p, **options)).data)  # type: ignore[no-any-return]

    async def update_response(
        self, p: core_pb2.ResourcePath, body: core_pb2.RawObject, *, accept: int = JSON, **options: Any
    ) -> core_pb2.UpdateResponse:
        request = core_pb2.UpdateRequest(path=p, object=body, options=options, accept=accept)  # type: ignore[arg-type]
        response: core_pb2.UpdateResponse = await self.call(self.stub.Update, request)
        return response

    async def update(self, p: core_pb2.ResourcePath, obj: Obj, **options: Any) -> tuple[Obj, bool]:
        resp = await self.update_response(p, raw(obj), **options)
        return orjson.loads(resp.object.data), resp.created

    async def delete(self, p: core_pb2.ResourcePath, **options: Any) -> Obj:
        """The object (still there, or returned by kinds that return it) or the Success Status, as a dict."""
        resp = await self.call(self.stub.Delete, core_pb2.DeleteRequest(path=p, options=options))
        if resp.HasField("object"):
            return orjson.loads(resp.object.data)  # type: ignore[no-any-return]
        return status_dict(resp.status)

    async def delete_collection(
        self,
        p: core_pb2.ResourcePath,
        list_options: Obj | None = None,
        delete_options: Obj | None = None,
    ) -> core_pb2.ListResponse:
        request = core_pb2.DeleteCollectionRequest(
            path=p, list_options=list_options or {}, delete_options=delete_options or {}
        )
        resp: core_pb2.DeleteCollectionResponse = await self.call(self.stub.DeleteCollection, request)
        return resp.deleted

    async def list_response(self, p: core_pb2.ResourcePath, **options: Any) -> core_pb2.ListResponse:
        response: core_pb2.ListResponse = await self.call(self.stub.List, core_pb2.ListRequest(path=p, options=options))
        return response

    async def list(self, p: core_pb2.ResourcePath, **options: Any) -> tuple[Obj, Objs]:
        resp = await self.list_response(p, **options)
        return list_meta(resp.metadata), [orjson.loads(item) for item in resp.items]

    async def names(self, p: core_pb2.ResourcePath, **options: Any) -> Strings:
        _, items = await self.list(p, **options)
        return [item["metadata"]["name"] for item in items]

    async def watch(self, p: core_pb2.ResourcePath, **options: Any) -> AsyncGenerator[Event, None]:
        call = self.stub.Watch(core_pb2.WatchRequest(path=p, options=options))
        try:
            async for response in call:
                for event in response.events:
                    yield event.type, orjson.loads(event.object.data)
        except grpc.aio.AioRpcError as err:
            raise Failed(err.code(), status_of(err), err.details() or "") from None
        finally:
            call.cancel()

    async def events(
        self, p: core_pb2.ResourcePath, until: Callable[[Event], bool], *, timeout: float = 5.0, **options: Any
    ) -> Events:
        """Watch events up to and including the first one `until` accepts (TimeoutError if it never comes)."""
        seen: Events = []
        async with asyncio.timeout(timeout), contextlib.aclosing(self.watch(p, **options)) as stream:
            async for event in stream:
                seen.append(event)
                if until(event):
                    return seen
        raise AssertionError(f"the watch ended before the awaited event; saw {seen}")


async def refused(awaitable: Awaitable[object]) -> Failed:
    """The Failed a call raises; fails the test if the call succeeds."""
    try:
        result = await awaitable
    except Failed as failed:
        return failed
    raise AssertionError(f"the call succeeded: {result}")
