"""One request's audit, stage by stage, as the guard (server/auth/guard.py) reports it.

The guard calls, in this order: Auditor.request() when the call arrives (the received timestamp), then either
unauthenticated() (a 401: kube's WithFailedAuthenticationAudit, one ResponseStarted event with an empty user and
"Authentication failed, ..." as the message) or received() with the authenticated user, which decides the level
by the policy and writes RequestReceived; then impersonated(), decided() (kube's authorization annotations), and
one ending: completed() with the response, failed() with the Status answered, or panicked(); a watch reports
started() when its stream opens and finished() when it ends.

Contracts:
- A RequestReceived event that cannot be written refuses the request with kube's 500 "failed to store audit
  event" before its verb runs: nothing passes unaudited. A later stage that cannot be written is logged
  (backend.py) and the answer stands: a write that was made stays acknowledged.
- At level None (no matching rule) every later call is a no-op.
- AuditedRequest is mutable and belongs to one call (kube's audit context); it is never shared.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson
from google.protobuf.message import Message

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes, Decision
from server.auth.audit import objects
from server.auth.audit.backend import Backend
from server.auth.audit.event import (
    Json,
    complete_object_ref,
    micro_time,
    object_ref,
    response_status,
    status_object,
    user_info,
)
from server.auth.audit.policy import NOT_AUDITED, Level, Policy
from server.auth.audit.policy import Decision as LevelDecision
from server.machinery import errors
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.registry.resources import Registry

SERVICE = "/capstan.core.v1.CoreService/"
DECISION = "authorization.k8s.io/decision"
# audit.k8s.io/v1 Event's field order up to the timestamps, which (and annotations) follow.
_ORDER = ("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "impersonatedUser",
          "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestObject", "responseObject")
REASON = "authorization.k8s.io/reason"


def _created(response: Message) -> bool:
    if isinstance(response, core_pb2.CreateResponse):
        return True
    return isinstance(response, (core_pb2.UpdateResponse, core_pb2.PatchResponse)) and response.created


class Auditor:
    """The policy and the backend; `registry` decodes protobuf objects for the Request levels."""

    def __init__(self, policy: Policy, backend: Backend, registry: Registry) -> None:
        self.policy = policy
        self.backend = backend
        self.registry = registry

    def request(self, method: str, credentials: Credentials, request: Message | None = None) -> AuditedRequest:
        """`method` is the CoreService method ("Create"): a direct gRPC call's requestURI."""
        return AuditedRequest(self, method, credentials, request)

    async def stop(self) -> None:
        self.backend.close()


