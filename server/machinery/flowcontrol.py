"""Which FlowSchema and priority level API Priority and Fairness classified a request into, carried from where the
core classifies it (the guard, server/auth/apf.py) to where the gateway answers it: kube-apiserver sends both
UIDs on every classified response as the X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID
headers, and clients (kube's e2e tests, `kubectl --v=8` readers) look for them.

A request's holder is installed where the request starts (the gateway's middleware; the gRPC servicer for each
call) and filled by `note` wherever the classification happens in that request's task or the tasks it starts:
the holder is one object shared by the context copies, so a watch's reader task fills the request's holder too.
Over gRPC the UIDs cross as metadata: trailing for a unary call, initial for a stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
_FLOW_SCHEMA_KEY = FLOW_SCHEMA_HEADER.lower()  # gRPC metadata keys are lower case
_PRIORITY_LEVEL_KEY = PRIORITY_LEVEL_HEADER.lower()


class Classified:
    """One request's classification: both UIDs, or neither (not classified: unauthenticated, or no
    configuration to match)."""

    __slots__ = ("flow_schema_uid", "priority_level_uid")

    def __init__(self) -> None:
        self.flow_schema_uid = ""
        self.priority_level_uid = ""

    def headers(self) -> dict[str, str]:
        if not self.flow_schema_uid:
            return {}
        return {FLOW_SCHEMA_HEADER: self.flow_schema_uid, PRIORITY_LEVEL_HEADER: self.priority_level_uid}

    def metadata(self) -> tuple[tuple[str, str], ...]:
        if not self.flow_schema_uid:
            return ()
        return (_FLOW_SCHEMA_KEY, self.flow_schema_uid), (_PRIORITY_LEVEL_KEY, self.priority_level_uid)


_CLASSIFIED: ContextVar[Classified | None] = ContextVar("capstan_apf_classified", default=None)


def begin() -> Classified:
    """A fresh holder for the request now starting in this task."""
    holder = Classified()
    _CLASSIFIED.set(holder)
    return holder


def current() -> Classified | None:
    """The holder of the request this task serves, if one was installed."""
    return _CLASSIFIED.get()


def note(flow_schema_uid: str, priority_level_uid: str) -> None:
    """Record the request's classification in its holder (nothing when no request installed one)."""
    holder = _CLASSIFIED.get()
    if holder is not None:
        holder.flow_schema_uid, holder.priority_level_uid = flow_schema_uid, priority_level_uid


def note_metadata(metadata: Iterable[tuple[str, str | bytes]] | None) -> None:
    """Record a classification that came as gRPC metadata (the core's answer to the split gateway)."""
    found = {key: value for key, value in metadata or () if key in (_FLOW_SCHEMA_KEY, _PRIORITY_LEVEL_KEY)}
    flow_schema, level = found.get(_FLOW_SCHEMA_KEY), found.get(_PRIORITY_LEVEL_KEY)
    if isinstance(flow_schema, str) and isinstance(level, str) and flow_schema:
        note(flow_schema, level)
