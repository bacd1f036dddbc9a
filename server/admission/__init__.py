"""kube-apiserver's admission chain: plugins, each handling some operations, run in kube's order on every
create, update (PUT, patch, apply, subresource writes) and delete, for built-in kinds and custom resources,
whichever interface the call came in on (the verbs hand every write to the chain through
server/objects/admitting.py).

The order is kube 1.28's (kube's RecommendedPluginOrder, restricted to what Capstan runs):
  mutating:   Priority (priority.py: a new Pod's priority from its PriorityClass, an updated one's kept),
              DefaultTolerationSeconds (tolerations.py: a Pod tolerates not-ready and unreachable nodes for
              300 s), DefaultStorageClass
              (defaultclass.py: the default class of a new claim that names none), StorageObjectInUseProtection
              (protection.py: the protection finalizers of new claims and volumes), RuntimeClass (runtimeclass.py:
              a new Pod's overhead and scheduling from its RuntimeClass), DefaultIngressClass (defaultclass.py),
              LimitRanger (a new Pod's defaults), ServiceAccount, NodeRestriction (noderestriction.py, a
              kubelet's writes; off by default, as kube's), MutatingAdmissionWebhook
  the kind's own admission (a Service's allocations, RBAC's escalation check: kube's REST storage does them
  between mutating and validating admission)
  validating: PodSecurity (podsecurity/: the Pod Security Standards a namespace's labels choose), Priority
              (one global default PriorityClass), PersistentVolumeClaimResize (pvcresize.py: a claim grows only
              where its class allows), RuntimeClass (a Pod's overhead is its class's), CertificateApproval,
              CertificateSigning and
              CertificateSubjectRestriction (certificates.py: who may approve and sign for a signer), LimitRanger
              (bounds), ValidatingAdmissionPolicy (policies.py, when its feature gate and group version are on),
              ValidatingAdmissionWebhook, ResourceQuota (last: it charges the object just before the write)
DefaultTolerationSeconds (tolerations.py) and Priority also run on a Pod's update: an update's mutating plugins run
before its validation (server/objects/admitting.py), so a Pod replaced without them keeps its priority and gets the
default tolerations again, as in kube. NamespaceLifecycle, kube's first plugin, is the verbs' own namespace check
(server/objects/namespaces.py) and always on. A new Pod the built-in mutating plugins changed is validated again and
its QoS class recomputed, as kube validates and prepares a Pod after mutating admission; a new object a webhook
changed is typed, pruned and validated again by the webhook plugin. LimitRanger and ResourceQuota judge the built-in
kinds, as before custom resources are counted; writes through a subresource, and the objects of a subresource's own
kind (a Binding, an Eviction, a Scale), reach the webhooks and the plugins that name that subresource (the
certificate plugins' /approval and /status, PodSecurity's pods/ephemeralcontainers) only.

`--enable-admission-plugins` / `--disable-admission-plugins` choose among kube's plugin names (`enabled`).

Each step and each plugin that runs is timed under kube's names (server/machinery/apimetrics.py):
apiserver_admission_step_admission_duration_seconds{type="admit"|"validate"} and
apiserver_admission_controller_admission_duration_seconds{name=<plugin>}, `rejected` true when it refused.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType

from server.admission import (
    defaultclass,
    limitranger,
    noderestriction,
    priority,
    protection,
    pvcresize,
    quota,
    runtimeclass,
    serviceaccount,
    tolerations,
)
from server.kinds.pods import POD_SCHEMA, qos_class
from server.kinds.shaped import retype
from server.machinery import apimetrics, tracing
from server.machinery.values import Obj
from server.objects import validate
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.registry.resources import Resource

Step = Callable[[Context, Attributes], Awaitable[None]]

# kube-apiserver 1.28's plugins, in its order; those Capstan does not run are named in NOT_RUN.
KUBE_PLUGINS = (
    "AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists", "AlwaysPullImages",
    "ImagePolicyWebhook", "PodSecurity", "PodNodeSelector", "Priority", "DefaultTolerationSeconds",
    "PodTolerationRestriction", "EventRateLimit", "ExtendedResourceToleration", "PersistentVolumeLabel",
    "DefaultStorageClass", "StorageObjectInUseProtection", "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
    "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass", "DenyServiceExternalIPs",
    "LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount", "NodeRestriction",
    "TaintNodesByCondition", "AlwaysDeny", "SecurityContextDeny", "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
)
# kube 1.28's default-enabled plugins (DefaultOffAdmissionPlugins' complement) among those above.
KUBE_DEFAULT = frozenset((
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
    "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
    "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
    "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
))


# Accepted by name, and not run: a name here in --enable-admission-plugins is logged as having no effect.
# (NamespaceLifecycle and NamespaceExists are the verbs' own namespace check; AlwaysAdmit, PersistentVolumeLabel
# and ClusterTrustBundleAttest have nothing to do here.)
NOT_RUN = frozenset((
    "NamespaceAutoProvision", "ImagePolicyWebhook", "PodNodeSelector", "PodTolerationRestriction", "EventRateLimit",
    "ExtendedResourceToleration", "OwnerReferencesPermissionEnforcement", "LimitPodHardAntiAffinityTopology",
    "SecurityContextDeny",
))


def enabled(enable: Iterable[str] = (), disable: Iterable[str] = ()) -> frozenset[str]:
    """The plugins on, from kube's flags (ValueError with kube's text for a name kube does not know; a name
    both enabled and disabled is refused as kube refuses it)."""
    enable, disable = list(enable), list(disable)
    for flag, names in (("enable-admission-plugins", enable), ("disable-admission-plugins", disable)):
        for name in names:
            if name not in KUBE_PLUGINS:
                raise ValueError(f"{flag} plugin \"{name}\" is unknown")
    both = sorted(set(enable) & set(disable))
    if both:
        raise ValueError(f"{both} in enable-admission-plugins and disable-admission-plugins overlapped")
    return frozenset((KUBE_DEFAULT | set(enable)) - set(disable))


@dataclass(frozen=True, slots=True)
class Plugin:
    """One admission plugin: the operations it handles and its mutating and validating steps. `idle`, when
    given, says the plugin has nothing to do now (a webhook plugin with no configuration): the chain then skips
    it, so a request pays nothing for what is not configured. `resources`, when given, are the (group, resource)
    pairs the plugin judges; the chain calls it for no other, so a write of another kind pays nothing for it."""

    name: str
    operations: frozenset[str]
    mutate: Step | None = None
    validate: Step | None = None
    idle: Callable[[], bool] | None = None
    resources: frozenset[tuple[str, str]] | None = None

    def handles(self, operation: str) -> bool:
        return operation in self.operations and (self.idle is None or not self.idle())

    def judges(self, operation: str, group: str, resource: str) -> bool:
        """Whether a request of this operation on this resource reaches the plugin at all (idle aside)."""
        return operation in self.operations and (self.resources is None or (group, resource) in self.resources)


class Chain:
    """The plugins of one core, in kube's order (server.objects.admitting.Chain)."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)
        self._mutating = tuple((p, p.mutate) for p in self.plugins if p.mutate is not None)
        self._validating = tuple((p, p.validate) for p in self.plugins if p.validate is not None)
        # Each phase's steps for one operation on one resource, found once: a request of that shape then walks
        # only the plugins that judge it.
        self._phases: dict[tuple[str, str, str], tuple[_Steps, _Steps]] = {}

    def _for(self, attrs: Attributes) -> tuple[_Steps, _Steps]:
        key = (attrs.operation, attrs.resource.group, attrs.resource.resource)
        found = self._phases.get(key)
        if found is None:
            found = self._phases[key] = (
                tuple((p, s) for p, s in self._mutating if p.judges(*key)),
                tuple((p, s) for p, s in self._validating if p.judges(*key)))
        return found

    async def admit(self, ctx: Context, attrs: Attributes) -> None:
        with tracing.span("Admission", {"operation": attrs.operation, "resource": attrs.resource.resource}):
            await self._admit(ctx, attrs)

    async def mutate(self, ctx: Context, attrs: Attributes) -> None:
        """The mutating plugins alone, on an updated object before its kind prepares and validates it (which
        follows, so nothing is validated here)."""
        mutating = self._for(attrs)[0]
        if not mutating:  # nothing to run first: `admit` runs (and times) the whole chain as for a create
            return
        with tracing.span("Admission", {"operation": attrs.operation, "resource": attrs.resource.resource}):
            with _Timed("admit", attrs.operation):
                await _steps(mutating, "admit", ctx, attrs)
            attrs.memo.pop(POD_CHANGED, None)
            attrs.mutated = True

    async def _admit(self, ctx: Context, attrs: Attributes) -> None:
        operation = attrs.operation
        mutating, validating = self._for(attrs)
        if attrs.mutated:  # an update's mutating step was timed by `mutate`; the kind's own admission remains
            await self._own(ctx, attrs)
        else:
            with _Timed("admit", operation):
                await _steps(mutating, "admit", ctx, attrs)
                if attrs.memo.pop(POD_CHANGED, False) and attrs.obj is not None:
                    _revalidate_pod(attrs.resource, attrs.obj)
                await self._own(ctx, attrs)
        with _Timed("validate", operation):
            await _steps(validating, "validate", ctx, attrs)

    @staticmethod
    async def _own(ctx: Context, attrs: Attributes) -> None:
        """The kind's own admission (kube's REST storage's, between the mutating and validating plugins)."""
        if attrs.obj is not None and not attrs.subresource and attrs.kind is None:
            await attrs.resource.strategy.admit(ctx, attrs.obj, attrs.old, attrs.dry_run)


