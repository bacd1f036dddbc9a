"""One gRPC channel to the etcd cluster and its stubs, and etcd's errors as the store's.

Every unary call carries `EtcdConfig.call_timeout`, so an unreachable cluster is a
`BackendFailure` within that bound, never a hang. The member URLs become one channel whose
addresses grpc fails over between (pick-first over the resolved addresses).
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio

from storage.errors import BackendFailure, BackendUnavailable, InvalidArgument, StorageError
from storage.etcd.config import EtcdConfig
from storage.etcd.pb.etcdserverpb import rpc_pb2_grpc

# etcd's error messages (api/v3rpc/rpctypes/error.go) that the store translates by meaning.
COMPACTED = "required revision has been compacted"
FUTURE = "required revision is a future revision"
NO_SPACE = "database space exceeded"

# gRPC codes that mean "the cluster is not answering now" (down, no leader, timed out): retryable.
UNREACHABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
}


def _target(servers: tuple[str, ...]) -> tuple[str, str, bool]:
    """(grpc target listing every member's address, the authority to verify TLS against, tls?)."""
    if not servers:
        raise InvalidArgument("no etcd servers given")
    addresses: list[str] = []
    schemes = set()
    for url in servers:
        parts = urlsplit(url if "://" in url else "http://" + url)
        if not parts.hostname or parts.scheme not in ("http", "https"):
            raise InvalidArgument(f"etcd server {url!r} is not an http:// or https:// URL")
        schemes.add(parts.scheme)
        port = parts.port or 2379
        for *_, sockaddr in socket.getaddrinfo(parts.hostname, port, socket.AF_INET, socket.SOCK_STREAM):
            addresses.append(f"{sockaddr[0]!s}:{port}")
    if len(schemes) > 1:
        raise InvalidArgument("etcd servers mix http:// and https://")
    first = urlsplit(servers[0] if "://" in servers[0] else "http://" + servers[0])
    authority = f"{first.hostname}:{first.port or 2379}"
    return "ipv4:" + ",".join(dict.fromkeys(addresses)), authority, "https" in schemes


def open_channel(config: EtcdConfig) -> grpc.aio.Channel:
    target, authority, tls = _target(config.servers)
    options: list[tuple[str, object]] = [
        ("grpc.max_receive_message_length", -1),  # a LIST of 5,000 objects is one Range answer
        ("grpc.max_send_message_length", 2 << 20),  # etcd's --max-request-bytes default is 1.5 MiB
        ("grpc.default_authority", authority),
        # Every member takes calls in turn, as etcd's own clientv3 balances: with gRPC's default pick_first every
        # core read from the first member listed, which then did several times the others' work.
        ("grpc.lb_policy_name", "round_robin"),
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),  # back within a second once etcd returns
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 5_000),
    ]
    if not tls:
        return grpc.aio.insecure_channel(target, options=options)
    root = config.cafile.read_bytes() if config.cafile else None
    key = config.keyfile.read_bytes() if config.keyfile else None
    cert = config.certfile.read_bytes() if config.certfile else None
    credentials = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)
    return grpc.aio.secure_channel(target, credentials, options=options)


class Stubs:
    """The etcd services the backend calls, over one channel."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        # grpc's generated stubs are untyped; the messages they take and return are typed.
        self.kv: Any = rpc_pb2_grpc.KVStub(channel)  # type: ignore[no-untyped-call]
        self.watch: Any = rpc_pb2_grpc.WatchStub(channel)  # type: ignore[no-untyped-call]
        self.maintenance: Any = rpc_pb2_grpc.MaintenanceStub(channel)  # type: ignore[no-untyped-call]


def failure(err: grpc.aio.AioRpcError) -> StorageError:
    """An etcd error the store cannot serve around, as a BackendFailure (the core answers 5xx)."""
    detail = err.details() or ""
    if err.code() in UNREACHABLE:
        return BackendUnavailable(f"etcd is unreachable: {err.code().name}: {detail}")
    return BackendFailure(f"etcd refused the call: {err.code().name}: {detail}")
