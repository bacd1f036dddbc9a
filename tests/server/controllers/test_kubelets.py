"""Simulated nodes (server/controllers/kubelets/) in a real core: Nodes registered with kubelet-shaped status and
Leases, Pods bound to them going Pending -> Running -> Ready with IPs from the node's podCIDR, the failure
annotations, graceful deletion by the node's kubelet, and a stopped heartbeat.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.controllers.kubelets.config import NodesConfig, NodeShape, Timing
from server.controllers.kubelets.status import FOREVER, Command, command, plan
from server.runtime.election import ElectionConfig
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from storage.memory import MemoryStore
from tests.server.client import Client, Failed, Obj, path

NS = "default"
TIMING = Timing(run_seconds=0.5, stop_seconds=0.2, lease_renew=0.5, status_report=2.0, backoff_base=0.3,
                backoff_cap=1.0)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Client, RunningCore]]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            nodes=NodesConfig(3, NodeShape(zones=("a", "b")), TIMING))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core), core  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()


async def lease_of(client: Client, node: str) -> Obj | None:
    """The node's Lease; None until its first renewal lands."""
    try:
        return await client.get(path("leases", "kube-node-lease", node, group="coordination.k8s.io"))
    except Failed:
        return None


def pod(name: str, node: str = "capstan-node-0", annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}


