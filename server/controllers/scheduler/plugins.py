"""kube-scheduler 1.28's default plugins over the cache: the filters in the default profile's order, each Node's
first failing filter giving its status, and the scores with their weights (pkg/scheduler/framework/plugins).

Filters (reasons as kube's; "unresolvable" is UnschedulableAndUnresolvable, which preemption cannot help):
    NodeUnschedulable   spec.unschedulable, unless the Pod tolerates node.kubernetes.io/unschedulable:NoSchedule
                        "node(s) were unschedulable" (unresolvable)
    NodeName            "node(s) didn't match the requested node name" (unresolvable)
    TaintToleration     the first NoSchedule/NoExecute taint not tolerated: "node(s) had untolerated taint {k: v}"
                        (unresolvable)
    NodeAffinity        nodeSelector and required node affinity: "node(s) didn't match Pod's node
                        affinity/selector" (unresolvable)
    NodePorts           "node(s) didn't have free ports for the requested pod ports"
    NodeResourcesFit    "Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient <name>": every
                        one that applies, against allocatable minus the requests of the Pods on the Node
    PodTopologySpread   DoNotSchedule constraints: "node(s) didn't match pod topology spread constraints", or
                        "... (missing required label)" (unresolvable)
    InterPodAffinity    "node(s) didn't match pod affinity rules" (unresolvable), "node(s) didn't match pod
                        anti-affinity rules", "node(s) didn't satisfy existing pods anti-affinity rules"

Scores (0..100 each after normalizing, times the weight): TaintToleration 3 (PreferNoSchedule taints not
tolerated, fewer is better), NodeAffinity 2 (preferred terms' weights), PodTopologySpread 2 (ScheduleAnyway
constraints), InterPodAffinity 2 (preferred terms both ways and existing Pods' required affinity, weight 1),
NodeResourcesFit 1 (LeastAllocated over cpu and memory with non-zero requests), NodeResourcesBalancedAllocation 1.
A Pod without spread constraints of its own is scored with the system defaults (hostname maxSkew 3, zone maxSkew
5, ScheduleAnyway) over the labels its Services and controller select (DefaultSelector).
ImageLocality and VolumeBinding are not run (no images or volumes are known); neither are the volume filters
(VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from server.controllers.scheduler.cache import NodeInfo
from server.controllers.scheduler.model import (
    CPU,
    HOSTNAME,
    MEMORY,
    AffinityTerm,
    NamespaceLabels,
    PodInfo,
    matches_node_selector,
    selector_key,
    term_matches,
    tolerated,
)
from server.kinds.tolerations import UNSCHEDULABLE as UNSCHEDULABLE_TAINT
from server.machinery.selectors import BadSelector
from server.machinery.selectors import labels as label_selectors

MAX_SCORE = 100

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY_CONFLICT = "pod affinity terms conflict"


@dataclass(frozen=True, slots=True)
class Status:
    """A failed filter on one Node."""

    plugin: str
    reasons: tuple[str, ...]
    unresolvable: bool = False


Pair = tuple[str, str]  # (topology key, value)


@dataclass(frozen=True, slots=True)
class Constraint:
    """A topologySpreadConstraint as the plugin reads it (podtopologyspread.topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    selector: label_selectors.Selector
    min_domains: int
    honor_affinity: bool  # nodeAffinityPolicy Honor (the default)
    honor_taints: bool  # nodeTaintsPolicy Honor (default Ignore)
    key: str = ""  # the selector as text: what the cache remembers counts under

    def includes(self, pod: PodInfo, node: NodeInfo) -> bool:
        """matchNodeInclusionPolicies."""
        if self.honor_affinity and not matches_node_selector(pod, node.name, node.labels):
            return False
        return not (self.honor_taints and _untolerated(pod, node) is not None)


def constraints(pod: PodInfo, action: str) -> list[Constraint]:
    out = []
    for raw in pod.spread_constraints:
        if raw.get("whenUnsatisfiable") != action:
            continue
        selector = dict(raw.get("labelSelector") or {}) if isinstance(raw.get("labelSelector"), dict) else None
        keys = [str(k) for k in raw.get("matchLabelKeys") or [] if str(k) in pod.labels]
        if selector is not None and keys:
            selector["matchExpressions"] = [*(selector.get("matchExpressions") or []),
                                            *({"key": k, "operator": "In", "values": [pod.labels[k]]} for k in keys)]
        try:
            parsed = label_selectors.from_label_selector(selector)
        except (BadSelector, TypeError):
            parsed = label_selectors.NOTHING
        out.append(Constraint(int(raw.get("maxSkew") or 1), str(raw.get("topologyKey") or ""), parsed,
                              int(raw.get("minDomains") or 1), raw.get("nodeAffinityPolicy") != "Ignore",
                              raw.get("nodeTaintsPolicy") == "Honor", selector_key(parsed)))
    return out


def count_matching(node: NodeInfo, constraint: Constraint, namespace: str) -> int:
    """countPodsMatchSelector over the Node's Pods: those of the namespace, not being deleted, that the
    constraint's selector matches (remembered until the Node's Pods change)."""
    selector = constraint.selector
    key = ("count", constraint.key, namespace)
    found = node.memo.get(key)
    if found is None:
        found = node.memo[key] = sum(1 for p in node.pods.values()
                                     if not p.terminating and p.namespace == namespace and selector.matches(p.labels))
    return int(found)


def _matching(node: NodeInfo, term: AffinityTerm, namespace_labels: NamespaceLabels) -> int:
    """How many of the Node's Pods a term matches (remembered unless the term has a namespaceSelector, whose
    answer follows the namespaces' labels)."""
    if not term.namespace_selector.nothing:
        return sum(1 for p in node.pods.values() if term.matches(p, namespace_labels))
    key = ("term", term.key)
    found = node.memo.get(key)
    if found is None:
        found = node.memo[key] = sum(1 for p in node.pods.values() if term.matches(p, namespace_labels))
    return int(found)


def _untolerated(pod: PodInfo, node: NodeInfo) -> Mapping[str, object] | None:
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(pod.tolerations, taint):
            return taint
    return None


@dataclass
class Cycle:
    """One scheduling attempt's state (CycleState): what the PreFilter and PreScore steps computed once."""

    pod: PodInfo
    nodes: list[NodeInfo]
    namespace_labels: NamespaceLabels
    # PodTopologySpread's system default constraints select with this (DefaultSelector), when any
    default_selector: label_selectors.Selector | None = None
    # InterPodAffinity
    affinity_counts: dict[Pair, int] = field(default_factory=dict)
    anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)
    existing_anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)
    # PodTopologySpread (DoNotSchedule)
    hard: list[Constraint] = field(default_factory=list)
    pair_counts: dict[Pair, int] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    minimum: dict[str, int] = field(default_factory=dict)
    self_matches: list[int] = field(default_factory=list)  # whether each hard constraint selects the Pod itself
    # NodeResourcesFit: the Pod's non-zero requests in fitsRequest's order
    requests: list[tuple[str, int]] = field(default_factory=list)
    # the filters with anything to check for this Pod (PreFilter's Skip)
    filters: list[Filter] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._affinity_prefilter()
        self._spread_prefilter()
        self.requests = sorted(((name, value) for name, value in self.pod.requests.items() if value > 0),
                               key=lambda item: _resource_order(item[0]))
        skip = set()
        if not self.pod.node_name:
            skip.add(node_name)
        if not self.pod.host_ports:
            skip.add(node_ports)
        if not self.pod.node_selector and self.pod.required_node_terms is None:
            skip.add(node_affinity)
        if not self.hard:
            skip.add(pod_topology_spread)
        if not (self.pod.required_affinity or self.pod.required_anti_affinity or self.existing_anti_affinity_counts):
            skip.add(inter_pod_affinity)
        self.filters = [check for check in FILTERS if check not in skip]

    def _affinity_prefilter(self) -> None:
        pod = self.pod
        for node in self.nodes:
            if node.with_required_anti_affinity:
                for existing in node.pods.values():
                    for term in existing.required_anti_affinity:
                        value = node.labels.get(term.topology_key)
                        if value is not None and term.matches(pod, self.namespace_labels):
                            counts = self.existing_anti_affinity_counts
                            counts[term.topology_key, value] = counts.get((term.topology_key, value), 0) + 1
            if not (pod.required_affinity or pod.required_anti_affinity):
                continue
            for existing in node.pods.values():
                if pod.required_affinity and all(t.matches(existing, self.namespace_labels)
                                                 for t in pod.required_affinity):
                    for term in pod.required_affinity:
                        value = node.labels.get(term.topology_key)
                        if value is not None:
                            pair = (term.topology_key, value)
                            self.affinity_counts[pair] = self.affinity_counts.get(pair, 0) + 1
                for term in pod.required_anti_affinity:
                    value = node.labels.get(term.topology_key)
                    if value is not None and term.matches(existing, self.namespace_labels):
                        pair = (term.topology_key, value)
                        self.anti_affinity_counts[pair] = self.anti_affinity_counts.get(pair, 0) + 1

    def _spread_prefilter(self) -> None:
        self.hard = constraints(self.pod, "DoNotSchedule")
        if not self.hard:
            return
        self.self_matches = [1 if c.selector.matches(self.pod.labels) else 0 for c in self.hard]
        keys = {c.topology_key for c in self.hard}
        for node in self.nodes:
            if not keys <= node.labels.keys():
                continue
            for c in self.hard:
                if not c.includes(self.pod, node):
                    continue
                pair = (c.topology_key, node.labels[c.topology_key])
                self.pair_counts[pair] = self.pair_counts.get(pair, 0) + count_matching(node, c, self.pod.namespace)
        for (key, _), count in self.pair_counts.items():
            self.domains[key] = self.domains.get(key, 0) + 1
            self.minimum[key] = min(self.minimum.get(key, count), count)


