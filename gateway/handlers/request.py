"""What a handler reads from an aiohttp request: the negotiated output, query, body and view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiohttp import web

from capstan.core.v1 import core_pb2
from gateway import negotiation
from gateway.client import CoreError, failure
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.negotiation import CodecName, Output
from gateway.requestinfo import RequestInfo

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit

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
        i = self.info
        return core_pb2.ResourcePath(group=i.group, version=i.version, resource=i.resource,
                                     namespace=i.namespace, name=i.name, subresource=i.subresource)

    @property
    def api_version(self) -> str:
        r = self.resource
        return f"{r.group}/{r.version}" if r.group else r.version

    def view(self) -> core_pb2.ViewOptions:
        conversion = self.out.conversion
        if conversion is None:
            return core_pb2.ViewOptions()
        include = self.query.get("includeObject", [""])[0]
        api_version = f"{conversion.group}/{conversion.version}"
        return core_pb2.ViewOptions(view=_VIEWS[conversion.kind], api_version=api_version, include_object=include)


def query_of(request: web.Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query.items():
        out.setdefault(key, []).append(value)
    return out


def output(request: web.Request, resource: core_pb2.Resource, *, stream: bool = False) -> Output:
    out = negotiation.negotiate_output(request.headers.get("Accept"), protobuf=bool(resource.proto_message),
                                       stream=stream)
    pretty = negotiation.wants_pretty(request.query.get("pretty"), request.headers.get("User-Agent"))
    if pretty != out.pretty:
        out = Output(out.codec, out.media_type, out.content_type, out.conversion, pretty, out.stream)
    return out


async def body(request: web.Request, resource: core_pb2.Resource) -> core_pb2.RawObject:
    """The request body as the core takes it: JSON bytes, or the kind's protobuf message bytes."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    data = await request.content.read(MAX_BODY + 1)
    if len(data) > MAX_BODY:
        raise too_large()
    media = negotiation.negotiate_input(request.headers.get("Content-Type"), protobuf=bool(resource.proto_message))
    if media.codec is CodecName.PROTOBUF:
        try:
            raw, api_version, kind = protobuf_codec.decode(data)
        except protobuf_codec.EnvelopeError as err:
            raise CoreError(failure(400, "BadRequest", str(err))) from None
        expected = f"{resource.group}/{resource.version}" if resource.group else resource.version
        if (api_version, kind) != (expected, resource.kind):  # kube decodes into the URL's kind only
            raise CoreError(failure(400, "BadRequest", (
                f"the object provided is unrecognized (must be of type {resource.kind}): "
                f"object of kind {kind} in version {api_version}")))
        return core_pb2.RawObject(encoding=core_pb2.ENCODING_PROTOBUF, data=raw)
    if media.codec is CodecName.YAML:
        try:
            data = yaml_codec.decode(data)
        except yaml_codec.YAMLError as err:
            raise CoreError(failure(400, "BadRequest", str(err))) from None
    else:
        data = json_codec.decode(data)
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=data)


def too_large() -> CoreError:
    return CoreError(failure(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"))
