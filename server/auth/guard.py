"""The security chain in front of the core's verbs: every CoreService call, from gRPC clients and from the
in-process gateway alike, is authenticated, impersonated and authorized here before its verb runs.

Order (kube-apiserver's DefaultBuildHandlerChain, as executed): authentication -> audit -> impersonation ->
authorization -> the verb. With an auditor (server/auth/audit/) each call reports its stages to it: 401s as
kube's failed-authentication event, RequestReceived once the user is known, the decision, then how it ended (a
watch: when its stream opens and when it ends), with the audit annotations admission added while the verb ran
(server/objects/admitting.py); without one the chain pays one `is None` test.

A request that proves nobody is 401; one the authorizer does not allow is 403 with
kube's wording (errors.py). While the verb runs, caller.current() is the request's user and authorizer, for
the parts of the core that decide by who asks (escalation checks, reviews, token requests).

What each call is authorized as (kube's RequestInfo), whether it is audited, and whether the Core runs it or
the guard answers it itself, is the CoreService method table's (server/machinery/methods.py); the guard has one
path for every unary method and one for every stream, and gets each method's typed attribute
(`guard.create(request, credentials)`) from the table.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from google.protobuf.message import Message
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth import caller as current_caller
from server.auth.apf import Classifier
from server.auth.attributes import Attributes, Decision
from server.auth.audit.auditor import AuditedRequest, Auditor
from server.auth.authn import RequestAuthenticator
from server.auth.authorizer import AlwaysAllow, Authorizer, decide, synchronous
from server.auth.errors import Unauthorized, forbidden, unauthorized
from server.auth.impersonation import impersonate
from server.auth.serviceaccounts import oidc
from server.auth.serviceaccounts.oidc import Documents
from server.callouts import metrics as webhook_metrics
from server.machinery import apimetrics, errors, flowcontrol, tracing
from server.machinery.credentials import Credentials
from server.machinery.methods import METHODS, Answerer, Authorization, Method
from server.machinery.user import ANONYMOUS_USER, UNSECURED, UserInfo
from server.machinery.workerpeers import Peers, server_figures
from server.objects import admitting, aggregated
from server.objects.core import Core

Answer = Callable[[Any], Awaitable[Message]]

FIGURES_KIND = "rpc"  # what the Metrics call answers, as the other workers ask for it


class Constant:
    """Every request is one user whatever it sends (--insecure: system:unsecured)."""

    def __init__(self, user: UserInfo) -> None:
        self._user = user

    async def authenticate(self, credentials: Credentials) -> UserInfo:
        return self._user


def _attributes(user: UserInfo, asked: Authorization) -> Attributes:
    return Attributes(user, *asked)  # Authorization's fields are Attributes' after the user, in order


class GuardedCore(Answerer[Credentials]):
    """Core's verbs behind the chain: the same request messages, plus the caller's credentials."""

    auditor: Auditor | None = None  # set by start_security when --audit-policy-file asks for audit
    classifier: Classifier | None = None  # API Priority and Fairness (server/auth/apf.py), set by start_core
    peers: Peers | None = None  # the other workers of this server, whose figures the Metrics call adds (share_figures)
    # Where Proxy sends a request: through the core by default; start_core installs the aggregation
    # controller's, which reads its informers' caches.
    locator: aggregated.Locator

    def __init__(self, core: Core, authenticator: RequestAuthenticator, authorizer: Authorizer,
                 documents: Documents | None = None, audiences: tuple[str, ...] = ()) -> None:
        self.core = core
        self.authenticator = authenticator
        self.authorizer = authorizer
        self._synchronous = synchronous(authorizer)  # its decisions need no awaiting
        self.audiences = audiences  # the API audiences: what a TokenReview without spec.audiences asks for
        self.documents = documents  # the service account issuer's, when this server issues tokens
        self.locator = aggregated.StoreLocator(core)
        # What answers each unary method once a call is admitted: the Core's verb, or the guard's own answer.
        own: dict[str, Answer] = {"Access": _granted, "IssuerDocument": self._issuer_document,
                                  "Proxy": self._proxy, "Metrics": self._metrics}
        self._answers: dict[str, Answer] = {
            method.name: getattr(core, method.python_name) if method.core else own[method.name]
            for method in METHODS if not method.streaming}

    def share_figures(self, peers: Peers) -> None:
        """Answer the Metrics call for every worker of this server, and give the others this worker's."""
        self.peers = peers
        peers.provide(FIGURES_KIND, _own_figures)

    async def _metrics(self, request: core_pb2.MetricsRequest) -> core_pb2.MetricsResponse:
        data = await server_figures(await _own_figures(), self.peers, FIGURES_KIND)
        return core_pb2.MetricsResponse(content_type=CONTENT_TYPE_LATEST, data=data)

    async def _authenticate(self, credentials: Credentials) -> UserInfo:
        """The authenticator's answer, counted and timed as kube's authentication_attempts{result}."""
        started = time.perf_counter()
        result = "error"
        try:
            user = await self.authenticator.authenticate(credentials)
            result = "success"
            return user
        except Unauthorized:
            result = "failure"
            raise
        finally:
            apimetrics.authenticated(result, time.perf_counter() - started)

    async def user(self, credentials: Credentials) -> UserInfo:
        """Who the credentials prove, impersonation applied (401/403 ApiError when not allowed)."""
        try:
            user = await self._authenticate(credentials)
        except Unauthorized:
            raise unauthorized() from None
        if not credentials.impersonation.requested:  # impersonate's own first answer, without its coroutine
            return user
        return await impersonate(user, credentials.impersonation, self.authorizer)

    async def _audited_user(self, credentials: Credentials, attributes: Callable[[UserInfo], Attributes],
                            audit: AuditedRequest) -> UserInfo:
        """user(), telling audit who authenticated (or that nobody did) before impersonation, where kube's audit
        filter sits: the event's user is the authenticated one, impersonatedUser the one the request runs as."""
        try:
            authenticated = await self._authenticate(credentials)
        except Unauthorized:
            audit.unauthenticated(attributes(ANONYMOUS_USER))
            raise unauthorized() from None
        audit.received(attributes(authenticated), authenticated)
        user = await impersonate(authenticated, credentials.impersonation, self.authorizer)
        if user is not authenticated:
            audit.impersonated(user)
        return user

    async def _admit(self, credentials: Credentials, attributes: Callable[[UserInfo], Attributes],
                     audit: AuditedRequest | None = None) -> UserInfo:
        with tracing.span("Authentication"):
            if audit is None:
                user = await self.user(credentials)
            else:
                user = await self._audited_user(credentials, attributes, audit)
        wanted = attributes(user)
        if self.classifier is not None:  # kube's APF filter: after impersonation, before authorization
            classified = self.classifier.classify(wanted)
            if classified is not None:
                flowcontrol.note(*classified)
        with tracing.span("Authorization"):
            if self._synchronous:
                decision, reason = self.authorizer.authorize(wanted)
            else:
                decision, reason = await decide(self.authorizer, wanted)
        if audit is not None:
            audit.decided(decision, reason)
        if decision is not Decision.ALLOW:
            raise forbidden(wanted, reason)
        return user

    def _audit(self, method: Method, request: Message, credentials: Credentials) -> AuditedRequest | None:
        if self.auditor is None or not method.audited:
            return None
        return self.auditor.request(method.name, credentials, request)

    def answer(self, method: Method, request: Any) -> Awaitable[Message]:
        """A unary method's answer without the chain: for the server's own parts (the in-process gateway's own
        calls), which may do anything."""
        return self._answers[method.name](request)

    def answer_stream(self, method: Method, request: Any) -> AsyncIterator[Message]:
        """A streaming method's responses without the chain (see answer)."""
        stream: AsyncIterator[Message] = getattr(self.core, method.python_name)(request)
        return stream

    async def unary(self, method: Method, request: Any, credentials: Credentials, /) -> Any:
        asked = method.authorization(request)

        def attributes(user: UserInfo) -> Attributes:
            return _attributes(user, asked)

        audit = self._audit(method, request, credentials)
        annotations: dict[str, str] = {}
        try:
            user = await self._admit(credentials, attributes, audit)
            token = current_caller.bind(current_caller.Caller(user, self.authorizer, self.authenticator,
                                                              self.audiences))
            collecting = admitting.collecting_audit(annotations) if audit is not None else None
            try:
                response = await self._answers[method.name](request)
            finally:
                if collecting is not None:
                    admitting.released_audit(collecting)
                current_caller.unbind(token)
        except errors.ApiError as err:
            if audit is not None:
                audit.annotate(annotations)
                audit.failed(err.status)
            raise
        except Exception as err:
            if audit is not None:
                audit.annotate(annotations)
                audit.panicked(err)
            raise
        if audit is not None:
            audit.annotate(annotations)
            audit.completed(response)
        return response

    async def stream(self, method: Method, request: Any, credentials: Credentials, /) -> AsyncIterator[Any]:
        """The core's stream, authorized when it opens (401/403 before the first response)."""
        asked = method.authorization(request)
        audit = self._audit(method, request, credentials)
        try:
            await self._admit(credentials, lambda user: _attributes(user, asked), audit)
        except errors.ApiError as err:
            if audit is not None:
                audit.failed(err.status)
            raise
        if audit is None:
            return self.answer_stream(method, request)
        audit.started()
        return _audited_stream(self.answer_stream(method, request), audit)

    async def _issuer_document(self, request: core_pb2.IssuerDocumentRequest) -> core_pb2.IssuerDocumentResponse:
        docs = self.documents
        if docs is not None and request.path == oidc.CONFIGURATION_PATH:
            return core_pb2.IssuerDocumentResponse(content_type=oidc.CONFIGURATION_TYPE, data=docs.configuration)
        if docs is not None and request.path == oidc.JWKS_PATH:
            return core_pb2.IssuerDocumentResponse(content_type=oidc.JWKS_TYPE, data=docs.jwks)
        raise errors.resource_not_found()

    async def _proxy(self, request: core_pb2.ProxyRequest) -> core_pb2.ProxyResponse:
        """The admitted caller and the backend of the group version the request names (server/objects/
        aggregated.py): what the gateway needs to proxy it as kube-aggregator does."""
        backend = await self.locator.locate(request.path.group, request.path.version)
        user = current_caller.current().user
        answer = core_pb2.ProxyResponse(
            user=user.name, groups=user.groups, host=backend.host, port=backend.port,
            server_name=backend.server_name, ca_bundle=backend.ca_bundle,
            insecure_skip_tls_verify=backend.insecure_skip_tls_verify)
        for key, values in user.extra:
            answer.extra.add(key=key, values=values)
        return answer


async def _granted(request: core_pb2.AccessRequest) -> core_pb2.AccessResponse:
    return core_pb2.AccessResponse()


async def _own_figures(argument: bytes = b"") -> bytes:
    """This process's admission webhook metrics (server/callouts/metrics.py) and its core figures
    (server/machinery/apimetrics.py's REGISTRY: authentication, admission, watches, leader election), as
    kube-apiserver's /metrics carries them."""
    return generate_latest(webhook_metrics.REGISTRY) + generate_latest(apimetrics.REGISTRY)


async def _audited_stream(stream: AsyncIterator[Message], audit: AuditedRequest) -> AsyncIterator[Message]:
    """The stream, its ResponseComplete written when it ends: drained, failed, or closed by the client."""
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
