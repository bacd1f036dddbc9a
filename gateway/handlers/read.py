"""GET of one object and of a collection."""

from __future__ import annotations

import orjson
from aiohttp import web

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import params
from gateway.client import CoreClient
from gateway.handlers import paging, respond
from gateway.handlers.request import Call


async def get(client: CoreClient, call: Call) -> web.Response:
    """A subresource's GET carries its query: kube's getters and connecters (pods/log, pods/exec) take their
    options from it; a connecter reached by another method names its verb (GetRequest.connect_verb). An answer
    without an object is kube's empty one: 204 No Content."""
    call.admit()
    query = b""
    if call.info.subresource:
        options = dict(call.query)
        if call.info.subpath:  # a proxy's path: kube sets the connect options' "path" from the URL, over ?path
            options["path"] = [call.info.subpath]
        query = orjson.dumps(options)
    verb = call.info.verb
    request = core_pb2.GetRequest(accept=respond.core_accept(call.out), view=call.view(), query=query,
                                  connect_verb="" if verb == "get" else verb)
    call.fill_path(request.path)
    params.fill_get_options(request.options, call.query)
    got = await call.within_deadline(client.get(request))
    if not got.HasField("object"):
        return web.Response(status=204)
    return respond.document(call.out, got.object, api_version=call.api_version, kind=call.resource.kind)


async def list_(client: CoreClient, call: Call) -> web.StreamResponse:
    """A page as asked; the whole collection a page at a time (gateway/handlers/paging.py), written as it comes.
    An answer of more than a page of items and nothing after it (the watch cache answers resourceVersion=0 whole,
    whatever the limit, as kube's cacher does) is written a page of items at a time too, not copied into one body."""
    call.admit()
    request = core_pb2.ListRequest(path=call.path, options=params.list_options(call.query),
                                   accept=respond.core_accept(call.out), view=call.view())
    if not paging.whole_list(request.options):
        listed = await call.within_deadline(client.list(request))
        if paging.large_and_last(listed):
            return paging.StreamedList(call.out, listed, paging.rest(client, call, request, ""))
        return respond.list_document(call.out, listed)
    first = await call.within_deadline(client.list(paging.first_page(request)))
    token = paging.continue_of(first)
    if not token and not paging.large_and_last(first):
        return respond.list_document(call.out, first)  # one page: the whole list
    return paging.StreamedList(call.out, first, paging.rest(client, call, request, token))
