"""The CoreService's methods as data: one table, read from the service's descriptor, that says what each method
is, so that the parts which make or answer its calls cannot disagree about it.

What the descriptor carries is read from it: the name, the request and response messages, whether the answer
is a stream, which request field holds the dryRun and fieldManager options, whether a GET can name a connect
verb. What it cannot carry is `_FACTS` below, one line per method: the verb it is authorized as and how the
guard finds what it names (kube's RequestInfo), whether it only reads (load shedding counts it read-only),
whether a gateway may send it again after its core died without answering (the pool's retry rule), whether
the Core runs it or the guard answers it itself, and whether audit records it.

The table drives the guard (server/auth/guard.py), the gRPC servicer (server/service/servicer.py), the gateway's
CoreClient and its transports (gateway/client.py, gateway/transport/, capstan/cli/inprocess.py). They name the
methods through `CoreMethods`, one typed attribute per method, checked against the table when this module is
imported: `client.get(request)` is `client.unary(<Get>, request)`, typed GetRequest -> GetResponse. Adding an
RPC is the proto, its line in `_FACTS` and its line in `CoreMethods` (and, for a method the Core runs, the
Core's verb).

Pure: imports only the standard library and generated code, so the gateway may import it.
"""

from __future__ import annotations

import abc
import enum
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, NamedTuple, TypeVar, overload

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message

from capstan.core.v1 import core_service_pb2 as core_pb2

SERVICE = core_pb2.DESCRIPTOR.services_by_name["CoreService"]

# RegisterDescriptors is authorized as creating this resource at the cluster scope: only admins hold that
# (cluster-admin's wildcards).
DESCRIPTORS_GROUP = "capstan.dev"
DESCRIPTORS_RESOURCE = "descriptors"


class Retry(enum.Enum):
    """Whether a call whose core died after the request may have reached it can be sent to another core
    (gateway/transport/pool.py holds the contract and the preconditions' tests)."""

    ALWAYS = "always"  # applying it twice is impossible or harmless: reads, content-addressed registrations
    DRY_RUN = "dry-run"  # only a dry run (dryRun=All)
    PRECONDITIONED = "preconditioned"  # a dry run, or a write whose precondition lets it apply at most once


class Scope(enum.Enum):
    """What a call names for authorization (kube's RequestInfo)."""

    OBJECT = "object"  # the request's path and path.name
    CREATE = "create"  # the request's path; the name only when it writes a subresource (pods/binding, .../token)
    SELECTED = "selected"  # the request's path; the name a `metadata.name=x` field selector limits it to
    COLLECTION = "collection"  # the request's path, no name
    PATH = "path"  # the non-resource path the request names (its verb too, when the method has none)
    API_ROOT = "api-root"  # the non-resource path /apis: every authenticated user may, by system:discovery
    DESCRIPTORS = "descriptors"  # resource DESCRIPTORS_RESOURCE in DESCRIPTORS_GROUP at the cluster scope
    # A request proxied to an extension API server: the resource its path names with the request's verb, or,
    # when it names none, its url_path as a non-resource request
    PROXIED = "proxied"
    METRICS = "metrics"  # the non-resource path /metrics, as kube-apiserver authorizes its scrape


