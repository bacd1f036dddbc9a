"""The scheduler's cache (kube-scheduler's internal/cache): every Node with the Pods bound to it and the Pods the
scheduler has assumed onto it while their binding is under way, and what the filters and scores add up from
those Pods (requested resources, non-zero requests, host ports in use, Pods with affinity).

Contracts, as kube's:
- a Pod counts on its Node from the moment the scheduler assumes it (before the binding is written) until it is
  deleted or terminal; the informer's bound Pod replaces the assumed one; a failed binding forgets it;
- Pods bound to a Node the cache does not (yet) hold are kept, and count once the Node appears;
- terminal Pods (Succeeded, Failed) are not held, as kube-scheduler's Pod informer leaves them out.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from server.controllers.scheduler.model import CPU, MEMORY, PODS, HostPort, Key, PodInfo, resources

Obj = dict[str, Any]


class NodeInfo:
    """framework.NodeInfo: a Node (None while only its Pods are known) and its Pods' sums."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.node: Obj | None = None
        self.labels: Mapping[str, str] = {}
        self.taints: tuple[Obj, ...] = ()
        self.unschedulable = False
        self.allocatable: Mapping[str, int] = {}
        self.allowed_pods = 0
        self.pods: dict[Key, PodInfo] = {}
        self.requested: dict[str, int] = {}
        self.non_zero: dict[str, int] = {CPU: 0, MEMORY: 0}
        self.ports: dict[HostPort, int] = {}
        self.with_affinity = 0
        self.with_required_anti_affinity = 0
        # what the plugins computed from this Node's Pods and labels, until either changes
        self.memo: dict[Hashable, Any] = {}

    def set_node(self, node: Obj | None) -> None:
        self.node = node
        self.memo = {}
        if node is None:
            return
        metadata = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.labels = dict(metadata.get("labels") or {})
        self.taints = tuple(t for t in spec.get("taints") or [] if isinstance(t, dict))
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = resources((node.get("status") or {}).get("allocatable"))
        self.allowed_pods = self.allocatable.get(PODS, 0)

    def usage(self) -> tuple[int, int, int, int, int, int]:
        """cpu and memory: allocatable, non-zero requested, requested (remembered until the Node changes)."""
        found: tuple[int, int, int, int, int, int] | None = self.memo.get("usage")
        if found is None:
            found = self.memo["usage"] = (
                self.allocatable.get(CPU, 0), self.allocatable.get(MEMORY, 0), self.non_zero[CPU],
                self.non_zero[MEMORY], self.requested.get(CPU, 0), self.requested.get(MEMORY, 0))
        return found

    def add(self, pod: PodInfo, sign: int = 1) -> None:
        self.memo = {}
        if sign > 0:
            self.pods[pod.key] = pod
        else:
            self.pods.pop(pod.key, None)
        for name, value in pod.requests.items():
            self.requested[name] = self.requested.get(name, 0) + sign * value
        for name in (CPU, MEMORY):
            self.non_zero[name] += sign * pod.non_zero.get(name, 0)
        for port in pod.host_ports:
            left = self.ports.get(port, 0) + sign
            if left > 0:
                self.ports[port] = left
            else:
                self.ports.pop(port, None)
        if pod.has_affinity:
            self.with_affinity += sign
        if pod.required_anti_affinity:
            self.with_required_anti_affinity += sign

    def remove(self, pod: PodInfo) -> None:
        self.add(pod, -1)


class Cache:
    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[Key, PodInfo] = {}  # bound or assumed, by key
        self._assumed: set[Key] = set()

    def nodes(self) -> list[NodeInfo]:
        """The Nodes that exist, in name order."""
        return [info for _, info in sorted(self._nodes.items()) if info.node is not None]

    def node(self, name: str) -> NodeInfo | None:
        info = self._nodes.get(name)
        return info if info is not None and info.node is not None else None

    def __iter__(self) -> Iterator[PodInfo]:
        return iter(self._pods.values())

    def _info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def set_node(self, name: str, node: Obj | None) -> None:
        info = self._info(name)
        info.set_node(node)
        if node is None and not info.pods:
            del self._nodes[name]

    def pod(self, key: Key) -> PodInfo | None:
        return self._pods.get(key)

    def is_assumed(self, key: Key) -> bool:
        return key in self._assumed

    def assume(self, pod: PodInfo) -> None:
        self.put(pod)
        self._assumed.add(pod.key)

    def put(self, pod: PodInfo) -> None:
        """A bound (or assumed) Pod, replacing what the cache held under its key."""
        self.forget(pod.key)
        self._pods[pod.key] = pod
        self._info(pod.node_name).add(pod)

    def forget(self, key: Key) -> PodInfo | None:
        """Remove a Pod (bound or assumed); the Pod removed."""
        self._assumed.discard(key)
        old = self._pods.pop(key, None)
        if old is not None:
            info = self._nodes.get(old.node_name)
            if info is not None:
                info.remove(old)
                if info.node is None and not info.pods:
                    del self._nodes[old.node_name]
        return old
