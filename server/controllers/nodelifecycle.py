"""The node lifecycle controller, as kube-controller-manager 1.28's nodelifecycle (pkg/controller/nodelifecycle):
a node whose kubelet stops heartbeating is marked Unknown and tainted, and Pods that do not tolerate the taint
are evicted; a node that comes back loses the taints.

Contracts, as kube's:
- health: every `monitor_period` each Node's heartbeat is its Ready condition's lastHeartbeatTime and its Lease's
  (kube-node-lease/<node>) renewTime; when neither has changed for `grace_period` (node-monitor-grace-period,
  40 s; a node that never posted Ready: `startup_grace_period`, 60 s), its Ready, MemoryPressure, DiskPressure
  and PIDPressure conditions become Unknown (reason NodeStatusUnknown, "Kubelet stopped posting node status.");
  staleness is judged on this controller's clock from when it saw a heartbeat change, never by comparing times;
- taints: NoSchedule taints follow the conditions (node.kubernetes.io/not-ready for Ready False, unreachable for
  Unknown, memory-pressure, disk-pressure, pid-pressure, network-unavailable, and unschedulable for
  spec.unschedulable); the NoExecute taint is not-ready or unreachable while Ready is False or Unknown, with
  timeAdded, and is removed when Ready is True again;
- when a node's Ready leaves True its Pods' Ready condition is set False, with the events NodeNotReady (node
  and Pods); back to True: the event NodeReady;
- taint eviction (kube's NoExecuteTaintManager): a Pod on a node with NoExecute taints it does not all tolerate is
  deleted at once; one that tolerates them is deleted when the shortest tolerationSeconds of the tolerations used
  has passed since the taint was added (none: never); the Pod first gets the DisruptionTarget condition (reason
  DeletionByTaintManager) and the event TaintManagerEviction, and is deleted with its own grace period.
- zones (topology.kubernetes.io/region and zone): each pass computes every zone's state from its nodes' Ready
  conditions: FullDisruption when none is Ready, PartialDisruption when more than 2 and at least
  `unhealthy_zone_threshold` (55%) are not, else Normal. A NoExecute taint is added to a node only as its zone's
  token bucket allows (burst 1): `eviction_rate` (0.1 nodes/s) in a Normal or fully disrupted zone,
  `secondary_eviction_rate` (0.01) in a partially disrupted zone of more than `large_cluster_threshold` (50)
  nodes, none in a smaller one; swapping not-ready for unreachable and removing are never held back. When every
  zone is fully disrupted (the controller's own connectivity is the likelier fault) no node is tainted NoExecute
  and the taints already there are removed; when a zone recovers, every node's heartbeat clock starts again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.events import NORMAL, EventRecorder
from server.controllers.workload.keyed import Key, KeyedController, key_of, path
from server.kinds.tolerations import (
    DISK_PRESSURE,
    MEMORY_PRESSURE,
    NETWORK_UNAVAILABLE,
    NOT_READY,
    PID_PRESSURE,
    UNREACHABLE,
    UNSCHEDULABLE,
    tolerates,
)
from server.machinery import errors
from server.machinery.codec import gotime
from server.objects.core import Core
from server.runtime.informer import SharedInformers
from server.runtime.tasks import cancel_all
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

Obj = dict[str, Any]
CONDITION_TAINTS = {  # NoSchedule taints by (condition, status)
    ("Ready", "False"): NOT_READY, ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): MEMORY_PRESSURE,
    ("DiskPressure", "True"): DISK_PRESSURE,
    ("NetworkUnavailable", "True"): NETWORK_UNAVAILABLE,
    ("PIDPressure", "True"): PID_PRESSURE,
}
MANAGED_NO_SCHEDULE = frozenset({*CONDITION_TAINTS.values(), UNSCHEDULABLE})
HEALTH_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
LEASE_NAMESPACE = "kube-node-lease"
EVICTION_WORKERS = 8


@dataclass(frozen=True)
class LifecycleConfig:
    """kube-controller-manager's flags: --node-monitor-period, --node-monitor-grace-period,
    --node-startup-grace-period."""

    monitor_period: float = 5.0
    grace_period: float = 40.0
    startup_grace_period: float = 60.0
    eviction_rate: float = 0.1  # --node-eviction-rate
    secondary_eviction_rate: float = 0.01  # --secondary-node-eviction-rate
    unhealthy_zone_threshold: float = 0.55  # --unhealthy-zone-threshold
    large_cluster_threshold: int = 50  # --large-cluster-size-threshold


@dataclass
class _Health:
    probe: float  # monotonic: when a heartbeat last changed
    heartbeat: str = ""  # Ready's lastHeartbeatTime as last seen
    lease: str = ""  # the Lease's renewTime as last seen
    ready: str = field(default="")  # Ready's status as last observed


def now_text() -> str:
    return gotime.format_seconds(int(time.time()))


def condition_of(node: Obj, kind: str) -> Obj | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or []
                 if isinstance(c, dict) and c.get("type") == kind), None)


def eviction_delay(pod: Obj, taints: list[Obj]) -> float | None:
    """Seconds after the taints were added when the Pod is to be deleted: 0 when some taint is not tolerated,
    the shortest tolerationSeconds of the tolerations used, None when it tolerates them forever."""
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)]
    shortest: float | None = None
    for taint in taints:
        used = [t for t in tolerations if tolerates(t, taint)]
        if not used:
            return 0.0
        for toleration in used:
            seconds = toleration.get("tolerationSeconds")
            if seconds is not None:
                value = max(0.0, float(seconds))
                shortest = value if shortest is None else min(shortest, value)
    return shortest


def no_execute(node: Obj | None) -> list[Obj]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or []
            if isinstance(t, dict) and t.get("effect") == "NoExecute"]


def _added(taint: Obj) -> float:
    try:
        return float(gotime.parse(str(taint.get("timeAdded") or ""), gotime.RFC3339)[0])
    except ValueError:
        return time.time()


NORMAL_ZONE, PARTIAL, FULL = "Normal", "PartialDisruption", "FullDisruption"


def zone_key(node: Obj) -> str:
    """nodetopology.GetZoneKey: region and zone ("" for a node with neither)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = labels.get("topology.kubernetes.io/region") or labels.get("failure-domain.beta.kubernetes.io/region")
    zone = labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone")
    return f"{region or ''}:\x00:{zone or ''}" if region or zone else ""