class Authorization(NamedTuple):
    """What a call is authorized as, before the user is known: kube's authorizer.Attributes without the user,
    its fields in Attributes' order (server/auth/attributes.py adds the user). A NamedTuple, not a frozen
    dataclass: one is built per call, and a tuple is built in a fraction of the time."""

    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class Method:
    """One CoreService method. `verb` is "" when the request names the verb (Access asks about any verb); a
    request with a connect_verb field (Get) is authorized as that verb when it names one (pods/exec: create)."""

    name: str  # the proto's name, "DeleteCollection": what audit records as a direct gRPC call's requestURI
    python_name: str  # "delete_collection": the attribute of CoreMethods
    path: str  # "/capstan.core.v1.CoreService/DeleteCollection": the gRPC method path
    request: type[Message]
    response: type[Message]
    streaming: bool  # the response is a stream (Watch): long-running, never counted by load shedding
    verb: str
    scope: Scope
    read_only: bool  # kube's request_kind: only reads; load shedding counts every other call as mutating
    retry: Retry
    core: bool  # the Core runs it; False: the guard answers it itself (Access, IssuerDocument)
    audited: bool
    dry_run: str  # the request field whose message holds dryRun, "" when none
    field_manager: str  # the request field whose message holds fieldManager, "" when none
    connect: bool  # the request has a connect_verb

    def authorization(self, request: Any) -> Authorization:
        """What `request` (this method's request message) is authorized as."""
        scope = self.scope
        if scope is Scope.PATH:
            return Authorization(self.verb or request.verb, resource_request=False, path=request.path)
        if scope is Scope.API_ROOT:
            return Authorization(self.verb, resource_request=False, path="/apis")
        if scope is Scope.METRICS:
            return Authorization(self.verb, resource_request=False, path="/metrics")
        if scope is Scope.DESCRIPTORS:
            return Authorization(self.verb, api_group=DESCRIPTORS_GROUP, resource=DESCRIPTORS_RESOURCE)
        path = request.path
        if scope is Scope.PROXIED:
            if not path.resource:
                return Authorization(request.verb, resource_request=False, path=request.url_path)
            return Authorization(request.verb, api_group=path.group, api_version=path.version,
                                 resource=path.resource, subresource=path.subresource, namespace=path.namespace,
                                 name=path.name)
        if scope is Scope.OBJECT:
            name = path.name
        elif scope is Scope.CREATE:
            name = path.name if path.subresource else ""
        elif scope is Scope.SELECTED:
            name = selected_name(request.options.fieldSelector)
        else:
            name = ""
        verb = (request.connect_verb or self.verb) if self.connect else self.verb
        namespace = path.namespace
        if name and path.resource == "namespaces" and not path.group and path.name:
            # kube's RequestInfoFactory: /namespaces/{name}[/{subresource}] is in the namespace it names, so a
            # RoleBinding there may grant access to its own Namespace
            namespace = path.name
        return Authorization(verb, api_group=path.group, api_version=path.version, resource=path.resource,
                             subresource=path.subresource, namespace=namespace, name=name)


def selected_name(field_selector: str) -> str:
    """The name a list or watch is limited to by `metadata.name=x` (or ==), "" when none."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


@dataclass(frozen=True, slots=True)
class _Facts:
    verb: str
    scope: Scope
    read_only: bool
    retry: Retry
    core: bool = True
    audited: bool = True


_R, _W = True, False  # read_only

# What the descriptor cannot say, one line per CoreService method.
_FACTS = {
    "Create": _Facts("create", Scope.CREATE, _W, Retry.DRY_RUN),
    "Get": _Facts("get", Scope.OBJECT, _R, Retry.ALWAYS),
    "List": _Facts("list", Scope.SELECTED, _R, Retry.ALWAYS),
    "Update": _Facts("update", Scope.OBJECT, _W, Retry.PRECONDITIONED),
    "Patch": _Facts("patch", Scope.OBJECT, _W, Retry.PRECONDITIONED),
    "Delete": _Facts("delete", Scope.OBJECT, _W, Retry.PRECONDITIONED),
    "DeleteCollection": _Facts("deletecollection", Scope.COLLECTION, _W, Retry.DRY_RUN),
    "Watch": _Facts("watch", Scope.SELECTED, _R, Retry.ALWAYS),  # resumed, not resent (transport/resume.py)
    "Discover": _Facts("get", Scope.API_ROOT, _R, Retry.ALWAYS),
    "RegisterDescriptors": _Facts("create", Scope.DESCRIPTORS, _W, Retry.ALWAYS),  # stored by content hash
    "Access": _Facts("", Scope.PATH, _R, Retry.ALWAYS, core=False),  # the decision is the answer
    # The issuer's documents: served by the guard, which holds them; not audited.
    "IssuerDocument": _Facts("get", Scope.PATH, _R, Retry.ALWAYS, core=False, audited=False),
    # The decision to proxy and where to: answered by the guard with the caller it admitted. The proxied request
    # itself is neither a read nor a write of this core's, so it is counted by the gateway's HTTP limiter only.
    "Proxy": _Facts("", Scope.PROXIED, _R, Retry.ALWAYS, core=False, audited=False),
    # The core's own figures for a gateway's /metrics: answered by the guard; not audited (the gateway's Access
    # for /metrics is the scrape's audit event).
    "Metrics": _Facts("get", Scope.METRICS, _R, Retry.ALWAYS, core=False, audited=False),
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _options_field(request: Descriptor, option: str) -> str:
    """The request's field whose message has `option` (dryRun, fieldManager), "" when none."""
    for field in request.fields:
        if field.message_type is not None and option in field.message_type.fields_by_name:
            return str(field.name)
    return ""


