"""The core's gRPC server: where outside clients (any language) reach Capstan natively.

It always carries the standard health service (grpc.health.v1) and server
reflection (grpc.reflection.v1 and v1alpha), so grpcurl-style tools discover
everything without .proto files.
Besides its services, the health service answers the core's named checks
(server/objects/health.py) as "healthz/<check>", run when asked: Check("healthz/etcd")
reads the store; List names every service and check. That is how a gateway
across the network serves /healthz, /livez and /readyz.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2

from server.machinery import healthlist
from server.objects.health import HealthChecks

# Adds a servicer to the server and returns the full service names it registered.
Registrar = Callable[[grpc.aio.Server], list[str]]

_HEALTH = "grpc.health.v1.Health"
CHECK_PREFIX = "healthz/"  # a health "service" name that is one of the core's checks (the wire contract)
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class _HealthServicer(health.aio.HealthServicer):
    """grpc.health.v1 over the registered services and, live, the core's named checks."""

    def __init__(self, checks: HealthChecks, services: list[str]) -> None:
        super().__init__()
        self._checks = checks
        self._services = services

    async def Check(self, request: health_pb2.HealthCheckRequest,
                    context: grpc.aio.ServicerContext[Any, Any]) -> health_pb2.HealthCheckResponse:
        name = request.service.removeprefix(CHECK_PREFIX)
        if request.service.startswith(CHECK_PREFIX) and name in self._checks.names():
            return health_pb2.HealthCheckResponse(status=_SERVING if await self._checks.run(name) else _NOT_SERVING)
        return await super().Check(request, context)

    async def List(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        response = healthlist.messages()[1]()
        for service in ["", *self._services]:
            answer = await super().Check(health_pb2.HealthCheckRequest(service=service), context)
            response.statuses[service].status = answer.status
        for name, ok in (await self._checks.run_all()).items():
            response.statuses[CHECK_PREFIX + name].status = _SERVING if ok else _NOT_SERVING
        return response


class KeyPair(Protocol):
    """The serving certificate, read again when it changes (capstan/cli/tls.py ServingFiles)."""

    def current(self) -> tuple[int, bytes, bytes]:
        """(version, PEM private key, PEM certificate chain); a new version is a new pair to serve."""
        ...


@dataclass(frozen=True, slots=True)
class GrpcTls:
    """TLS for the core's ports. grpc-python requests a client certificate only when it requires one, so
    the main port serves TLS without client certificates (bearer metadata, or anonymous) and a second port
    requires one signed by `client_ca` (x509 users, and a front proxy such as the split form's gateway)."""

    key_pair: KeyPair
    client_ca: bytes  # PEM bundle: --client-ca-file and --requestheader-client-ca-file
    mtls_port: int = 50052  # 0 picks a free one; -1: no mTLS port


MAX_STREAMS_PER_CONNECTION = 10_000


@dataclass(frozen=True, slots=True)
class GrpcLimits:
    """What one client connection to the core may hold, as grpc core's channel arguments (`options`).

    kube-apiserver bounds its HTTP/2 connections in secure_serving.go; etcd, the gRPC server kube runs on,
    enforces keepalive. The core does both:
    - handshake_timeout: a connection that has not finished TLS and HTTP/2's preface and SETTINGS in time is
      closed (grpc.server_handshake_timeout_ms; kube's ReadHeaderTimeout, 32 s, which also bounds Go's TLS
      handshake). Half-open connections are what a slowloris holds.
    - idle_timeout: a connection with no call for this long gets GOAWAY (grpc.max_connection_idle_ms; kube's
      IdleTimeout, 90 s); a channel reconnects by itself on its next call.
    - max_streams_per_connection: concurrent calls one connection may carry (grpc.max_concurrent_streams;
      kube's --http2-max-streams-per-connection). Beyond it, grpc clients wait for a stream to end. kube
      allows 100, but the split form's gateway carries all its clients' watches on one channel, so the
      default leaves room for thousands of them.
    - keepalive enforcement as etcd's: a client pinging more often than every min_ping_interval, or when it
      has no call open, gets GOAWAY "too_many_pings" after two strikes (grpc.http2.min_ping_interval_without_
      data_ms, grpc.keepalive_permit_without_calls, grpc.http2.max_ping_strikes); the server pings a peer
      with calls open every keepalive_time and drops it when no answer comes within keepalive_timeout (kube's
      TCP keepalive period is 3 min), so a vanished watcher does not hold its stream.
    - reuse_port: other processes serve the same ports (grpc.so_reuseport; `--workers`), the kernel spreading
      connections over them.
    """

    handshake_timeout: float = 32.0
    idle_timeout: float = 90.0
    max_streams_per_connection: int = MAX_STREAMS_PER_CONNECTION
    min_ping_interval: float = 5.0
    keepalive_time: float = 180.0
    keepalive_timeout: float = 20.0
    max_metadata_bytes: int = 1 << 20
    reuse_port: bool = False

    def options(self) -> list[tuple[str, int]]:
        def ms(seconds: float) -> int:
            return max(1, round(seconds * 1000))

        return [
            ("grpc.server_handshake_timeout_ms", ms(self.handshake_timeout)),
            ("grpc.max_connection_idle_ms", ms(self.idle_timeout)),
            ("grpc.max_concurrent_streams", self.max_streams_per_connection),
            ("grpc.http2.min_ping_interval_without_data_ms", ms(self.min_ping_interval)),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_ping_strikes", 2),
            ("grpc.keepalive_time_ms", ms(self.keepalive_time)),
            ("grpc.keepalive_timeout_ms", ms(self.keepalive_timeout)),
            # grpc's defaults refuse metadata past 8 KiB at random and past 16 KiB always (RESOURCE_EXHAUSTED), so
            # a 10 KB bearer token would fail now and then; kube reads 1 MiB of headers (MaxHeaderBytes)
            ("grpc.max_metadata_size", self.max_metadata_bytes),
            ("grpc.absolute_max_metadata_size", self.max_metadata_bytes),
            *([("grpc.so_reuseport", 1)] if self.reuse_port else []),
        ]


KUBE_GRPC_LIMITS = GrpcLimits()


@dataclass(frozen=True, slots=True)
class RunningGrpc:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    tls: bool = False  # `port` serves TLS (else plaintext)
    mtls_port: int | None = None  # the port requiring a client certificate, when one is served


@dataclass(frozen=True, slots=True)
class BoundGrpc:
    """A gRPC server whose ports are bound and which serves nothing yet, so that a port that cannot be bound
    ends a start before anything else has started (kube-apiserver, too, binds before its post-start hooks)."""
    server: grpc.aio.Server
    port: int
    tls: bool
    mtls_port: int | None


def bind_grpc(listen: str, port: int, *, tls: GrpcTls | None = None,
              limits: GrpcLimits = KUBE_GRPC_LIMITS) -> BoundGrpc:
    """Bind `listen:port` (port 0 picks a free one) under `limits`: with `tls`, `port` serves TLS and
    `tls.mtls_port` mutual TLS, both with the key pair's current certificate; without, `port` is plaintext.
    OSError naming the address when one cannot be bound."""
    server = grpc.aio.server(options=limits.options())
    address = f"{listen}:{port}"
    try:
        mtls_port: int | None = None
        if tls is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, _credentials(tls.key_pair, b""))
            if tls.mtls_port >= 0:
                address = f"{listen}:{tls.mtls_port}"
                mtls_port = server.add_secure_port(address, _credentials(tls.key_pair, tls.client_ca))
    except RuntimeError:  # grpc's only word for it, whatever the cause
        raise OSError(f"cannot serve gRPC on {address}: the port is in use, or the address is not this "
                      "machine's") from None
    return BoundGrpc(server, bound, tls is not None, mtls_port)


