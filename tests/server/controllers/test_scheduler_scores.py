"""The scheduler's scores and queue as kube 1.28's: a scheduling decision over the real cache (Nodes and bound
Pods as the informers hand them over) where the filters let every Node through and the scores choose; ties
broken at random among the best; the queue's priority order and backoff."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from server.controllers.scheduler import plugins
from server.controllers.scheduler.cache import Cache
from server.controllers.scheduler.model import pod_info
from server.controllers.scheduler.queue import QueuedPod, SchedulingQueue
from server.controllers.scheduler.scheduler import decide
from tests.server.controllers.test_scheduler import HOST, ZONE, node, pod

Obj = dict[str, Any]


def cache_of(nodes: list[Obj], existing: list[Obj]) -> Cache:
    cache = Cache()
    for n in nodes:
        cache.set_node(n["metadata"]["name"], n)
    for p in existing:
        p["metadata"].setdefault("namespace", "default")
        cache.put(pod_info(p))
    return cache


def incoming(**spec: Any) -> Obj:
    body = pod("new", labels={"app": "web"}, **spec)
    body["metadata"]["namespace"] = "default"
    return body


def preferred(kind: str, selector: dict[str, str], key: str = HOST, weight: int = 10) -> Obj:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": selector}, "topologyKey": key}}]}}


TWO = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2", "disk": "ssd"})]
DB_ON_A = [pod("db", labels={"app": "db"}, node_name="a")]


@pytest.mark.parametrize(("nodes", "existing", "spec", "want"), [
    # NodeAffinity (weight 2): preferred terms
    (TWO, [], {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}},
     "b"),
    # TaintToleration (weight 3): PreferNoSchedule taints not tolerated
    ([node("a", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]), node("b")], [], {}, "b"),
    ([node("a"), node("b", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
                                   {"key": "old", "effect": "PreferNoSchedule"}])],
     [], {"tolerations": [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]}, "a"),
    # NodeResourcesFit LeastAllocated and BalancedAllocation (weight 1 each)
    (TWO, [pod("busy", cpu="2", node_name="a")], {}, "b"),
    ([node("a", cpu="8"), node("b", cpu="2")], [], {"cpu": "1"}, "a"),
    # InterPodAffinity (weight 2): the incoming Pod's preferred terms, existing Pods' terms
    (TWO, DB_ON_A, {"affinity": preferred("podAffinity", {"app": "db"})}, "a"),
    (TWO, DB_ON_A, {"affinity": preferred("podAntiAffinity", {"app": "db"}, ZONE)}, "b"),
    (TWO, [pod("db", labels={"app": "db"}, node_name="a", affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}]}})], {}, "a"),
    (TWO, [pod("db", labels={"app": "db"}, node_name="b", affinity=preferred("podAntiAffinity", {"app": "web"}))],
     {}, "a"),
    # PodTopologySpread (weight 2): ScheduleAnyway constraints
    (TWO, [pod("w1", labels={"app": "web"}, node_name="b"), pod("w2", labels={"app": "web"}, node_name="b")],
     {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                                     "labelSelector": {"matchLabels": {"app": "web"}}}]}, "a"),
])
def test_the_scores_choose_as_kubes_do(nodes: list[Obj], existing: list[Obj], spec: Obj, want: str) -> None:
    cache = cache_of(nodes, existing)
    decision = decide(cache, pod_info(incoming(**spec)), lambda namespace: {}, random.Random(0))
    assert decision.node == want


def test_ties_are_broken_at_random_among_the_best() -> None:
    cache = cache_of([node("a"), node("b"), node("c")], [])
    chosen = {decide(cache, pod_info(incoming()), lambda namespace: {}, random.Random(seed)).node
              for seed in range(30)}
    assert chosen == {"a", "b", "c"}


@pytest.mark.parametrize(("requested", "capacity", "least", "balanced"), [
    ({"cpu": "1", "memory": "1Gi"}, {"cpu": "4", "memory": "4Gi"}, 75, 100),
    ({"cpu": "2", "memory": "1Gi"}, {"cpu": "4", "memory": "4Gi"}, 62, 87),
    ({"cpu": "5"}, {"cpu": "4", "memory": "4Gi"}, 47, 50),
])
def test_resource_scores_are_kubes_arithmetic(requested: Obj, capacity: Obj, least: int, balanced: int) -> None:
    n = node("a", cpu=capacity["cpu"], memory=capacity["memory"])
    cache = cache_of([n], [])
    body = incoming()
    body["spec"]["containers"][0]["resources"] = {"requests": requested}
    cycle = plugins.Cycle(pod_info(body), cache.nodes(), lambda namespace: {})
    assert plugins.least_allocated_scores(cycle, cache.nodes()) == [least]
    assert plugins.balanced_allocation_scores(cycle, cache.nodes()) == [balanced]


@pytest.mark.parametrize(("attempts", "backoff"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)])
def test_backoff_doubles_from_one_second_to_ten(attempts: int, backoff: float) -> None:
    queued = QueuedPod(pod_info(incoming()), 0.0, attempts=attempts, last_attempt=100.0)
    assert queued.backoff_expiry() == 100.0 + backoff


async def test_the_queue_pops_by_priority_then_age() -> None:
    queue = SchedulingQueue()
    for name, priority in [("low", 0), ("high", 1000), ("mid", 10), ("high2", 1000)]:
        body = incoming(priority=priority)
        body["metadata"]["name"] = name
        queue.add(pod_info(body))
    order = [(await asyncio.wait_for(queue.pop(), 1)).pod.name for _ in range(4)]
    assert order == ["high", "high2", "mid", "low"]


def web(name: str, node_name: str, namespace: str = "default", **labels: str) -> Obj:
    body = pod(name, labels={"app": "web", **labels}, node_name=node_name)
    body["metadata"]["namespace"] = namespace
    return body


ZONED = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"})]
TAINTED_Z3 = node("c", labels={ZONE: "z3"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])


def zone_spread(**more: Any) -> list[Obj]:
    return [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}, **more}]


@pytest.mark.parametrize(("nodes", "existing", "spec", "namespaces", "want"), [
    # namespaceSelector: the term selects Pods of the namespaces whose labels match
    (ZONED, [web("db", "b", "other")], {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {"matchLabels": {"team": "x"}},
         "topologyKey": HOST}]}}, "nodeSelector": {ZONE: "z2"}}, {"other": {"team": "x"}}, "b"),
    (ZONED, [web("db", "b", "other")], {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {"matchLabels": {"team": "x"}},
         "topologyKey": HOST}]}}, "nodeSelector": {ZONE: "z2"}}, {"other": {"team": "y"}},
     "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't match pod "
     "affinity rules."),
    # minDomains: fewer domains than asked make the global minimum 0
    (ZONED, [web("w1", "a"), web("w2", "b")], {"topologySpreadConstraints": zone_spread()}, {}, "a|b"),
    (ZONED, [web("w1", "a"), web("w2", "b")], {"topologySpreadConstraints": zone_spread(minDomains=3)}, {},
     "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."),
    # nodeTaintsPolicy: Ignore counts a tainted Node's empty zone, Honor leaves it out
    ([*ZONED, TAINTED_Z3], [web("w1", "a"), web("w2", "b")], {"topologySpreadConstraints": zone_spread()}, {},
     "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 node(s) didn't match pod topology "
     "spread constraints."),
    ([*ZONED, TAINTED_Z3], [web("w1", "a"), web("w2", "b")],
     {"topologySpreadConstraints": zone_spread(nodeTaintsPolicy="Honor")}, {}, "a|b"),
    # matchLabelKeys: only Pods with the incoming Pod's values for those keys count (nodeAffinityPolicy Ignore:
    # the zone the Pod may not go to still counts)
    (ZONED, [web("w1", "b", version="v1"), web("w2", "b", version="v1")],
     {"topologySpreadConstraints": zone_spread(nodeAffinityPolicy="Ignore"), "nodeSelector": {ZONE: "z2"}}, {},
     "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't match pod "
     "topology spread constraints."),
    (ZONED, [web("w1", "b", version="v1"), web("w2", "b", version="v1")],
     {"topologySpreadConstraints": zone_spread(matchLabelKeys=["version"], nodeAffinityPolicy="Ignore"),
      "nodeSelector": {ZONE: "z2"}}, {}, "b"),
    # nodeAffinityPolicy Honor (the default): only the Nodes the Pod may go to make the domains
    (ZONED, [web("w1", "b"), web("w2", "b")],
     {"topologySpreadConstraints": zone_spread(), "nodeSelector": {ZONE: "z2"}}, {}, "b"),
    # a Node missing the topology key
    ([node("a"), node("b", labels={ZONE: "z2"})], [], {"topologySpreadConstraints": zone_spread()}, {}, "b"),
])
def test_the_filters_rules_in_detail(nodes: list[Obj], existing: list[Obj], spec: Obj,
                                     namespaces: dict[str, dict[str, str]], want: str) -> None:
    cache = cache_of(nodes, existing)
    body = incoming(**spec)
    body["metadata"]["labels"]["version"] = "v2"
    decision = decide(cache, pod_info(body), lambda namespace: namespaces.get(namespace, {}), random.Random(0))
    if "available" in want:
        assert decision.node == ""
        assert decision.message.split(" preemption:")[0] == want
    else:
        assert decision.node in want.split("|")
