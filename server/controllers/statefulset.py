"""kube-controller-manager's statefulset controller (pkg/controller/statefulset, 1.28): Pods with stable identities
`<set>-<ordinal>`, their PersistentVolumeClaims from the claim templates, and rolling updates through
ControllerRevisions.

Contracts, as kube's:
- a Pod is `<set>-<i>` for i in [spec.ordinals.start, start + replicas): the template's labels plus
  statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and controller-revision-hash (the revision's
  name), hostname its name, subdomain spec.serviceName, and for each claim template a volume of that name
  naming the claim `<template>-<set>-<i>` (created before the Pod, labelled with the template's labels and the
  selector's matchLabels);
- OrderedReady creates one Pod at a time in ordinal order, waiting for each to be Running and Ready (and
  available after minReadySeconds), and deletes surplus Pods one at a time from the highest ordinal, waiting for
  the others to be healthy; Parallel creates and deletes them all at once and goes on to the update; a Failed or
  Succeeded Pod is deleted (RecreatingFailedPod, RecreatingTerminatedPod) and made again once it is gone;
- the update revision records the current template (server/controllers/history.py); a Pod below the partition
  (RollingUpdate) is made at the current revision, the others at the update revision. RollingUpdate then deletes
  the highest-ordinal Pod at or above the partition not at the update revision, one at a time, once all are
  healthy; OnDelete leaves Pods until someone deletes them. When every replica is updated and ready the update
  revision becomes the current one;
- persistentVolumeClaimRetentionPolicy: whenDeleted Delete gives each claim an ownerReference to the set (so the
  garbage collector deletes it with the set); whenScaled Delete gives the claim of a Pod being scaled away an
  ownerReference to that Pod instead (references without controller, as updateClaimOwnerRefForSetAndPod writes
  them); Retain removes them;
- status: replicas (Pods created), readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
  currentRevision, updateRevision, collisionCount, observedGeneration; revisions beyond revisionHistoryLimit
  that no Pod uses are deleted;
- events as StatefulPodControl records them: SuccessfulCreate "create Pod web-0 in StatefulSet web successful",
  "create Claim data-web-0 Pod web-0 in StatefulSet web success", SuccessfulDelete "delete Pod web-2 in
  StatefulSet web successful", their Failed* (Warning) with the error;
- not done: maxUnavailable (alpha in 1.28), stale-claim detection (PodClaimIsStale).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers import history
from server.controllers.workload import hashing
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.controllers.workload.pods import (
    controller_of,
    controller_ref,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
)
from server.controllers.workload.refs import ControllerRefManager
from server.machinery import errors
from server.machinery.selectors.labels import Selector, SelectorError, from_label_selector
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

SETS = path("statefulsets", group="apps")
PODS = path("pods")
CLAIMS = path("persistentvolumeclaims")
API_VERSION = "apps/v1"
KIND = "StatefulSet"
COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def _meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def parent_and_ordinal(pod: Obj) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("", -1) for a name that is not `<parent>-<ordinal>`."""
    match = _ORDINAL.match(str(_meta(pod).get("name") or ""))
    return (match.group(1), int(match.group(2))) if match else ("", -1)


def is_created(pod: Obj) -> bool:
    return bool((pod.get("status") or {}).get("phase"))


def terminating(pod: Obj) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_ready(pod)


def healthy(pod: Obj) -> bool:
    return running_and_ready(pod) and not terminating(pod)


def revision_of(pod: Obj) -> str:
    return _labels(pod).get(REVISION_LABEL, "")


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    return f"{_meta(template).get('name', '')}-{set_name}-{ordinal}"


