"""What the scheduler's plugins read of a Pod and a Node, parsed once per object revision (kube-scheduler's
framework.PodInfo and the helpers in component-helpers/scheduling): resource requests as integers, host ports,
affinity terms with their selectors, node selector terms, taints and tolerations.

Contracts, as kube 1.28's:
- a Pod's requests (resource.PodRequests): the sum of its containers' requests, at least the largest init
  container's, plus spec.overhead; cpu in millicores, every other resource in whole units rounded up; a
  container without a request but with a limit counts its limit (the API server's defaulting);
- the non-zero requests LeastAllocated scores with count 100m cpu and 200Mi memory for a container that asks
  for none (schedutil.GetNonzeroRequests);
- an affinity term selects the Pods of its namespaces (the term's Pod's own when it lists none and has no
  namespaceSelector), or of the namespaces its namespaceSelector selects, whose labels match its selector;
- a node selector term with no requirement matches no Node; terms are ORed, requirements ANDed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from server.kinds.tolerations import tolerates
from server.machinery.codec.quantity import QuantityError, parse_quantity
from server.machinery.selectors import BadSelector
from server.machinery.selectors import labels as label_selectors

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
NamespaceLabels = Callable[[str], Mapping[str, str]]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
DEFAULT_MILLI_CPU = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
HOSTNAME = "kubernetes.io/hostname"
DEFAULT_SCHEDULER = "default-scheduler"


def key_of(obj: Obj) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


@functools.lru_cache(maxsize=4096)
def amount(name: str, value: str) -> int:
    """A quantity as kube-scheduler counts it: cpu in millicores, others in units, rounded up; 0 when unparsable."""
    try:
        q = parse_quantity(value)
    except QuantityError:
        return 0
    exponent: int = q.exponent + (3 if name == CPU else 0)
    coefficient: int = q.coefficient
    if exponent >= 0:
        return coefficient * int(10**exponent)
    scale: int = 10**-exponent
    return -(-coefficient // scale)


def resources(values: Mapping[str, Any] | None) -> dict[str, int]:
    return {str(name): amount(str(name), str(value)) for name, value in (values or {}).items()}


def _container_requests(container: Obj) -> dict[str, int]:
    spec = container.get("resources") or {}
    out = resources(spec.get("limits"))
    out.update(resources(spec.get("requests")))
    return out


def pod_requests(spec: Obj, *, non_zero: bool = False) -> dict[str, int]:
    """resource.PodRequests; with non_zero, a container missing a cpu or memory request counts the defaults."""
    def of(container: Obj) -> dict[str, int]:
        found = _container_requests(container)
        if non_zero:
            found.setdefault(CPU, DEFAULT_MILLI_CPU)
            found.setdefault(MEMORY, DEFAULT_MEMORY)
        return found

    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for name, value in of(container).items():
            total[name] = total.get(name, 0) + value
    for container in spec.get("initContainers") or []:
        for name, value in of(container).items():
            total[name] = max(total.get(name, 0), value)
    for name, value in resources(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + value
    return total


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A PodAffinityTerm with its selectors parsed (framework.AffinityTerm)."""

    namespaces: frozenset[str]
    namespace_selector: label_selectors.Selector
    selector: label_selectors.Selector
    topology_key: str
    key: str = ""  # the term as text: what the cache remembers its counts under

    def matches(self, pod: PodInfo, namespace_labels: NamespaceLabels) -> bool:
        if pod.namespace not in self.namespaces and not self.namespace_selector.matches(
                namespace_labels(pod.namespace)):
            return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    weight: int
    term: AffinityTerm


def _selector(value: object) -> label_selectors.Selector:
    try:
        return label_selectors.from_label_selector(value if isinstance(value, dict) else None)
    except (BadSelector, TypeError):
        return label_selectors.NOTHING


def _term(owner_namespace: str, raw: Obj) -> AffinityTerm:
    namespaces = frozenset(str(n) for n in raw.get("namespaces") or [])
    has_selector = isinstance(raw.get("namespaceSelector"), dict)
    if not namespaces and not has_selector:
        namespaces = frozenset((owner_namespace,))
    namespace_selector = _selector(raw.get("namespaceSelector")) if has_selector else label_selectors.NOTHING
    selector = _selector(raw.get("labelSelector"))
    topology = str(raw.get("topologyKey") or "")
    key = f"{','.join(sorted(namespaces))}|{selector_key(namespace_selector)}|{selector_key(selector)}|{topology}"
    return AffinityTerm(namespaces, namespace_selector, selector, topology, key)


def selector_key(selector: label_selectors.Selector) -> str:
    """A selector as text, distinct for distinct selectors (Nothing is not Everything)."""
    return "<nothing>" if selector.nothing else str(selector)


def _terms(namespace: str, affinity: Obj, kind: str) -> tuple[tuple[AffinityTerm, ...], tuple[WeightedTerm, ...]]:
    section = affinity.get(kind) or {}
    required = tuple(_term(namespace, t) for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
                     if isinstance(t, dict))
    preferred = tuple(WeightedTerm(int(t.get("weight") or 0), _term(namespace, t.get("podAffinityTerm") or {}))
                      for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                      if isinstance(t, dict))
    return required, preferred


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """HostPortInfo.CheckConflict: same protocol and port, and the same IP or either is 0.0.0.0."""
        return (self.protocol == other.protocol and self.port == other.port
                and (self.ip == other.ip or "0.0.0.0" in (self.ip, other.ip)))


