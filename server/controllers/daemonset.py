"""kube-controller-manager's daemonset controller (pkg/controller/daemon, 1.28): one Pod of each DaemonSet on
every node that should run it, rolled to a new template by maxUnavailable or maxSurge, its templates kept as
ControllerRevisions.

Contracts, as kube's:
- a node should run the Pod when the template's nodeName (if any) is the node's, its nodeSelector and required
  node affinity match the node, and it tolerates the node's NoSchedule and NoExecute taints; a node whose
  NoExecute taints it tolerates keeps a Pod already there (nodeShouldRunDaemonPod);
- a Pod made for a node is the template with the labels controller-revision-hash (the current revision's hash)
  and pod-template-generation, kube's daemon tolerations added (not-ready and unreachable NoExecute;
  disk-pressure, memory-pressure, pid-pressure and unschedulable NoSchedule; network-unavailable NoSchedule with
  hostNetwork), and its required node affinity replaced by one term matching the field metadata.name to the
  node (the scheduler binds it); generateName `<ds>-`; events SuccessfulCreate "Created pod: <name>";
- a node with more than one running Pod keeps the oldest (with maxSurge, the oldest old and the oldest new); a
  Failed Pod is deleted (FailedDaemonPod) and made again; Pods on nodes that should not run them are deleted;
  expectations (server/controllers/workload/expectations.py) keep a sync under watch lag from doing it twice;
- RollingUpdate replaces Pods not at the current hash: without surge it deletes old Pods while fewer than
  maxUnavailable of the desired nodes are unavailable (an unavailable old Pod always may go); with maxSurge it
  makes the new Pod beside the old one on up to maxSurge nodes, deleting the old Pod once the new one is
  available; OnDelete replaces only Pods someone deletes;
- the current revision is the one whose data is the template (server/controllers/history.py), named
  `<ds>-<hash>` with the template hash (collisionCount included) and labelled controller-revision-hash; a new
  one gets the next revision number, an older equal one is renumbered; history beyond revisionHistoryLimit
  that no Pod uses is deleted;
- status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady, numberAvailable,
  numberUnavailable, updatedNumberScheduled, observedGeneration (when expectations are met), collisionCount;
- not done: the failed-Pod backoff, slow-start batches, the preemption-era nodes' checks beyond taints,
  nodeSelector and node affinity.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers import history
from server.controllers.workload import hashing
from server.controllers.workload.events import WARNING, EventRecorder
from server.controllers.workload.expectations import Expectations
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.controllers.workload.pods import PodControl, controller_of, controller_ref, is_pod_available, is_pod_ready
from server.controllers.workload.refs import ControllerRefManager
from server.kinds import tolerations as taints
from server.kinds.tolerations import tolerates
from server.machinery import errors
from server.machinery.selectors.labels import Selector, SelectorError, from_label_selector
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

SETS = path("daemonsets", group="apps")
PODS = path("pods")
NODES = path("nodes")
API_VERSION = "apps/v1"
KIND = "DaemonSet"
COMPONENT = "daemonset-controller"
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
DAEMON_TOLERATIONS = (
    (taints.NOT_READY, "NoExecute"), (taints.UNREACHABLE, "NoExecute"),
    (taints.DISK_PRESSURE, "NoSchedule"), (taints.MEMORY_PRESSURE, "NoSchedule"),
    (taints.PID_PRESSURE, "NoSchedule"), (taints.UNSCHEDULABLE, "NoSchedule"),
)
NETWORK_UNAVAILABLE = (taints.NETWORK_UNAVAILABLE, "NoSchedule")


def _meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name", ""))


# -- node eligibility (the scheduler's predicates the controller runs itself) ---------------------------------------


def _requirement_matches(requirement: Obj, value: str | None) -> bool:
    operator, values = requirement.get("operator"), [str(v) for v in requirement.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def term_matches(term: Obj, node: Obj) -> bool:
    """A NodeSelectorTerm: every expression over the node's labels and every field (metadata.name) holds; a
    term with neither matches nothing."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = _labels(node)
    return (all(_requirement_matches(r, labels.get(str(r.get("key")))) for r in expressions)
            and all(r.get("key") == "metadata.name" and _requirement_matches(r, _name(node)) for r in fields))