async def until(fetch: Callable[[], Awaitable[Any]], check: Callable[[Any], bool], timeout: float = 8.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if check(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"last seen: {got}")
        await asyncio.sleep(0.05)


def condition(obj: Obj, kind: str) -> str:
    return next((str(c.get("status")) for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind), "")


async def test_nodes_registered_with_status_and_leases(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    _, nodes = await client.list(path("nodes"))
    assert sorted(n["metadata"]["name"] for n in nodes) == ["capstan-node-0", "capstan-node-1", "capstan-node-2"]
    node = nodes[0]
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "capstan-node-0"
    assert labels["kubernetes.io/os"] == "linux"
    assert [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes] == ["a", "b", "a"]
    assert node["spec"]["podCIDR"] == "10.244.0.0/24"
    status = node["status"]
    assert status["capacity"]["cpu"] == "32" and status["allocatable"]["pods"] == "110"
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert condition(node, "Ready") == "True"
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.28.")
    assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    lease = await until(lambda: lease_of(client, "capstan-node-1"), lambda found: found is not None)
    first = lease["spec"]["renewTime"]
    assert lease["spec"]["holderIdentity"] == "capstan-node-1"
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    await until(lambda: client.get(path("leases", "kube-node-lease", "capstan-node-1", group="coordination.k8s.io")),
                lambda lease: lease["spec"]["renewTime"] != first)


async def test_pod_runs_and_becomes_ready(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    await client.create(path("pods", NS), pod("web", initContainers=[{"name": "init", "image": "busybox"}]))
    await client.create(path("pods", NS), pod("web2"))
    got = await until(lambda: client.get(path("pods", NS, "web")), lambda p: condition(p, "Ready") == "True")
    status = got["status"]
    assert status["phase"] == "Running"
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.0.0/24")
    assert status["hostIP"] == "172.20.0.2"
    assert status["qosClass"] == "BestEffort"
    assert status["startTime"]
    assert [condition(got, k) for k in ("PodScheduled", "Initialized", "ContainersReady", "Ready")] == ["True"] * 4
    container = status["containerStatuses"][0]
    assert container["ready"] and container["started"] and container["restartCount"] == 0
    assert "running" in container["state"] and container["imageID"] and container["containerID"]
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    other = await until(lambda: client.get(path("pods", NS, "web2")), lambda p: condition(p, "Ready") == "True")
    assert other["status"]["podIP"] != status["podIP"]
    await client.create(path("pods", NS), pod("host", hostNetwork=True))
    host = await until(lambda: client.get(path("pods", NS, "host")), lambda p: condition(p, "Ready") == "True")
    assert host["status"]["podIP"] == host["status"]["hostIP"] == "172.20.0.2"


@pytest.mark.parametrize(("argv", "said"), [
    ((["sleep", "300"], []), Command(300.0, 0)),
    ((["/bin/sleep"], ["1.5", "2m"]), Command(121.5, 0)),  # GNU sleep sums its operands
    ((["sleep", "infinity"], []), Command(FOREVER, 0)),
    ((["sleep", "1d"], []), Command(86400.0, 0)),
    ((["/bin/sh", "-c", "exit 1"], []), Command(None, 1)),
    ((["/bin/sh", "-c", "exit 0"], []), Command(None, 0)),
    ((["sh"], ["-c", "sleep 5; exit 3"]), Command(5.0, 3)),
    ((["bash", "-c", "sleep 1 && sleep 2 && false"], []), Command(3.0, 1)),
    ((["/bin/sh", "-c", "true;"], []), Command(None, 0)),
    ((["/bin/sh", "-c", "sleep 2\nexit 4\n"], []), Command(2.0, 4)),
    ((["/bin/sh", "-c", "exit 257"], []), Command(None, 1)),  # a shell's status is modulo 256
    ((["sleep", "-1"], []), None),
    ((["sleep", "soon"], []), None),
    ((["sleep"], []), None),
    ((["/bin/sh", "-c", "exit 1; sleep 5"], []), None),  # an exit before the end: not a plain script
    ((["/bin/sh", "-c", "exit $(( $RANDOM / 16384 ))"], []), None),
    ((["/bin/sh", "-c", "if [[ -r /data/foo ]] ; then exit 0 ; fi"], []), None),
    ((["nginx", "-g", "daemon off;"], []), None),
    (([], []), None),
], ids=lambda v: " ".join([*v[0], *v[1]]) if isinstance(v, tuple) else None)
def test_what_a_command_plainly_says(argv: tuple[list[str], list[str]], said: Command | None) -> None:
    assert command({"name": "c", "command": argv[0], "args": argv[1]}) == said


@pytest.mark.parametrize(("policy", "commands", "annotations", "run", "code"), [
    ("Never", [["sleep", "1000000"]], {}, 1000000.0, 0),  # e2e's "notTerminate" Job
    ("OnFailure", [["sleep", "300"]], {}, 300.0, 0),  # e2e's CronJob Jobs
    ("Never", [["/bin/sh", "-c", "exit 1"]], {}, TIMING.run_seconds, 1),  # e2e's "fail" Job
    ("Never", [["sleep", "5"], ["sleep", "9"], ["/bin/sh", "-c", "exit 2"]], {}, 9.0, 2),
    ("Never", [["nginx"]], {}, TIMING.run_seconds, 0),  # not plain: the defaults
    ("Never", [["sleep", "300"]], {"capstan.io/run-seconds": "1", "capstan.io/exit-code": "0"}, 1.0, 0),
    ("Always", [["sleep", "5"]], {}, FOREVER, 0),  # Always Pods run on, as before
])
def test_a_pods_plan_reads_its_commands_when_its_containers_exit(
    policy: str, commands: list[list[str]], annotations: dict[str, str], run: float, code: int
) -> None:
    got = plan({"metadata": {"annotations": annotations}, "spec": {
        "restartPolicy": policy, "containers": [{"name": f"c{i}", "command": c} for i, c in enumerate(commands)]}},
        TIMING)
    assert (got.run_seconds, got.exit_code) == (run, code)


@pytest.mark.parametrize(("annotations", "spec", "phase", "check"), [
    ({}, {"restartPolicy": "Never"}, "Succeeded",
     lambda c: c["state"]["terminated"]["exitCode"] == 0 and c["state"]["terminated"]["reason"] == "Completed"),
    ({"capstan.io/exit-code": "3"}, {"restartPolicy": "Never"}, "Failed",
     lambda c: c["state"]["terminated"]["exitCode"] == 3 and c["state"]["terminated"]["reason"] == "Error"),
    ({"capstan.io/oom-killed": "true"}, {"restartPolicy": "Never"}, "Failed",
     lambda c: c["state"]["terminated"]["reason"] == "OOMKilled"),
    ({}, {"restartPolicy": "OnFailure"}, "Succeeded", lambda c: "terminated" in c["state"]),
    ({"capstan.io/crash-loop": "true"}, {}, "Running",
     lambda c: c["restartCount"] >= 1 and c["lastState"]["terminated"]["exitCode"] == 1),
    ({"capstan.io/never-ready": "true"}, {}, "Running", lambda c: "running" in c["state"] and not c["ready"]),
    ({}, {"activeDeadlineSeconds": 1}, "Failed", lambda c: c["state"]["terminated"]["exitCode"] == 137),
    ({}, {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox",
                                                    "command": ["/bin/sh", "-c", "exit 1"]}]}, "Failed",
     lambda c: c["state"]["terminated"]["exitCode"] == 1 and c["state"]["terminated"]["reason"] == "Error"),
    ({}, {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox",
                                                    "command": ["sleep", "3600"]}]}, "Running",
     lambda c: "running" in c["state"] and c["ready"]),
], ids=["never-succeeds", "exit-code", "oom", "onfailure-succeeds", "crash-loop", "never-ready", "deadline",
        "command-exits-1", "command-sleeps"])
