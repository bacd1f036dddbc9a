"""Assembling the core: registry, Core, default namespaces and the `kubernetes` Service, built-in controllers
(namespaces, garbage collection, the pod terminator), gRPC server.

`capstan serve` and the tests start the core through here, so both run the same parts.

Every core serves every verb and keeps what serving needs (the CRD registry, the namespace index, the
authentication and RBAC indexes). The singletons (server/runtime/singletons.py) run only while this core
leads: at once when it runs alone (election None), else when it holds the Lease
(server/runtime/election.py); they stop the moment it stops leading.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from server import admission
from server.admission import certificates as csr_admission
from server.admission import nodetaint, optin, podsecurity
from server.admission.policies import Policies
from server.admission.quota import QUOTAS, Quotas
from server.admission.webhooks import Webhooks
from server.auth.apf import Classifier
from server.auth.config import SecurityConfig
from server.auth.guard import GuardedCore
from server.auth.setup import ConfigError, Security, start_security
from server.controllers import apiservices, eventttl, flowcontrol, legacytokentracking
from server.controllers.aggregation import AggregationController
from server.controllers.crds import CrdController
from server.controllers.gc import GarbageCollector
from server.controllers.kubelets.config import NodesConfig
from server.controllers.namespaces import NamespaceController
from server.controllers.terminator import PodTerminator
from server.kinds import BUILTIN, admissionpolicies
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE, services
from server.machinery import apimetrics, errors, tracing
from server.machinery.aggregation import ProxyClientCertificate
from server.machinery.faults import Faults
from server.machinery.limits.limiter import Limiter
from server.objects import health
from server.objects.core import Core
from server.objects.tracedstore import TracedStore
from server.objects.watchcache import DISABLED, CacheConfig
from server.registry.resources import Registry
from server.runtime.election import LEASE_NAME, ElectionConfig, LeaderElector, Singleton, awaitable
from server.runtime.informer import SharedInformers
from server.runtime.singletons import Singletons
from server.service import servicer as service
from server.service.grpc_server import (
    KUBE_GRPC_LIMITS,
    GrpcLimits,
    GrpcTls,
    RunningGrpc,
    bind_grpc,
    serve_grpc,
    stop_grpc,
)
from server.startup import apienablement, bootstrap, controllers, flowcontrol_bootstrap, system_objects
from server.startup.apienablement import ApiEnablement
from storage import Store
from storage.memory import MemoryStore

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from server.controllers.kubelets.incore import InCoreNodes


@dataclass
class RunningCore:
    core: Core
    grpc: RunningGrpc
    namespaces: NamespaceController
    garbage_collector: GarbageCollector
    terminator: PodTerminator
    crds: CrdController | None = None  # serves CustomResourceDefinitions (server/controllers/crds.py)
    webhooks: Webhooks | None = None  # the admission webhooks' configurations and client
    policies: Policies | None = None  # the ValidatingAdmissionPolicy plugin, when its API and gate are on
    # checks APIServices with a service, keeps their discovery (server/controllers/aggregation.py)
    aggregation: AggregationController | None = None
    security: Security | None = None  # the chain every CoreService call passes (server/auth/)
    singletons: Singletons | None = None  # what runs while this core leads
    election: LeaderElector | None = None  # None: this core leads alone, unelected
    quotas: Quotas | None = None  # the quotas ResourceQuota admission reads (None: the plugin is off)
    # API Priority and Fairness classification (server/auth/apf.py): its collector serves the nominal seats
    classifier: Classifier | None = None
    nodes: InCoreNodes | None = None  # the simulated nodes (--nodes N), run while this core leads
    # apiserver_request_* of the gRPC calls, in the registry the core's /metrics serves (with `metrics_registry`)
    request_metrics: apimetrics.RequestMetrics | None = None

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
        """Stop serving, then leading (the Lease released for a standby), then everything else."""
        await stop_grpc(self.grpc)
        if self.election is not None:
            await self.election.stop()
        elif self.singletons is not None:
            await self.singletons.stop()
        await self.namespaces.stop()
        await self.garbage_collector.stop()
        await self.terminator.stop()
        if self.aggregation is not None:
            await self.aggregation.stop()
        if self.crds is not None:
            await self.crds.stop()
        if self.security is not None:
            await self.security.stop()
        if self.webhooks is not None:
            await self.webhooks.stop()
        if self.classifier is not None:
            await self.classifier.stop()
        if self.policies is not None:
            await self.policies.stop()
        if self.quotas is not None:
            await self.quotas.informer.stop()
        await self.core.close()


async def _written_at_start(what: str, writing: Awaitable[None]) -> None:
    """A start's write of system objects; one that admission refuses is logged, and the start goes on."""
    try:
        await writing
    except errors.ApiError as err:
        log.warning("%s not written at start: %s", what, err.status.message)


