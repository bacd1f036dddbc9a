"""What an object uses of a ResourceQuota (kube's quota evaluators, pkg/quota/v1/evaluator/core and
k8s.io/apiserver/pkg/quota/v1/generic): for each group/resource, which quota resource names it answers for,
what one object uses, whether a quota's scopes match it, and on which operations admission charges it.

Pods (create only): `count/pods` always; while the Pod is not terminal and not past its deletion grace period
also `pods`, `cpu`/`requests.cpu`, `limits.cpu`, the same for memory and ephemeral-storage, hugepages and
`requests.<extended resource>`, from the sum of its containers' requests and limits, each at least the
largest init container's, plus spec.overhead. PersistentVolumeClaims (create and update): the count,
`requests.storage` and per storage class `<class>.storageclass.storage.k8s.io/{requests.storage,
persistentvolumeclaims}`. Services (create and update): the count, `services.nodeports` and
`services.loadbalancers`. Everything else (create only): `count/<resource>.<group>` and, for configmaps,
secrets, replicationcontrollers and resourcequotas, the legacy name. Only Pods have scopes; any other
object never matches a scoped quota (generic.MatchesNoScopeFunc).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from server.admission.quantities import ResourceList, add, larger, one, parse, plus
from server.kinds.corev1 import storage_class_of
from server.machinery.codec.quantity import Quantity
from server.machinery.values import Obj

STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
LEGACY = ("configmaps", "secrets", "replicationcontrollers", "resourcequotas")
POD_RESOURCES = ("count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                 "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods")
# Resources a pod must request or limit in every container when a matching quota tracks them (a documented
# mistake kube keeps for compatibility).
POD_REQUIRED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
QOS_RESOURCES = ("cpu", "memory")

Scope = dict[str, Any]  # a ScopedResourceSelectorRequirement: scopeName, operator, values


def count_name(group: str, resource: str) -> str:
    """generic.ObjectCountQuotaResourceNameFor: count/<resource>[.<group>]."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


@dataclass(frozen=True, slots=True)
class Evaluator:
    group: str
    resource: str
    # The quota resource names among `names` this kind answers for.
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Obj], ResourceList]
    # Whether one scope selector matches the object.
    scope: Callable[[Scope, Obj], bool]
    handles_update: bool = False
    # The error words of evaluator.Constraints ("" when the object satisfies them).
    constraints: Callable[[Iterable[str], Obj], str] = lambda required, obj: ""

    def matches(self, quota: Obj, obj: Obj) -> bool:
        """generic.Matches: the quota tracks something this kind uses and every scope selects the object."""
        hard = list((quota.get("status") or {}).get("hard") or {})
        return bool(self.matching(hard)) and all(self.scope(s, obj) for s in scope_selectors(quota))


def scope_selectors(quota: Obj) -> list[Scope]:
    spec = quota.get("spec") or {}
    scopes: list[Scope] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    scopes.extend((spec.get("scopeSelector") or {}).get("matchExpressions") or [])
    return scopes


def _no_scope(scope: Scope, obj: Obj) -> bool:
    return False


# --- the generic object count -------------------------------------------------------------------------------


def _generic(group: str, resource: str) -> Evaluator:
    names = (count_name(group, resource), *((resource,) if not group and resource in LEGACY else ()))

    def usage(obj: Obj) -> ResourceList:
        return {name: one() for name in names}

    return Evaluator(group, resource, lambda hard: [n for n in hard if n in names], usage, _no_scope)


# --- pods ---------------------------------------------------------------------------------------------------


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _pod_matching(hard: Iterable[str]) -> list[str]:
    return [n for n in hard if n in POD_RESOURCES or n.startswith(("hugepages-", "requests.hugepages-"))
            or (not _is_native(n) and n.startswith("requests."))]


def _containers(spec: Obj, field: str) -> list[Obj]:
    return list(spec.get(field) or [])


def _resources(container: Obj, which: str) -> ResourceList:
    return parse((container.get("resources") or {}).get(which))


def pod_totals(spec: Obj, which: str) -> ResourceList:
    """resourcehelper.PodRequests/PodLimits: the containers' sum, raised to any init container's value, plus
    the overhead (limits: only for resources the pod limits)."""
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        total = add(total, _resources(container, which))
    for container in _containers(spec, "initContainers"):
        for name, q in _resources(container, which).items():
            total[name] = larger(total[name], q) if name in total else q
    for name, q in parse(spec.get("overhead")).items():
        if which == "requests" or name in total:
            total[name] = plus(total[name], q) if name in total else q
    return total


def compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """podComputeUsageHelper: the quota names a set of requests and limits uses, `pods` included."""
    out: ResourceList = {"pods": one()}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = q
        elif not _is_native(name) and not name.startswith("requests."):
            out[f"requests.{name}"] = q
    return out


