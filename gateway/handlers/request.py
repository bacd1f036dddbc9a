"""What a handler reads from an aiohttp request: the negotiated output, query, body and view."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from aiohttp import web

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import negotiation, params, restful
from gateway.client import CoreError, failure
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import summarize
from gateway.negotiation import CodecName, Output
from gateway.requestinfo import RequestInfo
from server.machinery import deadline

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit

T = TypeVar("T")

_VIEWS = {
    "Table": core_pb2.VIEW_TABLE,
    "PartialObjectMetadata": core_pb2.VIEW_PARTIAL_OBJECT_METADATA,
    "PartialObjectMetadataList": core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST,
}


@dataclass(frozen=True, slots=True)
class Call:
    """One resource request, parsed: routing info, query values, negotiated output."""

    info: RequestInfo
    resource: core_pb2.Resource
    query: Mapping[str, Sequence[str]]
    out: Output

    @property
    def path(self) -> core_pb2.ResourcePath:
        path = core_pb2.ResourcePath()
        self.fill_path(path)
        return path

    def fill_path(self, path: core_pb2.ResourcePath) -> None:
        """Set a request message's own path to this call's: a third of the time of building one and copying it
        in (path=call.path), for the requests every client sends most."""
        i = self.info
        path.version = i.version
        path.resource = i.resource
        if i.group:
            path.group = i.group
        if i.namespace:
            path.namespace = i.namespace
        if i.name:
            path.name = i.name
        if i.subresource:
            path.subresource = i.subresource

    @property
    def api_version(self) -> str:
        r = self.resource
        return f"{r.group}/{r.version}" if r.group else r.version

    @property
    def connects(self) -> bool:
        """A connecter's subresource (pods/exec, pods/attach, pods/portforward): kube names its kind for the
        options it decodes from the query (PodExecOptions), and it takes no body."""
        sub = next((s for s in self.resource.subresources if s.name == self.info.subresource), None)
        return sub is not None and sub.kind.endswith("Options")

    def view(self) -> core_pb2.ViewOptions | None:
        """The conversion the answer is asked in; None (the request's field left unset) for none."""
        conversion = self.out.conversion
        if conversion is None:
            return None
        include = self.query.get("includeObject", [""])[0]
        api_version = f"{conversion.group}/{conversion.version}"
        return core_pb2.ViewOptions(view=_VIEWS[conversion.kind], api_version=api_version, include_object=include)

    def admit(self) -> None:
        """What kube-apiserver refuses before any handler runs, in its order: a malformed ?timeout
        (400, WithRequestDeadline; watches take none), then a method with no route on this path.

        go-restful answers a generic 405 when the path exists for other methods: POST to one object,
        PUT to a collection, and POST or DELETE across all namespaces, which only lists and watches
        (installer.go registers nothing else there)."""
        i = self.info
        if i.verb != "watch":
            params.deadline(self.query)
        if i.subresource:
            return  # the core knows each subresource's verbs
        if self.resource.namespaced and not i.namespace:
            if not i.name and i.verb not in ("list", "watch"):
                raise method_not_allowed()
            return  # an object path without its namespace is no path at all: the core's 404
        if (i.verb == "create" and i.name) or (i.verb == "update" and not i.name):
            raise method_not_allowed()

    async def within_deadline(self, call: Awaitable[T]) -> T:
        """The core call, cut at the request's deadline (?timeout, at most REQUEST_TIMEOUT_MAX) with the
        504 kube-apiserver's finisher answers; a write cut this way may still happen, as in kube."""
        try:
            seconds = params.deadline(self.query)
        except CoreError:
            if asyncio.iscoroutine(call):
                call.close()  # never started
            raise
        try:
            # In this task, not one of its own as wait_for would start, and on the loop's shared timer
            # (server/machinery/deadline.py): a request's call costs no task and no timer.
            with deadline.cut(seconds), deadline.within(seconds):  # within: the core caps its call-outs by it
                return await call
        except TimeoutError:
            raise timed_out() from None


def query_of(request: web.Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query.items():
        out.setdefault(key, []).append(value)
    return out


def output(request: web.Request, resource: core_pb2.Resource, accept: str | None, *, stream: bool = False) -> Output:
    """The answer's form, negotiated from the request's Accept header (`accept`, read once by the caller)."""
    out = negotiation.negotiate_output(accept, protobuf=bool(resource.proto_message), stream=stream,
                                       table=not resource.no_table)
    # NegotiateOutputMediaType: the Accept clause's pretty=1 or isPrettyPrint (?pretty, curl, browsers).
    pretty = out.pretty or negotiation.wants_pretty(request.query.get("pretty"), request.headers.get("User-Agent"))
    if pretty != out.pretty:
        out = Output(out.codec, out.media_type, out.content_type, out.conversion, pretty, out.stream)
    return out


def status_output(request: web.Request, resource: core_pb2.Resource | None, out: Output | None) -> Output | None:
    """How an error Status answers the request whose answer was negotiated as `out`: as `out` unless that is a
    conversion (negotiation.negotiate_status), indented JSON when the Accept offers nothing else."""
    if out is None or out.conversion is None or resource is None:
        return out
    found = negotiation.negotiate_status(request.headers.get("Accept"), protobuf=bool(resource.proto_message))
    if found is None:
        return Output(CodecName.JSON, negotiation.JSON, negotiation.JSON, pretty=True)
    if found.pretty or not negotiation.wants_pretty(request.query.get("pretty"), request.headers.get("User-Agent")):
        return found
    return Output(found.codec, found.media_type, found.content_type, None, True)


async def body(request: web.Request, resource: core_pb2.Resource, raw: core_pb2.RawObject) -> None:
    """Set `raw` (a request message's own object) to the request body as the core takes it: JSON or YAML
    bytes, or the kind's protobuf message bytes. As in kube-apiserver's create and update handlers, the
    Content-Type is checked (415) before the body is read (413)."""
    media = negotiation.negotiate_input(request.headers.get("Content-Type"), protobuf=bool(resource.proto_message))
    data = await read_limited(request)
    if media.codec is CodecName.PROTOBUF:
        try:
            message, api_version, kind = protobuf_codec.decode(data)
        except protobuf_codec.EnvelopeError as err:
            raise unrecognized(resource, err.message, data) from None
        expected = f"{resource.group}/{resource.version}" if resource.group else resource.version
        if (api_version, kind) != (expected, resource.kind):  # kube decodes into the URL's kind only
            raise CoreError(failure(400, "BadRequest", (
                f"the object provided is unrecognized (must be of type {resource.kind}): "
                f"object of kind {kind} in version {api_version}")))
        raw.encoding, raw.data = core_pb2.ENCODING_PROTOBUF, message
    elif media.codec is CodecName.YAML:
        # The core reads YAML itself (server/machinery/codec/yamlread.py): a key the YAML repeats is a strict
        # decoding error or a warning there, and converting to JSON here would lose it.
        raw.encoding, raw.data = core_pb2.ENCODING_YAML, data
    else:
        raw.encoding, raw.data = core_pb2.ENCODING_JSON, json_codec.decode(data)


async def read_limited(request: web.Request) -> bytes:
    """The whole body, or 413 once it passes MAX_BODY (announced or not in Content-Length).

    StreamReader.read(n) answers what has arrived so far, not n bytes: the body is read to its end."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def unrecognized(resource: core_pb2.Resource, message: str, data: bytes) -> CoreError:
    """transformDecodeError for a body the decoder could not even type (no group/version/kind)."""
    return CoreError(failure(400, "BadRequest", (
        f"the object provided is unrecognized (must be of type {resource.kind}): {message} ({summarize(data)})")))


def too_large() -> CoreError:
    return CoreError(failure(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"))


def method_not_allowed() -> CoreError:
    """go-restful's 405 through kube-apiserver's ServiceErrorHandler: generic, with empty details."""
    return CoreError(restful.method_not_allowed())


def timed_out() -> CoreError:
    """apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline
    exceeded", 0), as the finisher answers when a request outlives its deadline."""
    status = failure(504, "Timeout",
                     "Timeout: request did not complete within requested timeout - context deadline exceeded")
    status.details.SetInParent()
    return CoreError(status)