async def test_failure_annotations(cluster: tuple[Client, RunningCore], annotations: dict[str, str],
                                   spec: Obj, phase: str, check: Callable[[Obj], bool]) -> None:
    client, _ = cluster
    await client.create(path("pods", NS), pod("p", annotations=annotations, **spec))

    def settled(p: Obj) -> bool:
        statuses = (p.get("status") or {}).get("containerStatuses") or []
        return p["status"].get("phase") == phase and bool(statuses) and check(statuses[0])

    got = await until(lambda: client.get(path("pods", NS, "p")), settled)
    if phase != "Running":
        assert condition(got, "Ready") == "False"
    else:  # and it runs on past the simulator's run_seconds
        await asyncio.sleep(TIMING.run_seconds * 2)
        assert (await client.get(path("pods", NS, "p")))["status"]["phase"] == "Running"
    if "activeDeadlineSeconds" in spec:
        assert got["status"]["reason"] == "DeadlineExceeded"


async def test_readiness_gates_and_others_conditions(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    await client.create(path("pods", NS), pod("gated", readinessGates=[{"conditionType": "example.com/gate"}]))
    got = await until(lambda: client.get(path("pods", NS, "gated")),
                      lambda p: condition(p, "ContainersReady") == "True")
    assert condition(got, "Ready") == "False"
    assert [c["reason"] for c in got["status"]["conditions"] if c["type"] == "Ready"] == ["ReadinessGatesNotReady"]
    got["status"]["conditions"].append({"type": "example.com/gate", "status": "True"})
    await client.update(path("pods", NS, "gated", subresource="status"), got)
    ready = await until(lambda: client.get(path("pods", NS, "gated")), lambda p: condition(p, "Ready") == "True")
    assert condition(ready, "example.com/gate") == "True"


async def test_graceful_deletion_by_the_nodes_kubelet(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    await client.create(path("pods", NS), pod("web", terminationGracePeriodSeconds=30))
    await until(lambda: client.get(path("pods", NS, "web")), lambda p: condition(p, "Ready") == "True")
    marked = await client.delete(path("pods", NS, "web"))
    assert marked["metadata"]["deletionTimestamp"]

    async def gone() -> bool:
        try:
            await client.get(path("pods", NS, "web"))
        except Failed:
            return True
        return False

    started = time.monotonic()
    await until(gone, bool)
    assert time.monotonic() - started < 5  # the containers' stop, not the 30 s grace period


async def test_stopped_heartbeat_holds_lease_and_pods(cluster: tuple[Client, RunningCore]) -> None:
    client, core = cluster
    lease_path = path("leases", "kube-node-lease", "capstan-node-2", group="coordination.k8s.io")
    await until(lambda: lease_of(client, "capstan-node-2"), lambda found: found is not None)
    node = await client.get(path("nodes", "", "capstan-node-2"))
    node["metadata"].setdefault("annotations", {})["capstan.io/heartbeat"] = "stopped"
    await client.update(path("nodes", "", "capstan-node-2"), node)
    await asyncio.sleep(TIMING.lease_renew * 3)  # a renewal in flight lands
    held = (await client.get(lease_path))["spec"]["renewTime"]
    await client.create(path("pods", NS), pod("held", node="capstan-node-2"))
    await asyncio.sleep(TIMING.lease_renew * 3)
    assert (await client.get(lease_path))["spec"]["renewTime"] == held
    assert (await client.get(path("pods", NS, "held")))["status"]["phase"] == "Pending"
    node = await client.get(path("nodes", "", "capstan-node-2"))
    del node["metadata"]["annotations"]["capstan.io/heartbeat"]
    await client.update(path("nodes", "", "capstan-node-2"), node)
    await until(lambda: client.get(path("pods", NS, "held")), lambda p: condition(p, "Ready") == "True")
    await until(lambda: client.get(lease_path), lambda lease: lease["spec"]["renewTime"] != held)
    assert core.nodes is not None and core.nodes.running()


async def test_a_standby_core_takes_the_kubelets_over() -> None:
    """Two cores over one store: the leader plays the kubelets; when it stops leading the standby takes them up,
    keeping each Pod's IP, and runs the Pods created after."""

    store = await MemoryStore.open(StoreOptions(compact_interval=0))

    def timings() -> ElectionConfig:  # each core its own identity
        return ElectionConfig(lease_duration=4.0, renew_deadline=3.0, retry_period=0.5)

    config = NodesConfig(2, NodeShape(), TIMING)
    first = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                             election=timings(), nodes=config)
    second = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                              election=timings(), nodes=config)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{second.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), second)  # type: ignore[no-untyped-call]
            assert first.nodes is not None and second.nodes is not None
            await until(lambda: asyncio.sleep(0, first.nodes is not None and first.nodes.running()), bool)
            assert second.nodes is not None and not second.nodes.running()
            await client.create(path("pods", NS), pod("before"))
            ran = await until(lambda: client.get(path("pods", NS, "before")), lambda p: condition(p, "Ready") == "True")
            assert first.election is not None
            await first.election.stop()
            await until(lambda: asyncio.sleep(0, second.nodes is not None and second.nodes.running()), bool)
            await client.create(path("pods", NS), pod("after"))
            after = await until(lambda: client.get(path("pods", NS, "after")),
                                lambda p: condition(p, "Ready") == "True")
            assert after["status"]["podIP"] != ran["status"]["podIP"]
            kept = await client.get(path("pods", NS, "before"))
            assert kept["status"]["podIP"] == ran["status"]["podIP"]
            assert kept["status"]["startTime"] == ran["status"]["startTime"]
    finally:
        await second.stop()
        await first.stop()
        await store.close()


