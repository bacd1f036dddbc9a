"""The security chain in front of the core's verbs: every CoreService call, from gRPC clients and from the
in-process gateway alike, is authenticated, impersonated and authorized here before its verb runs.

Order (kube-apiserver's DefaultBuildHandlerChain, as executed): authentication -> audit -> impersonation ->
authorization -> the verb. With an auditor (server/auth/audit/) each call reports its stages to it: 401s as
kube's failed-authentication event, RequestReceived once the user is known, the decision, then how it ended (a
watch: when its stream opens and when it ends); without one the chain pays one `is None` test.

A request that proves nobody is 401; one the authorizer does not allow is 403 with
kube's wording (errors.py). While the verb runs, caller.current() is the request's user and authorizer, for
the parts of the core that decide by who asks (escalation checks, reviews, token requests).

What each call is authorized as (kube's RequestInfo):
- Create/Get/Update/Patch/Delete: the verb on the path's group/resource/subresource, namespace and name
  (a Create names no object unless it writes a subresource: pods/binding, serviceaccounts/token).
- List/Watch: list/watch; a field selector `metadata.name=x` names the object, as kube's RequestInfo does.
- DeleteCollection: deletecollection. Discover: `get` on the non-resource path /apis (every authenticated user
  may, by system:discovery). Access: the verb and path it asks about.
- RegisterDescriptors: `create` on resource "descriptors" in group "capstan.dev" at the cluster scope: only
  admins hold that (cluster-admin's wildcards).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

from google.protobuf.message import Message

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth import caller as current_caller
from server.auth.attributes import Attributes, Decision
from server.auth.audit.auditor import AuditedRequest, Auditor
from server.auth.authorizer import AlwaysAllow, Authorizer
from server.auth.errors import Unauthorized, forbidden, unauthorized
from server.auth.impersonation import impersonate
from server.auth.serviceaccounts import oidc
from server.auth.serviceaccounts.oidc import Documents
from server.machinery import errors
from server.machinery.credentials import Credentials
from server.machinery.user import ANONYMOUS_USER, UNSECURED, UserInfo
from server.objects.core import Core

Resp = TypeVar("Resp")

DESCRIPTORS_GROUP = "capstan.dev"


class Authenticator(Protocol):
    async def authenticate(self, credentials: Credentials) -> UserInfo:
        """The request's user, or Unauthorized."""
        ...


class Constant:
    """Every request is one user whatever it sends (--insecure: system:unsecured)."""

    def __init__(self, user: UserInfo) -> None:
        self._user = user

    async def authenticate(self, credentials: Credentials) -> UserInfo:
        return self._user


def _path_attributes(user: UserInfo, verb: str, path: core_pb2.ResourcePath, name: str) -> Attributes:
    return Attributes(user, verb, api_group=path.group, api_version=path.version, resource=path.resource,
                      subresource=path.subresource, namespace=path.namespace, name=name)