def fit_error(nodes: int, statuses: Mapping[str, Status], *, pre_filter: str = "",
              post_filter: str = "") -> str:
    """framework.FitError.Error()."""
    message = f"0/{nodes} nodes are available:"
    if pre_filter:
        message += f" {pre_filter}."
    else:
        counts = Counter(reason for status in statuses.values() for reason in status.reasons)
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if post_filter:
        message += f" {post_filter}."
    return message


# --- filters -------------------------------------------------------------------------------------------------------

Filter = Callable[[Cycle, NodeInfo], Status | None]


def node_unschedulable(cycle: Cycle, node: NodeInfo) -> Status | None:
    taint = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    if node.unschedulable and not tolerated(cycle.pod.tolerations, taint):
        return Status("NodeUnschedulable", (UNSCHEDULABLE,), True)
    return None


def node_name(cycle: Cycle, node: NodeInfo) -> Status | None:
    if cycle.pod.node_name and cycle.pod.node_name != node.name:
        return Status("NodeName", (NODE_NAME,), True)
    return None


def taint_toleration(cycle: Cycle, node: NodeInfo) -> Status | None:
    taint = _untolerated(cycle.pod, node)
    if taint is not None:
        reason = f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
        return Status("TaintToleration", (reason,), True)
    return None


def node_affinity(cycle: Cycle, node: NodeInfo) -> Status | None:
    if not matches_node_selector(cycle.pod, node.name, node.labels):
        return Status("NodeAffinity", (NODE_AFFINITY,), True)
    return None