def zone_state(ready: int, not_ready: int, threshold: float) -> str:
    """ComputeZoneState."""
    if not_ready > 0 and ready == 0:
        return FULL
    if not_ready > 2 and not_ready / (ready + not_ready) >= threshold:
        return PARTIAL
    return NORMAL_ZONE


class Bucket:
    """A token bucket of burst 1 (flowcontrol's token bucket limiter as the zone tainters use it); rate 0 lets
    nothing through."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = 1.0
        self._at = time.monotonic()

    def set_rate(self, rate: float) -> None:
        if rate != self.rate:
            self._refill()
            self.rate = rate

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(1.0, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self) -> bool:
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait(self, otherwise: float) -> float:
        """Seconds until a token is there (`otherwise` at rate 0)."""
        return (1.0 - self._tokens) / self.rate if self.rate > 0 else otherwise


def desired_taints(node: Obj, now: str, *, execute: str = "add") -> list[Obj]:
    """The node's taints with the controller's own set as its conditions and spec say (others untouched; a
    taint that stays keeps its timeAdded). `execute`: "add" the NoExecute taint Ready asks for; "hold": only
    swap one already there (none is added); "none": remove both."""
    spec = node.get("spec") or {}
    current = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
    wanted_schedule = {taint for (kind, value), taint in CONDITION_TAINTS.items()
                       if (condition_of(node, kind) or {}).get("status") == value}
    if spec.get("unschedulable"):
        wanted_schedule.add(UNSCHEDULABLE)
    ready = (condition_of(node, "Ready") or {}).get("status")
    wanted_execute = {"False": {NOT_READY}, "Unknown": {UNREACHABLE}}.get(str(ready), set())
    had_execute = any(t.get("effect") == "NoExecute" and t.get("key") in (NOT_READY, UNREACHABLE) for t in current)
    if execute == "none" or (execute == "hold" and not had_execute):
        wanted_execute = set()
    kept = [t for t in current
            if not (t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NO_SCHEDULE
                    and t.get("key") not in wanted_schedule)
            and not (t.get("effect") == "NoExecute" and t.get("key") in (NOT_READY, UNREACHABLE)
                     and t.get("key") not in wanted_execute)]
    have = {(t.get("key"), t.get("effect")) for t in kept}
    for key in sorted(wanted_schedule):
        if (key, "NoSchedule") not in have:
            kept.append({"key": key, "effect": "NoSchedule"})
    for key in sorted(wanted_execute):
        if (key, "NoExecute") not in have:
            kept.append({"key": key, "effect": "NoExecute", "timeAdded": now})
    return kept


class NodeLifecycleController(KeyedController):
    """Keys are ("", node name); a second worker deletes Pods by (namespace, name, uid)."""

    name = "node-lifecycle-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None,
                 config: LifecycleConfig = LifecycleConfig()) -> None:
        super().__init__(core, informers)
        self.config = config
        self.nodes = self.follow(path("nodes"), self._node_changed)
        self.leases = self.follow(path("leases", LEASE_NAMESPACE, group="coordination.k8s.io"),
                                  self._lease_changed)
        self.pods = self.follow(path("pods"), self._pod_changed)
        self._health: dict[str, _Health] = {}
        self._on_node: dict[str, set[Key]] = {}
        self._zones: dict[str, str] = {}  # zone key -> its state at the last pass
        self._buckets: dict[str, Bucket] = {}
        self._all_disrupted = False
        self._taint_due: set[str] = set()  # nodes a monitoring pass has queued to have their NoExecute taint
        self._evictions = self._new_evictions()
        self._recorder = EventRecorder(core, "node-controller")
        self._monitor: asyncio.Task[None] | None = None

    def _new_evictions(self) -> Worker[tuple[str, str, str]]:
        return Worker(WorkQueue(ExponentialBackoff(0.5, 5.0)), self._evict, name="capstan-taint-eviction",
                      count=EVICTION_WORKERS)

    async def start(self) -> None:
        if self._evictions.queue.shutting_down():
            self._evictions = self._new_evictions()
        await super().start()
        self._evictions.start()
        self._monitor = asyncio.get_running_loop().create_task(self._monitor_every(), name="capstan-node-monitor")

    async def stop(self) -> None:
        await cancel_all((self._monitor,))
        self._monitor = None
        await super().stop()
        await self._evictions.stop()
        await self._recorder.stop()
        self._health.clear()
        self._on_node.clear()
        self._zones.clear()
        self._buckets.clear()
        self._all_disrupted = False
        self._taint_due.clear()

    # --- feeds -----------------------------------------------------------------------------------------------

    def _node_changed(self, old: Obj | None, new: Obj | None) -> None:
        name = key_of(new or old or {})[1]
        if new is None:
            self._health.pop(name, None)
            return
        self.queue(("", name))

    def _lease_changed(self, old: Obj | None, new: Obj | None) -> None:
        pass  # read at each monitoring pass

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        for obj, present in ((old, False), (new, True)):
            if obj is None:
                continue
            node = str((obj.get("spec") or {}).get("nodeName") or "")
            if not node:
                continue
            keys = self._on_node.setdefault(node, set())
            (keys.add if present else keys.discard)(key_of(obj))
        if new is not None:
            node = str((new.get("spec") or {}).get("nodeName") or "")
            if node and no_execute(self.nodes.get(("", node))):
                self._evictions.queue.add(_pod_item(new))

    # --- health ----------------------------------------------------------------------------------------------

    async def _monitor_every(self) -> None:
        while True:
            try:
                await self.monitor()
            except Exception:
                log.exception("node lifecycle: monitoring nodes failed")
            await asyncio.sleep(self.config.monitor_period)

    async def monitor(self) -> None:
        """One monitorNodeHealth pass over every Node: health, then the zones' states from the conditions as
        this pass left them, then each node's NoExecute taint (only a pass adds one, as the zones allow)."""
        now = time.monotonic()
        seen: list[Obj] = []
        for node in self.nodes.values():
            name = key_of(node)[1]
            ready = condition_of(node, "Ready")
            heartbeat = str((ready or {}).get("lastHeartbeatTime") or "")
            lease = self.leases.get((LEASE_NAMESPACE, name))
            renewed = str(((lease or {}).get("spec") or {}).get("renewTime") or "")
            health = self._health.get(name)
            if health is None:
                health = self._health[name] = _Health(now, heartbeat, renewed)
            elif heartbeat != health.heartbeat or renewed != health.lease:
                health.probe, health.heartbeat, health.lease = now, heartbeat, renewed
            grace = self.config.grace_period if ready is not None else self.config.startup_grace_period
            if now - health.probe > grace:
                node = await self._mark_unknown(node)
            seen.append(node)
        self._handle_disruption(seen)
        for node in seen:
            name = key_of(node)[1]
            self._taint_due.add(name)
            self.queue(("", name))

    def _handle_disruption(self, nodes: list[Obj]) -> None:
        """handleDisruption: zone states, their tainting rates, and the all-zones-down mode."""
        counts: dict[str, list[int]] = {}
        for node in nodes:
            tally = counts.setdefault(zone_key(node), [0, 0])
            tally[0 if (condition_of(node, "Ready") or {}).get("status") == "True" else 1] += 1
        states = {zone: zone_state(ready, not_ready, self.config.unhealthy_zone_threshold)
                  for zone, (ready, not_ready) in counts.items()}
        all_now = bool(states) and all(state == FULL for state in states.values())
        if all_now != self._all_disrupted:
            if all_now:
                log.info("node lifecycle: every node is not Ready; entering master disruption mode")
            else:
                log.info("node lifecycle: some node is Ready again; leaving master disruption mode")
                now = time.monotonic()
                for health in self._health.values():
                    health.probe = now
            self._all_disrupted = all_now
        for zone, state in states.items():
            if state == PARTIAL:
                size = sum(counts[zone])
                rate = self.config.secondary_eviction_rate if size > self.config.large_cluster_threshold else 0.0
            else:
                rate = self.config.eviction_rate
            self._buckets.setdefault(zone, Bucket(rate)).set_rate(rate)
        self._zones = states

    async def _mark_unknown(self, node: Obj) -> Obj:
        """The node with its conditions Unknown (as written; as it was when the write failed)."""
        stamp = now_text()
        conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
        changed = False
        for kind in HEALTH_CONDITIONS:
            found = next((c for c in conditions if c.get("type") == kind), None)
            if found is None:
                created = str((node.get("metadata") or {}).get("creationTimestamp") or stamp)
                conditions.append({"type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status.", "lastHeartbeatTime": created,
                                   "lastTransitionTime": stamp})
                changed = True
            elif found.get("status") != "Unknown":
                found |= {"status": "Unknown", "reason": "NodeStatusUnknown",
                          "message": "Kubelet stopped posting node status.", "lastTransitionTime": stamp}
                changed = True
        if not changed:
            return node
        body = {**node, "status": {**(node.get("status") or {}), "conditions": conditions}}
        try:
            return await self.update(path("nodes"), body, subresource="status")
        except errors.ApiError as err:
            log.info("node lifecycle: marking node %s unknown: %s", key_of(node)[1], err.status.message)
            return node

    # --- taints and readiness --------------------------------------------------------------------------------

    async def sync(self, key: Key) -> None:
        name = key[1]
        node = self.nodes.get(("", name))
        if node is None:
            return
        ready = str((condition_of(node, "Ready") or {}).get("status") or "")
        health = self._health.setdefault(name, _Health(time.monotonic()))
        was, health.ready = health.ready, ready
        if was == "True" and ready != "True":
            self._recorder.event(node, NORMAL, "NodeNotReady", f"Node {name} status is now: NodeNotReady",
                                 kind="Node", api_version="v1")
            await self._mark_pods_not_ready(name)
        elif was and was != "True" and ready == "True":
            self._recorder.event(node, NORMAL, "NodeReady", f"Node {name} status is now: NodeReady",
                                 kind="Node", api_version="v1")
        stamp = now_text()
        due = name in self._taint_due
        self._taint_due.discard(name)
        taints = desired_taints(node, stamp, execute="none" if self._all_disrupted else "add" if due else "hold")
        if no_execute({"spec": {"taints": taints}}) and not no_execute(node):  # a new NoExecute taint
            bucket = self._buckets.setdefault(zone_key(node), Bucket(self.config.eviction_rate))
            if not bucket.take():
                taints = desired_taints(node, stamp, execute="hold")  # the next pass tries again
        if taints != list((node.get("spec") or {}).get("taints") or []):
            spec = dict(node.get("spec") or {})
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)
            await self.update(path("nodes"), {**node, "spec": spec})
        if no_execute({"spec": {"taints": taints}}):
            for pod_key in self._on_node.get(name, ()):
                pod = self.pods.get(pod_key)
                if pod is not None:
                    self._evictions.queue.add(_pod_item(pod))

    async def _mark_pods_not_ready(self, node: str) -> None:
        """MarkPodsNotReady: the Ready condition of each of the node's Pods set False."""
        stamp = now_text()
        for key in list(self._on_node.get(node, ())):
            pod = self.pods.get(key)
            if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            conditions = [dict(c) for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            ready |= {"status": "False", "lastTransitionTime": stamp}
            try:
                await self.update(path("pods", key[0]), {**pod, "status": {**pod["status"], "conditions": conditions}},
                                  subresource="status")
            except errors.ApiError as err:
                log.info("node lifecycle: marking pod %s/%s not ready: %s", *key, err.status.message)
                continue
            self._recorder.event(pod, NORMAL, "NodeNotReady", "Node is not ready", kind="Pod", api_version="v1")

    # --- taint eviction --------------------------------------------------------------------------------------

    async def _evict(self, item: tuple[str, str, str]) -> None:
        namespace, name, uid = item
        pod = self.pods.get((namespace, name))
        if pod is None or str((pod.get("metadata") or {}).get("uid", "")) != uid:
            return
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        node = self.nodes.get(("", str((pod.get("spec") or {}).get("nodeName") or "")))
        taints = no_execute(node)
        if not taints:
            return
        delay = eviction_delay(pod, taints)
        if delay is None:
            return
        due = min(_added(t) for t in taints) + delay
        wait = due - time.time()
        if wait > 0:
            self._evictions.queue.add_after(item, wait)
            return
        self._recorder.event(pod, NORMAL, "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}",
                             kind="Pod", api_version="v1")
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or []
                      if isinstance(c, dict) and c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                           "message": "Taint manager: deleting due to NoExecute taint",
                           "lastTransitionTime": now_text()})
        try:
            await self.patch(path("pods", namespace), name, {"status": {"conditions": conditions}},
                             kind=core_pb2.PATCH_TYPE_MERGE, subresource="status")
        except errors.ApiError as err:
            if err.code == 404:
                return
            raise
        await self.delete(path("pods", namespace), name, uid=uid)


def _pod_item(pod: Obj) -> tuple[str, str, str]:
    m = pod.get("metadata") or {}
    return str(m.get("namespace", "")), str(m.get("name", "")), str(m.get("uid", ""))
