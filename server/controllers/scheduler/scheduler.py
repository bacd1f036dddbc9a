"""kube-scheduler's default profile (`default-scheduler`) as an elected singleton: Pods with that schedulerName
and no nodeName are bound to a Node through pods/binding, as kube-scheduler 1.28 binds them.

One scheduling cycle at a time (scheduleOne): the next Pod of the queue (server/controllers/scheduler/queue.py)
is filtered against every Node of the cache and the feasible ones scored (plugins.py); the best is chosen, ties
broken at random (selectHost's reservoir sampling); one feasible Node is taken without scoring. The Pod is
assumed onto that Node in the cache and the binding is written while the next cycle runs; then the
`Scheduled` event ("Successfully assigned ns/pod to node", action Binding). A refused binding forgets the
assumed Pod and retries it with backoff (reason SchedulerError).

A Pod no Node fits gets kube's diagnosis (framework.FitError): the PodScheduled condition False with reason
Unschedulable and the message, written through pods/status with a strategic merge patch only when it changed,
and a FailedScheduling event (action Scheduling). The message counts each Node's reasons, sorted:

    0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 2 Insufficient cpu.
    preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims
    found for incoming pod..

The "preemption:" part is DefaultPreemption's (preemption.py). When it finds a Node where evicting Pods of
lower priority makes room, lower-priority Pods nominated to that Node lose their nomination, each victim gets
the DisruptionTarget condition (reason PreemptionByScheduler), is deleted with its grace period and gets a
Preempted event, and then the Pod is nominated there (status.nominatedNodeName, written with the condition,
whose message then has no "preemption:" part); the Pod is bound once the victims are gone. Pods nominated to a
Node count there while Pods of lower or equal priority are filtered, and a nominated Pod tries its Node first.
PodDisruptionBudgets are not consulted. With no Node at all the message is "no nodes available to schedule
pods".

The queue orders Pods by spec.priority, then by when they were first queued. Unschedulable Pods are retried
when the cluster changes in a way their failing filters care for (a Node added, a Node's labels, taints,
unschedulable flag or allocatable changed, a bound Pod deleted or turned terminal, a bound Pod added that a
Pod's required affinity matches), after their backoff (1 s doubling to 10 s).

What the cache holds: every Node, and every bound Pod that is not terminal (kube-scheduler's Pod informer
leaves Succeeded and Failed Pods out), plus the assumed ones; namespaces' labels for namespaceSelector terms.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Mapping

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.scheduler import plugins, preemption
from server.controllers.scheduler.cache import Cache, NodeInfo
from server.controllers.scheduler.events import Recorder
from server.controllers.scheduler.model import (
    DEFAULT_SCHEDULER,
    Key,
    NamespaceLabels,
    Obj,
    PodInfo,
    key_of,
    named_nodes,
    refresh,
)
from server.controllers.scheduler.queue import LEFTOVER_PERIOD, QueuedPod, SchedulingQueue
from server.machinery import errors, meta
from server.machinery.selectors import BadSelector
from server.machinery.selectors import labels as label_selectors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import Handlers, Indexer, SharedInformers, Subscriptions, on_change
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

MANAGER = "kube-scheduler"
PODS = core_pb2.ResourcePath(version="v1", resource="pods")
NODES = core_pb2.ResourcePath(version="v1", resource="nodes")
NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
SERVICES = core_pb2.ResourcePath(version="v1", resource="services")
CONTROLLERS = {  # DefaultSelector's owners: kind -> (apiVersion, path)
    "ReplicationController": ("v1", core_pb2.ResourcePath(version="v1", resource="replicationcontrollers")),
    "ReplicaSet": ("apps/v1", core_pb2.ResourcePath(group="apps", version="v1", resource="replicasets")),
    "StatefulSet": ("apps/v1", core_pb2.ResourcePath(group="apps", version="v1", resource="statefulsets")),
}
NO_NODES = "no nodes available to schedule pods"
TERMINAL = ("Succeeded", "Failed")

# The plugins each cluster event may help (the events each plugin registers for, EventsToRegister).
POD_DELETED = frozenset({"NodeResourcesFit", "NodePorts", "PodTopologySpread", "InterPodAffinity"})
NODE_LABELS = frozenset({"NodeAffinity", "PodTopologySpread", "InterPodAffinity", "NodeName", "NodePorts"})
NODE_TAINTS = frozenset({"TaintToleration", "NodeUnschedulable", "NodeName", "NodePorts"})
NODE_ALLOCATABLE = frozenset({"NodeResourcesFit", "NodeName", "NodePorts"})
NODE_DELETED = frozenset({"PodTopologySpread"})


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """One scheduling cycle's outcome: a Node, or the message and the plugins that failed."""

    node: str = ""
    message: str = ""
    plugins: frozenset[str] = frozenset()
    candidate: preemption.Candidate | None = None  # the Node and the victims preemption chose
    nominate: str | None = None  # the nominatedNodeName to write ("" clears it), None to leave it


