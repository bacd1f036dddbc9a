"""POST (create, 201) and PUT (update; 201 when it created the object)."""

from __future__ import annotations

from aiohttp import web

from capstan.core.v1 import core_pb2
from gateway import params
from gateway.client import CoreClient
from gateway.handlers import request as req
from gateway.handlers import respond
from gateway.handlers.request import Call


async def create(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    raw = await req.body(http, call.resource)
    created = await call.within_deadline(client.create(core_pb2.CreateRequest(
        path=call.path, object=raw, options=params.create_options(call.query), accept=respond.core_accept(call.out))))
    return respond.document(call.out, created.object, api_version=call.api_version,
                            kind=call.resource.kind, status=201, warnings=list(created.warnings))


async def update(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    raw = await req.body(http, call.resource)
    updated = await call.within_deadline(client.update(core_pb2.UpdateRequest(
        path=call.path, object=raw, options=params.update_options(call.query), accept=respond.core_accept(call.out))))
    return respond.document(call.out, updated.object, api_version=call.api_version,
                            kind=call.resource.kind, status=201 if updated.created else 200,
                            warnings=list(updated.warnings))