async def serve_grpc(bound: BoundGrpc, registrars: list[Registrar] | None = None, *,
                     checks: HealthChecks | None = None) -> RunningGrpc:
    """Register services on `bound`'s server and start serving; the health service answers `checks` too."""
    server = bound.server
    names: list[str] = []
    for register in registrars or []:
        names.extend(register(server))
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    health_servicer = _HealthServicer(checks or HealthChecks(), names)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if not hasattr(health_pb2_grpc.HealthServicer, "List"):  # a grpcio-health-checking without it: served by path
        request, response = healthlist.messages()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(_HEALTH, {"List": (
            grpc.unary_unary_rpc_method_handler(health_servicer.List, request_deserializer=request.FromString,
                                                response_serializer=response.SerializeToString))}),))
    _serve_reflection(server, names)
    await server.start()
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningGrpc(server, bound.port, health_servicer, bound.tls, bound.mtls_port)


async def start_grpc(listen: str, port: int, registrars: list[Registrar] | None = None, *,
                     checks: HealthChecks | None = None, tls: GrpcTls | None = None,
                     limits: GrpcLimits = KUBE_GRPC_LIMITS) -> RunningGrpc:
    """bind_grpc, then serve_grpc."""
    return await serve_grpc(bind_grpc(listen, port, tls=tls, limits=limits), registrars, checks=checks)


REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def _serve_reflection(server: grpc.aio.Server, names: list[str]) -> None:
    """Server reflection under both its names: grpc.reflection.v1 (what current tools ask first, some only)
    and v1alpha. grpcio-reflection ships v1alpha alone; v1's messages are v1alpha's under another package,
    field for field, so one servicer answers both, and v1's file is described from v1alpha's."""
    _register_reflection_v1()
    servicer = reflection.aio.ReflectionServicer([*names, reflection.SERVICE_NAME, REFLECTION_V1])
    handlers = {"ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)}
    for service in (reflection.SERVICE_NAME, REFLECTION_V1):
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        server.add_registered_method_handlers(service, handlers)


def _register_reflection_v1() -> None:
    """grpc/reflection/v1/reflection.proto in the default pool (once), so reflection describes itself."""
    pool = descriptor_pool.Default()
    name = "grpc/reflection/v1/reflection.proto"
    try:
        pool.FindFileByName(name)
        return
    except KeyError:
        pass
    v1 = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(v1)
    v1.name, v1.package = name, "grpc.reflection.v1"

    def moved(type_name: str) -> str:
        return type_name.replace(".grpc.reflection.v1alpha.", ".grpc.reflection.v1.")

    for message in v1.message_type:
        for field in message.field:
            if field.HasField("type_name"):
                field.type_name = moved(field.type_name)
    for service in v1.service:
        for method in service.method:
            method.input_type, method.output_type = moved(method.input_type), moved(method.output_type)
    pool.Add(v1)


def _credentials(key_pair: KeyPair, client_ca: bytes) -> grpc.ServerCredentials:
    """Server credentials whose certificate follows `key_pair` (asked at each new connection); a client
    certificate signed by `client_ca` is required when it is not empty."""

    def configuration(key: bytes, chain: bytes) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(key, chain)], root_certificates=client_ca or None)

    version, key, chain = key_pair.current()
    served = [version]

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        version, key, chain = key_pair.current()
        if version == served[0]:
            return None
        served[0] = version
        return configuration(key, chain)

    # The stubs want a configuration from every fetch; gRPC's contract is None for "unchanged".
    return grpc.dynamic_ssl_server_credentials(configuration(key, chain), fetch,  # type: ignore[arg-type]
                                               require_client_authentication=bool(client_ca))


async def stop_grpc(running: RunningGrpc, grace: float = 2.0) -> None:
    await running.health.enter_graceful_shutdown()
    await running.server.stop(grace)
