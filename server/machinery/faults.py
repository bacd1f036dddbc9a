"""Fault injection's rules, for tests of clients' retry, back-off and re-list paths: which resource requests
(verb, group, resource, subresource, namespace, name) are answered with which kube-shaped failure (429 with
Retry-After, 500, 409, 410 Expired, 503, 504 Timeout, after an optional delay) instead of being served, and
the open watches ended on demand. Pure state and matching, shared by the transports that honour it: the HTTP
gateway (gateway/faults.py serves the admin API that edits the rules) and, in `capstan serve`, the gRPC
CoreService (server/service/servicer.py), both holding the same `Faults`.

Off unless `enabled` (--fault-injection): a disabled Faults never holds a rule.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from capstan.api.meta.v1 import meta_pb2

MAX_DELAY = 300.0  # seconds; a longer delay is refused as a likely mistake


class Target(Protocol):
    """What a rule matches a request by (the gateway's RequestInfo is one)."""

    @property
    def verb(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def subresource(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...


# kube's reason and message for each code it is asked to answer with (apimachinery's errors constructors and the
# filters that answer before a handler: APF's 429, the timeout filter's 504)
REASONS: Mapping[int, tuple[str, str]] = {
    400: ("BadRequest", "injected fault"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "injected fault"),
    404: ("NotFound", "the server could not find the requested resource"),
    409: ("Conflict", "Operation cannot be fulfilled on {what}: the object has been modified;"
                      " please apply your changes to the latest version and try again"),
    410: ("Expired", "too old resource version: {rv} ({rv})"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded"),
}
_MATCH_FIELDS = ("verb", "group", "resource", "subresource", "namespace", "name")


class FaultError(ValueError):
    """A rule or a match the admin API refuses (answered 400)."""


@dataclass(frozen=True)
class Match:
    """Which resource requests: "" matches any value (so does "*")."""

    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def matches(self, info: Target) -> bool:
        return all(not want or want == getattr(info, key) for key, want in (
            ("verb", self.verb), ("group", self.group), ("resource", self.resource),
            ("subresource", self.subresource), ("namespace", self.namespace), ("name", self.name)))

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Match:
        values = {}
        for key in _MATCH_FIELDS:
            value = body.get(key, "")
            if not isinstance(value, str):
                raise FaultError(f"{key}: expected a string")
            values[key] = "" if value == "*" else value
        return cls(**values)


@dataclass(frozen=True)
class Rule:
    """An answer for the next `count` matching requests (0: all of them)."""

    match: Match
    code: int
    count: int = 1
    retry_after_seconds: int = 1
    delay_seconds: float = 0.0
    message: str = ""
    id: str = ""

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Rule:
        known = {*_MATCH_FIELDS, "code", "count", "retryAfterSeconds", "delaySeconds", "message", "id", "hits"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise FaultError(f"unknown fields: {', '.join(unknown)}")
        code, count = body.get("code"), body.get("count", 1)
        retry, delay = body.get("retryAfterSeconds", 1), body.get("delaySeconds", 0)
        if not isinstance(code, int) or code not in REASONS:
            raise FaultError(f"code: one of {', '.join(map(str, REASONS))}")
        if not isinstance(count, int) or count < 0:
            raise FaultError("count: a number of requests, 0 for every one")
        if not isinstance(retry, int) or retry < 0:
            raise FaultError("retryAfterSeconds: whole seconds")
        if not isinstance(delay, int | float) or not 0 <= delay <= MAX_DELAY:
            raise FaultError(f"delaySeconds: 0 to {MAX_DELAY:g}")
        message = body.get("message", "")
        if not isinstance(message, str):
            raise FaultError("message: a string")
        return cls(Match.of(body), code, count, retry, float(delay), message)

    def as_dict(self, hits: int) -> dict[str, Any]:
        match = {f.name: getattr(self.match, f.name) for f in fields(self.match) if getattr(self.match, f.name)}
        return {"id": self.id, **match, "code": self.code, "count": self.count,
                "retryAfterSeconds": self.retry_after_seconds, "delaySeconds": self.delay_seconds,
                "message": self.message, "hits": hits}

    def status(self, info: Target, resource_version: str) -> meta_pb2.Status:
        reason, default = REASONS[self.code]
        what = f'{info.resource} "{info.name}"' if info.name else info.resource
        status = meta_pb2.Status(status="Failure", reason=reason, code=self.code,
                                 message=self.message or default.format(what=what, rv=resource_version or "0"))
        status.metadata.SetInParent()
        if self.code in (409, 429, 503, 504) or info.name:
            status.details.SetInParent()
        if info.name:
            status.details.name, status.details.group = info.name, info.group
            status.details.kind = info.resource
        if self.code in (429, 503) and self.retry_after_seconds:
            status.details.retryAfterSeconds = self.retry_after_seconds
        return status


@dataclass
class OpenWatch:
    """A watch whose answer has started, as `Faults.watching` registers it."""

    info: Target
    task: asyncio.Task[Any] | None
    dropped: bool = False


@dataclass
class Faults:
    """The rules of one gateway process and its open watches; `enabled` is --fault-injection."""

    enabled: bool = False
    _rules: list[Rule] = field(default_factory=list)
    _hits: dict[str, int] = field(default_factory=dict)
    _open: dict[int, OpenWatch] = field(default_factory=dict)
    _next: int = 1

    @property
    def active(self) -> bool:
        """Whether any rule may answer (a request's cost when none is: this one check)."""
        return bool(self._rules)

    def add(self, rule: Rule) -> Rule:
        stored = replace(rule, id=str(self._next))
        self._next += 1
        self._rules.append(stored)
        self._hits[stored.id] = 0
        return stored

    def remove(self, rule_id: str | None = None) -> int:
        before = len(self._rules)
        self._rules = [r for r in self._rules if rule_id is not None and r.id != rule_id]
        self._hits = {r.id: self._hits[r.id] for r in self._rules}
        return before - len(self._rules)

    def listed(self) -> list[dict[str, Any]]:
        return [r.as_dict(self._hits[r.id]) for r in self._rules]

    def take(self, info: Target) -> Rule | None:
        """The rule that answers this request, its hit counted; a rule whose count is spent answers no more."""
        for rule in self._rules:
            hits = self._hits[rule.id]
            if (rule.count == 0 or hits < rule.count) and rule.match.matches(info):
                self._hits[rule.id] = hits + 1
                return rule
        return None

    @contextlib.contextmanager
    def watching(self, info: Target) -> Iterator[OpenWatch]:
        """Registers a watch whose answer has started, so `drop` can end it; `.dropped` tells the watch why it
        was cancelled."""
        entry = OpenWatch(info, asyncio.current_task() if self.enabled else None)
        key = id(entry)
        if self.enabled:
            self._open[key] = entry
        try:
            yield entry
        finally:
            self._open.pop(key, None)

    def drop(self, match: Match) -> int:
        dropped = 0
        for entry in list(self._open.values()):
            if not entry.dropped and entry.task is not None and match.matches(entry.info):
                entry.dropped = True
                entry.task.cancel()
                dropped += 1
        return dropped


