"""What the code under test asked the API server, read from the server's audit log, with assertions over it —
the request log that kmock users assert on, taken from a real server's audit stream rather than a fake's.

The server the plugin starts writes every request at level Metadata (AUDIT_POLICY) to `<data dir>-audit.log`,
one audit.k8s.io/v1 Event per line, written before the answer goes out, so a request the test has had its answer
to is already in the file. A RequestLog starts at the file's end when made; it reads one Request per audit ID
(its latest stage: ResponseComplete, or ResponseStarted for a watch still open). Requests made by the plugin's
own fixtures (User-Agent PLUGIN_AGENT) are left out, so setup and cleanup do not blur what the test asserts.

A request answered by a fault rule (`capstan_faults`) never reaches the core, so it is not in this log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

PLUGIN_AGENT = "capstan-pytest"  # the User-Agent of the plugin's own admin client
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""


@dataclass(frozen=True)
class Request:
    """One request as audit recorded it. `code` is the answer's HTTP status (0 while a watch is open)."""

    verb: str
    uri: str
    user: str
    code: int
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    user_agent: str = ""
    groups: tuple[str, ...] = ()
    stage: str = ""

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Request:
        ref = event.get("objectRef") or {}
        user = event.get("user") or {}
        return cls(verb=event.get("verb", ""), uri=event.get("requestURI", ""), user=user.get("username", ""),
                   code=int((event.get("responseStatus") or {}).get("code", 0)), group=ref.get("apiGroup", ""),
                   version=ref.get("apiVersion", ""), resource=ref.get("resource", ""),
                   subresource=ref.get("subresource", ""), namespace=ref.get("namespace", ""),
                   name=ref.get("name", ""), user_agent=event.get("userAgent", ""),
                   groups=tuple(user.get("groups", ())), stage=event.get("stage", ""))

    def matches(self, match: Mapping[str, Any]) -> bool:
        return all(getattr(self, key) == want for key, want in match.items())

    def __str__(self) -> str:
        return f"{self.verb} {self.uri} -> {self.code or 'open'} ({self.user})"


_FIELDS = frozenset(f.name for f in fields(Request))


class RequestLog:
    """The requests made since it was made (or last cleared), in the order the server finished them."""

    def __init__(self, audit_log: Path, *, include_plugin: bool = False) -> None:
        self._path = audit_log
        self._include_plugin = include_plugin
        self._offset = self._size()

    def _size(self) -> int:
        try:
            return self._path.stat().st_size
        except FileNotFoundError:
            return 0

    def clear(self) -> None:
        """Forget what was made so far: later assertions see only later requests."""
        self._offset = self._size()

    def all(self) -> list[Request]:
        latest: dict[str, Request] = {}
        for event in self._events():
            request = Request.of(event)
            if self._include_plugin or not request.user_agent.startswith(PLUGIN_AGENT):
                latest.pop(event.get("auditID", ""), None)  # re-inserted: ordered by its latest stage
                latest[event.get("auditID", "")] = request
        return list(latest.values())

    def _events(self) -> Iterator[Mapping[str, Any]]:
        try:
            with self._path.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return
        for line in data.splitlines():
            if line.strip():
                yield json.loads(line)

    def __iter__(self) -> Iterator[Request]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self.all())

    def find(self, **match: Any) -> list[Request]:
        """The requests whose fields (verb=, resource=, name=, namespace=, group=, subresource=, user=, code=,
        ...) all equal the given values."""
        unknown = sorted(set(match) - _FIELDS)
        if unknown:
            raise TypeError(f"no such request field: {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")
        return [r for r in self.all() if r.matches(match)]

    def assert_called(self, times: int | None = None, **match: Any) -> list[Request]:
        """At least one matching request (exactly `times` when given); the matching requests."""
        found = self.find(**match)
        if (not found) if times is None else len(found) != times:
            wanted = "a request" if times is None else f"{times} request(s)"
            raise AssertionError(f"expected {wanted} matching {_spelled(match)}, found {len(found)}"
                                 f"{self._seen()}")
        return found

    def assert_not_called(self, **match: Any) -> None:
        found = self.find(**match)
        if found:
            listed = "\n  ".join(map(str, found))
            raise AssertionError(f"expected no request matching {_spelled(match)}, found:\n  {listed}")

    def _seen(self) -> str:
        seen = self.all()
        return "; requests made:\n  " + "\n  ".join(map(str, seen)) if seen else "; no request was made"


def _spelled(match: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in match.items()) or "anything"
