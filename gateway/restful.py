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


def produces(info: RequestInfo) -> tuple[str, ...]:
    """The media types the request's route produces."""
    if info.subresource in _CONNECTERS:
        return ("*/*",)
    first = _PRODUCED_FIRST.get(info.subresource, ())
    if info.verb in ("list", "watch"):
        return (*first, *MEDIA_TYPES, *STREAM_TYPES)
    return (*first, *MEDIA_TYPES)


def consumes(method: str, info: RequestInfo) -> tuple[str, ...]:
    """What the request's route consumes: a PATCH route the patch types, any other route (and a connecter's)
    anything."""
    return PATCH_TYPES if method == "PATCH" and info.subresource not in _CONNECTERS else ()


def route_refusal(method: str, content_type: str | None, content_length: str | None, accept: str | None,
                  produced: tuple[str, ...], consumed: tuple[str, ...] = ()) -> meta_pb2.Status | None:
    """go-restful's refusal of a request on a path and method its routes serve, or None when a route takes it.
    `consumed`: what the route consumes (empty: anything); `content_length`: the header as sent (None: absent)."""
    if consumed:
        sent = content_type or ("" if method in ("GET", "HEAD", "OPTIONS", "DELETE", "TRACE") else
                                "application/octet-stream")
        if sent and not _any_of(sent, consumed):
            if _length(content_length) > 0:
                return generic(415, "UnsupportedMediaType", "415: Unsupported Media Type")
            return _none_acceptable(method, content_length, ())  # no route left for the Accept to pick from
    if "*/*" in produced or _accepts(accept or "*/*", produced):
        return None
    return _none_acceptable(method, content_length, produced)


def _none_acceptable(method: str, content_length: str | None, produced: tuple[str, ...]) -> meta_pb2.Status:
    available = "Available representations: " + ", ".join(produced)
    if method in ("POST", "PUT", "PATCH") and content_length is None:
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