class _Timed:
    """A `with` block observed as one phase of admission (kube's admission step histogram): rejected when it
    raises."""

    __slots__ = ("_operation", "_phase", "_started")

    def __init__(self, phase: str, operation: str) -> None:
        self._phase = phase
        self._operation = operation
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
                 ) -> None:
        apimetrics.admission_step(self._phase, self._operation, kind is not None, time.perf_counter() - self._started)


_Steps = tuple[tuple[Plugin, Step], ...]


async def _steps(steps: _Steps, kind: str, ctx: Context, attrs: Attributes) -> None:
    """One phase's plugins that handle the operation, in order, each timed as kube's admission controller
    histogram; the first to refuse ends the phase."""
    operation = attrs.operation
    for plugin, step in steps:
        if plugin.handles(operation):
            started, rejected = time.perf_counter(), True
            try:
                await step(ctx, attrs)
                rejected = False
            finally:
                apimetrics.admission_controller(plugin.name, kind, operation, rejected,
                                                time.perf_counter() - started)


POD_CHANGED = "pod-changed"
_PODS = frozenset({("", "pods")})
_PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")
_RANGES = "limitranges"
_WRITES = frozenset(("CREATE", "UPDATE"))


def builtin_plugins(builtin: Iterable[Resource], on: frozenset[str], *, service_accounts: bool,
                    quotas: quota.Quotas | None = None) -> list[Plugin]:
    """LimitRanger and ServiceAccount over the built-in namespaced kinds (`builtin`) and ResourceQuota over
    every namespaced kind, where `on` names them. service_accounts: the ServiceAccount plugin looks the account
    up and mounts its token (only where the default ServiceAccount is kept in every namespace); else it names
    the account alone. quotas: where ResourceQuota reads a namespace's
    quotas (None: the store, every write)."""
    judged = {(r.group, r.resource) for r in builtin if r.namespaced}

    def ours(attrs: Attributes) -> bool:
        r = attrs.resource
        return (attrs.obj is not None and not attrs.subresource and attrs.kind is None
                and (r.group, r.resource) in judged)

    def is_pod(attrs: Attributes) -> bool:
        return attrs.resource.group == "" and attrs.resource.resource == "pods"

    async def ranges(ctx: Context, attrs: Attributes) -> list[Obj]:
        r = attrs.resource
        if r.group != "" or r.resource not in ("pods", "persistentvolumeclaims"):
            return []
        if _RANGES not in attrs.memo:
            attrs.memo[_RANGES] = await limitranger.ranges_in(ctx, attrs.namespace)
        found = attrs.memo[_RANGES]
        assert isinstance(found, list)
        return found

    async def limit_defaults(ctx: Context, attrs: Attributes) -> None:
        if ours(attrs) and is_pod(attrs) and attrs.operation == "CREATE":
            assert attrs.obj is not None
            found = await ranges(ctx, attrs)
            if found and limitranger.mutate_pod(attrs.obj, found):
                attrs.memo[POD_CHANGED] = True

    async def limit_bounds(ctx: Context, attrs: Attributes) -> None:
        if ours(attrs):
            assert attrs.obj is not None
            found = await ranges(ctx, attrs)
            if found:
                limitranger.validate(attrs.resource, attrs.obj, attrs.old, found)

    async def pod_priority(ctx: Context, attrs: Attributes) -> None:
        if ours(attrs) and is_pod(attrs):
            assert attrs.obj is not None
            if attrs.old is None:
                await priority.admit(ctx, attrs.resource, attrs.obj)
            else:
                priority.keep(attrs.obj, attrs.old)
            attrs.memo[POD_CHANGED] = True

    async def default_tolerations(ctx: Context, attrs: Attributes) -> None:
        if ours(attrs) and is_pod(attrs):
            assert attrs.obj is not None
            if tolerations.admit(attrs.obj):
                attrs.memo[POD_CHANGED] = True

    async def one_default_class(ctx: Context, attrs: Attributes) -> None:
        r = attrs.resource
        if (r.group, r.resource) == _PRIORITY_CLASSES and attrs.obj is not None and not attrs.subresource:
            await priority.validate_class(ctx, r, attrs.operation, attrs.obj)

    async def service_account(ctx: Context, attrs: Attributes) -> None:
        if ours(attrs) and is_pod(attrs) and attrs.operation == "CREATE":
            assert attrs.obj is not None
            if service_accounts:
                await serviceaccount.admit(ctx, attrs.resource, attrs.obj)
            else:
                serviceaccount.name_default(attrs.obj)
            attrs.memo[POD_CHANGED] = True

    async def runtime_class(ctx: Context, attrs: Attributes) -> None:
        if runtimeclass.handles(attrs) and await runtimeclass.admit(ctx, attrs):
            attrs.memo[POD_CHANGED] = True

    async def runtime_class_overhead(ctx: Context, attrs: Attributes) -> None:
        if runtimeclass.handles(attrs):
            await runtimeclass.validate(ctx, attrs)

    async def protect(ctx: Context, attrs: Attributes) -> None:
        if protection.handles(attrs):
            protection.admit(attrs)

    async def resize(ctx: Context, attrs: Attributes) -> None:
        if pvcresize.handles(attrs):
            await pvcresize.validate(ctx, attrs)

    async def charge(ctx: Context, attrs: Attributes) -> None:
        # every namespaced kind, custom resources included: their objects count as `count/<plural>.<group>`
        if attrs.obj is not None and not attrs.subresource and attrs.resource.namespaced:
            assert attrs.obj is not None
            await quota.admit(ctx, attrs.resource, attrs.obj, attrs.old, attrs.dry_run, quotas)

    plugins = []
    if "Priority" in on:
        plugins.append(Plugin("Priority", _WRITES, pod_priority, one_default_class,
                              resources=_PODS | {_PRIORITY_CLASSES}))
    if tolerations.NAME in on:
        plugins.append(Plugin(tolerations.NAME, _WRITES, default_tolerations, resources=_PODS))
    if runtimeclass.NAME in on:
        plugins.append(Plugin(runtimeclass.NAME, frozenset(("CREATE",)), runtime_class, runtime_class_overhead,
                              resources=_PODS))
    for defaulted in defaultclass.PLUGINS:
        if defaulted.name in on:
            plugins.append(Plugin(defaulted.name, frozenset(("CREATE",)), _defaulting(defaulted),
                                  resources=frozenset({(defaulted.group, defaulted.resource)})))
    if protection.NAME in on:
        plugins.append(Plugin(protection.NAME, frozenset(("CREATE",)), protect,
                              resources=frozenset(("", r) for r in protection.FINALIZERS)))
    if pvcresize.NAME in on:
        plugins.append(Plugin(pvcresize.NAME, frozenset(("UPDATE",)), validate=resize,
                              resources=frozenset({("", "persistentvolumeclaims")})))
    if "LimitRanger" in on:
        plugins.append(Plugin("LimitRanger", _WRITES, limit_defaults, limit_bounds))
    if "ServiceAccount" in on:
        plugins.append(Plugin("ServiceAccount", frozenset(("CREATE",)), service_account, resources=_PODS))
    if noderestriction.NAME in on:  # a kubelet's writes, whatever the kind or subresource
        plugins.append(Plugin(noderestriction.NAME, frozenset(("CREATE", "UPDATE", "DELETE")),
                              noderestriction.admit))
    if "ResourceQuota" in on:
        plugins.append(Plugin("ResourceQuota", _WRITES, validate=charge))
    return plugins


def _defaulting(defaulted: defaultclass.Defaulted) -> Step:
    async def step(ctx: Context, attrs: Attributes) -> None:
        if defaulted.handles(attrs):
            await defaultclass.admit(defaulted, ctx, attrs)
    return step


def ordered(plugins: Iterable[Plugin]) -> list[Plugin]:
    """The plugins in kube's order."""
    return sorted(plugins, key=lambda p: KUBE_PLUGINS.index(p.name))


def _revalidate_pod(resource: Resource, pod: Obj) -> None:
    retype(POD_SCHEMA, pod)
    validate.raise_if_invalid(resource, pod, validate.for_create(resource, pod))
    pod.setdefault("status", {})["qosClass"] = qos_class(pod.get("spec") or {})
