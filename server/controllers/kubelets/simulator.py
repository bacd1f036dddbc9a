"""N simulated kubelets in one loop: Nodes registered, their Leases renewed, their Pods' status reported.

Contracts, as the kubelet's:
- each Node is registered at start (created, or its status written when it exists: a restarted simulator, or
  another leader's); its Lease `kube-node-lease/<node>` (owned by the Node) is renewed every `lease_renew`
  seconds; its status is written every `status_report` seconds, and at once when its Ready condition is not
  True (after a heartbeat stop, or the node lifecycle controller marked it Unknown);
- a Pod bound to one of these nodes (spec.nodeName) is admitted as the kubelet admits it (room for one more
  Pod, and for its cpu and memory requests beside the node's active Pods, its node selector and required
  node affinity matching the Node, no host port an active Pod holds, every NoExecute taint tolerated; else
  Failed with OutOfpods, OutOfcpu, OutOfmemory, NodeAffinity, NodePorts or TaintToleration); it gets its IP
  from the node's podCIDR (unique while it lives), then the status status.pod_status computes, written (merge
  patch on pods/status) only when it differs from what is stored, and again at each instant it changes;
- a Pod with a deletionTimestamp has its containers stopped min(grace period, stop_seconds) after the
  deletion is seen; its final status is written and it is deleted with grace 0 and its uid as precondition; a
  Pod already Succeeded or Failed keeps its status and is deleted at once;
- a deleted Node stays deleted (no Lease, no status), as a running kubelet does not register again;
- a node whose heartbeat is stopped (the Node annotated `capstan.io/heartbeat: stopped`, or stop_heartbeat)
  writes nothing: no Lease, no status, no Pod progress, as a dead kubelet; resumed, it reports Ready at once
  and takes up its Pods.

The simulator is fed: whoever runs it hands it every Pod and Node change (pod_changed, pod_deleted,
node_changed), from a shared informer in a core or a watch over REST.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Hashable
from typing import Any

from server.controllers.kubelets import status
from server.controllers.kubelets.api import LEASES, NODES, PODS, ApiFailure, NodeApi
from server.controllers.kubelets.config import DEFAULT_SHAPE, DEFAULT_TIMING, NodeShape, Timing
from server.machinery.codec import gotime
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

Obj = dict[str, Any]
LEASE_NAMESPACE = "kube-node-lease"
WORKERS = 64  # Pod status writes in flight at once
HEARTBEAT_WORKERS = 8  # Lease and Node status writes in flight at once: their own queue, never behind Pods
REGISTERING = 32  # Nodes registered at once at start


def _meta(obj: Obj | None) -> Obj:
    return dict((obj or {}).get("metadata") or {})


def _pod_key(pod: Obj) -> tuple[str, str, str]:
    m = _meta(pod)
    return "pod", str(m.get("namespace", "")), str(m.get("name", ""))


def _strip(value: Any) -> Any:
    """A value without null members, as it reads back from the server (omitempty)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _terminal(status_: Obj) -> bool:
    return status_.get("phase") in ("Succeeded", "Failed")


def differs(old: Obj, new: Obj) -> bool:
    """Whether writing `new`'s members onto `old` would change it."""
    return any(_strip(old.get(k)) != _strip(v) for k, v in new.items())