def node_ports(cycle: Cycle, node: NodeInfo) -> Status | None:
    if any(wanted.conflicts(used) for wanted in cycle.pod.host_ports for used in node.ports):
        return Status("NodePorts", (NODE_PORTS,))
    return None


def node_resources_fit(cycle: Cycle, node: NodeInfo) -> Status | None:
    reasons = []
    if len(node.pods) + 1 > node.allowed_pods:
        reasons.append(TOO_MANY_PODS)
    for name, value in cycle.requests:
        if value > node.allocatable.get(name, 0) - node.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return Status("NodeResourcesFit", tuple(reasons)) if reasons else None


_ORDER = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}


def _resource_order(name: str) -> tuple[int, str]:
    """fitsRequest's order: cpu, memory, ephemeral-storage, then the scalar resources."""
    return _ORDER.get(name, 3), name


def pod_topology_spread(cycle: Cycle, node: NodeInfo) -> Status | None:
    for c, self_match in zip(cycle.hard, cycle.self_matches, strict=True):
        value = node.labels.get(c.topology_key)
        if value is None:
            return Status("PodTopologySpread", (SPREAD_LABEL,), True)
        minimum = cycle.minimum.get(c.topology_key, 2**31 - 1)
        if cycle.domains.get(c.topology_key, 0) < c.min_domains:
            minimum = 0
        if cycle.pair_counts.get((c.topology_key, value), 0) + self_match - minimum > c.max_skew:
            return Status("PodTopologySpread", (SPREAD,))
    return None


def inter_pod_affinity(cycle: Cycle, node: NodeInfo) -> Status | None:
    pod = cycle.pod
    if pod.required_affinity:
        exist = True
        for term in pod.required_affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                return Status("InterPodAffinity", (AFFINITY,), True)
            if cycle.affinity_counts.get((term.topology_key, value), 0) <= 0:
                exist = False
        if not exist and not (not cycle.affinity_counts
                              and all(t.matches(pod, cycle.namespace_labels) for t in pod.required_affinity)):
            return Status("InterPodAffinity", (AFFINITY,), True)
    for term in pod.required_anti_affinity:
        value = node.labels.get(term.topology_key)
        if value is not None and cycle.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
            return Status("InterPodAffinity", (ANTI_AFFINITY,))
    if cycle.existing_anti_affinity_counts and any(
            cycle.existing_anti_affinity_counts.get(pair, 0) > 0 for pair in node.labels.items()):
        return Status("InterPodAffinity", (EXISTING_ANTI_AFFINITY,))
    return None