async def start_core(store: Store, *, listen: str, grpc_port: int, security: SecurityConfig,
                     service_cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
                     tls: GrpcTls | None = None, namespace_controllers: bool = True,
                     limiter: Limiter | None = None, grpc_limits: GrpcLimits = KUBE_GRPC_LIMITS,
                     election: ElectionConfig | None = None,
                     watch_cache: CacheConfig | None = None,
                     admission_plugins: frozenset[str] = admission.KUBE_DEFAULT,
                     podsecurity_configuration: podsecurity.Configuration | None = None,
                     proxy_client: ProxyClientCertificate | None = None,
                     controller_names: frozenset[str] = controllers.DEFAULT,
                     api: ApiEnablement = apienablement.DEFAULT,
                     nodes: NodesConfig | None = None,
                     node_flags: controllers.NodeFlags = controllers.DEFAULT_NODE_FLAGS,
                     advertise_address: str = "", advertise_port: int = bootstrap.KUBERNETES_TARGET_PORT,
                     store_checks: Mapping[str, health.Check] | None = None,
                     faults: Faults | None = None,
                     request_metrics: apimetrics.RequestMetrics | None = None,
                     event_ttl: float = eventttl.DEFAULT_TTL) -> RunningCore:
    """ValueError for a service_cluster_ip_range that is no CIDR, ConfigError for a security configuration that
    cannot start. Without `tls` the gRPC port is plaintext. `security` is explicit: server.auth.config.INSECURE
    is the throwaway mode, never a default. namespace_controllers=False leaves out what kube-controller-manager
    puts in every namespace (the default ServiceAccount, kube-root-ca.crt), as envtest does: tests that count
    revisions use it. `limiter` sheds the gRPC port's load (server/machinery/limits/; kube's defaults when None):
    `capstan
    serve` passes the one its HTTP gateway uses too. `grpc_limits` bound each gRPC connection (grpc_server.py).
    `election`: campaign for the singletons on its Lease (several cores over one store); None or not enabled:
    this core runs them alone, as a kube-controller-manager with --leader-elect=false. Either way a core that
    can lead leads before start_core returns. `watch_cache`: what the core serves from memory
    (server/objects/watchcache.py); None: the backend's default (watch_cache_for). `admission_plugins`: the
    admission plugins on (server.admission.enabled reads kube's flags into it). `podsecurity_configuration`: the
    PodSecurity plugin's (server/admission/podsecurity/config.py reads it from --admission-control-config-file);
    None: kube's default. `proxy_client`: the
    certificate presented to extension API servers when their APIServices are checked (the front-proxy client
    certificate; None presents none). `controller_names`: the controllers this core runs while it leads
    (server/startup/controllers.py reads kube-controller-manager's --controllers into it). `api`: the
    off-by-default group versions served and the feature gates (server/startup/apienablement.py reads kube's
    --runtime-config and --feature-gates into it). `nodes`: simulated nodes whose kubelets this core plays while
    it leads (server/controllers/kubelets/); None or count 0: none. `node_flags`: the node lifecycle controller's
    and podgc's settings. `advertise_address`: the address the `kubernetes` Endpoints name (kube's
    --advertise-address); "" derives it from `listen`. `advertise_port`: the port the `kubernetes` Service and
    Endpoints send to, the server's secure port (kube's --secure-port). `store_checks`: health checks of what the
    composition put around the store, under kube's names (`kms-providers` for encryption at rest's KMS plugins),
    reported after the store's own. `faults`: the fault injection rules the gRPC calls meet
    (server/machinery/faults.py; `capstan serve --fault-injection` shares its gateway's). `request_metrics`: where
    the gRPC calls are counted (`capstan serve` passes its gateway's, so one scrape counts both transports); None: a
    registry of the core's own, with process_* and python_* (RunningCore's request_metrics). `event_ttl`: seconds an
    Event is kept after its last write (server/controllers/eventttl.py; 0: for ever)."""
    service_resource, allocator = services(service_cluster_ip_range)
    policy_kinds = admissionpolicies.served(api.group_versions)
    builtin = (*BUILTIN, service_resource, *policy_kinds)
    registry = Registry(builtin)
    bound = bind_grpc(listen, grpc_port, tls=tls, limits=grpc_limits)  # a port that cannot be bound ends it here
    cache = watch_cache_for(store) if watch_cache is None else watch_cache
    # A tracing core's store calls are spans (server/objects/tracedstore.py); an untraced one calls it directly.
    core = Core(TracedStore(store) if tracing.enabled() else store, registry, watch_cache=cache,
                watch_list=api.gate("WatchList"))
    for name, check in (store_checks or {}).items():
        core.health.add(name, check)
    informers = SharedInformers(core)  # one informer per resource for every controller of this core
    # The admission chain (server/admission/) in kube's order; ServiceAccount admission only where the default
    # ServiceAccount is kept (as envtest disables it).
    webhooks = Webhooks(core, informers)
    await webhooks.start()
    quotas = None
    if "ResourceQuota" in admission_plugins:  # ResourceQuota admission reads the quotas from this informer
        quotas = Quotas(informers.informer(QUOTAS))
        await quotas.informer.start()
    policies = None
    if policy_kinds and api.gate(admissionpolicies.FEATURE_GATE):
        policies = Policies(core, informers, version=policy_kinds[0].version)
        await policies.start()
    core.context.admission.chain = admission.Chain(admission.ordered([
        *admission.builtin_plugins(builtin, admission_plugins, service_accounts=namespace_controllers,
                                   quotas=quotas),
        *webhooks.plugins(admission_plugins),
        *(policies.plugins(admission_plugins) if policies is not None else []),
        *podsecurity.plugins(admission_plugins, podsecurity_configuration),
        *csr_admission.plugins(admission_plugins),
        *optin.plugins(admission_plugins),
        *nodetaint.plugins(admission_plugins),
    ]))
    # The system objects a start writes go through admission as any write does, so a webhook may refuse them (its
    # backend down, say): kube-apiserver serves on and its controllers retry; here the start goes on, and says so.
    await _written_at_start("the default namespaces", bootstrap.ensure_default_namespaces(core))
    await _written_at_start("the kubernetes Service",
                            bootstrap.ensure_kubernetes_service(core, allocator.first_ip, advertise_port))
    await _written_at_start("the kubernetes endpoints",
                            system_objects.ensure_kubernetes_endpoints(core, listen, advertise_address, advertise_port))
    await _written_at_start("the system PriorityClasses", system_objects.ensure_system_priority_classes(core))
    await _written_at_start("the APF configuration", flowcontrol_bootstrap.ensure_apf_configuration(core))
    namespaces = NamespaceController(core, informers)
    await namespaces.start()
    garbage_collector = GarbageCollector(core)
    terminator = PodTerminator(core, informers)
    crds = CrdController(core, webhooks.callouts)
    await crds.start()
    secured = await start_security(core, security, elected=True)
    limits = (limiter or Limiter()).limits
    classifier = Classifier(informers, limits.max_requests_inflight + limits.max_mutating_requests_inflight)
    await classifier.start()
    secured.guard.classifier = classifier
    await _written_at_start("the extension-apiserver-authentication ConfigMap",
                            system_objects.ensure_authentication_config_map(
                                core, _read(security.client_ca_file), _read(security.requestheader_client_ca_file),
                                security.requestheader_allowed_names))
    prebuilt = {
        "garbagecollector": [Singleton("GarbageCollector", awaitable(garbage_collector.start), garbage_collector.stop)],
        "namespace": [Singleton("NamespaceController", awaitable(namespaces.lead), namespaces.unlead)],
        "clusterrole-aggregation": [s for s in secured.singletons if s.name == "AggregationController"],
    }
    try:
        chosen = controllers.build(controllers.Context(core, informers, security, prebuilt, node_flags),
                                   controller_names,
                                   namespace_controllers=namespace_controllers)
    except (OSError, ValueError) as err:  # a root CA file that cannot be read
        raise ConfigError(str(err)) from None
    simulated = None
    if nodes is not None and nodes.count > 0:
        from server.controllers.kubelets.incore import InCoreNodes  # the simulator loads when nodes are asked for

        simulated = InCoreNodes(core, informers, nodes)
    singletons = Singletons([
        *chosen,  # kube-controller-manager's, as --controllers names them
        Singleton("PodTerminator", terminator.start, terminator.stop),  # the kubelets' part in deletion
        Singleton("CrdController", crds.lead, crds.unlead),  # kube-apiserver's own
        *(s for s in secured.singletons if s.name != "AggregationController"),
        *apiservices.singletons(core),
        *flowcontrol.singletons(core, informers),
        *eventttl.singletons(core, informers, event_ttl),  # kube-apiserver's own: Events expire
        # kube-apiserver's own: since when secret-based token uses are labelled (where such tokens are accepted)
        *(legacytokentracking.singletons(core, informers)
          if security.service_account_signing_key_file or security.service_account_key_files else ()),
        *(simulated.singletons() if simulated is not None else ()),  # the simulated kubelets
    ])
    aggregation = AggregationController(core, informers, singletons.leading, client_certificate=proxy_client)
    _add_health_checks(core.health, namespaces=namespaces, terminator=terminator, crds=crds, aggregation=aggregation,
                       leading=singletons.leading, rbac="RBAC" in security.authorization_modes,
                       collector=garbage_collector if "garbagecollector" in controller_names else None)
    elector = None
    if election is not None and election.enabled:
        elector = LeaderElector(core, election, on_started=singletons.start, on_stopped=singletons.stop)
        await elector.start()
    else:  # leading alone, as a kube-controller-manager with --leader-elect=false: its singletons run here
        apimetrics.leading(election.name if election is not None else LEASE_NAME, True)
        await singletons.start()
    await aggregation.start()
    secured.guard.locator = aggregation
    if request_metrics is None:
        request_metrics = apimetrics.RequestMetrics(CollectorRegistry())
        apimetrics.runtime_collectors(request_metrics.registry)
    registrar = service.register(secured.guard, secured.is_proxy, limiter=limiter, faults=faults,
                                 metrics=request_metrics)
    running = await serve_grpc(bound, [registrar], checks=core.health)
    return RunningCore(core, running, namespaces, garbage_collector, terminator, crds, webhooks, policies, aggregation,
                       secured, singletons, elector, quotas, classifier, simulated, request_metrics)