def affinity_matches(pod_spec: Obj, node: Obj) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node): the nodeSelector, and any required term."""
    labels = _labels(node)
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def untolerated(taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...]) -> bool:
    return any(t.get("effect") in effects and not any(tolerates(o, t) for o in tolerations) for t in taints)


def add_daemon_tolerations(spec: Obj) -> None:
    """AddOrUpdateDaemonPodTolerations."""
    tolerations = list(spec.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS) + ([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        if toleration not in tolerations:
            tolerations = [t for t in tolerations if not (t.get("key") == key and t.get("effect") == effect)]
            tolerations.append(toleration)
    spec["tolerations"] = tolerations


def should_run(daemon_set: Obj, node: Obj) -> tuple[bool, bool]:
    """nodeShouldRunDaemonPod: (should run, should continue running)."""
    spec = copy.deepcopy(((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {})
    if spec.get("nodeName") and spec["nodeName"] != _name(node):
        return False, False
    add_daemon_tolerations(spec)
    if not affinity_matches(spec, node):
        return False, False
    taints = list((node.get("spec") or {}).get("taints") or [])
    tolerations = list(spec.get("tolerations") or [])
    if untolerated(taints, tolerations, ("NoSchedule", "NoExecute")):
        return False, not untolerated(taints, tolerations, ("NoExecute",))
    return True, True


def node_name_affinity(affinity: Obj | None, node: str) -> Obj:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity is the one term naming the node."""
    out = copy.deepcopy(affinity or {})
    node_affinity = out.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return out


def target_node(pod: Obj) -> str | None:
    """GetTargetNodeName: spec.nodeName, else the node the required affinity's metadata.name field names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and \
                    len(field.get("values") or []) == 1:
                return str(field["values"][0])
    return None


def scaled(value: Any, total: int, *, round_up: bool) -> int:
    """GetScaledValueFromIntOrPercent."""
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"(\d+)%", str(value or "0"))
    if match is None:
        return 0
    exact = int(match.group(1)) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def _generation(daemon_set: Obj) -> str | None:
    return (_meta(daemon_set).get("annotations") or {}).get(TEMPLATE_GENERATION)


def is_updated(pod: Obj, hash_: str, generation: str | None) -> bool:
    """IsPodUpdated: the Pod's template generation or its revision hash is the current one."""
    labels = _labels(pod)
    return (generation is not None and labels.get(GENERATION_LABEL) == generation) or (
        bool(hash_) and labels.get(HASH_LABEL) == hash_)


def _age(pod: Obj) -> tuple[bool, str, str]:
    """podByCreationTimestampAndPhase: scheduled Pods first, then the oldest, then by name."""
    return not (pod.get("spec") or {}).get("nodeName"), str(_meta(pod).get("creationTimestamp") or ""), _name(pod)


