"""The one interface through which the gateway reaches the core.

Two transports implement it (gateway/transport/): in-process (the default
`capstan serve`: the same request messages handed to the same Core, no network)
and a real gRPC channel (`capstan gateway --core ADDR`). Either way a failure is a
CoreError carrying the Kubernetes Status the core answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.credentials import Credentials


class CoreError(Exception):
    """The core refused or failed a call; `status` is the Kubernetes Status to answer with."""

    def __init__(self, status: meta_pb2.Status) -> None:
        super().__init__(status.message)
        self.status = status


class CoreClient(Protocol):
    """Calls without credentials are the gateway's own (its discovery lookups); `as_caller` gives the client that
    makes one request's calls with that request's credentials, which the core authenticates and authorizes."""

    def as_caller(self, credentials: Credentials) -> CoreClient: ...

    async def access(self, request: core_pb2.AccessRequest) -> core_pb2.AccessResponse:
        """Whether the caller may make a request that names no resource: CoreError 401/403 if not."""
        ...

    async def create(self, request: core_pb2.CreateRequest) -> core_pb2.CreateResponse: ...

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse: ...

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse: ...

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse: ...

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse: ...

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse: ...

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse: ...

    def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        """Batches of events; raises CoreError before the first batch when the watch is refused."""
        ...

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse: ...

    async def health(self) -> dict[str, bool]:
        """The core's named health checks (etcd, informer-sync, poststarthook/...), run now: whether each
        passes. Over gRPC this is grpc.health.v1's List (server/service/grpc_server.py)."""
        ...

    async def issuer_document(self, request: core_pb2.IssuerDocumentRequest) -> core_pb2.IssuerDocumentResponse:
        """The service account issuer's discovery document at request.path (404 when none)."""
        ...

    async def close(self) -> None: ...


def failure(code: int, reason: str, message: str) -> meta_pb2.Status:
    """A Status for failures the gateway itself detects (bad requests, an unreachable core)."""
    status = meta_pb2.Status(status="Failure", message=message, reason=reason, code=code)
    status.metadata.SetInParent()
    return status