@dataclass(frozen=True, slots=True)
class PodInfo:
    """A Pod as the scheduler reads it."""

    key: Key
    uid: str
    labels: Mapping[str, str]
    node_name: str
    scheduler_name: str
    priority: int
    preemption_policy: str
    terminating: bool
    phase: str
    requests: Mapping[str, int]
    non_zero: Mapping[str, int]
    host_ports: tuple[HostPort, ...]
    node_selector: Mapping[str, str]
    required_node_terms: tuple[Obj, ...] | None  # None: no required node affinity
    preferred_node_terms: tuple[tuple[int, Obj], ...]
    tolerations: tuple[Obj, ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedTerm, ...]
    preferred_anti_affinity: tuple[WeightedTerm, ...]
    spread_constraints: tuple[Obj, ...]
    raw: Obj

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]

    @property
    def has_affinity(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity)


def pod_info(pod: Obj) -> PodInfo:
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    key = key_of(pod)
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    required_terms = (tuple(t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict))
                      if isinstance(required, dict) else None)
    preferred = tuple((int(t.get("weight") or 0), t.get("preference") or {})
                      for t in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                      if isinstance(t, dict))
    ports = tuple(HostPort(str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), int(p["hostPort"]))
                  for c in spec.get("containers") or [] for p in c.get("ports") or []
                  if isinstance(p, dict) and int(p.get("hostPort") or 0) > 0)
    affinity_required, affinity_preferred = _terms(key[0], affinity, "podAffinity")
    anti_required, anti_preferred = _terms(key[0], affinity, "podAntiAffinity")
    return PodInfo(
        key=key, uid=str(metadata.get("uid") or ""), labels=dict(metadata.get("labels") or {}),
        node_name=str(spec.get("nodeName") or ""), scheduler_name=str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        priority=int(spec.get("priority") or 0), preemption_policy=str(spec.get("preemptionPolicy") or ""),
        terminating=bool(metadata.get("deletionTimestamp")), phase=str((pod.get("status") or {}).get("phase") or ""),
        requests=pod_requests(spec), non_zero=pod_requests(spec, non_zero=True), host_ports=ports,
        node_selector=dict(spec.get("nodeSelector") or {}), required_node_terms=required_terms,
        preferred_node_terms=preferred,
        tolerations=tuple(t for t in spec.get("tolerations") or [] if isinstance(t, dict)),
        required_affinity=affinity_required, required_anti_affinity=anti_required,
        preferred_affinity=affinity_preferred, preferred_anti_affinity=anti_preferred,
        spread_constraints=tuple(c for c in spec.get("topologySpreadConstraints") or [] if isinstance(c, dict)),
        raw=pod)


def _spec_but_node(pod: Obj) -> Obj:
    spec = dict(pod.get("spec") or {})
    spec.pop("nodeName", None)
    return spec


def refresh(old: PodInfo | None, pod: Obj) -> PodInfo:
    """pod_info(pod), reusing `old`'s parse when only spec.nodeName, the status beyond its phase, or bookkeeping
    (resourceVersion, managedFields, annotations) changed."""
    if old is not None:
        was, now = old.raw.get("metadata") or {}, pod.get("metadata") or {}
        if (was.get("uid") == now.get("uid") and was.get("labels") == now.get("labels")
                and was.get("deletionTimestamp") == now.get("deletionTimestamp")
                and str((pod.get("status") or {}).get("phase") or "") == old.phase
                and _spec_but_node(old.raw) == _spec_but_node(pod)):
            return dataclasses.replace(old, node_name=str((pod.get("spec") or {}).get("nodeName") or ""), raw=pod)
    return pod_info(pod)


# --- node selectors ------------------------------------------------------------------------------------------------

def _requirement_matches(requirement: Obj, labels: Mapping[str, str]) -> bool:
    """A NodeSelectorRequirement over labels (nodeaffinity's NodeSelectorRequirementsAsSelector)."""
    key = str(requirement.get("key") or "")
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    has = key in labels
    if operator == "In":
        return has and labels[key] in values
    if operator == "NotIn":
        return not has or labels[key] not in values
    if operator == "Exists":
        return has
    if operator == "DoesNotExist":
        return not has
    if operator in ("Gt", "Lt") and has and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _field_matches(requirement: Obj, node_name: str) -> bool:
    """matchFields: only metadata.name, with In or NotIn."""
    if requirement.get("key") != "metadata.name":
        return False
    values = [str(v) for v in requirement.get("values") or []]
    if requirement.get("operator") == "In":
        return node_name in values
    if requirement.get("operator") == "NotIn":
        return node_name not in values
    return False


def term_matches(term: Obj, node_name: str, labels: Mapping[str, str]) -> bool:
    expressions = [r for r in term.get("matchExpressions") or [] if isinstance(r, dict)]
    fields = [r for r in term.get("matchFields") or [] if isinstance(r, dict)]
    if not expressions and not fields:
        return False
    return (all(_requirement_matches(r, labels) for r in expressions)
            and all(_field_matches(r, node_name) for r in fields))


def matches_node_selector(pod: PodInfo, node_name: str, labels: Mapping[str, str]) -> bool:
    """The Pod's nodeSelector and required node affinity (helper.PodMatchesNodeSelectorAndAffinityTerms)."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_node_terms is None:
        return True
    return any(term_matches(term, node_name, labels) for term in pod.required_node_terms)


def named_nodes(pod: PodInfo) -> set[str] | None:
    """NodeAffinity's PreFilter: the only Nodes the required terms can match when every term names Nodes by
    matchFields metadata.name In (None: any Node)."""
    if not pod.required_node_terms:
        return None
    names: set[str] = set()
    for term in pod.required_node_terms:
        term_names: set[str] | None = None
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In":
                values = {str(v) for v in requirement.get("values") or []}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return names


# --- taints --------------------------------------------------------------------------------------------------------


def tolerated(tolerations: Iterable[Obj], taint: Obj) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
