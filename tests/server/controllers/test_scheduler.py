"""The scheduler (kube-scheduler's default profile) through a real core running it: Nodes are created directly
(Ready, with allocatable), Pods bound through pods/binding as kube-scheduler binds them, each filter and score
as kube 1.28's default plugins decide, and the unschedulable path (PodScheduled=False, FailedScheduling,
retried when the cluster changes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server import admission
from server.auth.config import INSECURE
from server.startup.app import start_core
from server.startup.controllers import DEFAULT
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import Client, Obj, path

NS = "default"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DEADLINE = 10.0


@pytest.fixture(name="client")
async def client_fixture(tmp_path: Path) -> AsyncIterator[Client]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                            controller_names=DEFAULT | {"scheduler"},
                            # no node lifecycle controller lifts a new Node's not-ready taint: as kube's
                            # scheduler integration tests, without TaintNodesByCondition
                            admission_plugins=admission.enabled(disable=["TaintNodesByCondition"]))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]
            for value in PRIORITIES:  # a Pod's priority is its PriorityClass's (Priority admission)
                await client.create(CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                              "metadata": {"name": f"priority-{value}"}, "value": value})
            await client.create(CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": NEVER}, "value": 0, "preemptionPolicy": "Never"})
            yield client
    finally:
        await core.stop()
        await store.close()


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[Obj] | None = None, unschedulable: bool = False) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    spec: Obj = {"taints": taints} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOST: name, **(labels or {})}}, "spec": spec,
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


CLASSES = path("priorityclasses", group="scheduling.k8s.io")
PRIORITIES = (0, 1, 5, 10, 50, 100, 1000)  # the values the tests give Pods, each a PriorityClass priority-<value>
NEVER = "never-preempting"  # a PriorityClass of preemptionPolicy Never


def classed(spec: Obj) -> Obj:
    """A Pod spec asking for a priority (or preemptionPolicy Never) names the PriorityClass giving it, as Priority
    admission requires; the value stays (admission allows the class's own), for what reads Pods unadmitted."""
    out = dict(spec)
    if "priority" in out:
        out["priorityClassName"] = f"priority-{out['priority']}"
    if out.get("preemptionPolicy") == "Never":
        out["priorityClassName"] = NEVER
    return out


def pod(name: str, *, cpu: str | None = None, labels: dict[str, str] | None = None, node_name: str = "",
        **spec: Any) -> Obj:
    container: Obj = {"name": "app", "image": "nginx"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    if "ports" in spec:
        container["ports"] = spec.pop("ports")
    body: Obj = {"containers": [container], **classed(spec)}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": body}


async def eventually(check: Callable[[], Awaitable[Any]], what: str, timeout: float = DEADLINE) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def node_of(client: Client, name: str) -> str:
    return str((await client.get(path("pods", NS, name))).get("spec", {}).get("nodeName") or "")


async def bound(client: Client, name: str) -> str:
    return str(await eventually(lambda: node_of(client, name), f"{name} bound"))


async def scheduled_condition(client: Client, name: str) -> Obj | None:
    conditions = (await client.get(path("pods", NS, name))).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


async def unschedulable(client: Client, name: str) -> Obj:
    async def failed() -> Obj | None:
        condition = await scheduled_condition(client, name)
        return condition if condition and condition["status"] == "False" else None
    condition: Obj = await eventually(failed, f"{name} unschedulable")
    return condition


async def setup(client: Client, nodes: list[Obj], existing: list[Obj]) -> None:
    for n in nodes:
        await client.create(path("nodes"), n)
    for p in existing:
        await client.create(path("pods", NS), p)


def affinity(kind: str, selector: dict[str, str], key: str = HOST) -> Obj:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector}, "topologyKey": key}]}}