FILTERS: tuple[Filter, ...] = (node_unschedulable, node_name, taint_toleration, node_affinity, node_ports,
                               node_resources_fit, pod_topology_spread, inter_pod_affinity)


def run_filters(cycle: Cycle, node: NodeInfo) -> Status | None:
    """The first failing filter's status (RunFilterPlugins), None when the Node fits."""
    for check in cycle.filters:
        status = check(cycle, node)
        if status is not None:
            return status
    return None


# --- scores --------------------------------------------------------------------------------------------------------

Scores = list[int]


def default_normalize(scores: Scores, *, reverse: bool = False) -> Scores:
    """helper.DefaultNormalizeScore."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_SCORE] * len(scores) if reverse else scores
    out = [MAX_SCORE * s // top for s in scores]
    return [MAX_SCORE - s for s in out] if reverse else out


def taint_toleration_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    tolerations = [t for t in cycle.pod.tolerations if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
    raw = [sum(1 for taint in node.taints if taint.get("effect") == "PreferNoSchedule"
               and not tolerated(tolerations, taint)) for node in nodes]
    return default_normalize(raw, reverse=True)


def node_affinity_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    raw = [sum(weight for weight, term in cycle.pod.preferred_node_terms
               if weight and term_matches(term, node.name, node.labels)) for node in nodes]
    return default_normalize(raw)


def _least_requested(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_SCORE // capacity


def least_allocated_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    pod_cpu, pod_memory = cycle.pod.non_zero.get(CPU, 0), cycle.pod.non_zero.get(MEMORY, 0)
    out = []
    for node in nodes:
        cpu, memory, used_cpu, used_memory, _, _ = node.usage()
        total = weights = 0
        if cpu:
            total += _least_requested(used_cpu + pod_cpu, cpu)
            weights += 1
        if memory:
            total += _least_requested(used_memory + pod_memory, memory)
            weights += 1
        out.append(total // weights if weights else 0)
    return out


def balanced_allocation_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    pod_cpu, pod_memory = cycle.pod.requests.get(CPU, 0), cycle.pod.requests.get(MEMORY, 0)
    out = []
    for node in nodes:
        cpu, memory, _, _, requested_cpu, requested_memory = node.usage()
        if cpu and memory:
            cpu_fraction = min((requested_cpu + pod_cpu) / cpu, 1.0)
            std = abs(cpu_fraction - min((requested_memory + pod_memory) / memory, 1.0)) / 2
        else:
            std = 0.0
        out.append(int((1 - std) * MAX_SCORE))
    return out


ZONE = "topology.kubernetes.io/zone"


def system_defaults(selector: label_selectors.Selector | None) -> list[Constraint]:
    """The default profile's system default constraints (defaultingType System) for a Pod without constraints
    of its own, over DefaultSelector: none when no Service, ReplicationController, ReplicaSet or StatefulSet
    selects it."""
    if selector is None or selector.empty or selector.nothing:
        return []
    key = selector_key(selector)
    return [Constraint(3, HOSTNAME, selector, 1, True, False, key), Constraint(5, ZONE, selector, 1, True, False, key)]


def spread_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    """PodTopologySpread's ScheduleAnyway scoring (PreScore, Score, NormalizeScore)."""
    pod = cycle.pod
    require_all = bool(pod.spread_constraints)
    soft = constraints(pod, "ScheduleAnyway") if require_all else system_defaults(cycle.default_selector)
    if not soft:
        return [0] * len(nodes)
    keys = {c.topology_key for c in soft}
    ignored = {node.name for node in nodes if require_all and not keys <= node.labels.keys()}
    counts: dict[Pair, int] = {}
    sizes = [0] * len(soft)
    for node in nodes:
        if node.name in ignored:
            continue
        for i, c in enumerate(soft):
            if c.topology_key == HOSTNAME:
                continue
            pair = (c.topology_key, node.labels.get(c.topology_key, ""))
            if pair not in counts:
                counts[pair] = 0
                sizes[i] += 1
    for node in cycle.nodes:
        if require_all and not keys <= node.labels.keys():
            continue
        for c in soft:
            pair = (c.topology_key, node.labels.get(c.topology_key, ""))
            if c.includes(pod, node) and pair in counts:
                counts[pair] += count_matching(node, c, pod.namespace)
    weights = [math.log((len(nodes) - len(ignored) if c.topology_key == HOSTNAME else sizes[i]) + 2)
               for i, c in enumerate(soft)]
    raw: list[int | None] = []
    for node in nodes:
        if node.name in ignored:
            raw.append(None)
            continue
        score = 0.0
        for i, c in enumerate(soft):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME:
                count = count_matching(node, c, pod.namespace)
            else:
                count = counts.get((c.topology_key, value), 0)
            score += count * weights[i] + (c.max_skew - 1)
        raw.append(_round_half_away(score))
    valid = [s for s in raw if s is not None]
    low, high = min(valid, default=0), max(valid, default=0)
    out = []
    for s in raw:
        if s is None:
            out.append(0)
        elif high == 0:
            out.append(MAX_SCORE)
        else:
            out.append(MAX_SCORE * (high + low - s) // high)
    return out


def _round_half_away(value: float) -> int:
    """Go's math.Round."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def inter_pod_affinity_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    """InterPodAffinity's scoring with hardPodAffinityWeight 1."""
    pod = cycle.pod
    has_preferred = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
    if not has_preferred and not any(node.with_affinity for node in cycle.nodes):
        return [0] * len(nodes)
    topology: dict[str, dict[str, int]] = {}

    def add(key: str, value: str | None, weight: int) -> None:
        if value is not None and weight:
            values = topology.setdefault(key, {})
            values[value] = values.get(value, 0) + weight

    labels_of = cycle.namespace_labels
    for node in cycle.nodes:
        if not node.labels:
            continue
        for weighted in pod.preferred_affinity:
            add(weighted.term.topology_key, node.labels.get(weighted.term.topology_key),
                weighted.weight * _matching(node, weighted.term, labels_of))
        for weighted in pod.preferred_anti_affinity:
            add(weighted.term.topology_key, node.labels.get(weighted.term.topology_key),
                -weighted.weight * _matching(node, weighted.term, labels_of))
        if node.with_affinity:
            for key, weight in _existing_terms(node, pod, labels_of):
                add(key, node.labels.get(key), weight)
    if not topology:
        return [0] * len(nodes)
    raw = [sum(values.get(node.labels[key], 0) for key, values in topology.items() if key in node.labels)
           for node in nodes]
    low, high = min(raw), max(raw)
    spread = high - low
    return [int(MAX_SCORE * ((s - low) / spread)) if spread > 0 else 0 for s in raw]


def _existing_terms(node: NodeInfo, pod: PodInfo, labels_of: NamespaceLabels) -> list[tuple[str, int]]:
    """What the terms of the Node's Pods give a Pod (their required affinity with hardPodAffinityWeight 1, their
    preferred affinity and anti-affinity), by topology key; remembered per namespace and labels of the Pod
    unless a term has a namespaceSelector."""
    key = ("existing", pod.namespace, frozenset(pod.labels.items()))
    found = node.memo.get(key)
    if found is not None:
        return list(found)
    weights: dict[str, int] = {}
    cacheable = True
    for existing in node.pods.values():
        if not existing.has_affinity:
            continue
        terms = [(t, 1) for t in existing.required_affinity]
        terms += [(w.term, w.weight) for w in existing.preferred_affinity]
        terms += [(w.term, -w.weight) for w in existing.preferred_anti_affinity]
        for term, weight in terms:
            cacheable = cacheable and term.namespace_selector.nothing
            if term.matches(pod, labels_of):
                weights[term.topology_key] = weights.get(term.topology_key, 0) + weight
    out = list(weights.items())
    if cacheable:
        node.memo[key] = out
    return out


Score = Callable[[Cycle, list[NodeInfo]], Scores]
SCORES: tuple[tuple[Score, int], ...] = (
    (taint_toleration_scores, 3),
    (node_affinity_scores, 2),
    (least_allocated_scores, 1),
    (spread_scores, 2),
    (inter_pod_affinity_scores, 2),
    (balanced_allocation_scores, 1),
)


def total_scores(cycle: Cycle, nodes: list[NodeInfo]) -> Scores:
    totals = [0] * len(nodes)
    for score, weight in SCORES:
        for i, value in enumerate(score(cycle, nodes)):
            totals[i] += value * weight
    return totals
