"""go-restful's route selection, as kube-apiserver 1.28 answers through it before any handler runs.

kube-apiserver serves its built-in APIs through go-restful web services rooted at /api, /apis/{group} and
/apis/{group}/{version} (and /version, /.well-known/openid-configuration, /openid/v1/jwks); anything else under
/apis (custom resources, groups nobody serves) reaches handlers of its own or Go's NotFound ("404 page not found"
as text). Under a web service, a request is matched to a route by path, then method, then Content-Type, then
Accept, and a request no route takes gets go-restful's error through kube's ServiceErrorHandler: a Status of
NewGenericServerResponse, with empty details. These functions decide those refusals, in that order, from the
request's method and headers and the route's media types (vendor/github.com/emicklei/go-restful/v3/jsr311.go):

  no route for the method   405 "the server does not allow this method on the requested resource" (HEAD too:
                            kube registers no HEAD routes)
  Content-Type not consumed 415 "415: Unsupported Media Type" when the request has a body (only PATCH routes
                            name what they consume: the patch types)
  Accept not produced       406 "406: Not Acceptable\\n\\nAvailable representations: <produces>", or that text
                            as a 415 for a POST, PUT or PATCH without a Content-Length header

Accept and Content-Type are read as go-restful reads them: each comma-separated type without its parameters,
compared exactly (case and all) with what the route produces or consumes; `*/*` in Accept takes any route, and
an empty Accept is `*/*`. kube's own negotiation (gateway/negotiation.py) then runs on what passed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import negotiation
from gateway.client import failure
from gateway.requestinfo import RequestInfo

# What every route of a built-in resource produces (kube's serializer's types), and a list's route also the
# watch stream's (installer.go: allMediaTypes for LIST and WATCH).
MEDIA_TYPES = (negotiation.JSON, negotiation.YAML, negotiation.PROTOBUF)
STREAM_TYPES = ("application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
# What a PATCH route consumes: the patch types of a built-in kind.
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
# Methods kube registers routes for on resource paths (a connecter's subresources take every method).
ROUTED_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# Subresources whose routes produce anything (connecters: exec, attach, portforward, proxy), and pods/log's own
# text/plain before the serializer's types.
_CONNECTERS = frozenset({"exec", "attach", "portforward", "proxy"})
_PRODUCED_FIRST = {"log": ("text/plain",)}

METHOD_NOT_ALLOWED = "the server does not allow this method on the requested resource"
NOT_FOUND = "the server could not find the requested resource"


def builtin(resource: core_pb2.Resource) -> bool:
    """Whether go-restful serves the resource: a built-in kind (a registered message, no CRD schema)."""
    return bool(resource.proto_message) and not resource.json_schema


def generic(code: int, reason: str, message: str) -> meta_pb2.Status:
    """NewGenericServerResponse as kube's ServiceErrorHandler makes it: no resource, empty details."""
    status = failure(code, reason, message)
    status.details.SetInParent()
    return status


def not_found() -> meta_pb2.Status:
    return generic(404, "NotFound", NOT_FOUND)


def method_not_allowed() -> meta_pb2.Status:
    return generic(405, "MethodNotAllowed", METHOD_NOT_ALLOWED)


def resource_refusal(method: str, info: RequestInfo, headers: Mapping[str, str]) -> meta_pb2.Status | None:
    """route_refusal for a request to a built-in resource's route, by its method, verb and subresource. A request
    whose Accept the route takes reads no other header, unless it is a PATCH (its route consumes only the patch
    types)."""
    accept = headers.get("Accept")
    if method != "PATCH" and accepted(accept, info.verb, info.subresource):
        return None
    content_length = headers.get("Content-Length")
    has_body = None if content_length is None else _length(content_length) > 0
    return _resource_refusal(method, info.verb, info.subresource, headers.get("Content-Type"), has_body, accept)


