"""kube-controller-manager's replicaset and replicationcontroller controllers (pkg/controller/replicaset; kube
runs the ReplicationController one as the same code over ReplicationControllers): keep `spec.replicas` active
Pods of each controller's template.

As kube's:
- Pods are claimed by the controller-ref manager (server/controllers/workload/refs.py): orphans matching the
  selector adopted, owned Pods that no longer match released; only active Pods count (not Succeeded, Failed or
  being deleted);
- missing Pods are created from the template in slow-start batches (1, 2, 4, ...; a batch with a failure ends the
  round), at most BURST_REPLICAS per sync; extra Pods deleted in kube's order (unassigned before assigned,
  Pending before Unknown before Running, not ready before ready, lower controller.kubernetes.io/pod-deletion-cost
  first, more related Pods on the same node first, ready for less time first and created later first, both
  compared on kube's logarithmic scale, more container restarts first);
- expectations: a sync that wrote waits to see its creates and deletes in the informer before it writes again;
- status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (minReadySeconds), observedGeneration,
  and the ReplicaFailure condition (reason FailedCreate or FailedDelete, the error as message) while creates or
  deletes fail; a sync waiting for minReadySeconds is queued again when they pass;
- events SuccessfulCreate, SuccessfulDelete, FailedCreate, FailedDelete from `replicaset-controller` or
  `replication-controller`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cmp_to_key

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.events import EventRecorder
from server.controllers.workload.expectations import Expectations
from server.controllers.workload.keyed import Key, KeyedController, Obj, key_of, path
from server.controllers.workload.pods import (
    PodControl,
    condition,
    controller_of,
    controller_ref,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    parse_time,
)
from server.controllers.workload.refs import ControllerRefManager
from server.machinery import errors
from server.machinery.selectors.labels import Selector, SelectorError, from_label_selector
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

log = logging.getLogger(__name__)

BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH = 1
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
REPLICA_FAILURE = "ReplicaFailure"
PODS = path("pods")


@dataclass(frozen=True)
class Kind:
    """The controller kind one instance of the controller keeps Pods for."""

    group: str
    resource: str
    kind: str
    component: str
    name: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/v1" if self.group else "v1"

    def at(self, namespace: str = "") -> core_pb2.ResourcePath:
        return path(self.resource, namespace, group=self.group)

    def selector(self, obj: Obj) -> Selector:
        """The selector as a LabelSelector; a ReplicationController's is a plain map."""
        raw = (obj.get("spec") or {}).get("selector")
        if self.kind == "ReplicationController":
            return from_label_selector({"matchLabels": raw or {}} if raw else None)
        return from_label_selector(raw)


REPLICA_SET = Kind("apps", "replicasets", "ReplicaSet", "replicaset-controller", "replicaset-controller")
REPLICATION_CONTROLLER = Kind("", "replicationcontrollers", "ReplicationController", "replication-controller",
                              "replicationmanager")


def labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# Deletion order (controller.ActivePodsWithRanks, with LogarithmicScaleDown and PodDeletionCost on).

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Obj) -> int:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _log_rank(t: float, now: float) -> int:
    d = (now - t) * 1e9
    return int(math.log2(d)) if d > 0 else -1


def _newer_first(t1: float | None, t2: float | None, now: float) -> int:
    """afterOrZero with the logarithmic comparison: negative when the first sorts first (the more recent,
    or an unset time); 0 when equal on that scale."""
    if t1 == t2:
        return 0
    if t1 is None or t2 is None:
        return -1 if t1 is None else 1
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    return diff


def _restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(s.get("restartCount") or 0) for s in statuses if isinstance(s, dict)), default=0)