class DaemonSetController(KeyedController):
    name = COMPONENT

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.sets = self.follow(SETS, self._set_changed)
        self.pods = self.follow(PODS, self._pod_changed)
        self.nodes = self.follow(NODES, self._node_changed)
        self.revisions = self.follow(history.REVISIONS, self._revision_changed)
        self.recorder = EventRecorder(core, COMPONENT)
        self.pod_control = PodControl(core, self.recorder)
        self.expectations: Expectations[Key] = Expectations()

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    def _set_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None and old is not None:
            self.expectations.forget(key_of(old))
        self.queue(key_of(new or old or {}))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        for obj in (old, new):
            if obj is None:
                continue
            ref = controller_of(obj)
            namespace = str(_meta(obj).get("namespace", ""))
            if ref is None:
                for daemon_set in self.sets.in_namespace(namespace):
                    if _selector(daemon_set).matches(_labels(obj)):
                        self.queue(key_of(daemon_set))
                continue
            if ref.get("kind") != KIND:
                continue
            key = (namespace, str(ref.get("name", "")))
            if old is None and obj is new:
                self.expectations.creation_observed(key)
            if new is None or (_meta(new).get("deletionTimestamp") and not (old and _meta(old).get(
                    "deletionTimestamp"))):
                self.expectations.deletion_observed(key, _name(obj))
            self.queue(key)

    def _node_changed(self, old: Obj | None, new: Obj | None) -> None:
        for daemon_set in self.sets.values():
            self.queue(key_of(daemon_set))

    def _revision_changed(self, old: Obj | None, new: Obj | None) -> None:
        """addHistory, updateHistory, deleteHistory: a controlled revision wakes its DaemonSet when it changes
        or goes, not when it is added (a revision someone else adds waits for the next sync); an orphan wakes the
        DaemonSets whose selector matches it when added, or when its labels or controller change."""
        if new is not None and _meta(new).get("deletionTimestamp"):
            new = None
        if new is None:
            self._queue_controller(old)
            return
        ref = controller_of(new)
        if old is not None:
            if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
                return
            old_ref = controller_of(old)
            ref_changed = old_ref != ref
            if ref_changed:
                self._queue_controller(old)
            if ref is not None:
                self._queue_controller(new)
                return
            if not ref_changed and _labels(old) == _labels(new):
                return
        elif ref is not None:
            return
        namespace = str(_meta(new).get("namespace", ""))
        for daemon_set in self.sets.in_namespace(namespace):
            if _selector(daemon_set).matches(_labels(new)):
                self.queue(key_of(daemon_set))

    def _queue_controller(self, revision: Obj | None) -> None:
        """resolveControllerRef: the DaemonSet the revision's controller reference names, by kind, name and uid."""
        if revision is None:
            return
        ref = controller_of(revision)
        if ref is None or ref.get("kind") != KIND:
            return
        key = (str(_meta(revision).get("namespace", "")), str(ref.get("name", "")))
        daemon_set = self.sets.get(key)
        if daemon_set is not None and _meta(daemon_set).get("uid") == ref.get("uid"):
            self.queue(key)

    async def sync(self, key: Key) -> None:
        daemon_set = self.sets.get(key)
        if daemon_set is None:
            return
        namespace, _ = key
        try:
            selector = from_label_selector((daemon_set.get("spec") or {}).get("selector"))
        except (SelectorError, TypeError):
            return
        if selector.empty:
            return
        manager = ControllerRefManager(self.core, daemon_set, path("daemonsets", namespace, group="apps"),
                                       API_VERSION, KIND, selector)
        nodes = self.nodes.values()
        current, old = await self._history(daemon_set, manager, selector)
        hash_ = _labels(current).get(HASH_LABEL, "")
        pods = await manager.claim(self.pods.in_namespace(namespace), lambda ns: path("pods", ns))
        if _meta(daemon_set).get("deletionTimestamp") or not self.expectations.satisfied(key):
            await self._status(daemon_set, nodes, pods, hash_, observed=False)
            return
        wrote = await self._manage(daemon_set, nodes, pods, hash_)
        strategy = (daemon_set.get("spec") or {}).get("updateStrategy") or {}
        if not wrote and self.expectations.satisfied(key) and strategy.get("type") == "RollingUpdate":
            await self._rolling_update(daemon_set, nodes, pods, hash_)
        live = {_labels(p).get(HASH_LABEL) for p in pods}
        limit = int((daemon_set.get("spec") or {}).get("revisionHistoryLimit", 10))
        for revision in history.to_truncate([r for r in old if _labels(r).get(HASH_LABEL) not in live], set(),
                                            limit):
            await self.delete(path("controllerrevisions", namespace, group="apps"), _name(revision))
        await self._status(daemon_set, nodes, pods, hash_, observed=True)

    # -- history --------------------------------------------------------------------------------------------------

    async def _history(self, daemon_set: Obj, manager: ControllerRefManager,
                       selector: Selector) -> tuple[Obj, list[Obj]]:
        """constructHistory: the current revision (made, or the newest equal one renumbered) and the others."""
        namespace = str(_meta(daemon_set).get("namespace", ""))
        at = path("controllerrevisions", namespace, group="apps")
        uid = str(_meta(daemon_set).get("uid", ""))
        orphans = [r for r in self.revisions.in_namespace(namespace)
                   if controller_of(r) is None and selector.matches(_labels(r))]
        adopted = await manager.claim(orphans, lambda ns: path("controllerrevisions", ns, group="apps"))
        revisions = history.owned(self.revisions.in_namespace(namespace), uid, selector) + adopted
        template = (daemon_set.get("spec") or {}).get("template") or {}
        data = history.patch_of(template)
        current = [r for r in revisions if (r.get("data") or {}) == data]
        old = [r for r in revisions if (r.get("data") or {}) != data]
        wanted = history.next_number(old)
        if not current:
            status = daemon_set.get("status") or {}
            collision = status.get("collisionCount")
            hash_ = hashing.compute_hash(template, collision)
            body: Obj = {"apiVersion": API_VERSION, "kind": "ControllerRevision",
                         "metadata": {"name": history.revision_name(_name(daemon_set), hash_), "namespace": namespace,
                                      "labels": {**_labels(template), HASH_LABEL: hash_},
                                      "ownerReferences": [controller_ref(daemon_set, API_VERSION, KIND)]},
                         "data": data, "revision": wanted}
            annotations = _meta(daemon_set).get("annotations")
            if annotations:
                body["metadata"]["annotations"] = dict(annotations)
            try:
                return await self.create(at, body), old
            except errors.ApiError as err:
                if err.code != 409:
                    raise
            existing = decode((await self.core.get(core_pb2.GetRequest(path=named(at, body["metadata"]["name"]))))
                              .object)
            if (existing.get("data") or {}) == data:
                return existing, old
            bumped = {**daemon_set, "status": {**status, "collisionCount": int(collision or 0) + 1}}
            await self.update(path("daemonsets", namespace, group="apps"), bumped, subresource="status")
            raise errors.conflict("daemonsets", "apps", _name(daemon_set),
                                  f"found a stale revision with hash {hash_}")
        newest = history.ordered(current)[-1]
        for duplicate in current:
            if duplicate is not newest:
                await self.delete(at, _name(duplicate))
        if history.number(newest) < wanted:
            newest = await self.update(at, {**newest, "revision": wanted})
        return newest, old

    # -- Pods -----------------------------------------------------------------------------------------------------

    def _by_node(self, pods: list[Obj]) -> dict[str, list[Obj]]:
        out: dict[str, list[Obj]] = {}
        for pod in pods:
            node = target_node(pod)
            if node is not None:
                out.setdefault(node, []).append(pod)
        return out

    async def _manage(self, daemon_set: Obj, nodes: list[Obj], pods: list[Obj], hash_: str) -> bool:
        """manage: the nodes that need a Pod and the Pods to delete; whether anything was written."""
        by_node = self._by_node(pods)
        surge = _surge_allowed(daemon_set)
        creating: list[str] = []
        deleting: list[str] = []
        for node in nodes:
            name = _name(node)
            run, keep = should_run(daemon_set, node)
            here = by_node.get(name, [])
            if run and not here:
                creating.append(name)
            elif keep:
                running = []
                for pod in here:
                    if _meta(pod).get("deletionTimestamp"):
                        continue
                    if (pod.get("status") or {}).get("phase") == "Failed":
                        self.recorder.event(daemon_set, WARNING, "FailedDaemonPod",
                                            f"Found failed daemon pod {_meta(pod).get('namespace')}/{_name(pod)} on "
                                            f"node {name}, will try to kill it", kind=KIND, api_version=API_VERSION)
                        deleting.append(_name(pod))
                    else:
                        running.append(pod)
                running.sort(key=_age)
                if not surge:
                    deleting.extend(_name(p) for p in running[1:])
                else:
                    kept_new = kept_old = False
                    for pod in running:
                        if _labels(pod).get(HASH_LABEL) == hash_ and not kept_new:
                            kept_new = True
                        elif _labels(pod).get(HASH_LABEL) != hash_ and not kept_old:
                            kept_old = True
                        else:
                            deleting.append(_name(pod))
            elif here:
                deleting.extend(_name(p) for p in here if not _meta(p).get("deletionTimestamp"))
        known = {_name(n) for n in nodes}
        deleting.extend(_name(p) for node, here in by_node.items() if node not in known for p in here
                        if not (p.get("spec") or {}).get("nodeName") and not _meta(p).get("deletionTimestamp"))
        await self._sync_nodes(daemon_set, deleting, creating, hash_)
        return bool(deleting or creating)

    async def _sync_nodes(self, daemon_set: Obj, deleting: list[str], creating: list[str], hash_: str) -> None:
        """syncNodes: expectations set, then the creates and deletes (a failed one lowers them)."""
        if not deleting and not creating:
            return
        key = key_of(daemon_set)
        namespace = key[0]
        self.expectations.expect_deletions(key, deleting)
        self.expectations.raise_(key, len(creating), 0)
        spec = daemon_set.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels[HASH_LABEL] = hash_
        generation = _generation(daemon_set)
        if generation is not None:
            labels[GENERATION_LABEL] = generation
        add_daemon_tolerations(template.setdefault("spec", {}))
        ref = controller_ref(daemon_set, API_VERSION, KIND)
        failure: errors.ApiError | None = None
        for node in creating:
            per_node = copy.deepcopy(template)
            per_node["spec"]["affinity"] = node_name_affinity(per_node["spec"].get("affinity"), node)
            try:
                await self.pod_control.create(namespace, per_node, daemon_set, ref, kind=KIND, api_version=API_VERSION)
            except errors.ApiError as err:
                self.expectations.creation_observed(key)
                failure = failure or err
        for name in deleting:
            try:
                await self.pod_control.delete(namespace, name, daemon_set, kind=KIND, api_version=API_VERSION)
            except errors.ApiError as err:
                self.expectations.deletion_observed(key, name)
                if err.code != 404:
                    failure = failure or err
        if failure is not None:
            raise failure

    async def _rolling_update(self, daemon_set: Obj, nodes: list[Obj], pods: list[Obj], hash_: str) -> None:
        """rollingUpdate: old Pods deleted within maxUnavailable, or new ones surged within maxSurge."""
        by_node = self._by_node(pods)
        spec = daemon_set.get("spec") or {}
        rolling = ((spec.get("updateStrategy") or {}).get("rollingUpdate")) or {}
        desired = sum(1 for node in nodes if should_run(daemon_set, node)[0])
        max_surge = scaled(rolling.get("maxSurge", 0), desired, round_up=True)
        max_unavailable = scaled(rolling.get("maxUnavailable", 1), desired, round_up=True)
        if max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1
        min_ready = int(spec.get("minReadySeconds") or 0)
        generation = _generation(daemon_set)
        wanted_nodes = {_name(n) for n in nodes if should_run(daemon_set, n)[0]}
        if max_surge == 0:
            unavailable = 0
            allowed: list[str] = []
            candidates: list[str] = []
            for node in sorted(by_node):
                if node not in wanted_nodes:
                    continue
                found = _updated_on_node(by_node[node], hash_, generation)
                if found is None:
                    unavailable += 1
                    continue
                new, old = found
                if (new is None) == (old is None):
                    unavailable += 1
                elif new is not None:
                    unavailable += not is_pod_available(new, min_ready)
                elif old is not None and not is_pod_available(old, min_ready):
                    allowed.append(_name(old))
                elif old is not None and unavailable < max_unavailable:
                    candidates.append(_name(old))
            remaining = max(0, min(max_unavailable - unavailable, len(candidates)))
            await self._sync_nodes(daemon_set, allowed + candidates[:remaining], [], hash_)
            return
        surged = 0
        allowed_nodes: list[str] = []
        candidate_nodes: list[str] = []
        old_to_delete: list[str] = []
        for node in sorted(by_node):
            if node not in wanted_nodes:
                continue
            found = _updated_on_node(by_node[node], hash_, generation)
            if found is None:
                surged += 1
                continue
            new, old = found
            if old is None:
                continue
            if new is None:
                if not is_pod_available(old, min_ready):
                    allowed_nodes.append(node)
                elif surged < max_surge:
                    candidate_nodes.append(node)
                continue
            if not is_pod_available(new, min_ready):
                surged += 1
                continue
            old_to_delete.append(_name(old))
        remaining = max(0, min(max_surge - surged, len(candidate_nodes)))
        await self._sync_nodes(daemon_set, old_to_delete, allowed_nodes + candidate_nodes[:remaining], hash_)

    # -- status ---------------------------------------------------------------------------------------------------

    async def _status(self, daemon_set: Obj, nodes: list[Obj], pods: list[Obj], hash_: str, *,
                      observed: bool) -> None:
        """updateDaemonSetStatus."""
        by_node = self._by_node(pods)
        min_ready = int((daemon_set.get("spec") or {}).get("minReadySeconds") or 0)
        generation = _generation(daemon_set)
        counts = dict.fromkeys(("desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled",
                                "numberReady", "numberAvailable", "updatedNumberScheduled"), 0)
        waiting = False
        for node in nodes:
            run, _ = should_run(daemon_set, node)
            here = sorted(by_node.get(_name(node), []), key=_age)
            if not run:
                counts["numberMisscheduled"] += bool(here)
                continue
            counts["desiredNumberScheduled"] += 1
            if not here:
                continue
            counts["currentNumberScheduled"] += 1
            pod = here[0]
            if is_pod_ready(pod):
                counts["numberReady"] += 1
                if is_pod_available(pod, min_ready):
                    counts["numberAvailable"] += 1
                else:
                    waiting = True
            counts["updatedNumberScheduled"] += is_updated(pod, hash_, generation)
        current = dict(daemon_set.get("status") or {})
        status: Obj = {**current, **counts,
                       "numberUnavailable": counts["desiredNumberScheduled"] - counts["numberAvailable"]}
        if observed:
            status["observedGeneration"] = _meta(daemon_set).get("generation", 0)
        if waiting and min_ready > 0:
            self.queue_after(key_of(daemon_set), min_ready)
        if _comparable(status) == _comparable(current):
            return
        await self.update(path("daemonsets", str(_meta(daemon_set).get("namespace", "")), group="apps"),
                          {**daemon_set, "status": status}, subresource="status")


def _comparable(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if v not in (0, "", None)}


def _updated_on_node(pods: list[Obj], hash_: str, generation: str | None) -> tuple[Obj | None, Obj | None] | None:
    """findUpdatedPodsOnNode: the node's one new and one old Pod (not being deleted); None when it has more."""
    new: Obj | None = None
    old: Obj | None = None
    for pod in pods:
        if _meta(pod).get("deletionTimestamp"):
            continue
        if is_updated(pod, hash_, generation):
            if new is not None:
                return None
            new = pod
        else:
            if old is not None:
                return None
            old = pod
    return new, old


def _surge_allowed(daemon_set: Obj) -> bool:
    strategy = (daemon_set.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return False
    return scaled((strategy.get("rollingUpdate") or {}).get("maxSurge", 0), 1, round_up=True) > 0


def _selector(daemon_set: Obj) -> Selector:
    try:
        return from_label_selector((daemon_set.get("spec") or {}).get("selector"))
    except (SelectorError, TypeError):
        return from_label_selector(None)


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = DaemonSetController(core, informers)
    return [Singleton("DaemonSetController", controller.start, controller.stop)]

