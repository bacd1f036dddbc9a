"""The one interface through which the gateway reaches the core.

Two transports implement it (gateway/transport/): in-process (the default
`capstan serve`: the same request messages handed to the same Core, no network)
and a real gRPC channel (`capstan gateway --core ADDR`). Either way a failure is a
CoreError carrying the Kubernetes Status the core answered.
"""

from __future__ import annotations

import abc

from capstan.api.meta.v1 import meta_pb2
from server.machinery.credentials import Credentials
from server.machinery.methods import Client


class CoreError(Exception):
    """The core refused or failed a call; `status` is the Kubernetes Status to answer with."""

    def __init__(self, status: meta_pb2.Status) -> None:
        super().__init__(status.message)
        self.status = status


class CoreClient(Client):
    """Calls without credentials are the gateway's own (its discovery lookups); `as_caller` gives the client that
    makes one request's calls with that request's credentials, which the core authenticates and authorizes.

    Every CoreService method is a typed attribute from the method table (server/machinery/methods.py):
    `client.get(request)` awaits `client.unary(<Get>, request)`, `client.watch(request)` iterates
    `client.stream(<Watch>, request)`; a transport implements those two. The listing is inherited, which a
    Protocol's members cannot be: this interface is an abstract class."""

    @abc.abstractmethod
    def as_caller(self, credentials: Credentials) -> CoreClient: ...

    @abc.abstractmethod
    async def health(self) -> dict[str, bool]:
        """The core's named health checks (etcd, informer-sync, poststarthook/...), run now: whether each
        passes. Over gRPC this is grpc.health.v1's List (server/service/grpc_server.py)."""

    @abc.abstractmethod
    async def close(self) -> None: ...


def failure(code: int, reason: str, message: str) -> meta_pb2.Status:
    """A Status for failures the gateway itself detects (bad requests, an unreachable core)."""
    status = meta_pb2.Status(status="Failure", message=message, reason=reason, code=code)
    status.metadata.SetInParent()
    return status
