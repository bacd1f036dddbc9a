"""The core's gRPC server: where outside clients (any language) reach Capstan natively.

It always carries the standard health service (grpc.health.v1) and server
reflection, so grpcurl-style tools discover everything without .proto files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

# Adds a servicer to the server and returns the full service names it registered.
Registrar = Callable[[grpc.aio.Server], list[str]]


@dataclass(frozen=True, slots=True)
class RunningGrpc:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer


async def start_grpc(listen: str, port: int, registrars: list[Registrar] | None = None) -> RunningGrpc:
    """Bind `listen:port` (port 0 picks a free one), register services, start serving."""
    server = grpc.aio.server()
    names: list[str] = []
    for register in registrars or []:
        names.extend(register(server))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    bound = server.add_insecure_port(f"{listen}:{port}")
    await server.start()
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningGrpc(server, bound, health_servicer)


async def stop_grpc(running: RunningGrpc, grace: float = 2.0) -> None:
    await running.health.enter_graceful_shutdown()
    await running.server.stop(grace)
