"""kube-controller-manager's `--controllers` as data: every controller a core can run, under kube's name, whether
it runs by default, and how it is built.

The default set is what makes the API itself behave as a cluster's does (garbage collection, namespace
finalization, ClusterRole aggregation, ServiceAccounts and the root CA, quota status, endpoints and endpoint
slices, CSR signing, the storage protection finalizers). The workload
controllers, the scheduler and the simulated nodes' partners (deployment, job, nodelifecycle, ...) run only when
named or with `*`. The flag reads as kube's: a comma-separated list where `*` turns every controller on, `name`
turns one on and `-name` off; an explicit name wins over `*`; a list without `*` runs only what it names. The
controllers that stand for kube-apiserver's own parts (the CRD and APIService controllers) and for the kubelets
(the pod terminator) are not in this table: they always run.

`namespace_controllers=False` (start_core, as envtest runs no kube-controller-manager) leaves out the
controllers marked `per_namespace`, whatever the flag says.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from server.auth.config import SecurityConfig
from server.controllers import csrsigning, endpoints, endpointslicemirroring, endpointslices, tokens
from server.controllers.nodelifecycle import LifecycleConfig, NodeLifecycleController
from server.controllers.podgc import PodGC, PodGCConfig
from server.controllers.resourcequota import ResourceQuotaController
from server.controllers.rootca import RootCAPublisher
from server.controllers.serviceaccounts import ServiceAccountsController
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers


class ControllersError(ValueError):
    """A --controllers value kube-controller-manager refuses too."""


@dataclass(frozen=True)
class NodeFlags:
    """kube-controller-manager's flags for the node lifecycle controller and podgc."""

    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    podgc: PodGCConfig = field(default_factory=PodGCConfig)


@dataclass(frozen=True)
class Context:
    """What a controller is built from: the core it writes through, the informers every controller of this core
    shares, and the security configuration (the cluster CA for signing, the root CA to publish)."""

    core: Core
    informers: SharedInformers
    security: SecurityConfig
    # the singletons of controllers their owners build with parts of their own that run in every core
    # (the garbage collector's and the namespace controller's health, RBAC's aggregation): by controller name
    prebuilt: Mapping[str, Sequence[Singleton]] = field(default_factory=dict)
    node_flags: NodeFlags = field(default_factory=lambda: NodeFlags())


@dataclass(frozen=True)
class Controller:
    name: str  # kube-controller-manager's name for it
    build: Callable[[Context], Sequence[Singleton]]  # its singletons (none where it has nothing to do)
    default: bool = False  # runs without --controllers
    per_namespace: bool = False  # kube-controller-manager's part in every namespace (left out as envtest does)


def _service_accounts(context: Context) -> Sequence[Singleton]:
    accounts = ServiceAccountsController(context.core, context.informers)
    return [Singleton("ServiceAccountsController", accounts.start, accounts.stop)]


def _root_ca(context: Context) -> Sequence[Singleton]:
    """ValueError or OSError for a root CA file that cannot be read."""
    if context.security.root_ca_file is None:
        return []
    publisher = RootCAPublisher(context.core, context.security.root_ca_file.read_text(), context.informers)
    return [Singleton("RootCAPublisher", publisher.start, publisher.stop)]


def _quota(context: Context) -> Sequence[Singleton]:
    quotas = ResourceQuotaController(context.core, context.informers)
    return [Singleton("ResourceQuotaController", quotas.start, quotas.stop)]


def _imported(module: str, *constants: str) -> Callable[[Context], Sequence[Singleton]]:
    """A controller that `server.controllers.<module>.singletons(core, informers, *the module's constants named)`
    builds, imported when it is built: a default start imports none of those that run only when named (~20 ms)."""
    def build(c: Context) -> Sequence[Singleton]:
        found = importlib.import_module(f"server.controllers.{module}")
        built: Sequence[Singleton] = found.singletons(c.core, c.informers, *(getattr(found, n) for n in constants))
        return built

    return build


def _node_lifecycle(context: Context) -> Sequence[Singleton]:
    lifecycle = NodeLifecycleController(context.core, context.informers, context.node_flags.lifecycle)
    return [Singleton("NodeLifecycleController", lifecycle.start, lifecycle.stop)]