@functools.lru_cache(maxsize=512)
def accepted(accept: str | None, verb: str, subresource: str) -> bool:
    """Whether the Accept header takes a type the route produces (kept as _resource_refusal is)."""
    return _resource_refusal("GET", verb, subresource, None, None, accept) is None


@functools.lru_cache(maxsize=512)
def _resource_refusal(method: str, verb: str, subresource: str, content_type: str | None, has_body: bool | None,
                      accept: str | None) -> meta_pb2.Status | None:
    """A pure function of a few headers clients repeat request after request: kept (bounded: the headers are
    the client's to choose), so a request pays a lookup. The Status it answers is shared: only read."""
    consumed = PATCH_TYPES if method == "PATCH" and subresource not in _CONNECTERS else ()
    if subresource in _CONNECTERS:
        produced: tuple[str, ...] = ("*/*",)
    else:
        first = _PRODUCED_FIRST.get(subresource, ())
        produced = (*first, *MEDIA_TYPES, *STREAM_TYPES) if verb in ("list", "watch") else (*first, *MEDIA_TYPES)
    return _refusal(method, content_type, has_body, accept, produced, consumed)


def route_refusal(method: str, content_type: str | None, content_length: str | None, accept: str | None,
                  produced: tuple[str, ...]) -> meta_pb2.Status | None:
    """go-restful's refusal of a request on a path and method its routes serve, or None when a route takes it;
    `content_length`: the header as sent (None: absent). For a route that consumes anything."""
    has_body = None if content_length is None else _length(content_length) > 0
    return _refusal(method, content_type, has_body, accept, produced, ())


def _refusal(method: str, content_type: str | None, has_body: bool | None, accept: str | None,
             produced: tuple[str, ...], consumed: tuple[str, ...]) -> meta_pb2.Status | None:
    """`consumed`: what the route consumes (empty: anything); `has_body`: a Content-Length above 0 (None: no
    such header)."""
    if consumed:
        sent = content_type or ("" if method in ("GET", "HEAD", "OPTIONS", "DELETE", "TRACE") else
                                "application/octet-stream")
        if sent and not _any_of(sent, consumed):
            if has_body:
                return generic(415, "UnsupportedMediaType", "415: Unsupported Media Type")
            return _none_acceptable(method, has_body, ())  # no route left for the Accept to pick from
    if "*/*" in produced or _accepts(accept or "*/*", produced):
        return None
    return _none_acceptable(method, has_body, produced)


def _none_acceptable(method: str, has_body: bool | None, produced: tuple[str, ...]) -> meta_pb2.Status:
    available = "Available representations: " + ", ".join(produced)
    if method in ("POST", "PUT", "PATCH") and has_body is None:
        return generic(415, "UnsupportedMediaType", "415: Unsupported Media Type\n\n" + available)
    return generic(406, "NotAcceptable", "406: Not Acceptable\n\n" + available)


def status_accept(accept: str | None) -> str | None:
    """The Accept header as kube's negotiation of a Status reads it: its media types compared exactly, so a
    clause naming one in other case (APPLICATION/YAML) offers nothing (gateway/negotiation.py is kinder to the
    requests it serves)."""
    if not accept:
        return accept
    kept = [clause for clause in accept.split(",") if clause.partition(";")[0] == clause.partition(";")[0].lower()]
    return ",".join(kept) if kept else "none/none"


def _types(header: str) -> list[str]:
    """A header's media types as go-restful reads them: split at commas, parameters dropped, spaces trimmed."""
    return [clause.partition(";")[0].strip(" ") for clause in header.split(",")]


def _accepts(accept: str, produced: tuple[str, ...]) -> bool:
    return any(kind == "*/*" or kind in produced for kind in _types(accept))


def _any_of(content_type: str, consumed: tuple[str, ...]) -> bool:
    return any(kind in consumed for kind in _types(content_type))


def _length(header: str | None) -> int:
    try:
        return int(header or "0")
    except ValueError:
        return 0