def claims_for(stateful_set: Obj, ordinal: int) -> list[Obj]:
    """getPersistentVolumeClaims: the claims the Pod of `ordinal` mounts, from the claim templates."""
    spec = stateful_set.get("spec") or {}
    set_meta = _meta(stateful_set)
    match_labels = dict((spec.get("selector") or {}).get("matchLabels") or {})
    claims = []
    for template in spec.get("volumeClaimTemplates") or []:
        claim = copy.deepcopy(template)
        claim.pop("status", None)
        metadata = {k: v for k, v in _meta(claim).items() if k in ("labels", "annotations", "finalizers")}
        metadata.update(name=claim_name(template, str(set_meta.get("name", "")), ordinal),
                        namespace=set_meta.get("namespace", ""))
        metadata["labels"] = {**(metadata.get("labels") or {}), **match_labels}
        claims.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
                       "spec": claim.get("spec") or {}})
    return claims


def new_pod(stateful_set: Obj, template: Obj, revision: str, ordinal: int) -> Obj:
    """newStatefulSetPod at `revision`: identity (initIdentity), storage (updateStorage) and revision label."""
    set_meta = _meta(stateful_set)
    set_name = str(set_meta.get("name", ""))
    pod = pod_from_template(template, stateful_set, controller_ref(stateful_set, API_VERSION, KIND))
    metadata = pod["metadata"]
    metadata.pop("generateName", None)
    name = f"{set_name}-{ordinal}"
    metadata.update(name=name, namespace=set_meta.get("namespace", ""))
    labels = metadata.setdefault("labels", {})
    labels.update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision})
    spec = pod["spec"]
    spec["hostname"] = name
    service = (stateful_set.get("spec") or {}).get("serviceName")
    if service:
        spec["subdomain"] = service
    templates = (stateful_set.get("spec") or {}).get("volumeClaimTemplates") or []
    claim_volumes = [{"name": _meta(t).get("name"),
                      "persistentVolumeClaim": {"claimName": claim_name(t, set_name, ordinal)}} for t in templates]
    names = {v["name"] for v in claim_volumes}
    spec["volumes"] = claim_volumes + [v for v in spec.get("volumes") or [] if v.get("name") not in names]
    if not spec["volumes"]:
        del spec["volumes"]
    return pod


def _owner_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "name": _meta(owner).get("name"), "uid": _meta(owner).get("uid")}