def _podgc(context: Context) -> Sequence[Singleton]:
    gc = PodGC(context.core, context.informers, context.node_flags.podgc)
    return [Singleton("PodGC", gc.start, gc.stop)]


def _prebuilt(name: str) -> Callable[[Context], Sequence[Singleton]]:
    return lambda context: context.prebuilt.get(name, ())


CONTROLLERS: tuple[Controller, ...] = (
    Controller("garbagecollector", _prebuilt("garbagecollector"), default=True),
    Controller("namespace", _prebuilt("namespace"), default=True),
    Controller("clusterrole-aggregation", _prebuilt("clusterrole-aggregation"), default=True),
    Controller("serviceaccount", _service_accounts, default=True, per_namespace=True),
    Controller("root-ca-cert-publisher", _root_ca, default=True, per_namespace=True),
    # secret-based service account tokens filled and cleaned up (needs the signing key, as kube's needs its own)
    Controller("serviceaccount-token", lambda c: tokens.singletons(
        c.core, c.informers, c.security.service_account_signing_key_file, c.security.root_ca_file),
        default=True, per_namespace=True),
    Controller("resourcequota", _quota, default=True, per_namespace=True),
    Controller("csrsigning", lambda c: csrsigning.singletons(c.core, c.security), default=True),
    Controller("endpoint", lambda c: endpoints.singletons(c.core, c.informers), default=True, per_namespace=True),
    Controller("endpointslice", lambda c: endpointslices.singletons(c.core, c.informers), default=True,
               per_namespace=True),
    Controller("endpointslicemirroring", lambda c: endpointslicemirroring.singletons(c.core, c.informers),
               default=True, per_namespace=True),
    # the workload controllers (apps): run when named or with *
    Controller("deployment", _imported("deployment")),
    Controller("replicaset", _imported("replicaset", "REPLICA_SET")),
    Controller("replicationcontroller", _imported("replicaset", "REPLICATION_CONTROLLER")),
    # the stateful workloads: StatefulSets, DaemonSets, PersistentVolume binding
    Controller("statefulset", _imported("statefulset")),
    Controller("daemonset", _imported("daemonset")),
    Controller("persistentvolume-binder", _imported("pvbinder")),
    # a claim or volume in use waits, Terminating, until it is not (the StorageObjectInUseProtection finalizers)
    Controller("pvc-protection", _imported("protection", "PVC_PROTECTION"), default=True, per_namespace=True),
    Controller("pv-protection", _imported("protection", "PV_PROTECTION"), default=True, per_namespace=True),
    # kube's batch controllers: run when named or with *
    Controller("job", _imported("job")),
    Controller("cronjob", _imported("cronjob")),
    Controller("ttl-after-finished", _imported("ttlafterfinished")),
    Controller("disruption", _imported("disruption")),
    # the simulated nodes' partners (server/controllers/kubelets/ plays the kubelets)
    Controller("nodelifecycle", _node_lifecycle),
    Controller("podgc", _podgc),
    # kube-scheduler's default profile, elected with the controllers (field manager kube-scheduler)
    Controller("scheduler", _imported("scheduler.scheduler")),
)
DEFAULT_NODE_FLAGS = NodeFlags()
KNOWN = frozenset(c.name for c in CONTROLLERS)
DEFAULT = frozenset(c.name for c in CONTROLLERS if c.default)


def enabled(flag: Iterable[str] | None) -> frozenset[str]:
    """The controllers a --controllers value turns on; None or empty: the default set. ControllersError for a
    name that is not a known controller (kube's text)."""
    names = [name.strip() for name in flag or () if name.strip()]
    if not names:
        return DEFAULT
    for name in names:
        bare = name[1:] if name.startswith("-") else name
        if name != "*" and bare not in KNOWN:
            raise ControllersError(f'"{bare}" is not in the list of known controllers')
    on = {name for name in names if name != "*" and not name.startswith("-")}
    off = {name[1:] for name in names if name.startswith("-")}
    everything = KNOWN if "*" in names else frozenset()
    return frozenset((everything | on) - off)


def build(context: Context, names: frozenset[str], *, namespace_controllers: bool) -> list[Singleton]:
    """The singletons of the controllers named, in the table's order."""
    parts: list[Singleton] = []
    for controller in CONTROLLERS:
        if controller.name in names and (namespace_controllers or not controller.per_namespace):
            parts.extend(controller.build(context))
    return parts