def _method(descriptor: MethodDescriptor) -> Method:
    facts = _FACTS.get(descriptor.name)
    if facts is None:
        raise LookupError(f"CoreService method {descriptor.name} has no line in the method table "
                          "(server/machinery/methods.py)")
    request = descriptor.input_type
    return Method(name=descriptor.name, python_name=_snake(descriptor.name),
                  path=f"/{SERVICE.full_name}/{descriptor.name}",
                  request=message_factory.GetMessageClass(request),
                  response=message_factory.GetMessageClass(descriptor.output_type),
                  streaming=bool(descriptor.server_streaming), verb=facts.verb, scope=facts.scope,
                  read_only=facts.read_only, retry=facts.retry, core=facts.core, audited=facts.audited,
                  dry_run=_options_field(request, "dryRun"), field_manager=_options_field(request, "fieldManager"),
                  connect="connect_verb" in request.fields_by_name)


METHODS: tuple[Method, ...] = tuple(_method(descriptor) for descriptor in SERVICE.methods)
BY_NAME: dict[str, Method] = {method.name: method for method in METHODS}
BY_PYTHON_NAME: dict[str, Method] = {method.python_name: method for method in METHODS}
if stale := set(_FACTS) - set(BY_NAME):
    raise LookupError(f"the method table names methods the CoreService has not: {sorted(stale)}")


# The typed surface: classes that make or answer CoreService calls derive from Calls (the request alone:
# the gateway's clients) or CallsWith[A] (the request and one more argument: the guard, with the caller's
# credentials), implement `unary` and `stream`, and get one typed attribute per method from CoreMethods.

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)
A = TypeVar("A")


class Calls(abc.ABC):
    """Makes calls with the request alone: `obj.get(request)` awaits `obj.unary(<Get>, request)`."""

    @abc.abstractmethod
    def unary(self, method: Method, request: Any) -> Awaitable[Any]:
        """The response of a unary method."""

    @abc.abstractmethod
    def stream(self, method: Method, request: Any) -> AsyncIterator[Any]:
        """The responses of a streaming method."""


class CallsWith(abc.ABC, Generic[A]):
    """Answers calls with the request and one more argument: `obj.get(request, a)`."""

    @abc.abstractmethod
    def unary(self, method: Method, request: Any, arg: A, /) -> Awaitable[Any]:
        """The response of a unary method."""

    @abc.abstractmethod
    def stream(self, method: Method, request: Any, arg: A, /) -> Awaitable[AsyncIterator[Any]]:
        """The responses of a streaming method, once the call is admitted (a refusal raises before the first)."""