def deletion_order(pods: Sequence[Obj], ranks: Sequence[int], now: float) -> list[Obj]:
    """The Pods in the order kube deletes them (the first ones first)."""
    def ready_at(pod: Obj) -> float | None:
        return parse_time((condition(pod, "Ready") or {}).get("lastTransitionTime"))

    def created(pod: Obj) -> float | None:
        return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))

    def compare(a: tuple[Obj, int], b: tuple[Obj, int]) -> int:
        (p1, r1), (p2, r2) = a, b
        n1, n2 = (p1.get("spec") or {}).get("nodeName"), (p2.get("spec") or {}).get("nodeName")
        if bool(n1) != bool(n2):
            return -1 if not n1 else 1
        ph1 = _PHASE_ORDER.get((p1.get("status") or {}).get("phase", ""), 3)
        ph2 = _PHASE_ORDER.get((p2.get("status") or {}).get("phase", ""), 3)
        if ph1 != ph2:
            return ph1 - ph2
        if is_pod_ready(p1) != is_pod_ready(p2):
            return -1 if not is_pod_ready(p1) else 1
        if _deletion_cost(p1) != _deletion_cost(p2):
            return -1 if _deletion_cost(p1) < _deletion_cost(p2) else 1
        if r1 != r2:
            return -1 if r1 > r2 else 1
        if is_pod_ready(p1) and is_pod_ready(p2) and ready_at(p1) != ready_at(p2):
            diff = _newer_first(ready_at(p1), ready_at(p2), now)
            if diff:
                return diff
            uid1, uid2 = str(p1["metadata"].get("uid", "")), str(p2["metadata"].get("uid", ""))
            return -1 if uid1 < uid2 else (1 if uid1 > uid2 else 0)
        if _restarts(p1) != _restarts(p2):
            return -1 if _restarts(p1) > _restarts(p2) else 1
        if created(p1) != created(p2):
            diff = _newer_first(created(p1), created(p2), now)
            if diff:
                return diff
            uid1, uid2 = str(p1["metadata"].get("uid", "")), str(p2["metadata"].get("uid", ""))
            return -1 if uid1 < uid2 else (1 if uid1 > uid2 else 0)
        return 0

    ordered = sorted(zip(pods, ranks, strict=True), key=cmp_to_key(compare))
    return [pod for pod, _ in ordered]


