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
from typing import Any

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


@dataclass(frozen=True, slots=True)
class RunningGrpc:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer


async def start_grpc(listen: str, port: int, registrars: list[Registrar] | None = None, *,
                     checks: HealthChecks | None = None) -> RunningGrpc:
    """Bind `listen:port` (port 0 picks a free one), register services, start serving; the health
    service answers `checks` too."""
    server = grpc.aio.server()
    names: list[str] = []
    for register in registrars or []:
        names.extend(register(server))
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    health_servicer = _HealthServicer(checks or HealthChecks(), names)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    bound = server.add_insecure_port(f"{listen}:{port}")
    await server.start()
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningGrpc(server, bound, health_servicer)


async def stop_grpc(running: RunningGrpc, grace: float = 2.0) -> None:
    await running.health.enter_graceful_shutdown()
    await running.server.stop(grace)
