"""The nodelifecycle and podgc controllers against simulated nodes in a real core (short periods): a node whose
heartbeat stops goes Unknown, is tainted and its Pods not ready, evicted as their tolerations say; it comes back
untainted; podgc deletes terminated Pods over the threshold, orphans after the quarantine, and terminating Pods
on an out-of-service node.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.controllers.kubelets.config import NodesConfig, NodeShape, Timing
from server.controllers.nodelifecycle import (
    FULL,
    NORMAL_ZONE,
    PARTIAL,
    Bucket,
    LifecycleConfig,
    desired_taints,
    eviction_delay,
    zone_state,
)
from server.controllers.podgc import PodGCConfig
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import Client, Failed, Obj, path
from tests.server.controllers.test_kubelets import condition, pod, until

NS = "default"
TIMING = Timing(run_seconds=0.3, stop_seconds=0.2, lease_renew=0.3, status_report=1.0)
FLAGS = controllers.NodeFlags(LifecycleConfig(monitor_period=0.2, grace_period=1.5, startup_grace_period=3.0),
                              PodGCConfig(terminated_threshold=2, period=0.3, quarantine=0.5))
UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            nodes=NodesConfig(3, NodeShape(), TIMING), node_flags=FLAGS,
                            controller_names=controllers.DEFAULT | {"nodelifecycle", "podgc"})
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()


async def edit_node(client: Client, name: str, change: Any) -> None:
    """Read, change, write; again on a conflict (the controllers write the same Node)."""
    for _ in range(20):
        node = await client.get(path("nodes", "", name))
        change(node)
        try:
            await client.update(path("nodes", "", name), node)
            return
        except Failed as err:
            if err.status.get("code") != 409:
                raise
    raise AssertionError("could not update the node")


def set_heartbeat(stopped: bool) -> Any:
    def change(node: Obj) -> None:
        annotations = node["metadata"].setdefault("annotations", {})
        if stopped:
            annotations["capstan.io/heartbeat"] = "stopped"
        else:
            annotations.pop("capstan.io/heartbeat", None)
    return change


def taints(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}


async def gone(client: Client, name: str) -> bool:
    try:
        await client.get(path("pods", NS, name))
    except Failed:
        return True
    return False


@pytest.mark.parametrize(("ready", "unschedulable", "want"), [
    ("True", False, set()),
    ("False", False, {("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")}),
    ("Unknown", True, {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute"),
                       ("node.kubernetes.io/unschedulable", "NoSchedule")}),
])
def test_desired_taints(ready: str, unschedulable: bool, want: set[tuple[str, str]]) -> None:
    node = {"spec": {"unschedulable": unschedulable, "taints": [{"key": "mine", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}
    got = desired_taints(node, "2024-05-01T10:00:00Z")
    assert {(t["key"], t["effect"]) for t in got} == want | {("mine", "NoSchedule")}
    assert all("timeAdded" in t for t in got if t["effect"] == "NoExecute")


NOT_READY = ("node.kubernetes.io/not-ready", "NoSchedule")


@pytest.mark.parametrize(("ready", "kept"), [("True", False), ("False", True)])
async def test_a_new_nodes_not_ready_taint_is_lifted_when_it_is_ready(client: Client, ready: str,
                                                                       kept: bool) -> None:
    """TaintNodesByCondition taints every new Node; the controller lifts the taint from a Ready one, the simulated
    nodes' among them."""
    created = await client.create(path("nodes"), {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "joined"},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]}})
    assert NOT_READY in taints(created)
    async def simulated() -> list[Obj]:
        return [await client.get(path("nodes", "", f"capstan-node-{i}")) for i in range(3)]

    await until(simulated, lambda nodes: all(NOT_READY not in taints(n) for n in nodes))
    if kept:
        await until(lambda: client.get(path("nodes", "", "joined")),
                    lambda n: ("node.kubernetes.io/not-ready", "NoExecute") in taints(n))
    joined = await until(lambda: client.get(path("nodes", "", "joined")), lambda n: (NOT_READY in taints(n)) == kept)
    assert (NOT_READY in taints(joined)) == kept


@pytest.mark.parametrize(("ready", "not_ready", "want"), [
    (3, 0, NORMAL_ZONE), (0, 1, FULL), (1, 2, NORMAL_ZONE), (2, 3, PARTIAL), (3, 3, NORMAL_ZONE), (0, 0, NORMAL_ZONE),
])
def test_zone_state(ready: int, not_ready: int, want: str) -> None:
    assert zone_state(ready, not_ready, 0.55) == want