def set_condition(status: Obj, new: Obj) -> None:
    """SetCondition: replaced by type, keeping lastTransitionTime when the status does not change."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != new["type"]]
    old = next((c for c in status.get("conditions") or [] if c.get("type") == new["type"]), None)
    if old is not None and old.get("status") == new.get("status") and old.get("reason") == new.get("reason") \
            and old.get("message") == new.get("message"):
        return
    if old is not None and old.get("status") == new.get("status"):
        new = {**new, "lastTransitionTime": old.get("lastTransitionTime")}
    status["conditions"] = [*conditions, new]


def remove_condition(status: Obj, kind: str) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


class ReplicaSetController(KeyedController):
    """One controller kind's Pods (ReplicaSets' or ReplicationControllers')."""

    workers = 2
    backoff = (0.1, 10.0)  # a refused write (quota) is retried ever less often, as kube's rate limiter does

    def __init__(self, core: Core, kind: Kind, informers: SharedInformers | None = None) -> None:
        self.name = kind.name
        super().__init__(core, informers)
        self.kind = kind
        self.owners = self.follow(kind.at(), self._owner_changed)
        self.pods = self.follow(PODS, self._pod_changed)
        self.recorder = EventRecorder(core, kind.component)
        self.pod_control = PodControl(core, self.recorder)
        self.expectations: Expectations[Key] = Expectations()

    def started(self) -> None:
        """A start (a new leadership) begins without expectations: writes a stopped sync never made are not
        waited for; the informers' initial list shows what exists."""
        self.expectations = Expectations()

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    # Handlers.

    def _owner_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None and old is not None:
            self.expectations.forget(key_of(old))
        self.queue(key_of(new or old or {}))

    def _resolve(self, namespace: str, ref: Obj | None) -> Obj | None:
        if ref is None or ref.get("kind") != self.kind.kind:
            return None
        owner = self.owners.get((namespace, str(ref.get("name", ""))))
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return owner

    def _matching(self, pod: Obj) -> list[Obj]:
        """getPodReplicaSets: the controllers of the Pod's namespace whose selector matches it."""
        namespace = key_of(pod)[0]
        found = []
        for owner in self.owners.in_namespace(namespace):
            try:
                selector = self.kind.selector(owner)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels(pod)):
                found.append(owner)
        return found

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is not None:
                self._pod_deleted(old)
            return
        namespace = key_of(new)[0]
        if old is None:
            if (new.get("metadata") or {}).get("deletionTimestamp"):
                self._pod_deleted(new)
                return
            owner = self._resolve(namespace, controller_of(new))
            if owner is not None:
                self.expectations.creation_observed(key_of(owner))
                self.queue(key_of(owner))
                return
            if controller_of(new) is None:
                for owner in self._matching(new):
                    self.queue(key_of(owner))
            return
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get("resourceVersion"):
            return
        label_changed = labels(old) != labels(new)
        if (new.get("metadata") or {}).get("deletionTimestamp"):
            self._pod_deleted(new)
            if label_changed:
                self._pod_deleted(old)
            return
        old_ref, new_ref = controller_of(old), controller_of(new)
        ref_changed = old_ref != new_ref
        if ref_changed and old_ref is not None:
            previous = self._resolve(namespace, old_ref)
            if previous is not None:
                self.queue(key_of(previous))
        if new_ref is not None:
            owner = self._resolve(namespace, new_ref)
            if owner is None:
                return
            self.queue(key_of(owner))
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(new) and min_ready > 0:
                self.queue_after(key_of(owner), min_ready + 1.0)
            return
        if label_changed or ref_changed:
            for owner in self._matching(new):
                self.queue(key_of(owner))

    def _pod_deleted(self, pod: Obj) -> None:
        owner = self._resolve(key_of(pod)[0], controller_of(pod))
        if owner is None:
            return
        self.expectations.deletion_observed(key_of(owner), key_of(pod)[1])
        self.queue(key_of(owner))

    # Sync.

    async def sync(self, key: Key) -> None:
        owner = self.owners.get(key)
        if owner is None:
            self.expectations.forget(key)
            return
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.kind.selector(owner)
        except SelectorError as err:
            log.info("%s: %s/%s has a bad selector: %s", self.name, *key, err)
            return
        namespace = key[0]
        active = [p for p in self.pods.in_namespace(namespace) if is_pod_active(p)]
        manager = ControllerRefManager(self.core, owner, self.kind.at(namespace), self.kind.api_version,
                                       self.kind.kind, selector)
        claimed = await manager.claim(active, lambda ns: path("pods", ns))
        manage_error: errors.ApiError | None = None
        if needs_sync and not (owner.get("metadata") or {}).get("deletionTimestamp"):
            try:
                await self._manage(claimed, owner)
            except errors.ApiError as err:
                manage_error = err
        updated = await self._update_status(owner, claimed, manage_error)
        spec = updated.get("spec") or {}
        status = updated.get("status") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        if manage_error is None and min_ready > 0 and status.get("readyReplicas", 0) == replicas(updated) \
                and status.get("availableReplicas", 0) != replicas(updated):
            self.queue_after(key, float(min_ready))
        if manage_error is not None:
            raise manage_error

    async def _manage(self, pods: list[Obj], owner: Obj) -> None:
        key = key_of(owner)
        diff = len(pods) - replicas(owner)
        if diff < 0:
            wanted = min(-diff, BURST_REPLICAS)
            self.expectations.expect_creations(key, wanted)
            created, err = await self._slow_start(wanted, owner)
            skipped = wanted - created
            for _ in range(skipped):
                self.expectations.creation_observed(key)
            if err is not None:
                raise err
        elif diff > 0:
            count = min(diff, BURST_REPLICAS)
            doomed = self._pods_to_delete(pods, owner, count)
            self.expectations.expect_deletions(key, [key_of(p)[1] for p in doomed])
            results = await asyncio.gather(*(self._delete_one(owner, p) for p in doomed))
            failures = [e for e in results if e is not None]
            if failures:
                raise failures[0]

    async def _slow_start(self, count: int, owner: Obj) -> tuple[int, errors.ApiError | None]:
        """slowStartBatch: creates in batches of 1, 2, 4, ...; the successes and the first failure."""
        template = (owner.get("spec") or {}).get("template") or {}
        ref = controller_ref(owner, self.kind.api_version, self.kind.kind)
        namespace = key_of(owner)[0]
        done = 0
        batch = min(count, SLOW_START_INITIAL_BATCH)
        remaining = count
        while batch > 0:
            results = await asyncio.gather(
                *(self._create_one(namespace, template, owner, ref) for _ in range(batch)))
            failures = [e for e in results if e is not None]
            done += batch - len(failures)
            if failures:
                return done, failures[0]
            remaining -= batch
            batch = min(2 * batch, remaining)
        return done, None

    async def _create_one(self, namespace: str, template: Obj, owner: Obj, ref: Obj) -> errors.ApiError | None:
        try:
            await self.pod_control.create(namespace, template, owner, ref, kind=self.kind.kind,
                                          api_version=self.kind.api_version)
        except errors.ApiError as err:
            if any(c.reason == "NamespaceTerminating" for c in err.status.details.causes):
                return None  # the namespace is going: nothing to report
            return err
        return None

    async def _delete_one(self, owner: Obj, pod: Obj) -> errors.ApiError | None:
        namespace, name = key_of(pod)
        try:
            await self.pod_control.delete(namespace, name, owner, kind=self.kind.kind,
                                          api_version=self.kind.api_version)
        except errors.ApiError as err:
            self.expectations.deletion_observed(key_of(owner), name)
            return None if err.code == 404 else err
        return None

    def _pods_to_delete(self, pods: list[Obj], owner: Obj, count: int) -> list[Obj]:
        if count >= len(pods):
            return pods
        related = self._related_pods(owner)
        on_node: dict[str, int] = {}
        for pod in related:
            if is_pod_active(pod):
                node = str((pod.get("spec") or {}).get("nodeName") or "")
                on_node[node] = on_node.get(node, 0) + 1
        ranks = [on_node.get(str((p.get("spec") or {}).get("nodeName") or ""), 0) for p in pods]
        return deletion_order(pods, ranks, time.time())[:count]

    def _related_pods(self, owner: Obj) -> list[Obj]:
        """getIndirectlyRelatedPods: the Pods of every controller sharing this one's controller (a
        Deployment's ReplicaSets), or this one's own."""
        namespace = key_of(owner)[0]
        parent = controller_of(owner)
        uids = {str((owner.get("metadata") or {}).get("uid"))}
        if parent is not None:
            uids |= {str((o.get("metadata") or {}).get("uid")) for o in self.owners.in_namespace(namespace)
                     if (controller_of(o) or {}).get("uid") == parent.get("uid")}
        return [p for p in self.pods.in_namespace(namespace) if (controller_of(p) or {}).get("uid") in uids]

    def _status(self, owner: Obj, pods: list[Obj], manage_error: errors.ApiError | None) -> Obj:
        """calculateStatus."""
        status: Obj = dict(owner.get("status") or {})
        template_labels = labels((owner.get("spec") or {}).get("template"))
        min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
        now = time.time()
        fully = sum(1 for p in pods if all(labels(p).get(k) == v for k, v in template_labels.items()))
        ready = [p for p in pods if is_pod_ready(p)]
        available = sum(1 for p in ready if is_pod_available(p, min_ready, now))
        failure = condition(owner, REPLICA_FAILURE)
        if manage_error is not None and failure is None:
            diff = len(pods) - replicas(owner)
            reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
            set_condition(status, {"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": now_rfc3339(),
                                   "reason": reason, "message": manage_error.status.message})
        elif manage_error is None and failure is not None:
            remove_condition(status, REPLICA_FAILURE)
        status["replicas"] = len(pods)
        status["fullyLabeledReplicas"] = fully
        status["readyReplicas"] = len(ready)
        status["availableReplicas"] = available
        return status

    async def _update_status(self, owner: Obj, pods: list[Obj], manage_error: errors.ApiError | None) -> Obj:
        status = self._status(owner, pods, manage_error)
        current = owner.get("status") or {}
        generation = (owner.get("metadata") or {}).get("generation", 0)
        same = all(int(current.get(f) or 0) == int(status.get(f) or 0)
                   for f in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"))
        if same and current.get("observedGeneration") == generation \
                and (current.get("conditions") or []) == (status.get("conditions") or []):
            return owner
        status["observedGeneration"] = generation
        for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status.get(field):
                status.pop(field, None)
        body: Obj = {**owner, "status": status}
        try:
            return await self.update(self.kind.at(key_of(owner)[0]), body, subresource="status")
        except errors.ApiError as err:
            if err.code in (404, 409):
                return owner  # a newer version or none: its own event queues the next sync
            raise


def singletons(core: Core, informers: SharedInformers, kind: Kind) -> Sequence[Singleton]:
    controller = ReplicaSetController(core, kind, informers)
    name = "ReplicaSetController" if kind is REPLICA_SET else "ReplicationManager"
    return [Singleton(name, controller.start, controller.stop)]