def _selected_name(field_selector: str) -> str:
    """The name a list or watch is limited to by `metadata.name=x` (or ==), "" when none."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


class GuardedCore:
    """Core's verbs behind the chain: the same request messages, plus the caller's credentials."""

    auditor: Auditor | None = None  # set by start_security when --audit-policy-file asks for audit

    def __init__(self, core: Core, authenticator: Authenticator, authorizer: Authorizer,
                 documents: Documents | None = None, audiences: tuple[str, ...] = ()) -> None:
        self.core = core
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.audiences = audiences  # the API audiences: what a TokenReview without spec.audiences asks for
        self.documents = documents  # the service account issuer's, when this server issues tokens

    async def user(self, credentials: Credentials) -> UserInfo:
        """Who the credentials prove, impersonation applied (401/403 ApiError when not allowed)."""
        try:
            user = await self.authenticator.authenticate(credentials)
        except Unauthorized:
            raise unauthorized() from None
        return impersonate(user, credentials.impersonation, self.authorizer)

    async def _audited_user(self, credentials: Credentials, attributes: Callable[[UserInfo], Attributes],
                            audit: AuditedRequest) -> UserInfo:
        """user(), telling audit who authenticated (or that nobody did) before impersonation, where kube's audit
        filter sits: the event's user is the authenticated one, impersonatedUser the one the request runs as."""
        try:
            authenticated = await self.authenticator.authenticate(credentials)
        except Unauthorized:
            audit.unauthenticated(attributes(ANONYMOUS_USER))
            raise unauthorized() from None
        audit.received(attributes(authenticated), authenticated)
        user = impersonate(authenticated, credentials.impersonation, self.authorizer)
        if user is not authenticated:
            audit.impersonated(user)
        return user

    async def _admit(self, credentials: Credentials, attributes: Callable[[UserInfo], Attributes],
                     audit: AuditedRequest | None = None) -> UserInfo:
        if audit is None:
            user = await self.user(credentials)
        else:
            user = await self._audited_user(credentials, attributes, audit)
        wanted = attributes(user)
        decision, reason = self.authorizer.authorize(wanted)
        if audit is not None:
            audit.decided(decision, reason)
        if decision is not Decision.ALLOW:
            raise forbidden(wanted, reason)
        return user

    async def _unary(self, credentials: Credentials, attributes: Callable[[UserInfo], Attributes],
                     call: Callable[[], Awaitable[Resp]], *, method: str, request: Message | None = None) -> Resp:
        """`method` is the CoreService method's name, what audit records as a direct gRPC call's requestURI."""
        audit = None if self.auditor is None else self.auditor.request(method, credentials, request)
        try:
            user = await self._admit(credentials, attributes, audit)
            token = current_caller.bind(current_caller.Caller(user, self.authorizer, self.authenticator,
                                                              self.audiences))
            try:
                response = await call()
            finally:
                current_caller.unbind(token)
        except errors.ApiError as err:
            if audit is not None:
                audit.failed(err.status)
            raise
        except Exception as err:
            if audit is not None:
                audit.panicked(err)
            raise
        if audit is not None and isinstance(response, Message):
            audit.completed(response)
        return response

    async def _on_path(self, credentials: Credentials, verb: str, request: Any, name: str,
                       call: Callable[[], Awaitable[Resp]], *, method: str) -> Resp:
        """A verb on the request's path and `name` (kube's RequestInfo for a resource request)."""
        return await self._unary(credentials, lambda u: _path_attributes(u, verb, request.path, name), call,
                                 method=method, request=request)

    async def create(self, request: core_pb2.CreateRequest, credentials: Credentials) -> core_pb2.CreateResponse:
        name = request.path.name if request.path.subresource else ""
        return await self._on_path(credentials, "create", request, name, lambda: self.core.create(request),
                                   method="Create")

    async def get(self, request: core_pb2.GetRequest, credentials: Credentials) -> core_pb2.GetResponse:
        return await self._on_path(credentials, request.connect_verb or "get", request, request.path.name,
                                   lambda: self.core.get(request), method="Get")

    async def list(self, request: core_pb2.ListRequest, credentials: Credentials) -> core_pb2.ListResponse:
        name = _selected_name(request.options.fieldSelector)
        return await self._on_path(credentials, "list", request, name, lambda: self.core.list(request),
                                   method="List")

    async def update(self, request: core_pb2.UpdateRequest, credentials: Credentials) -> core_pb2.UpdateResponse:
        return await self._on_path(credentials, "update", request, request.path.name,
                                   lambda: self.core.update(request), method="Update")

    async def patch(self, request: core_pb2.PatchRequest, credentials: Credentials) -> core_pb2.PatchResponse:
        return await self._on_path(credentials, "patch", request, request.path.name,
                                   lambda: self.core.patch(request), method="Patch")

    async def delete(self, request: core_pb2.DeleteRequest, credentials: Credentials) -> core_pb2.DeleteResponse:
        return await self._on_path(credentials, "delete", request, request.path.name,
                                   lambda: self.core.delete(request), method="Delete")

    async def delete_collection(self, request: core_pb2.DeleteCollectionRequest,
                                credentials: Credentials) -> core_pb2.DeleteCollectionResponse:
        return await self._on_path(credentials, "deletecollection", request, "",
                                   lambda: self.core.delete_collection(request), method="DeleteCollection")

    async def discover(self, request: core_pb2.DiscoverRequest,
                       credentials: Credentials) -> core_pb2.DiscoverResponse:
        return await self._unary(credentials, lambda u: Attributes(u, "get", resource_request=False, path="/apis"),
                                 lambda: self.core.discover(request),
                                 method="Discover", request=request)

    async def register_descriptors(self, request: core_pb2.RegisterDescriptorsRequest,
                                   credentials: Credentials) -> core_pb2.RegisterDescriptorsResponse:
        return await self._unary(credentials,
                                 lambda u: Attributes(u, "create", api_group=DESCRIPTORS_GROUP, resource="descriptors"),
                                 lambda: self.core.register_descriptors(request),
                                 method="RegisterDescriptors", request=request)

    async def access(self, request: core_pb2.AccessRequest, credentials: Credentials) -> core_pb2.AccessResponse:
        return await self._unary(credentials,
                                 lambda u: Attributes(u, request.verb, resource_request=False, path=request.path),
                                 _granted, method="Access")

    async def issuer_document(self, request: core_pb2.IssuerDocumentRequest,
                              credentials: Credentials) -> core_pb2.IssuerDocumentResponse:
        await self._admit(credentials, lambda u: Attributes(u, "get", resource_request=False, path=request.path))
        docs = self.documents
        if docs is not None and request.path == oidc.CONFIGURATION_PATH:
            return core_pb2.IssuerDocumentResponse(content_type=oidc.CONFIGURATION_TYPE, data=docs.configuration)
        if docs is not None and request.path == oidc.JWKS_PATH:
            return core_pb2.IssuerDocumentResponse(content_type=oidc.JWKS_TYPE, data=docs.jwks)
        raise errors.resource_not_found()

    async def watch(self, request: core_pb2.WatchRequest,
                    credentials: Credentials) -> AsyncIterator[core_pb2.WatchResponse]:
        """The core's watch stream, authorized when it opens (401/403 before the first event)."""
        name = _selected_name(request.options.fieldSelector)
        audit = None if self.auditor is None else self.auditor.request("Watch", credentials, request)
        try:
            await self._admit(credentials, lambda u: _path_attributes(u, "watch", request.path, name), audit)
        except errors.ApiError as err:
            if audit is not None:
                audit.failed(err.status)
            raise
        if audit is None:
            return self.core.watch(request)
        audit.started()
        return _audited_stream(self.core.watch(request), audit)


async def _granted() -> core_pb2.AccessResponse:
    return core_pb2.AccessResponse()


async def _audited_stream(stream: AsyncIterator[core_pb2.WatchResponse],
                          audit: AuditedRequest) -> AsyncIterator[core_pb2.WatchResponse]:
    """The watch's stream, its ResponseComplete written when it ends: drained, failed, or closed by the client."""
    try:
        async for response in stream:
            yield response
    finally:
        try:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        finally:
            audit.finished()


def unguarded(core: Core) -> GuardedCore:
    """Every call as system:unsecured, everything allowed: the --insecure mode's chain."""
    return GuardedCore(core, Constant(UNSECURED), AlwaysAllow())
