"""DefaultPreemption, kube-scheduler 1.28's PostFilter: when no Node fits a Pod, find Nodes where evicting Pods of
lower priority would make it fit, pick one, and say which Pods to evict (pkg/scheduler/framework/preemption and
plugins/defaultpreemption).

Contracts, as kube's (PodDisruptionBudgets are not consulted: every victim counts as not violating one):
- a Pod with preemptionPolicy Never, or one nominated to a Node where a lower-priority Pod is already
  terminating, does not preempt ("not eligible due to ...");
- Nodes whose failure preemption cannot help (UnschedulableAndUnresolvable) are left out: "Preemption is not
  helpful for scheduling";
- on each other Node every lower-priority Pod is removed; none there: "No preemption victims found for incoming
  pod"; the Pod still does not fit: that filter's reasons; else the removed Pods are put back one by one, the
  most important first (higher priority, then earlier start), each kept when the Pod still fits: the others are
  the victims;
- among the candidates, pickOneNodeForPreemption: a Node needing no victim, else the lowest highest victim
  priority, the lowest sum of victim priorities, the fewest victims, the latest start among the highest-priority
  victims, the first;
- without a candidate, the message is a FitError over every Node's preemption status, after "preemption: ".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from server.controllers.scheduler import plugins
from server.controllers.scheduler.cache import NodeInfo
from server.controllers.scheduler.model import NamespaceLabels, PodInfo

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[PodInfo, ...]


def start_time(pod: PodInfo) -> str:
    """GetPodStartTime: status.startTime, else its creation (RFC 3339 strings order as times)."""
    status = pod.raw.get("status") or {}
    return str(status.get("startTime") or (pod.raw.get("metadata") or {}).get("creationTimestamp") or "")


def _importance(pod: PodInfo) -> tuple[int, str]:
    """MoreImportantPod as a sort key: higher priority first, then the earlier start."""
    return -pod.priority, start_time(pod)


def eligible(pod: PodInfo, nominated_node: NodeInfo | None) -> str:
    """PodEligibleToPreemptOthers: "" when the Pod may preempt, else why not."""
    if pod.preemption_policy == "Never":
        return NEVER
    if nominated_node is not None and any(p.terminating and p.priority < pod.priority
                                          for p in nominated_node.pods.values()):
        return TERMINATING
    return ""


def _fits(pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo], namespace_labels: NamespaceLabels) -> \
        plugins.Status | None:
    return plugins.run_filters(plugins.Cycle(pod, nodes, namespace_labels), node)


def select_victims(pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo],
                   namespace_labels: NamespaceLabels) -> tuple[tuple[PodInfo, ...] | None, plugins.Status | None]:
    """SelectVictimsOnNode: the victims, or None and why the Node cannot be made to fit. The Node is left as
    it was."""
    lower = sorted((p for p in node.pods.values() if p.priority < pod.priority), key=_importance)
    if not lower:
        return None, plugins.Status("DefaultPreemption", (NO_VICTIMS,), True)
    for victim in lower:
        node.remove(victim)
    try:
        status = _fits(pod, node, nodes, namespace_labels)
        if status is not None:
            return None, status
        victims = []
        for candidate in lower:
            node.add(candidate)
            if _fits(pod, node, nodes, namespace_labels) is not None:
                node.remove(candidate)
                victims.append(candidate)
        return tuple(victims), None
    finally:
        for victim in lower:
            if victim.key not in node.pods:
                node.add(victim)


def pick(candidates: list[Candidate]) -> Candidate:
    """pickOneNodeForPreemption."""
    for candidate in candidates:
        if not candidate.victims:
            return candidate

    def narrow(left: list[Candidate], score: Mapping[str, object]) -> list[Candidate]:
        best = min(score[c.node] for c in left)  # type: ignore[type-var]
        return [c for c in left if score[c.node] == best]

    left = narrow(candidates, {c.node: max(v.priority for v in c.victims) for c in candidates})
    left = narrow(left, {c.node: sum(v.priority + MAX_INT32 + 1 for v in c.victims) for c in left})
    left = narrow(left, {c.node: len(c.victims) for c in left})
    if len(left) > 1:
        def earliest_of_highest(c: Candidate) -> str:
            highest = max(v.priority for v in c.victims)
            return min(start_time(v) for v in c.victims if v.priority == highest)
        latest = max(earliest_of_highest(c) for c in left)
        left = [c for c in left if earliest_of_highest(c) == latest]
    return left[0]


def preempt(pod: PodInfo, nodes: list[NodeInfo], statuses: Mapping[str, plugins.Status],
            namespace_labels: NamespaceLabels, nominated_node: NodeInfo | None) -> tuple[str, Candidate | None]:
    """The PostFilter's message ("" when a candidate was found) and the candidate."""
    why_not = eligible(pod, nominated_node)
    if why_not:
        return f"preemption: {why_not}", None
    found: dict[str, plugins.Status] = {}
    potential: list[NodeInfo] = []
    for node in nodes:
        status = statuses.get(node.name)
        if status is not None and status.unresolvable:
            found[node.name] = plugins.Status("DefaultPreemption", (NOT_HELPFUL,), True)
        else:
            potential.append(node)
    candidates: list[Candidate] = []
    for node in potential:
        victims, failure = select_victims(pod, node, nodes, namespace_labels)
        if victims is None:
            assert failure is not None
            found[node.name] = failure
        else:
            candidates.append(Candidate(node.name, victims))
    if candidates:
        return "", pick(candidates)
    return f"preemption: {plugins.fit_error(len(found), found)}", None


def lower_nominated(pod: PodInfo, node: str, nominated: Iterable[tuple[str, PodInfo]]) -> list[PodInfo]:
    """getLowerPriorityNominatedPods: Pods nominated to the Node with a lower priority than the preemptor."""
    return [p for where, p in nominated if where == node and p.priority < pod.priority and p.key != pod.key]