class Simulator:
    def __init__(self, api: NodeApi, count: int, *, shape: NodeShape = DEFAULT_SHAPE,
                 timing: Timing = DEFAULT_TIMING, first: int = 0) -> None:
        self._api = api
        self.shape = shape
        self.timing = timing
        self.names = {shape.name(i): i for i in range(first, first + count)}
        self._nodes: dict[str, Obj] = {}  # the latest Node seen, by name
        self._pods: dict[tuple[str, str], Obj] = {}  # the latest Pod seen bound to one of ours
        self._by_node: dict[str, set[tuple[str, str]]] = {name: set() for name in self.names}
        self._lives: dict[str, status.Life] = {}  # by Pod uid
        self._ips: dict[str, dict[str, str]] = {name: {} for name in self.names}  # node -> ip -> Pod uid
        self._stopped: set[str] = set()  # heartbeats stopped by stop_heartbeat
        self._silent: set[str] = set()  # nodes that skipped a heartbeat (report Ready when resumed)
        self._leases: dict[str, Obj] = {}  # the Lease as last written
        self._lease_due: dict[str, float] = {}
        self._status_due: dict[str, float] = {}
        self._ready_since: dict[str, float] = {}
        self._worker = self._new_worker("capstan-kubelet-pods", WORKERS)
        self._heartbeats = self._new_worker("capstan-kubelet-heartbeats", HEARTBEAT_WORKERS)

    def _new_worker(self, name: str, count: int) -> Worker[Hashable]:
        return Worker(WorkQueue(ExponentialBackoff(0.2, 5.0)), self._sync, name=name, count=count)

    # --- running ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Registers every Node (returns once each is created or its status written), then reports."""
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker("capstan-kubelet-pods", WORKERS)
            self._heartbeats = self._new_worker("capstan-kubelet-heartbeats", HEARTBEAT_WORKERS)
        gate = asyncio.Semaphore(REGISTERING)

        async def register(name: str) -> None:
            async with gate:
                await self._register(name)

        await asyncio.gather(*(register(name) for name in self.names))
        self._worker.start()
        self._heartbeats.start()
        for name in self.names:
            self._heartbeats.queue.add(("node", name))
        for pod in list(self._pods.values()):
            self._worker.queue.add(_pod_key(pod))

    async def stop(self) -> None:
        """Stops reporting and forgets what it followed: a new start learns it again from its feeds and from
        the Pods' status (their IPs and start times)."""
        await self._heartbeats.stop()
        await self._worker.stop()
        self._nodes.clear()
        self._pods.clear()
        self._lives.clear()
        self._leases.clear()
        self._lease_due.clear()
        self._status_due.clear()
        self._silent.clear()
        for keys in self._by_node.values():
            keys.clear()
        for ips in self._ips.values():
            ips.clear()

    def running(self) -> bool:
        return self._worker.running() and self._heartbeats.running()

    def owns(self, node: str) -> bool:
        return node in self.names

    def stop_heartbeat(self, node: str) -> None:
        """The node's kubelet goes silent (as the `capstan.io/heartbeat: stopped` annotation)."""
        self._stopped.add(node)

    def resume_heartbeat(self, node: str) -> None:
        self._stopped.discard(node)
        if self._heartbeats.running():
            self._heartbeats.queue.add(("node", node))

    # --- feeds -----------------------------------------------------------------------------------------------

    def node_changed(self, node: Obj) -> None:
        name = str(_meta(node).get("name", ""))
        if name not in self.names:
            return
        self._nodes[name] = node
        if self._heartbeats.running():
            self._heartbeats.queue.add(("node", name))

    def node_deleted(self, node: Obj) -> None:
        name = str(_meta(node).get("name", ""))
        if name in self.names:
            self._nodes.pop(name, None)

    def pod_changed(self, pod: Obj) -> None:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node not in self.names:
            return
        key = _pod_key(pod)
        self._pods[key[1:]] = pod
        self._by_node[node].add(key[1:])
        self._keep_ip(pod, node)
        if self._worker.running():
            self._worker.queue.add(key)

    def pod_deleted(self, pod: Obj) -> None:
        _, namespace, name = _pod_key(pod)
        held = self._pods.get((namespace, name))
        uid = str(_meta(pod).get("uid", ""))
        if held is not None and str(_meta(held).get("uid", "")) == uid:
            del self._pods[(namespace, name)]
            self._by_node.get(str((held.get("spec") or {}).get("nodeName") or ""), set()).discard((namespace, name))
        life = self._lives.pop(uid, None)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if life is not None and node in self._ips:
            self._ips[node].pop(life.pod_ip, None)

    def pods_on(self, node: str) -> list[Obj]:
        return [self._pods[key] for key in self._by_node.get(node, ()) if key in self._pods]

    # --- syncing ---------------------------------------------------------------------------------------------

    async def _sync(self, item: Hashable) -> None:
        assert isinstance(item, tuple)
        if item[0] == "node":
            await self._sync_node(str(item[1]))
        else:
            await self._sync_pod(str(item[1]), str(item[2]))

    def _silenced(self, node: str) -> bool:
        annotations = _meta(self._nodes.get(node)).get("annotations") or {}
        return node in self._stopped or annotations.get(status.HEARTBEAT) == "stopped"

    async def _register(self, name: str) -> None:
        index, now = self.names[name], time.time()
        body = status.node_object(self.shape, index, now)
        try:
            self._nodes[name] = await self._api.create(NODES, "", body, node=name)
        except ApiFailure as err:
            if err.code != 409:
                raise
            existing = await self._api.get(NODES, "", name, node=name)
            annotations = _meta(existing).get("annotations") or {}
            if annotations.get(status.SIMULATED) != "true":
                await self._api.patch(NODES, "", name, {"metadata": {"annotations": {status.SIMULATED: "true"}}},
                                      node=name)
            self._nodes[name] = existing
            self._status_due[name] = 0.0  # written at the first sync
        else:
            self._ready_since[name] = now
            self._status_due[name] = now + self.timing.status_report

    async def _sync_node(self, name: str) -> None:
        if name not in self._nodes:
            return  # deleted: a running kubelet does not register again
        if self._silenced(name):
            self._silent.add(name)
            return
        now = time.time()
        if now >= self._lease_due.get(name, 0.0):
            await self._renew(name, now)
            self._lease_due[name] = now + self.timing.lease_renew
        resumed = name in self._silent
        if now >= self._status_due.get(name, 0.0) or resumed or not self._reports_ready(name):
            await self._report(name, now)
            self._status_due[name] = now + self.timing.status_report
        if resumed:
            self._silent.discard(name)
            for pod in self.pods_on(name):
                self._worker.queue.add(_pod_key(pod))
        due = min(self._lease_due[name], self._status_due[name])
        self._heartbeats.queue.add_after(("node", name), max(0.0, due - time.time()))

    def _reports_ready(self, name: str) -> bool:
        conditions = (self._nodes.get(name, {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    async def _report(self, name: str, now: float) -> None:
        if not self._reports_ready(name) or name not in self._ready_since:
            self._ready_since[name] = now
        body = {"status": status.node_status(self.shape, self.names[name], now, self._ready_since[name])}
        try:
            self._nodes[name] = await self._api.patch(NODES, "", name, body, node=name, subresource="status")
        except ApiFailure as err:
            if err.code != 404:
                raise
            self._nodes.pop(name, None)  # deleted meanwhile

    async def _renew(self, name: str, now: float) -> None:
        lease = self._leases.get(name)
        spec = {"holderIdentity": name, "leaseDurationSeconds": self.timing.lease_duration,
                "renewTime": status.micro_text(now)}
        try:
            if lease is None:
                try:
                    lease = await self._api.get(LEASES, LEASE_NAMESPACE, name, node=name)
                except ApiFailure as err:
                    if err.code != 404:
                        raise
                    node = self._nodes.get(name) or {}
                    owner = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": _meta(node).get("uid")}]
                    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                            "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                                         **({"ownerReferences": owner} if _meta(node).get("uid") else {})},
                            "spec": spec}
                    self._leases[name] = await self._api.create(LEASES, LEASE_NAMESPACE, body, node=name)
                    return
            self._leases[name] = await self._api.update(LEASES, LEASE_NAMESPACE, {**lease, "spec": spec}, node=name)
        except ApiFailure as err:
            self._leases.pop(name, None)  # read again at the next try
            if err.code not in (404, 409):
                raise
            self._lease_due[name] = 0.0
            raise

    async def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self._pods.get((namespace, name))
        if pod is None:
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if self._silenced(node):
            return
        m = _meta(pod)
        uid = str(m.get("uid", ""))
        old = pod.get("status") or {}
        life = self._lives.get(uid)
        now = time.time()
        if _terminal(old) and (life is None or life.stop_at is None):
            if m.get("deletionTimestamp"):  # nothing left to stop
                await self._delete(namespace, name, node, uid)
            return  # a terminal Pod's status is final
        if life is None:
            if not old.get("podIP"):  # a Pod not admitted before (a simulator taking over keeps the running ones)
                reason, message = status.admission(self.shape, pod, self._admitted(node), self._nodes.get(node))
                if reason:
                    await self._reject(pod, node, reason, message)
                    return
            life = self._lives[uid] = self._life(pod, node, now)
        if m.get("deletionTimestamp") and life.stop_at is None:
            grace = float(m.get("deletionGracePeriodSeconds") or 0)
            life = self._lives[uid] = status.Life(life.start, life.pod_ip, life.host_ip,
                                                  now + min(grace, self.timing.stop_seconds))
        new, next_change = status.pod_status(pod, life, now, self.timing)
        if differs(old, new):
            try:
                self._pods[(namespace, name)] = await self._api.patch(PODS, namespace, name, {"status": new},
                                                                      node=node, subresource="status")
            except ApiFailure as err:
                if err.code == 404:
                    return
                raise
        if life.stop_at is not None and now >= life.stop_at:
            await self._delete(namespace, name, node, uid)
            return
        if next_change != status.FOREVER:
            self._worker.queue.add_after(("pod", namespace, name), max(0.0, next_change - time.time()))

    def _admitted(self, node: str) -> list[Obj]:
        """The node's active Pods this simulator admitted."""
        return [p for p in self.pods_on(node)
                if str(_meta(p).get("uid", "")) in self._lives and not _terminal(p.get("status") or {})]

    async def _reject(self, pod: Obj, node: str, reason: str, message: str) -> None:
        """The kubelet's rejection at admission: Failed with the reason, nothing started."""
        _, namespace, name = _pod_key(pod)
        body = {"status": {"phase": "Failed", "reason": reason, "message": message}}
        try:
            self._pods[(namespace, name)] = await self._api.patch(PODS, namespace, name, body, node=node,
                                                                  subresource="status")
        except ApiFailure as err:
            if err.code != 404:
                raise

    async def _delete(self, namespace: str, name: str, node: str, uid: str) -> None:
        try:
            await self._api.delete(PODS, namespace, name, node=node, uid=uid, grace=0)
        except ApiFailure as err:
            if err.code not in (404, 409):
                raise

    # --- addresses -------------------------------------------------------------------------------------------

    def _life(self, pod: Obj, node: str, now: float) -> status.Life:
        old = pod.get("status") or {}
        uid = str(_meta(pod).get("uid", ""))
        host_ip = self.shape.internal_ip(self.names[node])
        if (pod.get("spec") or {}).get("hostNetwork"):
            ip = host_ip  # the node's own address, as the kubelet reports a host-network Pod's
        else:
            ip = str(old.get("podIP") or "") or self._allocate(node, uid)
        started = now
        if old.get("startTime"):
            try:
                started = float(gotime.parse(str(old["startTime"]), gotime.RFC3339)[0])
            except ValueError:
                started = now
        return status.Life(started, ip, host_ip)

    def _keep_ip(self, pod: Obj, node: str) -> None:
        """An IP a Pod already has stays its own (a simulator taking over from another)."""
        ip = str((pod.get("status") or {}).get("podIP") or "")
        if ip:
            self._ips[node].setdefault(ip, str(_meta(pod).get("uid", "")))

    def _allocate(self, node: str, uid: str) -> str:
        network = ipaddress.ip_network(self.shape.pod_cidr(self.names[node]))
        used = self._ips[node]
        for host in network.hosts():
            text = str(host)
            if host == network.network_address + 1 or text in used:
                continue  # .1 is the node's bridge
            used[text] = uid
            return text
        raise ApiFailure(507, f"node {node}: no free IP in {network}")
