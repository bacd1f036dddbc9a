"""The client side of fault injection (gateway/faults.py, served with --fault-injection): rules that make the
server answer chosen requests with 429, 500, 409, 410 Expired, 503 or 504, and open watches ended on demand, so
a test can drive the retry, back-off and re-list paths of the code under test against a real server.

Rules are the server's, not this process's: every client of the server meets them, whatever its language.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capstan.testing.rest import request

if TYPE_CHECKING:
    from kubernetes import client

PATH = "/debug/capstan/faults"


@dataclass(frozen=True)
class Fault:
    """One rule as the server stored it; `hits()` asks how many requests it has answered so far."""

    id: str
    rule: dict[str, Any]
    faults: Faults

    def hits(self) -> int:
        for rule in self.faults.rules():
            if rule["id"] == self.id:
                return int(rule["hits"])
        raise LookupError(f"fault rule {self.id} was removed")

    def remove(self) -> None:
        request(self.faults.api, "DELETE", f"{PATH}/{self.id}")


class Faults:
    """Adds and removes the server's fault rules through an admin client (the API is authorized as the
    non-resource path /debug/capstan/faults)."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    def inject(self, code: int, *, verb: str = "", resource: str = "", name: str = "", namespace: str = "",
               group: str = "", subresource: str = "", count: int = 1, retry_after: int = 1, delay: float = 0.0,
               message: str = "") -> Fault:
        """The next `count` requests (0: every one, until removed) matching verb, resource, ... ("" any) are
        answered `code` with kube's Status (429 and 503 with Retry-After), after `delay` seconds."""
        rule: dict[str, Any] = {
            "verb": verb, "group": group, "resource": resource, "subresource": subresource, "namespace": namespace,
            "name": name, "code": code, "count": count, "retryAfterSeconds": retry_after, "delaySeconds": delay}
        if message:
            rule["message"] = message
        stored = request(self.api, "POST", PATH, body=rule)
        return Fault(str(stored["id"]), stored, self)

    def drop_watches(self, *, verb: str = "", resource: str = "", name: str = "", namespace: str = "",
                     group: str = "") -> int:
        """Ends the open watches that match, as the server ends a watch at its timeout; how many it ended."""
        answer = request(self.api, "POST", f"{PATH}/drop-watches", body={
            "verb": verb, "group": group, "resource": resource, "namespace": namespace, "name": name})
        return int(answer["dropped"])

    def rules(self) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = request(self.api, "GET", PATH)["rules"]
        return rules

    def clear(self) -> None:
        request(self.api, "DELETE", PATH)
