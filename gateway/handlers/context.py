"""What every handler needs: the core client and the resources the core serves."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.client import CoreClient, CoreError, failure

# Seconds a resource lookup trusts the cached discovery answer before asking the core whether it changed
# (a cheap call: the core answers `unchanged` while its registry's generation stands). Discovery and OpenAPI
# documents always ask; an unknown resource asks at once (a CRD may have just been established).
RECHECK_AFTER = 1.0


@dataclass
class Gateway:
    client: CoreClient
    server_address: str = "127.0.0.1:8080"
    _discovered: core_pb2.DiscoverResponse = field(default_factory=core_pb2.DiscoverResponse)
    _index: dict[tuple[str, str, str], core_pb2.Resource] = field(default_factory=dict)
    _aggregated: frozenset[tuple[str, str]] = frozenset()  # group versions extension API servers serve
    _local: frozenset[tuple[str, str]] = frozenset()  # group versions the core serves
    _versions: frozenset[tuple[str, str]] = frozenset()  # both: every group version served here or proxied
    _groups: frozenset[str] = frozenset()  # the groups of those
    _builtin_groups: frozenset[str] = frozenset()  # groups with built-in kinds (not only custom resources)
    _fetched_at: float = 0.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def discovered(self) -> core_pb2.DiscoverResponse:
        """The core's current answer (checked with the core, so a CRD shows up or goes at once)."""
        await self.refresh()
        return self._discovered

    async def refresh(self) -> None:
        """Ask the core whether what it serves changed since the cached answer, and take the new one if so.
        Callers that queued behind a check made after they asked take that check's result."""
        asked = time.monotonic()
        async with self._lock:
            if self._fetched_at > asked:
                return
            answer = await self.client.discover(
                core_pb2.DiscoverRequest(known_generation=self._discovered.generation))
            if not answer.unchanged:
                self._discovered = answer
                self._index = {(r.group, r.version, r.resource): r for r in answer.resources}
                self._aggregated = frozenset((a.group, a.version) for a in answer.aggregated)
                self._local = frozenset((r.group, r.version) for r in answer.resources)
                self._versions = self._local | self._aggregated
                self._groups = frozenset(group for group, _ in self._versions)
                self._builtin_groups = frozenset(r.group for r in answer.resources
                                                 if r.proto_message and not r.json_schema)
            self._fetched_at = time.monotonic()

    async def restful(self, group: str) -> bool:
        """Whether kube-apiserver would serve the group's paths through go-restful (gateway/restful.py): the core
        group, or a group of built-in kinds (its web service /apis/{group} answers every path below it)."""
        if not group:
            return True
        if group not in self._builtin_groups and group not in self._groups:
            await self.refresh()
        return group in self._builtin_groups

    async def serves(self, group: str, version: str = "") -> bool:
        """Whether the core serves the group (at the version, when one is named)."""
        if group not in self._groups or (version and (group, version) not in self._versions):
            await self.refresh()
        return group in self._groups if not version else (group, version) in self._versions

    def apiservices(self) -> list[tuple[str, bool]]:
        """(APIService name, Available) of every aggregated group version in the cached answer."""
        return [(f"{a.version}.{a.group}", a.available) for a in self._discovered.aggregated]

    async def aggregated(self, group: str, version: str) -> bool:
        """Whether an extension API server serves the group version (the gateway proxies it there)."""
        if not group:
            return False
        if time.monotonic() - self._fetched_at > RECHECK_AFTER:
            await self.refresh()
        if (group, version) not in self._aggregated and (group, version) not in self._local:
            await self.refresh()  # neither served here nor known aggregated: an APIService may just have come
        return (group, version) in self._aggregated

    async def resource(self, group: str, version: str, resource: str) -> core_pb2.Resource:
        """The served resource, or 404 `the server could not find the requested resource`."""
        if time.monotonic() - self._fetched_at > RECHECK_AFTER:
            await self.refresh()
        found = self._index.get((group, version, resource))
        if found is None:
            await self.refresh()
            found = self._index.get((group, version, resource))
        if found is None:
            raise CoreError(failure(404, "NotFound", "the server could not find the requested resource"))
        return found


def served_as(resource: core_pb2.Resource, subresource: str) -> core_pb2.Resource:
    """The resource as a request through `subresource` speaks it: a subresource whose kind is another group
    version's (/scale: autoscaling/v1 Scale), or another kind of the same one (pods/binding: a Binding), is read
    and written as that kind, envelopes and all."""
    sub = next((s for s in resource.subresources if s.name == subresource), None) if subresource else None
    if sub is None or not (sub.version or sub.proto_message):
        return resource
    served = core_pb2.Resource()
    served.CopyFrom(resource)
    if sub.version:
        served.group, served.version = sub.group, sub.version
    served.kind = sub.kind
    served.proto_message = sub.proto_message
    return served
