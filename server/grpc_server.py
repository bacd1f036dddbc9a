"""The core's gRPC server: where outside clients (any language) reach Capstan natively.

It always carries the standard health service (grpc.health.v1) and server
reflection, so grpcurl-style tools discover everything without .proto files.
Besides its services, the health service answers the core's named checks
(server/health.py) as "healthz/<check>", run when asked: Check("healthz/etcd")
reads the store; List names every service and check. That is how a gateway
across the network serves /healthz, /livez and /readyz.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from server.health import HealthChecks

# Adds a servicer to the server and returns the full service names it registered.
Registrar = Callable[[grpc.aio.Server], list[str]]

CHECK_PREFIX = "healthz/"  # a health "service" name that is one of the core's checks (the wire contract)
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
_LISTING: Any = health_pb2  # its List messages (grpcio-health-checking >= 1.67) are missing from the type stubs


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
        response = _LISTING.HealthListResponse()
        for service in ["", *self._services]:
            answer = await super().Check(health_pb2.HealthCheckRequest(service=service), context)
            response.statuses[service].status = answer.status
        for name, ok in (await self._checks.run_all()).items():
            response.statuses[CHECK_PREFIX + name].status = _SERVING if ok else _NOT_SERVING
        return response


class KeyPair(Protocol):
    """The serving certificate, read again when it changes (capstan/tls.py ServingFiles)."""

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


@dataclass(frozen=True, slots=True)
class RunningGrpc:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    tls: bool = False  # `port` serves TLS (else plaintext)
    mtls_port: int | None = None  # the port requiring a client certificate, when one is served


async def start_grpc(listen: str, port: int, registrars: list[Registrar] | None = None, *,
                     checks: HealthChecks | None = None, tls: GrpcTls | None = None) -> RunningGrpc:
    """Bind `listen:port` (port 0 picks a free one), register services, start serving; the health
    service answers `checks` too. With `tls`, `port` serves TLS and `tls.mtls_port` mutual TLS, both with
    the key pair's current certificate; without, `port` is plaintext."""
    server = grpc.aio.server()
    names: list[str] = []
    for register in registrars or []:
        names.extend(register(server))
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    health_servicer = _HealthServicer(checks or HealthChecks(), names)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    mtls_port: int | None = None
    if tls is None:
        bound = server.add_insecure_port(f"{listen}:{port}")
    else:
        bound = server.add_secure_port(f"{listen}:{port}", _credentials(tls.key_pair, b""))
        if tls.mtls_port >= 0:
            mtls_port = server.add_secure_port(f"{listen}:{tls.mtls_port}",
                                               _credentials(tls.key_pair, tls.client_ca))
    await server.start()
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningGrpc(server, bound, health_servicer, tls is not None, mtls_port)


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
