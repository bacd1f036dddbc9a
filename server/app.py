"""Assembling the core: registry, Core, default namespaces and the `kubernetes` Service, built-in controllers
(namespaces, garbage collection, the pod terminator), gRPC server.

`capstan serve` and the tests start the core through here, so both run the same parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from server import bootstrap, health, service
from server.auth.config import SecurityConfig
from server.auth.guard import GuardedCore
from server.auth.setup import Security, start_security
from server.controllers.crds import CrdController
from server.controllers.gc import GarbageCollector
from server.controllers.namespaces import NamespaceController
from server.controllers.terminator import PodTerminator
from server.core import Core
from server.grpc_server import KUBE_GRPC_LIMITS, GrpcLimits, GrpcTls, RunningGrpc, start_grpc, stop_grpc
from server.kinds import BUILTIN
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE, services
from server.limits.limiter import Limiter
from server.registry import Registry
from storage import Store


@dataclass
class RunningCore:
    core: Core
    grpc: RunningGrpc
    namespaces: NamespaceController
    garbage_collector: GarbageCollector
    terminator: PodTerminator
    crds: CrdController | None = None  # serves CustomResourceDefinitions (server/controllers/crds.py)
    security: Security | None = None  # the chain every CoreService call passes (server/auth/)

    @property
    def guard(self) -> GuardedCore:
        """The core behind authentication and authorization: what the gRPC servicer and the in-process
        gateway call."""
        assert self.security is not None
        return self.security.guard

    @property
    def grpc_port(self) -> int:
        return self.grpc.port

    async def stop(self) -> None:
        await stop_grpc(self.grpc)
        await self.namespaces.stop()
        await self.garbage_collector.stop()
        await self.terminator.stop()
        if self.crds is not None:
            await self.crds.stop()
        if self.security is not None:
            await self.security.stop()


async def start_core(store: Store, *, listen: str, grpc_port: int, security: SecurityConfig,
                     service_cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
                     tls: GrpcTls | None = None, namespace_controllers: bool = True,
                     limiter: Limiter | None = None, grpc_limits: GrpcLimits = KUBE_GRPC_LIMITS) -> RunningCore:
    """ValueError for a service_cluster_ip_range that is no CIDR, ConfigError for a security configuration that
    cannot start. Without `tls` the gRPC port is plaintext. `security` is explicit: server.auth.config.INSECURE
    is the throwaway mode, never a default. namespace_controllers=False leaves out what kube-controller-manager
    puts in every namespace (the default ServiceAccount, kube-root-ca.crt), as envtest does: tests that count
    revisions use it. `limiter` sheds the gRPC port's load (server/limits/; kube's defaults when None): `capstan
    serve` passes the one its HTTP gateway uses too. `grpc_limits` bound each gRPC connection (grpc_server.py)."""
    registry = Registry(BUILTIN)
    service_resource, allocator = services(service_cluster_ip_range)
    registry.add(service_resource)
    core = Core(store, registry)
    await bootstrap.ensure_default_namespaces(core)
    await bootstrap.ensure_kubernetes_service(core, allocator.first_ip)
    namespaces = NamespaceController(core)
    namespaces.start()
    garbage_collector = GarbageCollector(core)
    garbage_collector.start()
    terminator = PodTerminator(core)
    terminator.start()
    crds = CrdController(core)
    await crds.start()
    _add_health_checks(core.health, namespaces=namespaces, collector=garbage_collector, terminator=terminator,
                       crds=crds)
    secured = await start_security(core, security, controllers=namespace_controllers)
    registrar = service.register(secured.guard, secured.is_proxy, limiter=limiter)
    running = await start_grpc(listen, grpc_port, [registrar], checks=core.health, tls=tls,
                               limits=grpc_limits)
    return RunningCore(core, running, namespaces, garbage_collector, terminator, crds, secured)


def _add_health_checks(checks: health.HealthChecks, *, namespaces: NamespaceController,
                       collector: GarbageCollector, terminator: PodTerminator, crds: CrdController) -> None:
    """The checks of what start_core started, under kube-apiserver's names where kube has the same part
    (the namespace controller and the garbage collector are kube-controller-manager's there, and are
    named here by their controller names; the pod terminator stands in for the kubelets)."""
    checks.add("informer-sync", health.condition(collector.synced, "the garbage collector has not listed yet"))
    checks.add("poststarthook/start-system-namespaces-controller", health.done())  # ensure_default_namespaces
    checks.add("poststarthook/bootstrap-controller", health.done())  # ensure_kubernetes_service
    checks.add("poststarthook/crd-informer-synced", health.done())  # CrdController.start served the stored CRDs
    checks.add("poststarthook/start-apiextensions-controllers", health.condition(crds.running, "not running"))
    checks.add("poststarthook/start-namespace-controller", health.condition(namespaces.running, "not running"))
    checks.add("poststarthook/start-garbage-collector-controller", health.condition(collector.running, "not running"))
    checks.add("poststarthook/start-pod-terminator", health.condition(terminator.running, "not running"))