def claim_owner_refs(claim: Obj, stateful_set: Obj, pod: Obj, *, scaled_down: bool) -> list[Obj] | None:
    """updateClaimOwnerRefForSetAndPod: the claim's ownerReferences as the retention policy wants them, or None
    when they are already so."""
    policy = (stateful_set.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    delete_on_delete = policy.get("whenDeleted") == "Delete"
    delete_on_scale = policy.get("whenScaled") == "Delete"
    want_set = delete_on_delete and not (delete_on_scale and scaled_down)
    want_pod = delete_on_scale and scaled_down
    refs = list(_meta(claim).get("ownerReferences") or [])
    changed = False
    for owner, wanted, api_version, kind in ((stateful_set, want_set, API_VERSION, KIND),
                                             (pod, want_pod, "v1", "Pod")):
        uid = _meta(owner).get("uid")
        has = any(r.get("uid") == uid for r in refs)
        if wanted and not has and uid:
            refs.append(_owner_ref(owner, api_version, kind))
            changed = True
        elif not wanted and has:
            refs = [r for r in refs if r.get("uid") != uid]
            changed = True
    return refs if changed else None


@dataclass
class _Pass:
    """One sync of one StatefulSet: what updateStatefulSet works on."""

    stateful_set: Obj
    current: Obj  # the current revision
    update: Obj  # the update revision
    collision_count: int
    replicas: list[Obj] = field(default_factory=list)
    condemned: list[Obj] = field(default_factory=list)  # by descending ordinal
    start: int = 0

    @property
    def name(self) -> str:
        return str(_meta(self.stateful_set).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(_meta(self.stateful_set).get("namespace", ""))

    @property
    def spec(self) -> Obj:
        return dict(self.stateful_set.get("spec") or {})

    @property
    def monotonic(self) -> bool:
        return self.spec.get("podManagementPolicy") != "Parallel"

    @property
    def min_ready(self) -> int:
        return int(self.spec.get("minReadySeconds") or 0)

    def available(self, pod: Obj) -> bool:
        return running_and_ready(pod) and is_pod_available(pod, self.min_ready)

    def versioned_pod(self, ordinal: int) -> Obj:
        """newVersionedStatefulSetPod: below the partition (or, without rollingUpdate, below the current
        replicas) at the current revision, else at the update revision."""
        strategy = self.spec.get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        status = self.stateful_set.get("status") or {}
        if strategy.get("type") == "RollingUpdate" and (
                (rolling is None and ordinal < self.start + int(status.get("currentReplicas") or 0))
                or (rolling is not None and ordinal < self.start + int(rolling.get("partition") or 0))):
            revision = self.current
        else:
            revision = self.update
        return new_pod(self.stateful_set, history.template_of(revision), _meta(revision)["name"], ordinal)

    def status(self) -> Obj:
        """computeReplicaStatus over the replicas and the condemned, then completeRollingUpdate."""
        current, update = _meta(self.current)["name"], _meta(self.update)["name"]
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0,
                  "updatedReplicas": 0}
        for pod in [*self.replicas, *self.condemned]:
            if is_created(pod):
                counts["replicas"] += 1
            if running_and_ready(pod):
                counts["readyReplicas"] += 1
                if self.available(pod):
                    counts["availableReplicas"] += 1
            if is_created(pod) and not terminating(pod):
                counts["currentReplicas"] += revision_of(pod) == current
                counts["updatedReplicas"] += revision_of(pod) == update
        status: Obj = {"observedGeneration": _meta(self.stateful_set).get("generation", 0), **counts,
                       "currentRevision": current, "updateRevision": update, "collisionCount": self.collision_count}
        if ((self.spec.get("updateStrategy") or {}).get("type") == "RollingUpdate"
                and counts["updatedReplicas"] == counts["replicas"] == counts["readyReplicas"]):
            status["currentReplicas"] = counts["updatedReplicas"]
            status["currentRevision"] = update
        return status


_Step = Callable[["_Pass", int], Awaitable[bool]]


def _comparable(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if v not in (0, "", None) and k != "conditions"}


class StatefulSetController(KeyedController):
    name = COMPONENT

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.sets = self.follow(SETS, self._set_changed)
        self.pods = self.follow(PODS, self._pod_changed)
        self.revisions = self.follow(history.REVISIONS, self._revision_changed)
        self.claims = self.follow(CLAIMS, lambda old, new: None)
        self.recorder = EventRecorder(core, COMPONENT)

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    def _set_changed(self, old: Obj | None, new: Obj | None) -> None:
        self.queue(key_of(new or old or {}))

    def _owner_changed(self, old: Obj | None, new: Obj | None) -> None:
        """An owned object's change queues its StatefulSet; an orphan's queues every set that may adopt it."""
        for obj in (old, new):
            if obj is None:
                continue
            ref = controller_of(obj)
            namespace = str(_meta(obj).get("namespace", ""))
            if ref is not None:
                if ref.get("kind") == KIND:
                    self.queue((namespace, str(ref.get("name", ""))))
                continue
            for stateful_set in self.sets.in_namespace(namespace):
                if _selector(stateful_set).matches(_labels(obj)):
                    self.queue(key_of(stateful_set))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        self._owner_changed(old, new)

    def _revision_changed(self, old: Obj | None, new: Obj | None) -> None:
        self._owner_changed(old, new)

    async def sync(self, key: Key) -> None:
        stateful_set = self.sets.get(key)
        if stateful_set is None:
            return
        namespace, name = key
        try:
            selector = from_label_selector((stateful_set.get("spec") or {}).get("selector"))
        except (SelectorError, TypeError):
            return
        manager = ControllerRefManager(self.core, stateful_set, path("statefulsets", namespace, group="apps"),
                                       API_VERSION, KIND, selector)
        uid = str(_meta(stateful_set).get("uid", ""))
        orphans = [r for r in self.revisions.in_namespace(namespace)
                   if controller_of(r) is None and selector.matches(_labels(r))]
        adopted = await manager.claim(orphans, lambda ns: path("controllerrevisions", ns, group="apps"))
        revisions = history.ordered(history.owned(self.revisions.in_namespace(namespace), uid, selector) + adopted)
        pods = await manager.claim(
            self.pods.in_namespace(namespace), lambda ns: path("pods", ns),
            match=lambda pod: selector.matches(_labels(pod)) and parent_and_ordinal(pod)[0] == name)
        current, update, collision_count = await self._revisions(stateful_set, revisions)
        work = _Pass(stateful_set, current, update, collision_count)
        await self._update(work, pods)
        await self._write_status(stateful_set, work.status())
        if _meta(update)["name"] not in {_meta(r)["name"] for r in revisions}:
            revisions.append(update)
        live = {revision_of(p) for p in pods} | {_meta(current)["name"], _meta(update)["name"]}
        limit = int((stateful_set.get("spec") or {}).get("revisionHistoryLimit", 10))
        for revision in history.to_truncate(revisions, live, limit):
            await self.delete(path("controllerrevisions", namespace, group="apps"), _meta(revision)["name"])
        status = work.status()
        if work.min_ready > 0 and status["readyReplicas"] != status["availableReplicas"]:
            self.queue_after(key, work.min_ready)

    async def _revisions(self, stateful_set: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """getStatefulSetRevisions: the current and update revisions (the update one created, or an equal
        older one renumbered) and the collision count."""
        set_meta = _meta(stateful_set)
        namespace = str(set_meta.get("namespace", ""))
        spec = stateful_set.get("spec") or {}
        status = stateful_set.get("status") or {}
        collision_count = int(status.get("collisionCount") or 0)
        data = history.patch_of(spec.get("template") or {})
        number = history.next_number(revisions)
        equals = [r for r in revisions if (r.get("data") or {}) == data]
        at = path("controllerrevisions", namespace, group="apps")
        if equals and equals[-1] is revisions[-1]:
            update = revisions[-1]
        elif equals:
            update = await self.update(at, {**equals[-1], "revision": number})
        else:
            labels = dict(_meta(spec.get("template") or {}).get("labels") or {})
            while True:
                hash_ = hashing.hash_revision(data, collision_count)
                body: Obj = {"apiVersion": API_VERSION, "kind": "ControllerRevision",
                        "metadata": {"name": history.revision_name(str(set_meta.get("name", "")), hash_),
                                     "namespace": namespace, "labels": {**labels, history.HASH_LABEL: hash_},
                                     "ownerReferences": [controller_ref(stateful_set, API_VERSION, KIND)]},
                        "data": data, "revision": number}
                annotations = set_meta.get("annotations")
                if annotations:  # newRevision: the revision carries the set's annotations (kubectl's change-cause)
                    body["metadata"]["annotations"] = dict(annotations)
                try:
                    update = await self.create(at, body)
                    break
                except errors.ApiError as err:
                    if err.code != 409:
                        raise
                existing = await self._get(at, body["metadata"]["name"])
                if (existing.get("data") or {}) == data:
                    update = existing
                    break
                collision_count += 1
        current_name = status.get("currentRevision")
        current = next((r for r in revisions if _meta(r).get("name") == current_name), update)
        return current, update, collision_count

    async def _get(self, at: core_pb2.ResourcePath, name: str) -> Obj:
        return decode((await self.core.get(core_pb2.GetRequest(path=named(at, name)))).object)

    async def _update(self, work: _Pass, pods: list[Obj]) -> None:
        """updateStatefulSet: replicas made, condemned removed, then the rolling update's one step."""
        spec = work.spec
        replicas = spec.get("replicas")
        count = int(replicas) if isinstance(replicas, int) else 1
        work.start = int((spec.get("ordinals") or {}).get("start") or 0)
        slots: list[Obj | None] = [None] * count
        condemned = []
        for pod in pods:
            _, ordinal = parent_and_ordinal(pod)
            if work.start <= ordinal < work.start + count:
                slots[ordinal - work.start] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        work.replicas = [pod or work.versioned_pod(work.start + i) for i, pod in enumerate(slots)]
        work.condemned = sorted(condemned, key=lambda p: parent_and_ordinal(p)[1], reverse=True)
        if _meta(work.stateful_set).get("deletionTimestamp"):
            return
        if await self._for_all(work, work.replicas, self._replica):
            return
        scale_delete = (spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenScaled") == "Delete"
        if scale_delete:
            for pod in work.condemned:
                await self._claim_refs(work, pod, scaled_down=True)
        first_unhealthy = next((p for p in [*work.replicas, *reversed(work.condemned)] if not healthy(p)), None)

        async def condemn(w: _Pass, i: int) -> bool:
            return await self._condemned(w, i, first_unhealthy)

        if await self._for_all(work, work.condemned, condemn):
            return
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        update_name = _meta(work.update)["name"]
        for target in range(len(work.replicas) - 1, partition - 1, -1):
            pod = work.replicas[target]
            if revision_of(pod) != update_name and not terminating(pod):
                await self._delete_pod(work, pod)
                return
            if not healthy(pod):
                return

    @staticmethod
    async def _for_all(work: _Pass, pods: list[Obj], step: _Step) -> bool:
        """runForAll: when monotonic, in order until a step says to stop (then True); else every step, and the
        pass goes on (False)."""
        for i in range(len(pods)):
            if await step(work, i) and work.monotonic:
                return True
        return False

    async def _replica(self, work: _Pass, i: int) -> bool:
        """processReplica: whether the pass stops here."""
        pod = work.replicas[i]
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Failed", "Succeeded"):
            if not terminating(pod):
                failed = phase == "Failed"
                self.recorder.event(work.stateful_set, WARNING if failed else NORMAL,
                                    "RecreatingFailedPod" if failed else "RecreatingTerminatedPod",
                                    f"StatefulSet {work.namespace}/{work.name} is recreating "
                                    f"{'failed' if failed else 'terminated'} Pod {_meta(pod).get('name', '')}",
                                    kind=KIND, api_version=API_VERSION)
                await self._delete_pod(work, pod)
            return True  # made again once it is gone
        if not is_created(pod):
            await self._create_pod(work, pod, i)
            return work.monotonic
        if terminating(pod) or not running_and_ready(pod) or not work.available(pod):
            return work.monotonic
        _, ordinal = parent_and_ordinal(pod)
        name = f"{work.name}-{ordinal}"
        labels = _labels(pod)
        if labels.get(POD_NAME_LABEL) != name or labels.get(POD_INDEX_LABEL) != str(ordinal):
            fixed = copy.deepcopy(pod)
            fixed["metadata"].setdefault("labels", {}).update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
            await self._pod_write(work, fixed, "update")
        await self._create_claims(work, pod, ordinal)
        await self._claim_refs(work, pod, scaled_down=False)
        return False

    async def _condemned(self, work: _Pass, i: int, first_unhealthy: Obj | None) -> bool:
        """processCondemned."""
        pod = work.condemned[i]
        if terminating(pod):
            return work.monotonic
        if work.monotonic and not work.available(pod) and pod is not first_unhealthy:
            return True
        await self._delete_pod(work, pod)
        return True

    async def _create_pod(self, work: _Pass, pod: Obj, i: int) -> None:
        """CreateStatefulPod: its claims first, then the Pod, then the claims' references."""
        _, ordinal = parent_and_ordinal(pod)
        await self._create_claims(work, pod, ordinal)
        created = await self._pod_write(work, pod, "create")
        await self._claim_refs(work, created, scaled_down=False)

    async def _delete_pod(self, work: _Pass, pod: Obj) -> None:
        await self._pod_write(work, pod, "delete")

    async def _pod_write(self, work: _Pass, pod: Obj, verb: str) -> Obj:
        """A Pod created, updated or deleted, recorded as StatefulPodControl's recordPodEvent does."""
        name = str(_meta(pod).get("name", ""))
        at = path("pods", work.namespace)
        try:
            if verb == "create":
                result = await self.create(at, pod)
            elif verb == "update":
                result = await self.update(at, pod)
            else:
                await self.delete(at, name, uid=str(_meta(pod).get("uid", "")))
                result = pod
        except errors.ApiError as err:
            if not (verb == "create" and err.code == 409):
                self.recorder.event(work.stateful_set, WARNING, f"Failed{verb.title()}",
                                    f"{verb} Pod {name} in StatefulSet {work.name} failed error: "
                                    f"{err.status.message}", kind=KIND, api_version=API_VERSION)
            raise
        self.recorder.event(work.stateful_set, NORMAL, f"Successful{verb.title()}",
                            f"{verb} Pod {name} in StatefulSet {work.name} successful", kind=KIND,
                            api_version=API_VERSION)
        return result

    async def _create_claims(self, work: _Pass, pod: Obj, ordinal: int) -> None:
        """createPersistentVolumeClaims: each claim the Pod mounts that does not exist yet."""
        pod_name = str(_meta(pod).get("name", ""))
        for claim in claims_for(work.stateful_set, ordinal):
            claim_name_ = claim["metadata"]["name"]
            existing = self.claims.get((work.namespace, claim_name_))
            if existing is not None:
                if terminating(existing):
                    raise errors.conflict("persistentvolumeclaims", "", claim_name_,
                                          f"pvc {claim_name_} is being deleted")
                continue
            try:
                await self.create(path("persistentvolumeclaims", work.namespace), claim)
            except errors.ApiError as err:
                if err.code == 409:
                    continue
                self.recorder.event(work.stateful_set, WARNING, "FailedCreate",
                                    f"create Claim {claim_name_} for Pod {pod_name} in StatefulSet {work.name} "
                                    f"failed error: {err.status.message}", kind=KIND, api_version=API_VERSION)
                raise
            self.recorder.event(work.stateful_set, NORMAL, "SuccessfulCreate",
                                f"create Claim {claim_name_} Pod {pod_name} in StatefulSet {work.name} success",
                                kind=KIND, api_version=API_VERSION)

    async def _claim_refs(self, work: _Pass, pod: Obj, *, scaled_down: bool) -> None:
        """UpdatePodClaimForRetentionPolicy: each existing claim's references as the policy wants them."""
        _, ordinal = parent_and_ordinal(pod)
        for wanted in claims_for(work.stateful_set, ordinal):
            at = path("persistentvolumeclaims", work.namespace)
            claim = self.claims.get((work.namespace, wanted["metadata"]["name"]))
            if claim is None:
                try:
                    claim = await self._get(at, wanted["metadata"]["name"])
                except errors.ApiError as err:
                    if err.code == 404:
                        continue
                    raise
            refs = claim_owner_refs(claim, work.stateful_set, pod, scaled_down=scaled_down)
            if refs is None:
                continue
            changed = copy.deepcopy(claim)
            changed["metadata"]["ownerReferences"] = refs
            if not refs:
                del changed["metadata"]["ownerReferences"]
            await self.update(at, changed)

    async def _write_status(self, stateful_set: Obj, status: Obj) -> None:
        """UpdateStatefulSetStatus when it differs, once more over a fresh read after a conflict."""
        if _comparable(stateful_set.get("status") or {}) == _comparable(status):
            return
        at = path("statefulsets", _meta(stateful_set).get("namespace", ""), group="apps")
        for attempt in range(2):
            try:
                await self.update(at, {**stateful_set, "status": status}, subresource="status")
                return
            except errors.ApiError as err:
                if err.code != 409 or attempt:
                    raise
            stateful_set = await self._get(at, str(_meta(stateful_set).get("name", "")))


def _selector(stateful_set: Obj) -> Selector:
    try:
        return from_label_selector((stateful_set.get("spec") or {}).get("selector"))
    except (SelectorError, TypeError):
        return from_label_selector(None)


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = StatefulSetController(core, informers)
    return [Singleton("StatefulSetController", controller.start, controller.stop)]
