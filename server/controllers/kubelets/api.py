"""The few API calls a simulated kubelet makes, as a protocol: so one simulator runs over a core's own verbs
(`incore.CoreNodeApi`) and over any API server's REST API (`capstan nodes`, capstan/cli/nodes.py).

Every write names the node it is made for (`node`), so a client that can impersonate writes as
`system:node:<name>` the way each kubelet does; one that cannot writes as itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Obj = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    resource: str


NODES = Kind("", "v1", "nodes")
PODS = Kind("", "v1", "pods")
LEASES = Kind("coordination.k8s.io", "v1", "leases")


class ApiFailure(Exception):
    """A call the server refused: its HTTP code (404, 409, ...) and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class NodeApi(Protocol):
    async def create(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        """The object created; ApiFailure(409) when it exists."""
        ...

    async def get(self, kind: Kind, namespace: str, name: str, *, node: str) -> Obj:
        """ApiFailure(404) when absent."""
        ...

    async def update(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        """A PUT with the body's resourceVersion as precondition (ApiFailure(409) when it moved)."""
        ...

    async def patch(self, kind: Kind, namespace: str, name: str, patch: Obj, *, node: str,
                    subresource: str = "") -> Obj:
        """A JSON merge patch."""
        ...

    async def delete(self, kind: Kind, namespace: str, name: str, *, node: str, uid: str, grace: int) -> None:
        """Deleted with the uid as precondition; ApiFailure(404 or 409) when gone or replaced."""
        ...
