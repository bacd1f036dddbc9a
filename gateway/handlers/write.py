"""POST (create, 201), PUT (update; 201 when it created the object) and PATCH."""

from __future__ import annotations

from aiohttp import web

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import negotiation, params
from gateway.client import CoreClient
from gateway.handlers import request as req
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import PatchType


async def create(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    request = core_pb2.CreateRequest(accept=respond.core_accept(call.out), view=call.view())
    await req.body(http, call.resource, request.object)
    call.fill_path(request.path)
    params.fill_write_options(request.options, call.query, http.headers.get("User-Agent", ""))
    created = await call.within_deadline(client.create(request))
    return respond.document(call.out, created.object, api_version=call.api_version,
                            kind=call.resource.kind, status=201, warnings=list(created.warnings))


async def update(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    request = core_pb2.UpdateRequest(accept=respond.core_accept(call.out), view=call.view())
    await req.body(http, call.resource, request.object)
    call.fill_path(request.path)
    params.fill_write_options(request.options, call.query, http.headers.get("User-Agent", ""))
    updated = await call.within_deadline(client.update(request))
    return respond.document(call.out, updated.object, api_version=call.api_version,
                            kind=call.resource.kind, status=201 if updated.created else 200,
                            warnings=list(updated.warnings))


_PATCH_TYPES = {
    PatchType.JSON_PATCH: core_pb2.PATCH_TYPE_JSON,
    PatchType.MERGE_PATCH: core_pb2.PATCH_TYPE_MERGE,
    PatchType.STRATEGIC_MERGE_PATCH: core_pb2.PATCH_TYPE_STRATEGIC_MERGE,
    PatchType.APPLY_PATCH: core_pb2.PATCH_TYPE_APPLY,
}


async def patch(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    """PATCH in the form its Content-Type names (415 for any other), applied by the core."""
    call.admit()
    media = negotiation.negotiate_input(http.headers.get("Content-Type"), protobuf=bool(call.resource.proto_message),
                                        patch=True)
    assert media.patch_type is not None
    data = await req.read_limited(http)
    options = params.patch_options(call.query, http.headers.get("User-Agent", ""),
                                   apply=media.patch_type is PatchType.APPLY_PATCH)
    patched = await call.within_deadline(client.patch(core_pb2.PatchRequest(
        path=call.path, type=_PATCH_TYPES[media.patch_type], patch=data, options=options,
        accept=respond.core_accept(call.out), view=call.view())))
    return respond.document(call.out, patched.object, api_version=call.api_version, kind=call.resource.kind,
                            status=201 if patched.created else 200, warnings=list(patched.warnings))