def test_held_and_removed_no_execute_taints() -> None:
    unknown = {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert {t["key"] for t in desired_taints(unknown, "t", execute="hold")} == {UNREACHABLE}  # NoSchedule only
    swapped = {**unknown, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}}
    assert {(t["key"], t["effect"]) for t in desired_taints(swapped, "t", execute="hold")} == {
        (UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    assert {t["effect"] for t in desired_taints(swapped, "t", execute="none")} == {"NoSchedule"}
    bucket = Bucket(0.0)
    assert bucket.take() and not bucket.take() and bucket.wait(5.0) == 5.0


@pytest.mark.parametrize(("tolerations", "want"), [
    ([], 0.0),
    ([{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}], None),
    ([{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 7}], 7.0),
    ([{"operator": "Exists"}, {"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 3}], 3.0),
    ([{"key": "other", "operator": "Exists"}], 0.0),
])
def test_eviction_delay(tolerations: list[Obj], want: float | None) -> None:
    taint = {"key": UNREACHABLE, "effect": "NoExecute"}
    assert eviction_delay({"spec": {"tolerations": tolerations}}, [taint]) == want


async def test_unreachable_node_tainted_evicted_and_restored(client: Client) -> None:
    node = "capstan-node-1"
    short = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}]
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    await client.create(path("pods", NS), pod("short", node=node, tolerations=short))
    await client.create(path("pods", NS), pod("forever", node=node, tolerations=forever))
    await until(lambda: client.get(path("pods", NS, "forever")), lambda p: condition(p, "Ready") == "True")
    await edit_node(client, node, set_heartbeat(True))
    got = await until(lambda: client.get(path("nodes", "", node)),
                      lambda n: condition(n, "Ready") == "Unknown" and (UNREACHABLE, "NoExecute") in taints(n))
    assert {c["reason"] for c in got["status"]["conditions"]} == {"NodeStatusUnknown"}
    assert (UNREACHABLE, "NoSchedule") in taints(got)
    evicted = await until(lambda: client.get(path("pods", NS, "short")),
                          lambda p: bool(p["metadata"].get("deletionTimestamp")))
    assert condition(evicted, "DisruptionTarget") == "True"
    kept = await client.get(path("pods", NS, "forever"))
    assert not kept["metadata"].get("deletionTimestamp")
    assert condition(kept, "Ready") == "False"
    await edit_node(client, node, set_heartbeat(False))
    await until(lambda: client.get(path("nodes", "", node)),
                lambda n: condition(n, "Ready") == "True" and not taints(n))
    await until(lambda: gone(client, "short"), bool)  # the node's kubelet, back, finishes the deletion
    await until(lambda: client.get(path("pods", NS, "forever")), lambda p: condition(p, "Ready") == "True")


async def test_podgc_terminated_over_threshold_oldest_first(client: Client) -> None:
    for name in ("a", "b", "c", "d"):
        await client.create(path("pods", NS), pod(name, restartPolicy="Never"))
        await asyncio.sleep(1.05)  # creationTimestamp has whole seconds

    async def names() -> list[str]:
        return sorted(await client.names(path("pods", NS)))

    await until(names, lambda got: got == ["c", "d"], timeout=10)


async def test_podgc_orphans_after_quarantine(client: Client) -> None:
    await client.create(path("pods", NS), pod("orphan", node="no-such-node"))
    await until(lambda: gone(client, "orphan"), bool)


async def test_podgc_terminating_on_out_of_service_node(client: Client) -> None:
    node = "capstan-node-2"
    await client.create(path("pods", NS), pod("stuck", node=node, terminationGracePeriodSeconds=60))
    await until(lambda: client.get(path("pods", NS, "stuck")), lambda p: condition(p, "Ready") == "True")
    await edit_node(client, node, set_heartbeat(True))
    await until(lambda: client.get(path("nodes", "", node)), lambda n: condition(n, "Ready") == "Unknown")
    await client.delete(path("pods", NS, "stuck"))
    await asyncio.sleep(0.5)
    assert not await gone(client, "stuck")  # its kubelet is silent
    await edit_node(client, node, lambda n: n["spec"].setdefault("taints", []).append(
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}))
    await until(lambda: gone(client, "stuck"), bool)


async def test_every_zone_down_taints_nothing_no_execute(client: Client) -> None:
    # a node that goes Unknown a pass before the others is tainted (its zone alone is down) until the last one
    # does; the Pod's toleration outlasts that
    short = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 4}]
    await client.create(path("pods", NS), pod("kept", node="capstan-node-0", tolerations=short))
    await until(lambda: client.get(path("pods", NS, "kept")), lambda p: condition(p, "Ready") == "True")
    nodes = ("capstan-node-0", "capstan-node-1", "capstan-node-2")
    for node in nodes:
        await edit_node(client, node, set_heartbeat(True))

    async def all_unknown() -> list[Obj]:
        _, items = await client.list(path("nodes"))
        return items

    await until(all_unknown, lambda items: all(
        condition(n, "Ready") == "Unknown" and (UNREACHABLE, "NoExecute") not in taints(n)
        and (UNREACHABLE, "NoSchedule") in taints(n) for n in items))
    await asyncio.sleep(4.5)  # past the toleration: master disruption mode holds NoExecute back
    _, items = await client.list(path("nodes"))
    assert all((UNREACHABLE, "NoExecute") not in taints(n) for n in items)
    assert not (await client.get(path("pods", NS, "kept")))["metadata"].get("deletionTimestamp")
    for node in nodes:
        await edit_node(client, node, set_heartbeat(False))
    await until(all_unknown, lambda items: all(condition(n, "Ready") == "True" and not taints(n) for n in items))