async def test_the_pod_terminator_leaves_simulated_nodes_pods_to_their_kubelets(
        cluster: tuple[Client, RunningCore]) -> None:
    client, core = cluster
    assert core.nodes is not None
    core.nodes.simulator.stop_heartbeat("capstan-node-1")
    await client.create(path("pods", NS), pod("silent", node="capstan-node-1", terminationGracePeriodSeconds=1))
    await client.create(path("pods", NS), pod("nowhere", node="no-such-node", terminationGracePeriodSeconds=1))
    await client.delete(path("pods", NS, "silent"))
    await client.delete(path("pods", NS, "nowhere"))

    async def names() -> list[str]:
        return sorted(await client.names(path("pods", NS)))

    await until(names, lambda got: got == ["silent"])  # the terminator removed the other after its grace period
    await asyncio.sleep(1.0)
    assert await names() == ["silent"]
    core.nodes.simulator.resume_heartbeat("capstan-node-1")
    await until(names, lambda got: got == [])


async def test_a_terminal_pod_is_deleted_with_its_status_kept(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    await client.create(path("pods", NS), pod("done", annotations={"capstan.io/exit-code": "3"}, restartPolicy="Never",
                                              terminationGracePeriodSeconds=30))
    failed = await until(lambda: client.get(path("pods", NS, "done")), lambda p: p["status"]["phase"] == "Failed")
    events = client.watch(path("pods", NS), resourceVersion=failed["metadata"]["resourceVersion"])
    await client.delete(path("pods", NS, "done"))
    phases = []
    async for kind, obj in events:
        phases.append(obj["status"]["phase"])
        if kind == "DELETED":
            break
    assert set(phases) == {"Failed"}


async def test_a_deleted_node_stays_deleted(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    await client.delete(path("nodes", "", "capstan-node-2"))
    await asyncio.sleep(TIMING.status_report + TIMING.lease_renew * 2)
    assert sorted(await client.names(path("nodes"))) == ["capstan-node-0", "capstan-node-1"]


@pytest.mark.parametrize(("requests", "count", "reason"), [
    ({"cpu": "20"}, 2, "OutOfcpu"),  # 32 cpu: the second Pod's 20 do not fit
    ({"memory": "200Gi"}, 2, "OutOfmemory"),
    ({}, 111, "OutOfpods"),  # 110 Pods per node
], ids=["cpu", "memory", "pods"])
async def test_the_kubelets_admission_rejects_what_does_not_fit(cluster: tuple[Client, RunningCore],
                                                                 requests: dict[str, str], count: int,
                                                                 reason: str) -> None:
    client, _ = cluster
    container = {"name": "app", "image": "nginx", "resources": {"requests": requests}}
    for i in range(count):
        await client.create(path("pods", NS), pod(f"p{i}", containers=[container]))
    last = f"p{count - 1}"
    got = await until(lambda: client.get(path("pods", NS, last)), lambda p: p["status"]["phase"] != "Pending",
                      timeout=20)
    assert (got["status"]["phase"], got["status"]["reason"]) == ("Failed", reason)
    assert got["status"]["message"].startswith("Pod was rejected: Node didn't have enough resource: ")
    first = await client.get(path("pods", NS, "p0"))
    assert first["status"]["phase"] == "Running"


def with_port(name: str, host_port: int, protocol: str = "TCP", host_ip: str = "") -> Obj:
    port: Obj = {"containerPort": 80, "hostPort": host_port, "protocol": protocol}
    if host_ip:
        port["hostIP"] = host_ip
    return pod(name, containers=[{"name": "app", "image": "nginx", "ports": [port]}])


@pytest.mark.parametrize(("first", "second", "rejected"), [
    ({"host_port": 8080}, {"host_port": 8080}, True),
    ({"host_port": 8080}, {"host_port": 8081}, False),
    ({"host_port": 8080}, {"host_port": 8080, "protocol": "UDP"}, False),
    ({"host_port": 8080, "host_ip": "10.0.0.1"}, {"host_port": 8080, "host_ip": "10.0.0.2"}, False),
    ({"host_port": 8080, "host_ip": "10.0.0.1"}, {"host_port": 8080}, True),  # 0.0.0.0 takes every address
], ids=["same-port", "other-port", "other-protocol", "other-ips", "any-ip"])
async def test_the_kubelets_admission_rejects_a_host_port_in_use(cluster: tuple[Client, RunningCore],
                                                                  first: dict[str, Any], second: dict[str, Any],
                                                                  rejected: bool) -> None:
    """A Pod bound past the scheduler (spec.nodeName set) whose host port an active Pod of the node holds is
    Failed with NodePorts; once that Pod is gone, the same Pod is admitted."""
    client, _ = cluster
    await client.create(path("pods", NS), with_port("holder", **first))
    await until(lambda: client.get(path("pods", NS, "holder")), lambda p: p["status"].get("phase") == "Running")
    await client.create(path("pods", NS), with_port("second", **second))
    got = await until(lambda: client.get(path("pods", NS, "second")), lambda p: p["status"].get("phase") in (
        "Running", "Failed"))
    if not rejected:
        assert got["status"]["phase"] == "Running"
        return
    assert (got["status"]["phase"], got["status"]["reason"], got["status"]["message"]) == (
        "Failed", "NodePorts", "Pod was rejected: Predicate NodePorts failed")
    await client.delete(path("pods", NS, "holder"), gracePeriodSeconds=0)
    await until(lambda: client.names(path("pods", NS)), lambda names: "holder" not in names)
    await client.create(path("pods", NS), with_port("third", **second))
    await until(lambda: client.get(path("pods", NS, "third")), lambda p: p["status"].get("phase") == "Running")


@pytest.mark.parametrize(("spec", "reason"), [
    ({"nodeSelector": {"kubernetes.io/hostname": "capstan-node-0"}}, ""),
    ({"nodeSelector": {"disk": "ssd"}}, "NodeAffinity"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]}}}},
     "NodeAffinity"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["capstan-node-0"]}]}]}}}}, ""),
    ({}, "TaintToleration"),
    ({"tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}]}, ""),
], ids=["selector-matches", "selector-misses", "affinity-misses", "affinity-by-name", "untolerated-taint",
        "tolerated-taint"])