def node_affinity(*expressions: Obj, fields: list[Obj] | None = None) -> Obj:
    term: Obj = {"matchExpressions": list(expressions)} if expressions else {}
    if fields:
        term["matchFields"] = fields
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def spread(max_skew: int, key: str, selector: dict[str, str], when: str = "DoNotSchedule", **more: Any) -> list[Obj]:
    return [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": selector}, **more}]


ZONES = [node("a", labels={ZONE: "z1", "disk": "ssd", "rank": "5"}), node("b", labels={ZONE: "z2", "rank": "10"})]


@pytest.mark.parametrize(("nodes", "existing", "spec", "want"), [
    # NodeUnschedulable
    ([node("a", unschedulable=True), node("b")], [], {}, "b"),
    ([node("a", unschedulable=True)], [], {"tolerations": [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}, "a"),
    # NodeAffinity: nodeSelector and required terms
    (ZONES, [], {"nodeSelector": {"disk": "ssd"}}, "a"),
    (ZONES, [], {"affinity": node_affinity({"key": ZONE, "operator": "In", "values": ["z2"]})}, "b"),
    (ZONES, [], {"affinity": node_affinity({"key": ZONE, "operator": "NotIn", "values": ["z1"]})}, "b"),
    (ZONES, [], {"affinity": node_affinity({"key": "disk", "operator": "Exists"})}, "a"),
    (ZONES, [], {"affinity": node_affinity({"key": "disk", "operator": "DoesNotExist"})}, "b"),
    (ZONES, [], {"affinity": node_affinity({"key": "rank", "operator": "Gt", "values": ["7"]})}, "b"),
    (ZONES, [], {"affinity": node_affinity({"key": "rank", "operator": "Lt", "values": ["7"]})}, "a"),
    (ZONES, [], {"affinity": node_affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["b"]}])},
     "b"),
    # TaintToleration
    ([node("a", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]), node("b")], [], {}, "b"),
    ([node("a", taints=[{"key": "dedicated", "value": "infra", "effect": "NoExecute"}])], [],
     {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra"}]}, "a"),
    # NodeResourcesFit: requests, init containers' max, overhead, pods
    ([node("a", cpu="1"), node("b", cpu="3")], [], {"containers": [
        {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]}, "b"),
    ([node("a", cpu="1"), node("b", cpu="3")], [], {"initContainers": [
        {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "2500m"}}}]}, "b"),
    ([node("a", cpu="2"), node("b", cpu="3")], [pod("big", cpu="1500m", node_name="b")], {"containers": [
        {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1800m"}}}]}, "a"),
    ([node("a", pods="1"), node("b")], [pod("one", node_name="b")], {}, "a"),
    # NodePorts
    ([node("a"), node("b")], [pod("web", node_name="a", ports=[{"containerPort": 80, "hostPort": 8080}])],
     {"ports": [{"containerPort": 80, "hostPort": 8080}]}, "b"),
    # InterPodAffinity
    (ZONES, [pod("db", labels={"app": "db"}, node_name="b")], {"affinity": affinity("podAffinity", {"app": "db"})},
     "b"),
    (ZONES, [pod("db", labels={"app": "db"}, node_name="b")],
     {"affinity": affinity("podAntiAffinity", {"app": "db"}, ZONE)}, "a"),
    (ZONES, [pod("db", labels={"app": "db"}, node_name="a",
                 affinity=affinity("podAntiAffinity", {"app": "web"}))], {}, "b"),
    # PodTopologySpread (DoNotSchedule)
    (ZONES, [pod("w1", labels={"app": "web"}, node_name="a")],
     {"topologySpreadConstraints": spread(1, ZONE, {"app": "web"})}, "b"),
])
async def test_a_pod_is_bound_where_the_filters_let_it(client: Client, nodes: list[Obj], existing: list[Obj],
                                                       spec: Obj, want: str) -> None:
    await setup(client, nodes, existing)
    body = pod("new", labels={"app": "web"})
    body["spec"].update({k: v for k, v in spec.items() if k != "ports"})
    if "ports" in spec:
        body["spec"]["containers"][0]["ports"] = spec["ports"]
    await client.create(path("pods", NS), body)
    assert await bound(client, "new") == want
    condition = await scheduled_condition(client, "new")
    assert condition is not None and condition["status"] == "True"


PREEMPTION_3 = "preemption: 0/3 nodes are available: "


@pytest.mark.parametrize(("nodes", "existing", "spec", "message"), [
    ([node("a", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]),
      node("b", cpu="1"), node("c", cpu="1")], [], {"containers": [
          {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]},
     "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 2 Insufficient cpu. "
     + PREEMPTION_3 + "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming "
     "pod.."),
    ([node("a"), node("b"), node("c")], [], {"nodeSelector": {"disk": "ssd"}},
     "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
     + PREEMPTION_3 + "3 Preemption is not helpful for scheduling.."),
    ([node("a", unschedulable=True), node("b", pods="0"), node("c", cpu="100m")], [],
     {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
      "preemptionPolicy": "Never"},
     "0/3 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 node(s) were unschedulable. "
     "preemption: not eligible due to preemptionPolicy=Never.."),
    ([], [], {}, "no nodes available to schedule pods"),
    ([node("a", cpu="1")], [pod("low", cpu="200m", node_name="a", priority=0)],
     {"priority": 100, "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]},
     "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.."),
    ([node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}), node("c")],
     [pod("w1", labels={"app": "web"}, node_name="a"), pod("w2", labels={"app": "web"}, node_name="b")],
     {"affinity": affinity("podAntiAffinity", {"app": "web"}, ZONE), "nodeSelector": {ZONE: "z1"}},
     "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod "
     "anti-affinity rules. " + PREEMPTION_3 + "1 Preemption is not helpful for scheduling, 2 No preemption "
     "victims found for incoming pod.."),
])
async def test_an_unschedulable_pod_says_why_as_kube_does(client: Client, nodes: list[Obj], existing: list[Obj],
                                                          spec: Obj, message: str) -> None:
    await setup(client, nodes, existing)
    body = pod("new")
    body["spec"].update(classed(spec))
    await client.create(path("pods", NS), body)
    condition = await unschedulable(client, "new")
    assert (condition["reason"], condition["message"]) == ("Unschedulable", message)
    assert condition["lastTransitionTime"]
    _, events = await eventually(lambda: failed_events(client, "new"), "a FailedScheduling event")
    event = events[0]
    assert {k: event[k] for k in ("reason", "action", "type", "note", "reportingController")} == {
        "reason": "FailedScheduling", "action": "Scheduling", "type": "Warning", "note": message,
        "reportingController": "default-scheduler"}
    assert event["regarding"]["name"] == "new" and event["regarding"]["kind"] == "Pod"
    assert event["reportingInstance"].startswith("default-scheduler-")
    assert await node_of(client, "new") == ""


async def failed_events(client: Client, name: str) -> tuple[Obj, list[Obj]] | None:
    _, items = await client.list(path("events", NS, group="events.k8s.io"),
                                 fieldSelector=f"regarding.name={name},reason=FailedScheduling")
    return ({}, items) if items else None


@pytest.mark.parametrize("change", ["add a node", "free the node", "remove the taint"])
async def test_an_unschedulable_pod_is_retried_when_the_cluster_changes(client: Client, change: str) -> None:
    taint = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    await setup(client, [node("a", cpu="1", taints=taint if change == "remove the taint" else None)],
                [pod("hog", cpu="800m", node_name="a")])
    await client.create(path("pods", NS), pod("new", cpu="500m"))
    await unschedulable(client, "new")
    if change == "add a node":
        await client.create(path("nodes"), node("b"))
        want = "b"
    elif change == "free the node":
        await client.delete(path("pods", NS, "hog"), gracePeriodSeconds=0)
        want = "a"
    else:
        current = await client.get(path("nodes", name="a"))
        current["spec"].pop("taints")
        await client.update(path("nodes", name="a"), current)
        await client.delete(path("pods", NS, "hog"), gracePeriodSeconds=0)
        want = "a"
    assert await bound(client, "new") == want


async def test_a_bound_pod_gets_the_scheduled_event(client: Client) -> None:
    await setup(client, [node("a")], [])
    await client.create(path("pods", NS), pod("new"))
    assert await bound(client, "new") == "a"

    async def scheduled() -> list[Obj]:
        _, items = await client.list(path("events", NS, group="events.k8s.io"),
                                     fieldSelector="regarding.name=new,reason=Scheduled")
        return items
    events = await eventually(scheduled, "a Scheduled event")
    assert (events[0]["action"], events[0]["type"], events[0]["note"]) == (
        "Binding", "Normal", "Successfully assigned default/new to a")


async def test_pods_of_other_schedulers_are_left_alone(client: Client) -> None:
    await setup(client, [node("a")], [])
    await client.create(path("pods", NS), pod("other", schedulerName="my-scheduler"))
    await client.create(path("pods", NS), pod("mine"))
    assert await bound(client, "mine") == "a"
    assert await node_of(client, "other") == ""


async def test_many_pods_fill_the_nodes_without_overcommitting(client: Client) -> None:
    await setup(client, [node("a", cpu="1"), node("b", cpu="1")], [])
    for i in range(6):
        await client.create(path("pods", NS), pod(f"p{i}", cpu="400m"))
    placed = [await bound(client, f"p{i}") for i in range(4)]
    assert sorted(placed) == ["a", "a", "b", "b"]
    for i in (4, 5):
        condition = await unschedulable(client, f"p{i}")
        assert condition["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")


async def test_the_higher_priority_pod_is_scheduled_first(client: Client) -> None:
    await client.create(path("pods", NS), pod("low", priority=0))
    await client.create(path("pods", NS), pod("high", priority=1000))
    for name in ("low", "high"):
        assert (await unschedulable(client, name))["message"] == "no nodes available to schedule pods"
    await asyncio.sleep(1.1)  # both past their first backoff: the node's arrival moves them to the active queue
    await client.create(path("nodes"), node("a", pods="1"))
    assert await bound(client, "high") == "a"
    condition = await eventually(lambda: scheduled_condition(client, "low"), "low's condition")
    assert condition["status"] == "False"
    assert await node_of(client, "low") == ""


def victim(name: str, node_name: str, priority: int, cpu: str = "800m") -> Obj:
    return pod(name, cpu=cpu, node_name=node_name, priority=priority, terminationGracePeriodSeconds=0)


@pytest.mark.parametrize(("nodes", "existing", "want", "evicted"), [
    ([node("a", cpu="1")], [victim("low", "a", 0)], "a", {"low"}),
    # the Node whose most important victim has the lowest priority
    ([node("a", cpu="1"), node("b", cpu="1")], [victim("v10", "a", 10), victim("v1", "b", 1)], "b", {"v1"}),
    # only as many victims as needed, the least important first
    ([node("a", cpu="2")], [victim("keep", "a", 50, "900m"), victim("go", "a", 5, "900m")], "a", {"go"}),
])
async def test_a_higher_priority_pod_preempts_lower_ones(client: Client, nodes: list[Obj], existing: list[Obj],
                                                         want: str, evicted: set[str]) -> None:
    await setup(client, nodes, existing)
    await client.create(path("pods", NS), pod("high", cpu="500m", priority=1000))
    assert await bound(client, "high") == want
    _, left = await client.list(path("pods", NS))
    assert {p["metadata"]["name"] for p in left} == {p["metadata"]["name"] for p in existing} - evicted | {"high"}

    async def preempted() -> list[Obj]:
        _, items = await client.list(path("events", NS, group="events.k8s.io"), fieldSelector="reason=Preempted")
        return items
    events = await eventually(preempted, "Preempted events")
    high = await client.get(path("pods", NS, "high"))
    assert {(e["regarding"]["name"], e["action"], e["note"], e["related"]["name"]) for e in events} == {
        (name, "Preempting", f"Preempted by pod {high['metadata']['uid']} on node {want}", "high")
        for name in evicted}


async def test_a_preemptor_is_nominated_while_its_victims_terminate(client: Client) -> None:
    await setup(client, [node("a", cpu="1")], [pod("low", cpu="800m", node_name="a", priority=0,
                                                   terminationGracePeriodSeconds=30)])
    await client.create(path("pods", NS), pod("high", cpu="500m", priority=1000))

    async def nominated() -> Obj | None:
        high = await client.get(path("pods", NS, "high"))
        return high if high["status"].get("nominatedNodeName") == "a" else None
    high = await eventually(nominated, "high nominated to a")
    [condition] = [c for c in high["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["reason"], condition["message"]) == (
        "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")
    low = await client.get(path("pods", NS, "low"))
    assert low["metadata"]["deletionTimestamp"]
    [target] = [c for c in low["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    await client.delete(path("pods", NS, "low"), gracePeriodSeconds=0)  # the kubelet's part, sooner
    assert await bound(client, "high") == "a"


async def test_a_repeated_failure_is_one_event_with_a_series(client: Client) -> None:
    await setup(client, [node("a", cpu="1")], [])
    await client.create(path("pods", NS), pod("big", cpu="2"))
    await unschedulable(client, "big")
    await asyncio.sleep(1.1)  # past its backoff, so the next Node's arrival retries it at once
    await client.create(path("nodes"), node("b", cpu="1"))

    async def series() -> list[Obj]:
        found = await failed_events(client, "big")
        return [e for e in (found or ({}, []))[1] if (e.get("series") or {}).get("count") == 2]
    [event] = await eventually(series, "the event's series")
    assert event["note"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    condition = await scheduled_condition(client, "big")
    assert condition is not None and condition["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")


@pytest.mark.parametrize(("selecting", "want"), [
    (None, "big"),  # LeastAllocated prefers the larger Node
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
      "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}, "small"),
    ({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
      "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
          "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
     "small"),
])
async def test_the_system_default_spread_follows_services_and_controllers(client: Client, selecting: Obj | None,
                                                                         want: str) -> None:
    """A Pod without constraints of its own is spread over hostnames and zones away from the Pods its Service or
    its controller selects (maxSkew 3 and 5, ScheduleAnyway)."""
    await setup(client, [node("big", cpu="64", memory="64Gi", labels={ZONE: "z1"}),
                         node("small", cpu="2", memory="2Gi", labels={ZONE: "z2"})],
                [pod("w0", labels={"app": "web"}, node_name="big")])
    body = pod("new", labels={"app": "web"})
    if selecting is not None:
        group = "apps" if selecting["kind"] == "ReplicaSet" else ""
        resource = "replicasets" if group else "services"
        made = await client.create(path(resource, NS, group=group), selecting)
        if group:
            body["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                                    "uid": made["metadata"]["uid"], "controller": True}]
        await asyncio.sleep(0.2)  # the scheduler's informer has it
    await client.create(path("pods", NS), body)
    assert await bound(client, "new") == want