class Scheduler:
    name = DEFAULT_SCHEDULER

    def __init__(self, core: Core, informers: SharedInformers | None = None, *,
                 rng: random.Random | None = None) -> None:
        self._core = core
        shared = informers or SharedInformers(core)
        self._subscriptions = Subscriptions()
        pods: Handlers[Obj] = on_change(self._pod_changed)
        nodes: Handlers[Obj] = on_change(self._node_changed)
        self._pods: Indexer[Obj] = self._subscriptions.add(shared.informer(PODS), pods).cache
        self._subscriptions.add(shared.informer(NODES), nodes)
        self._namespaces: Indexer[Obj] = self._subscriptions.add(shared.informer(NAMESPACES), Handlers()).cache
        self._services: Indexer[Obj] = self._subscriptions.add(shared.informer(SERVICES), Handlers()).cache
        self._owners: dict[str, Indexer[Obj]] = {
            kind: self._subscriptions.add(shared.informer(where), Handlers()).cache
            for kind, (_, where) in CONTROLLERS.items()}
        self._rng = rng or random.Random()
        self.cache = Cache()
        self.queue = SchedulingQueue()
        self.recorder = Recorder(core, DEFAULT_SCHEDULER)
        self._tasks: list[asyncio.Task[None]] = []
        self._writes: set[asyncio.Task[None]] = set()
        self._nominated: dict[Key, tuple[str, PodInfo]] = {}  # pending Pods nominated to a Node

    async def start(self) -> None:
        self.cache = Cache()
        self.queue = SchedulingQueue()
        self._nominated = {}
        self.recorder = Recorder(self._core, DEFAULT_SCHEDULER)
        await self._subscriptions.start()
        self.recorder.start()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name="capstan-scheduler"),
                       loop.create_task(self._flush(), name="capstan-scheduler-flush")]

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await cancel_all([*self._tasks, *self._writes])
        self._tasks = []
        self._writes.clear()
        self.queue.close()
        await self.recorder.stop()

    def running(self) -> bool:
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    async def idle(self) -> None:
        """Returns once the writes begun so far (bindings, conditions, Events) are done (tests, benchmarks)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)
        await self.recorder.idle()

    # --- informers ------------------------------------------------------------------------------------------------

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        found = self._namespaces.get(("", namespace))
        return ((found or {}).get("metadata") or {}).get("labels") or {}

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (new.get("status") or {}).get("phase") in TERMINAL:
            new = None
        if old is not None and (old.get("status") or {}).get("phase") in TERMINAL:
            old = None
        if new is None:
            if old is None:
                return
            key = key_of(old)
            self.queue.delete(key)
            self._nominated.pop(key, None)
            self.recorder.forget(str((old.get("metadata") or {}).get("uid") or ""))
            if self.cache.forget(key) is not None:
                self.queue.move_all(POD_DELETED)
            return
        known = key_of(new)
        info = refresh(self.cache.pod(known) or self.queue.info(known), new)
        self._nominated.pop(info.key, None)
        if info.node_name:
            self.cache.put(info)
            self.queue.done(info.key)
            self.queue.move_matching(lambda queued: bool(queued.pod.required_affinity) and all(
                term.matches(info, self._namespace_labels) for term in queued.pod.required_affinity))
            return
        if self.cache.is_assumed(info.key):
            return  # bound by this scheduler; the informer has not seen it yet
        if info.scheduler_name != DEFAULT_SCHEDULER or info.terminating:
            self.queue.delete(info.key)
            return
        nominated = str((new.get("status") or {}).get("nominatedNodeName") or "")
        if nominated:
            self._nominated[info.key] = (nominated, info)
        if old is None:
            self.queue.add(info)
        else:
            self.queue.update(old, info)

    def _node_changed(self, old: Obj | None, new: Obj | None) -> None:
        name = str(((new or old or {}).get("metadata") or {}).get("name") or "")
        self.cache.set_node(name, new)
        if new is None:
            self.queue.move_all(NODE_DELETED)
            return
        if old is None:
            self.queue.move_all(None)
            return
        helped: set[str] = set()
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if old_meta.get("labels") != new_meta.get("labels"):
            helped |= NODE_LABELS
        if old_spec.get("taints") != new_spec.get("taints") or old_spec.get("unschedulable") != new_spec.get(
                "unschedulable"):
            helped |= NODE_TAINTS
        if (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"):
            helped |= NODE_ALLOCATABLE
        if helped:
            self.queue.move_all(frozenset(helped))

    # --- the scheduling loop --------------------------------------------------------------------------------------

    async def _flush(self) -> None:
        while True:
            await asyncio.sleep(LEFTOVER_PERIOD)
            self.queue.flush_leftover()

    async def _run(self) -> None:
        while True:
            queued = await self.queue.pop()
            cycle = self.queue.scheduling_cycle
            try:
                self._schedule_one(queued, cycle)
            except Exception:
                log.exception("scheduler: scheduling %s/%s failed", *queued.pod.key)
                self.queue.failed(queued, (), cycle)
            await asyncio.sleep(0)  # the informers' events between cycles

    def _schedule_one(self, queued: QueuedPod, cycle: int) -> None:
        key = queued.pod.key
        current = self._pods.get(key)
        if current is None or self.cache.is_assumed(key):
            return
        pod = queued.pod if queued.pod.raw is current else refresh(queued.pod, current)
        if pod.node_name or pod.terminating or pod.scheduler_name != DEFAULT_SCHEDULER:
            self.queue.delete(key)
            return
        queued.pod = pod
        decision = self.decide(pod)
        if decision.node:
            self._nominated.pop(key, None)
            self.cache.assume(dataclasses.replace(pod, node_name=decision.node))
            self._spawn(self._bind(queued, decision.node, cycle))
            return
        self.queue.failed(queued, decision.plugins, cycle)
        if decision.candidate is not None:
            node = decision.candidate.node
            for lower in preemption.lower_nominated(pod, node, self._nominated.values()):
                del self._nominated[lower.key]
                self._spawn(self._record_failure(lower.raw, "", "", nominate=""))
            self._nominated[key] = (node, pod)
            self._spawn(self._preempt(current, decision.candidate, decision.message, decision.nominate))
            return
        if decision.nominate == "":
            self._nominated.pop(key, None)
        self._spawn(self._record_failure(current, "Unschedulable", decision.message, nominate=decision.nominate))

    def decide(self, pod: PodInfo) -> Decision:
        by_node: dict[str, list[PodInfo]] = {}
        for node, nominated in self._nominated.values():
            by_node.setdefault(node, []).append(nominated)
        where = self._nominated.get(pod.key)
        return decide(self.cache, pod, self._namespace_labels, self._rng, nominated=by_node,
                      nominated_node=where[0] if where else "",
                      default_selector=None if pod.spread_constraints else self._default_selector(pod))

    def _default_selector(self, pod: PodInfo) -> label_selectors.Selector | None:
        """helper.DefaultSelector: the selectors of the Services selecting the Pod, with its controller's
        (a ReplicationController, ReplicaSet or StatefulSet), as one selector."""
        labels: dict[str, str] = {}
        for service in self._services.in_namespace(pod.namespace):
            wanted = (service.get("spec") or {}).get("selector") or {}
            if wanted and all(pod.labels.get(k) == v for k, v in wanted.items()):
                labels.update(wanted)
        expressions: list[Obj] = []
        owner = next((ref for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []
                      if isinstance(ref, dict) and ref.get("controller")), None)
        found = CONTROLLERS.get(str((owner or {}).get("kind")))
        if owner is not None and found is not None and owner.get("apiVersion") == found[0]:
            controller = self._owners[str(owner["kind"])].get((pod.namespace, str(owner.get("name"))))
            wanted = ((controller or {}).get("spec") or {}).get("selector")
            if isinstance(wanted, dict) and owner["kind"] == "ReplicationController":
                labels.update({str(k): str(v) for k, v in wanted.items()})
            elif isinstance(wanted, dict):
                expressions = [{"key": k, "operator": "In", "values": [v]}
                               for k, v in (wanted.get("matchLabels") or {}).items()]
                expressions += list(wanted.get("matchExpressions") or [])
        if not labels and not expressions:
            return None
        try:
            return label_selectors.from_label_selector({"matchLabels": labels, "matchExpressions": expressions})
        except (BadSelector, TypeError):
            return None

    # --- writes ---------------------------------------------------------------------------------------------------

    def _spawn(self, work: object) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)  # type: ignore[arg-type]
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _bind(self, queued: QueuedPod, node: str, cycle: int) -> None:
        """DefaultBinder: POST pods/{name}/binding; then the Scheduled event."""
        pod = queued.pod
        namespace, name = pod.key
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": name, "namespace": namespace, "uid": pod.uid},
                   "target": {"kind": "Node", "name": node}}
        request = core_pb2.CreateRequest(
            path=core_pb2.ResourcePath(version="v1", resource="pods", namespace=namespace, name=name,
                                       subresource="binding"),
            object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(binding)))
        request.options.fieldManager = MANAGER
        try:
            await self._core.create(request)
        except Exception as err:
            message = err.status.message if isinstance(err, errors.ApiError) else str(err)
            log.info("scheduler: binding %s/%s to %s failed: %s", namespace, name, node, message)
            if self.cache.is_assumed(pod.key):
                self.cache.forget(pod.key)
                self.queue.move_all(POD_DELETED)
            current = self._pods.get(pod.key)
            if current is not None and not (current.get("spec") or {}).get("nodeName"):
                self.queue.failed(queued, (), cycle)
                await self._record_failure(current, "SchedulerError", f"binding rejected: {message}")
            return
        self.recorder.record(pod.raw, "Normal", "Scheduled", "Binding",
                             f"Successfully assigned {namespace}/{name} to {node}")

    async def _record_failure(self, pod: Obj, reason: str, message: str, *, nominate: str | None = None) -> None:
        """handleSchedulingFailure: the FailedScheduling event, then the PodScheduled condition and the
        nominatedNodeName (updatePod: written only when either changes). reason "" writes only the nomination."""
        status: Obj = {}
        current = pod.get("status") or {}
        if reason:
            self.recorder.record(pod, "Warning", "FailedScheduling", "Scheduling", message)
            conditions = current.get("conditions") or []
            old = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "PodScheduled"), None)
            if old is None or (old.get("status"), old.get("reason"), old.get("message")) != ("False", reason, message):
                changed = old is None or old.get("status") != "False"
                since = meta.now() if changed or old is None else old.get("lastTransitionTime")
                status["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                         "lastTransitionTime": since, "reason": reason, "message": message}]
        if nominate is not None and nominate != str(current.get("nominatedNodeName") or ""):
            status["nominatedNodeName"] = nominate or None
        if status:
            await self._patch_status(pod, status)

    async def _patch_status(self, pod: Obj, status: Obj) -> None:
        """util.PatchPodStatus: a strategic merge patch of pods/status carrying the Pod's uid."""
        namespace, name = key_of(pod)
        patch = core_pb2.PatchRequest(
            path=core_pb2.ResourcePath(version="v1", resource="pods", namespace=namespace, name=name,
                                       subresource="status"),
            type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE,
            patch=orjson.dumps({"metadata": {"uid": (pod.get("metadata") or {}).get("uid")}, "status": status}))
        patch.options.fieldManager = MANAGER
        try:
            await self._core.patch(patch)
        except errors.ApiError as err:
            log.info("scheduler: patching %s/%s's status failed: %s", namespace, name, err.status.message)

    async def _preempt(self, preemptor: Obj, candidate: preemption.Candidate, message: str,
                       nominate: str | None) -> None:
        """The victims evicted, then the preemptor's nomination written, as kube-scheduler 1.28 orders them
        (PostFilter's prepareCandidate, then the failure handler's status update): a Pod seen nominated to a
        Node has its victims' deletions made already."""
        await self._evict(preemptor, candidate)
        await self._record_failure(preemptor, "Unschedulable", message, nominate=nominate)

    async def _evict(self, preemptor: Obj, candidate: preemption.Candidate) -> None:
        """prepareCandidate: each victim gets the DisruptionTarget condition, is deleted (its own grace period)
        and gets a Preempted event naming the preemptor."""
        uid = (preemptor.get("metadata") or {}).get("uid")

        async def evict(victim: PodInfo) -> None:
            await self._patch_status(victim.raw, {"conditions": [{
                "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": f"{DEFAULT_SCHEDULER}: preempting to accommodate a higher priority pod",
                "lastTransitionTime": meta.now()}]})
            namespace, name = victim.key
            try:
                await self._core.delete(core_pb2.DeleteRequest(path=core_pb2.ResourcePath(
                    version="v1", resource="pods", namespace=namespace, name=name)))
            except errors.ApiError as err:
                if err.code != 404:
                    log.info("scheduler: preempting %s/%s failed: %s", namespace, name, err.status.message)
                    return
            self.recorder.record(victim.raw, "Normal", "Preempted", "Preempting",
                                 f"Preempted by pod {uid} on node {candidate.node}", related=preemptor)

        await asyncio.gather(*(evict(victim) for victim in candidate.victims))