async def test_the_kubelets_admission_checks_node_affinity_and_no_execute_taints(
        cluster: tuple[Client, RunningCore], spec: Obj, reason: str) -> None:
    """A Pod bound past the scheduler (spec.nodeName set) to a node its node affinity does not match, or with a
    NoExecute taint it does not tolerate, is Failed as the kubelet's admission fails it."""
    client, _ = cluster
    if "tolerat" in str(spec) or reason == "TaintToleration":
        taint = {"key": "maintenance", "value": "yes", "effect": "NoExecute"}
        node = await client.get(path("nodes", "", "capstan-node-0"))
        node["spec"]["taints"] = [taint]
        await client.update(path("nodes", "", "capstan-node-0"), node)
        await until(lambda: client.get(path("nodes", "", "capstan-node-0")),
                    lambda n: n["spec"].get("taints") == [taint])
    await client.create(path("pods", NS), pod("bound", **spec))
    got = await until(lambda: client.get(path("pods", NS, "bound")), lambda p: p["status"].get("phase") in (
        "Running", "Failed"))
    if not reason:
        assert got["status"]["phase"] == "Running"
        return
    assert (got["status"]["phase"], got["status"]["reason"], got["status"]["message"]) == (
        "Failed", reason, f"Pod was rejected: Predicate {reason} failed")