class AuditedRequest:
    def __init__(self, auditor: Auditor, method: str, credentials: Credentials, request: Message | None) -> None:
        self._auditor = auditor
        self._credentials = credentials
        self._request = request
        self._method = method
        self._received = time.time()
        self._decision: LevelDecision = NOT_AUDITED
        self._event: Json = {}
        self._admitted = False
        self._ended = False

    def _start(self, attributes: Attributes, user: UserInfo | None) -> bool:
        """Build the event's fixed fields; False when the policy does not record this request."""
        self._decision = self._auditor.policy.decide(attributes, user)
        if self._decision.level is Level.NONE:
            return False
        credentials = self._credentials
        event: Json = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": self._decision.level.wire,
                       "auditID": str(uuid.uuid4()), "stage": "",
                       "requestURI": credentials.request_uri or SERVICE + self._method,
                       "verb": attributes.verb, "user": user_info(user)}
        if credentials.source_ip:
            event["sourceIPs"] = [credentials.source_ip]
        if credentials.user_agent:
            event["userAgent"] = credentials.user_agent
        ref = object_ref(attributes)
        if ref is not None:
            event["objectRef"] = ref
        self._event = event
        return True

    def _write(self, stage: str, *, at: float | None = None) -> bool:
        if stage in self._decision.omit_stages:
            return True
        event = self._event
        event["stage"] = stage
        out: Json = {key: event[key] for key in _ORDER if key in event}
        out["requestReceivedTimestamp"] = micro_time(self._received)
        out["stageTimestamp"] = micro_time(self._received if at is None else at)
        if "annotations" in event:
            out["annotations"] = event["annotations"]
        return self._auditor.backend.write(_line(out))

    def unauthenticated(self, attributes: Attributes) -> None:
        """A 401: the request proved nobody (the user stays empty)."""
        if not self._start(attributes, None):
            return
        self._event["responseStatus"] = response_status(401, message=_attempted(self._credentials))
        self._write("ResponseStarted", at=time.time())
        self._ended = True

    def received(self, attributes: Attributes, user: UserInfo) -> None:
        """The authenticated user's request arrived: RequestReceived, or a 500 ApiError when it can't be written."""
        if not self._start(attributes, user):
            return
        if not self._write("RequestReceived"):
            self._decision = NOT_AUDITED
            raise errors.internal("failed to store audit event")

    @property
    def recording(self) -> bool:
        return self._decision.level is not Level.NONE and not self._ended

    def impersonated(self, user: UserInfo) -> None:
        if self.recording:
            self._event["impersonatedUser"] = user_info(user)

    def decided(self, decision: Decision, reason: str) -> None:
        if not self.recording:
            return
        self._admitted = decision is Decision.ALLOW
        self._event["annotations"] = {DECISION: "allow" if self._admitted else "forbid", REASON: reason}

    def annotate(self, annotations: dict[str, str]) -> None:
        """Annotations admission added (`<webhook name>/<key>`); a key already set keeps its value, as kube's
        audit context keeps it."""
        if not self.recording or not annotations:
            return
        mine = self._event.setdefault("annotations", {})
        for key, value in annotations.items():
            mine.setdefault(key, value)

    def _log_request(self) -> None:
        """What kube logs once the handler has read the body: objectRef's missing parts, the object at Request."""
        if not self._admitted or self._request is None:
            return
        obj = objects.request_object(self._auditor.registry, self._request)
        if obj is None:
            return
        ref = self._event.get("objectRef")
        if isinstance(ref, dict) and isinstance(obj, dict) and not isinstance(self._request, core_pb2.PatchRequest):
            complete_object_ref(ref, obj)
        if self._decision.level >= Level.REQUEST:
            self._event["requestObject"] = self._trimmed(obj)

    def _trimmed(self, obj: Any) -> Any:
        return objects.without_managed_fields(obj) if self._decision.omit_managed_fields else obj

    def completed(self, response: Message) -> None:
        if not self.recording:
            return
        self._log_request()
        self._event["responseStatus"] = self._success_status(response)
        if self._decision.level >= Level.REQUEST_RESPONSE:
            obj = objects.response_object(self._auditor.registry, self._request, response)
            if obj is not None:
                self._event["responseObject"] = self._trimmed(obj)
        self._end("ResponseComplete")

    def _success_status(self, response: Message) -> Json:
        if isinstance(response, core_pb2.DeleteResponse) and response.HasField("status"):
            return response_status(200, response.status)
        return response_status(201 if _created(response) else 200)

    def failed(self, status: meta_pb2.Status) -> None:
        if not self.recording:
            return
        self._log_request()
        self._event["responseStatus"] = response_status(status.code, status)
        if self._decision.level >= Level.REQUEST_RESPONSE:
            self._event["responseObject"] = status_object(status)
        self._end("ResponseComplete")

    def panicked(self, err: BaseException) -> None:
        if not self.recording:
            return
        self._event["responseStatus"] = {"metadata": {}, "status": "Failure",
                                         "message": f"APIServer panic'd: {err}", "reason": "InternalError",
                                         "code": 500}
        self._end("Panic")

    def started(self) -> None:
        """A watch's stream opened (kube answers its 200 headers): ResponseStarted."""
        if not self.recording:
            return
        self._log_request()
        self._event["responseStatus"] = response_status(200)
        self._write("ResponseStarted", at=time.time())

    def finished(self) -> None:
        """A watch's stream ended, for whatever reason: ResponseComplete with the status it started with."""
        if self.recording:
            self._end("ResponseComplete")

    def _end(self, stage: str) -> None:
        self._ended = True
        self._write(stage, at=time.time())


def _attempted(credentials: Credentials) -> str:
    """kube's getAuthMethods: which credentials a request that failed authentication sent."""
    methods = [m for m, sent in (("bearer", credentials.token), ("x509", credentials.certificate)) if sent]
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


def _line(event: Json) -> bytes:
    """One JSON line as Go's encoding/json writes it (<, > and & escaped)."""
    data = orjson.dumps(event)
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026") + b"\n"