def _timestamp(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def deletion_expiry(pod: Obj) -> datetime.datetime | None:
    """When a Pod marked for deletion stops being charged: its deletionTimestamp plus its grace period."""
    m = pod.get("metadata") or {}
    stamp, grace = m.get("deletionTimestamp"), m.get("deletionGracePeriodSeconds")
    if not stamp or grace is None:
        return None
    when = _timestamp(str(stamp))
    return None if when is None else when + datetime.timedelta(seconds=int(grace))


def pod_charged(pod: Obj, now: datetime.datetime | None = None) -> bool:
    """QuotaV1Pod: not Succeeded or Failed, and not past the end of its deletion grace period."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    expiry = deletion_expiry(pod)
    return expiry is None or (now or datetime.datetime.now(datetime.UTC)) <= expiry


def _pod_usage(pod: Obj) -> ResourceList:
    out: ResourceList = {"count/pods": one()}
    if not pod_charged(pod):
        return out
    spec = pod.get("spec") or {}
    return add(out, compute_usage(pod_totals(spec, "requests"), pod_totals(spec, "limits")))


def best_effort(spec: Obj) -> bool:
    """qos.GetPodQOS == BestEffort: no container requests or limits cpu or memory above zero."""
    for container in (*_containers(spec, "containers"), *_containers(spec, "initContainers")):
        for which in ("requests", "limits"):
            if any(n in QOS_RESOURCES and q.sign() > 0 for n, q in _resources(container, which).items()):
                return False
    return True


def _cross_namespace_affinity(spec: Obj) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") or {} for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution")
                  or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _priority_class(scope: Scope, spec: Obj) -> bool:
    """The selector over the label set {PriorityClass: <the pod's class>} (empty without a class)."""
    name = spec.get("priorityClassName") or ""
    operator, values = scope.get("operator"), scope.get("values") or []
    if operator == "Exists":
        return bool(name)
    if operator == "DoesNotExist":
        return not name
    if operator == "In":
        return bool(name) and name in values
    if operator == "NotIn":
        return not name or name not in values
    return False


def _pod_scope(scope: Scope, pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    name = scope.get("scopeName")
    terminating = isinstance(spec.get("activeDeadlineSeconds"), int) and spec["activeDeadlineSeconds"] >= 0
    if name == "Terminating":
        return terminating
    if name == "NotTerminating":
        return not terminating
    if name == "BestEffort":
        return best_effort(spec)
    if name == "NotBestEffort":
        return not best_effort(spec)
    if name == "PriorityClass":
        return _priority_class(scope, spec)
    if name == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    return False


def _pod_constraints(required: Iterable[str], pod: Obj) -> str:
    """Every container (and init container) must request or limit what a matching quota tracks of POD_REQUIRED."""
    wanted = set(required) & POD_REQUIRED
    missing: set[str] = set()
    spec = pod.get("spec") or {}
    for container in (*_containers(spec, "containers"), *_containers(spec, "initContainers")):
        have = compute_usage(_resources(container, "requests"), _resources(container, "limits"))
        missing |= wanted - set(have)
    return f"must specify {','.join(sorted(missing))}" if missing else ""


# --- persistent volume claims --------------------------------------------------------------------------------


def _pvc_matching(hard: Iterable[str]) -> list[str]:
    base = ("count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage")
    return [n for n in hard if n in base or (STORAGE_CLASS_SUFFIX in n and n.endswith(
        ("/requests.storage", "/persistentvolumeclaims")))]


def _pvc_usage(pvc: Obj) -> ResourceList:
    out: ResourceList = {"count/persistentvolumeclaims": one(), "persistentvolumeclaims": one()}
    storage_class = storage_class_of(pvc)
    if storage_class:
        out[f"{storage_class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = one()
    request = parse(((pvc.get("spec") or {}).get("resources") or {}).get("requests")).get("storage")
    if request is not None:
        out["requests.storage"] = request
        if storage_class:
            out[f"{storage_class}{STORAGE_CLASS_SUFFIX}requests.storage"] = request
    return out


# --- services ------------------------------------------------------------------------------------------------

SERVICE_RESOURCES = ("count/services", "services", "services.nodeports", "services.loadbalancers")


def _service_usage(service: Obj) -> ResourceList:
    spec = service.get("spec") or {}
    out: ResourceList = {"count/services": one(), "services": one()}
    ports = spec.get("ports") or []
    kind = spec.get("type") or "ClusterIP"
    if kind == "NodePort":
        out["services.nodeports"] = Quantity(len(ports), 0, "DecimalSI")
    elif kind == "LoadBalancer":
        with_ports = len(ports) if spec.get("allocateLoadBalancerNodePorts", True) is not False else sum(
            1 for p in ports if p.get("nodePort"))
        out["services.nodeports"] = Quantity(with_ports, 0, "DecimalSI")
        out["services.loadbalancers"] = one()
    return out


EVALUATORS = {
    ("", "pods"): Evaluator("", "pods", _pod_matching, _pod_usage, _pod_scope, constraints=_pod_constraints),
    ("", "persistentvolumeclaims"): Evaluator("", "persistentvolumeclaims", _pvc_matching, _pvc_usage, _no_scope,
                                              handles_update=True),
    ("", "services"): Evaluator("", "services", lambda hard: [n for n in hard if n in SERVICE_RESOURCES],
                                _service_usage, _no_scope, handles_update=True),
}


@functools.lru_cache(maxsize=1024)
def evaluator(group: str, resource: str) -> Evaluator:
    """The kind's evaluator, made once per kind (bounded: quotas may name any count/<resource>.<group>)."""
    return EVALUATORS.get((group, resource)) or _generic(group, resource)


def counted(name: str) -> tuple[str, str] | None:
    """The (group, resource) a generic quota name counts: "count/deployments.apps" -> ("apps", "deployments"),
    the legacy "secrets" -> ("", "secrets"); None for names of the kinds with their own evaluator or none."""
    if name in LEGACY:
        return "", name
    if not name.startswith("count/"):
        return None
    resource, _, group = name[len("count/"):].partition(".")
    return None if not group and resource in ("pods", "services", "persistentvolumeclaims") else (group, resource)