def decide(cache: Cache, pod: PodInfo, namespace_labels: NamespaceLabels, rng: random.Random, *,
           nominated: Mapping[str, list[PodInfo]] | None = None, nominated_node: str = "",
           default_selector: label_selectors.Selector | None = None) -> Decision:
    """Filter, score and select (schedulePod), or the FitError's message and what preemption found. Pods
    nominated to a Node with at least this Pod's priority count on it while it is filtered
    (RunFilterPluginsWithNominatedPods); a Node this Pod is nominated to is tried first (evaluateNominatedNode)."""
    nodes = cache.nodes()
    if not nodes:
        return Decision(message=NO_NODES)
    cycle = plugins.Cycle(pod, nodes, namespace_labels, default_selector)
    named = named_nodes(pod)
    others = nominated or {}

    def filtered(node: NodeInfo) -> plugins.Status | None:
        adding = [p for p in others.get(node.name, ()) if p.priority >= pod.priority and p.key != pod.key
                  and p.key not in node.pods]
        for other in adding:
            node.add(other)
        try:
            return plugins.run_filters(cycle, node)
        finally:
            for other in adding:
                node.remove(other)

    statuses: dict[str, plugins.Status] = {}
    pre_filter = ""
    if named is not None and not named:
        pre_filter = plugins.AFFINITY_CONFLICT
        conflict = plugins.Status("NodeAffinity", (pre_filter,), True)
        statuses = {node.name: conflict for node in nodes}
        feasible: list[NodeInfo] = []
    else:
        first = cache.node(nominated_node) if nominated_node else None
        if first is not None and (named is None or first.name in named) and filtered(first) is None:
            return Decision(node=first.name)
        feasible = []
        for node in nodes:
            if named is not None and node.name not in named:
                continue
            status = filtered(node)
            if status is None:
                feasible.append(node)
            else:
                statuses[node.name] = status
    if not feasible:
        post_filter, candidate = preemption.preempt(pod, nodes, statuses, namespace_labels,
                                                    cache.node(nominated_node) if nominated_node else None)
        ran = not post_filter.startswith("preemption: not eligible")
        return Decision(message=plugins.fit_error(len(nodes), statuses, pre_filter=pre_filter,
                                                  post_filter=post_filter),
                        plugins=frozenset(s.plugin for s in statuses.values()), candidate=candidate,
                        nominate=(candidate.node if candidate else "") if ran else None)
    if len(feasible) == 1:
        return Decision(node=feasible[0].name)
    return Decision(node=_select(rng, feasible, plugins.total_scores(cycle, feasible)))


def _select(rng: random.Random, nodes: list[NodeInfo], scores: list[int]) -> str:
    """selectHost: the highest total, ties broken by reservoir sampling."""
    best, chosen, ties = scores[0], 0, 1
    for i in range(1, len(nodes)):
        if scores[i] > best:
            best, chosen, ties = scores[i], i, 1
        elif scores[i] == best:
            ties += 1
            if rng.random() * ties < 1:  # rand.Intn(ties) == 0
                chosen = i
    return nodes[chosen].name


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    scheduler = Scheduler(core, informers)
    return [Singleton("Scheduler", scheduler.start, scheduler.stop)]


__all__ = ["Decision", "Key", "Scheduler", "decide", "singletons"]