class _Attribute(Generic[Req, Resp]):
    """A method as an attribute of CoreMethods, bound to its table entry by its attribute name."""

    streaming = False

    def __init__(self, request: type[Req], response: type[Resp]) -> None:
        self._types = (request, response)
        self.method: Method | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        method = BY_PYTHON_NAME.get(name)
        if method is None:
            raise LookupError(f"CoreMethods.{name} is no CoreService method")
        if self._types != (method.request, method.response) or self.streaming != method.streaming:
            raise TypeError(f"CoreMethods.{name} is typed unlike the CoreService's {method.name}")
        self.method = method

    def _bound(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        return partial(obj.stream if self.streaming else obj.unary, self.method)


class Unary(_Attribute[Req, Resp]):
    @overload
    def __get__(self, obj: None, owner: type) -> Unary[Req, Resp]: ...

    @overload
    def __get__(self, obj: Calls, owner: type) -> Callable[[Req], Awaitable[Resp]]: ...

    @overload
    def __get__(self, obj: CallsWith[A], owner: type) -> Callable[[Req, A], Awaitable[Resp]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        return self._bound(obj, owner)


class Stream(_Attribute[Req, Resp]):
    streaming = True

    @overload
    def __get__(self, obj: None, owner: type) -> Stream[Req, Resp]: ...

    @overload
    def __get__(self, obj: Calls, owner: type) -> Callable[[Req], AsyncIterator[Resp]]: ...

    @overload
    def __get__(self, obj: CallsWith[A], owner: type) -> Callable[[Req, A], Awaitable[AsyncIterator[Resp]]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        return self._bound(obj, owner)


class CoreMethods:
    """Every CoreService method, typed (checked against METHODS below, when this module is imported)."""

    create = Unary(core_pb2.CreateRequest, core_pb2.CreateResponse)
    get = Unary(core_pb2.GetRequest, core_pb2.GetResponse)
    list = Unary(core_pb2.ListRequest, core_pb2.ListResponse)
    update = Unary(core_pb2.UpdateRequest, core_pb2.UpdateResponse)
    patch = Unary(core_pb2.PatchRequest, core_pb2.PatchResponse)
    delete = Unary(core_pb2.DeleteRequest, core_pb2.DeleteResponse)
    delete_collection = Unary(core_pb2.DeleteCollectionRequest, core_pb2.DeleteCollectionResponse)
    # Batches of events; refused (401/403) before the first batch.
    watch = Stream(core_pb2.WatchRequest, core_pb2.WatchResponse)
    discover = Unary(core_pb2.DiscoverRequest, core_pb2.DiscoverResponse)
    register_descriptors = Unary(core_pb2.RegisterDescriptorsRequest, core_pb2.RegisterDescriptorsResponse)
    # Whether the caller may make a request that names no resource: 401/403 if not.
    access = Unary(core_pb2.AccessRequest, core_pb2.AccessResponse)
    # Who the caller is and where its request to an aggregated group version goes: 401/403/404/503 if nowhere.
    proxy = Unary(core_pb2.ProxyRequest, core_pb2.ProxyResponse)
    # The service account issuer's discovery document at request.path (404 when none).
    issuer_document = Unary(core_pb2.IssuerDocumentRequest, core_pb2.IssuerDocumentResponse)
    # The core process's own metrics (the admission webhook metrics), Prometheus' text format.
    metrics = Unary(core_pb2.MetricsRequest, core_pb2.MetricsResponse)


def attributes(cls: type) -> dict[str, Method]:
    """The CoreService methods `cls` exposes as attributes, by python name."""
    found: dict[str, Method] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, _Attribute) and value.method is not None:
                found[name] = value.method
    return found


if missing := set(BY_PYTHON_NAME) - set(attributes(CoreMethods)):
    raise LookupError(f"CoreMethods lacks the CoreService methods {sorted(missing)}")


class Client(CoreMethods, Calls, abc.ABC):
    """Makes every CoreService call with the request alone (the gateway's clients)."""


class Answerer(CoreMethods, CallsWith[A], abc.ABC):
    """Answers every CoreService call with the request and one more argument (the guard: credentials)."""