async def test_each_container_is_ready_after_its_own_probes(cluster: tuple[Client, RunningCore]) -> None:
    client, _ = cluster
    probe = {"exec": {"command": ["true"]}, "initialDelaySeconds": 2}
    containers = [{"name": "slow", "image": "nginx", "readinessProbe": probe},
                  {"name": "starting", "image": "nginx", "startupProbe": {**probe, "initialDelaySeconds": 1}},
                  {"name": "quick", "image": "nginx"}]
    await client.create(path("pods", NS), pod("probed", containers=containers))
    running = await until(lambda: client.get(path("pods", NS, "probed")), lambda p: p["status"]["phase"] == "Running")
    by_name = {c["name"]: c for c in running["status"]["containerStatuses"]}
    assert (by_name["quick"]["ready"], by_name["quick"]["started"]) == (True, True)
    assert (by_name["starting"]["ready"], by_name["starting"]["started"]) == (False, False)
    assert (by_name["slow"]["ready"], by_name["slow"]["started"]) == (False, True)
    message = next(c["message"] for c in running["status"]["conditions"] if c["type"] == "Ready")
    assert message == "containers with unready status: [slow starting]"
    ready = await until(lambda: client.get(path("pods", NS, "probed")), lambda p: condition(p, "Ready") == "True")
    assert all(c["ready"] and c["started"] for c in ready["status"]["containerStatuses"])


async def test_leading_again_learns_the_pods_anew(cluster: tuple[Client, RunningCore]) -> None:
    """Stopped (leadership lost) and started again in the same core: what changed meanwhile is learnt from the
    feeds, so a Pod deleted meanwhile holds no room or IP, and one kept keeps its IP."""
    client, core = cluster
    assert core.nodes is not None
    await client.create(path("pods", NS), pod("kept"))
    await client.create(path("pods", NS), pod("gone"))
    kept = await until(lambda: client.get(path("pods", NS, "kept")), lambda p: condition(p, "Ready") == "True")
    await until(lambda: client.get(path("pods", NS, "gone")), lambda p: condition(p, "Ready") == "True")
    kept_ip = kept["status"]["podIP"]
    await core.nodes.stop()
    await client.delete(path("pods", NS, "gone"), gracePeriodSeconds=0)
    await core.nodes.start()
    await client.create(path("pods", NS), pod("new"))
    new = await until(lambda: client.get(path("pods", NS, "new")), lambda p: condition(p, "Ready") == "True")
    assert new["status"]["podIP"] != kept_ip
    assert (await client.get(path("pods", NS, "kept")))["status"]["podIP"] == kept_ip
    assert core.nodes.simulator.pods_on("capstan-node-0") and all(
        p["metadata"]["name"] != "gone" for p in core.nodes.simulator.pods_on("capstan-node-0"))
