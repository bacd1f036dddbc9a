"""Assembling the core: registry, Core, default namespaces, built-in controllers (namespaces, garbage
collection), gRPC server.

`capstan serve` and the tests start the core through here, so both run the same parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from server import bootstrap, service
from server.controllers.gc import GarbageCollector
from server.controllers.namespaces import NamespaceController
from server.core import Core
from server.grpc_server import RunningGrpc, start_grpc, stop_grpc
from server.kinds import BUILTIN
from server.registry import Registry
from storage import Store


@dataclass
class RunningCore:
    core: Core
    grpc: RunningGrpc
    namespaces: NamespaceController
    garbage_collector: GarbageCollector

    @property
    def grpc_port(self) -> int:
        return self.grpc.port

    async def stop(self) -> None:
        await stop_grpc(self.grpc)
        await self.namespaces.stop()
        await self.garbage_collector.stop()


async def start_core(store: Store, *, listen: str, grpc_port: int) -> RunningCore:
    core = Core(store, Registry(BUILTIN))
    await bootstrap.ensure_default_namespaces(core)
    namespaces = NamespaceController(core)
    namespaces.start()
    garbage_collector = GarbageCollector(core)
    garbage_collector.start()
    running = await start_grpc(listen, grpc_port, [service.register(core)])
    return RunningCore(core, running, namespaces, garbage_collector)