def watch_cache_for(store: Store) -> CacheConfig:
    """The watch cache where it measures faster than reading the store (docs/performance.md, bench.etcd's
    list-rv0): over etcd, whose reads cross the network, and over LMDB, where a LIST from memory costs ~20-45%
    less CPU than reading it; not over the in-memory reference store, which is memory already."""
    return DISABLED if isinstance(store, MemoryStore) else CacheConfig()


def _read(path: Path | None) -> str:
    """A CA bundle's PEM for the authentication ConfigMap; "" when none is configured."""
    return path.read_text() if path is not None else ""


def _add_health_checks(checks: health.HealthChecks, *, namespaces: NamespaceController,
                       collector: GarbageCollector | None, terminator: PodTerminator, crds: CrdController,
                       aggregation: AggregationController, leading: Callable[[], bool], rbac: bool) -> None:
    """The checks of what start_core started, under kube-apiserver's names where kube has the same part
    (the namespace controller and the garbage collector are kube-controller-manager's there, and are
    named here by their controller names; the pod terminator stands in for the kubelets). A standby core
    runs no singleton: their checks pass while another core leads."""

    def led(part: Callable[[], bool]) -> Callable[[], bool]:
        return lambda: not leading() or part()

    # kube-apiserver's own informers have listed: here the garbage collector's store-wide one, when it runs
    synced = led(collector.synced) if collector is not None else (lambda: True)
    checks.add("informer-sync", health.condition(synced, "the garbage collector has not listed yet"))
    checks.add("poststarthook/start-kube-apiserver-admission-initializer", health.done())  # the chain is built
    checks.add("poststarthook/generic-apiserver-start-informers", health.done())  # SharedInformers started
    checks.add("poststarthook/priority-and-fairness-config-consumer", health.done())  # the Classifier follows APF
    checks.add("poststarthook/priority-and-fairness-filter", health.done())  # and classifies every call
    checks.add("poststarthook/storage-object-count-tracker-hook", health.done())  # counted when scraped
    checks.add("poststarthook/start-apiextensions-informers", health.condition(crds.running, "not running"))
    checks.add("poststarthook/start-cluster-authentication-info-controller", health.done())  # its ConfigMap written
    checks.add("poststarthook/start-system-namespaces-controller", health.done())  # ensure_default_namespaces
    checks.add("poststarthook/bootstrap-controller", health.done())  # ensure_kubernetes_service and its endpoints
    if rbac:  # kube's bootstrap policy reconciled (server/auth/rbac/reconcile.py), as with its RBAC authorizer
        checks.add("poststarthook/rbac/bootstrap-roles", health.done())
    checks.add("poststarthook/scheduling/bootstrap-system-priority-classes", health.done())
    checks.add("poststarthook/priority-and-fairness-config-producer", health.done())  # the APF objects written
    checks.add("poststarthook/crd-informer-synced", health.done())  # CrdController.start served the stored CRDs
    # kube repairs its cluster IP and node port bitmaps against the Services; Capstan's allocations are derived
    # from the stored Services (server/kinds/services.py), so they agree from the start
    checks.add("poststarthook/start-service-ip-repair-controllers", health.done())
    checks.add("poststarthook/start-apiextensions-controllers", health.condition(crds.running, "not running"))
    checks.add("poststarthook/start-namespace-controller", health.condition(namespaces.running, "not running"))
    if collector is not None:
        checks.add("poststarthook/start-garbage-collector-controller",
                   health.condition(led(collector.running), "not running"))
    checks.add("poststarthook/start-pod-terminator", health.condition(led(terminator.running), "not running"))
    # kube-aggregator's informers, registration, availability, discovery and OpenAPI controllers: one controller
    # here (every core's)
    for hook in ("start-kube-aggregator-informers", "apiservice-registration-controller",
                 "apiservice-status-available-controller", "apiservice-discovery-controller",
                 "apiservice-openapi-controller", "apiservice-openapiv3-controller"):
        checks.add(f"poststarthook/{hook}", health.condition(aggregation.running, "not running"))
    # the Local APIServices of every served group version: the APIService controller writes them before a core
    # leads, and start_core returns once a core that can lead leads
    checks.add("poststarthook/kube-apiserver-autoregistration", health.done())
    checks.add("autoregister-completion", health.done())
