"""kube-controller-manager's deployment controller (pkg/controller/deployment): a Deployment's ReplicaSets, one
per pod template, scaled through a rollout.

As kube's:
- ReplicaSets are claimed by the controller-ref manager (adopted when the selector matches, released when not);
  the new one is the ReplicaSet whose template equals the Deployment's ignoring the `pod-template-hash` label; it
  is created as `<name>-<hash>` with that label on its template and selector, the hash over the template and
  status.collisionCount (server/controllers/workload/hashing.py: kube's FNV-32a over Go's %#v printing cannot
  be reproduced, so the template's canonical JSON is hashed; names have kube's shape, not kube's bytes); a name
  taken by another template bumps collisionCount;
- RollingUpdate: the new ReplicaSet scaled up within replicas + maxSurge, old ones scaled down (unhealthy
  replicas first) keeping replicas - maxUnavailable available (percentages: surge rounded up, unavailable down;
  both 0 makes unavailable 1); Recreate: old ReplicaSets scaled to 0 and their Pods gone before the new one is
  created and scaled up; a change of replicas alone scales every active ReplicaSet proportionally (kube's
  max-replicas annotation arithmetic); paused: only scaling and cleanup, Progressing Unknown DeploymentPaused /
  DeploymentResumed;
- annotations: deployment.kubernetes.io/revision (the new ReplicaSet's, max of the old ones + 1, also on the
  Deployment), revision-history when an old template comes back (rollback: `kubectl rollout undo` patches the
  template from an old ReplicaSet), desired-replicas and max-replicas, the Deployment's own annotations copied
  (kubectl.kubernetes.io/last-applied-configuration and the revision ones excepted);
- revisionHistoryLimit: the oldest old ReplicaSets at 0 replicas beyond the limit deleted once the rollout is
  complete (or while paused);
- status: observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas,
  unavailableReplicas, collisionCount; conditions Available (MinimumReplicasAvailable /
  MinimumReplicasUnavailable), Progressing (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
  NewReplicaSetAvailable, ProgressDeadlineExceeded after progressDeadlineSeconds without progress, the sync
  queued again when the deadline passes) and ReplicaFailure copied from a ReplicaSet;
- events from `deployment-controller`: ScalingReplicaSet ("Scaled up replica set <rs> to <n>" on create,
  "Scaled up|down replica set <rs> to <n> from <m>"), FailedCreate for a ReplicaSet the core refuses,
  SelectingAll for an empty selector.
Not done: the deprecated rollbackTo of extensions/v1beta1 (kubectl 1.28 rolls back client-side).
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Sequence
from functools import cmp_to_key
from typing import Any

from server.controllers.replicaset import labels, now_rfc3339
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.hashing import compute_hash
from server.controllers.workload.keyed import Key, KeyedController, Obj, key_of, path
from server.controllers.workload.pods import controller_of, controller_ref, parse_time
from server.controllers.workload.refs import ControllerRefManager
from server.kinds.templates import semantic_form
from server.machinery import errors
from server.machinery.selectors.labels import SelectorError, from_label_selector
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SKIPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY,
                                 DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to"})
MAX_REVISION_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1

PROGRESSING, AVAILABLE, REPLICA_FAILURE = "Progressing", "Available", "ReplicaFailure"
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

DEPLOYMENTS = path("deployments", group="apps")
REPLICASETS = path("replicasets", group="apps")
PODS = path("pods")


def _spec(obj: Obj | None) -> Obj:
    return dict((obj or {}).get("spec") or {})


def _status(obj: Obj | None) -> Obj:
    return dict((obj or {}).get("status") or {})


def _meta(obj: Obj | None) -> Obj:
    return dict((obj or {}).get("metadata") or {})


def _annotations(obj: Obj | None) -> dict[str, str]:
    return dict(_meta(obj).get("annotations") or {})


def replicas(obj: Obj | None) -> int:
    value = _spec(obj).get("replicas")
    return 1 if value is None else int(value)


def _int(obj: Obj | None, field: str) -> int:
    return int(_status(obj).get(field) or 0)


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        percent = int(value[:-1])
        exact = percent * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def is_rolling(d: Obj) -> bool:
    return bool((_spec(d).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")


def fenceposts(d: Obj) -> tuple[int, int]:
    """ResolveFenceposts: (maxSurge, maxUnavailable)."""
    rolling = (_spec(d).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = scaled_value(rolling.get("maxSurge", 0), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", 0), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Obj) -> int:
    return fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Obj) -> int:
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], replicas(d))


def revision(rs: Obj | None) -> int:
    try:
        return int(_annotations(rs).get(REVISION, "0"))
    except ValueError:
        return 0


def equal_ignore_hash(a: Obj | None, b: Obj | None) -> bool:
    """EqualIgnoreHash over two pod templates."""
    def without_hash(t: Obj | None) -> object:
        t = copy.deepcopy(t or {})
        (t.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
        return semantic_form(t)
    return bool(without_hash(a) == without_hash(b))


def _created(rs: Obj) -> tuple[float, str]:
    return parse_time(_meta(rs).get("creationTimestamp")) or 0.0, str(_meta(rs).get("name", ""))


def by_creation(rss: Sequence[Obj]) -> list[Obj]:
    """ReplicaSetsByCreationTimestamp: older first, then by name."""
    return sorted(rss, key=_created)


def active(rss: Sequence[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def deployment_complete(d: Obj, status: Obj) -> bool:
    want = replicas(d)
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= int(_meta(d).get("generation") or 0))


def has_progress_deadline(d: Obj) -> bool:
    deadline = _spec(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def get_condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def new_condition(kind: str, status: str, reason: str, message: str) -> Obj:
    now = now_rfc3339()
    return {"type": kind, "status": status, "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason,
            "message": message}


def set_condition(status: Obj, cond: Obj) -> None:
    """SetDeploymentCondition: no change for the same status and reason; lastTransitionTime kept while the
    status stays."""
    current = get_condition(status, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [*[c for c in status.get("conditions") or [] if c.get("type") != cond["type"]], cond]


def remove_condition(status: Obj, kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]


class DeploymentController(KeyedController):
    name = "deployment-controller"
    workers = 2
    backoff = (0.1, 10.0)  # a refused write (quota) is retried ever less often, as kube's rate limiter does

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.deployments = self.follow(DEPLOYMENTS, self._deployment_changed)
        self.replicasets = self.follow(REPLICASETS, self._replicaset_changed)
        self.pods = self.follow(PODS, self._pod_changed)
        self.recorder = EventRecorder(core, "deployment-controller")

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    def _event(self, d: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(d, type_, reason, message, kind="Deployment", api_version="apps/v1")

    # Handlers.

    def _deployment_changed(self, old: Obj | None, new: Obj | None) -> None:
        self.queue(key_of(new or old or {}))

    def _resolve(self, namespace: str, ref: Obj | None) -> Obj | None:
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.deployments.get((namespace, str(ref.get("name", ""))))
        return d if d is not None and _meta(d).get("uid") == ref.get("uid") else None

    def _for_replicaset(self, rs: Obj) -> list[Obj]:
        """getDeploymentsForReplicaSet: the Deployments whose selector matches an orphan."""
        found = []
        for d in self.deployments.in_namespace(key_of(rs)[0]):
            try:
                selector = from_label_selector(_spec(d).get("selector"))
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels(rs)):
                found.append(d)
        return found

    def _replicaset_changed(self, old: Obj | None, new: Obj | None) -> None:
        namespace = key_of(new or old or {})[0]
        if new is None or old is None:
            obj = new or old or {}
            owner = self._resolve(namespace, controller_of(obj))
            if owner is not None:
                self.queue(key_of(owner))
            elif new is not None and controller_of(new) is None:
                for d in self._for_replicaset(new):
                    self.queue(key_of(d))
            return
        if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
            return
        old_ref, new_ref = controller_of(old), controller_of(new)
        if old_ref != new_ref and old_ref is not None:
            previous = self._resolve(namespace, old_ref)
            if previous is not None:
                self.queue(key_of(previous))
        if new_ref is not None:
            owner = self._resolve(namespace, new_ref)
            if owner is not None:
                self.queue(key_of(owner))
            return
        if labels(old) != labels(new) or old_ref != new_ref:
            for d in self._for_replicaset(new):
                self.queue(key_of(d))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        """deletePod: a Recreate Deployment waits for its old Pods to be gone."""
        if new is not None or old is None:
            return
        namespace = key_of(old)[0]
        ref = controller_of(old)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.replicasets.get((namespace, str(ref.get("name", ""))))
        if rs is None or _meta(rs).get("uid") != ref.get("uid"):
            return
        d = self._resolve(namespace, controller_of(rs))
        if d is not None and not is_rolling(d):
            self.queue(key_of(d))

    # Sync.

    async def sync(self, key: Key) -> None:
        cached = self.deployments.get(key)
        if cached is None:
            return
        d = copy.deepcopy(cached)
        selector_spec = _spec(d).get("selector")
        if selector_spec == {}:
            self._event(d, WARNING, "SelectingAll",
                        "This deployment is selecting all pods. A non-empty selector is required.")
            if int(_status(d).get("observedGeneration") or 0) < int(_meta(d).get("generation") or 0):
                d.setdefault("status", {})["observedGeneration"] = _meta(d).get("generation")
                await self._update_status(d)
            return
        try:
            selector = from_label_selector(selector_spec)
        except SelectorError:
            return
        namespace = key[0]
        candidates = [rs for rs in self.replicasets.in_namespace(namespace)]
        manager = ControllerRefManager(self.core, d, path("deployments", namespace, group="apps"), "apps/v1",
                                       "Deployment", selector)
        rss = [copy.deepcopy(rs) for rs in await manager.claim(candidates, lambda ns: path("replicasets", ns,
                                                                                          group="apps"))]
        if _meta(d).get("deletionTimestamp"):
            await self._sync_status_only(d, rss)
            return
        await self._check_paused_conditions(d)
        if _spec(d).get("paused"):
            await self._sync(d, rss)
            return
        if await self._is_scaling_event(d, rss):
            await self._sync(d, rss)
            return
        if is_rolling(d):
            await self._rollout_rolling(d, rss)
        else:
            await self._rollout_recreate(d, rss)

    async def _check_paused_conditions(self, d: Obj) -> None:
        """checkPausedConditions: Progressing Unknown DeploymentPaused or DeploymentResumed as spec.paused
        turns (not over ProgressDeadlineExceeded)."""
        if not has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        cond = get_condition(status, PROGRESSING)
        if cond is not None and cond.get("reason") == TIMED_OUT_REASON:
            return
        paused_exists = cond is not None and cond.get("reason") == PAUSED_REASON
        needs_update = False
        if _spec(d).get("paused") and not paused_exists:
            set_condition(status, new_condition(PROGRESSING, "Unknown", PAUSED_REASON, "Deployment is paused"))
            needs_update = True
        elif not _spec(d).get("paused") and paused_exists:
            set_condition(status, new_condition(PROGRESSING, "Unknown", RESUMED_REASON, "Deployment is resumed"))
            needs_update = True
        if needs_update:
            await self._update_status(d)

    # ReplicaSets.

    def _new_and_old(self, d: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        template = _spec(d).get("template")
        new = next((rs for rs in by_creation(rss) if equal_ignore_hash(_spec(rs).get("template"), template)), None)
        return new, [rs for rs in rss if rs is not new]

    def _set_replicas_annotations(self, rs: Obj, desired: int, maximum: int) -> bool:
        annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
        changed = False
        for name, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
            if annotations.get(name) != value:
                annotations[name] = value
                changed = True
        return changed

    def _set_new_rs_annotations(self, d: Obj, rs: Obj, new_revision: str, exists: bool) -> bool:
        """SetNewReplicaSetAnnotations."""
        annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
        changed = False
        for name, value in _annotations(d).items():
            if name in SKIPPED_ANNOTATIONS or annotations.get(name) == value:
                continue
            annotations[name] = value
            changed = True
        old_revision = annotations.get(REVISION)
        try:
            old_int = int(old_revision) if old_revision else 0
        except ValueError:
            return False
        new_int = int(new_revision)
        if old_int < new_int:
            annotations[REVISION] = new_revision
            changed = True
        if old_revision is not None and old_int < new_int:
            history = annotations.get(REVISION_HISTORY, "")
            if not history:
                annotations[REVISION_HISTORY] = old_revision
            else:
                olds = history.split(",")
                total = len(history) + len(old_revision) + 1
                start = 0
                while total > MAX_REVISION_HISTORY_CHARS and start < len(olds):
                    total -= len(olds[start]) + 1
                    start += 1
                if total <= MAX_REVISION_HISTORY_CHARS:
                    annotations[REVISION_HISTORY] = ",".join([*olds[start:], old_revision])
        if not exists and self._set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
            changed = True
        return changed

    def _new_rs_replicas(self, d: Obj, all_rss: list[Obj], new: Obj) -> int:
        """NewRSNewReplicas."""
        if not is_rolling(d):
            return replicas(d)
        surge = max_surge(d)
        current = sum(replicas(rs) for rs in all_rss)
        total = replicas(d) + surge
        if current >= total:
            return replicas(new)
        up = min(total - current, replicas(d) - replicas(new))
        return replicas(new) + up

    async def _get_all(self, d: Obj, rss: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """getAllReplicaSetsAndSyncRevision: the new ReplicaSet (created when `create`) and all the old."""
        new, olds = self._new_and_old(d, rss)
        new = await self._get_new(d, rss, new, olds, create)
        return new, olds

    async def _get_new(self, d: Obj, rss: list[Obj], existing: Obj | None, olds: list[Obj],
                       create: bool) -> Obj | None:
        max_old = max((revision(rs) for rs in olds), default=0)
        new_revision = str(max_old + 1)
        status = d.setdefault("status", {})
        namespace = key_of(d)[0]
        if existing is not None:
            rs = copy.deepcopy(existing)
            annotations_updated = self._set_new_rs_annotations(d, rs, new_revision, True)
            min_ready = int(_spec(d).get("minReadySeconds") or 0)
            if annotations_updated or int(_spec(rs).get("minReadySeconds") or 0) != min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
                updated = await self.update(path("replicasets", namespace, group="apps"), rs)
                self._replace(rss, updated)
                return updated
            needs_update = self._set_deployment_revision(d, _annotations(rs).get(REVISION, ""))
            if has_progress_deadline(d) and get_condition(status, PROGRESSING) is None:
                set_condition(status, new_condition(PROGRESSING, "True", FOUND_NEW_RS_REASON,
                                                    f'Found new replica set "{_meta(rs).get("name")}"'))
                needs_update = True
            if needs_update:
                await self._update_status(d)
            return rs
        if not create:
            return None
        template = copy.deepcopy(_spec(d).get("template") or {})
        collision = status.get("collisionCount")
        pod_hash = compute_hash(_spec(d).get("template") or {}, collision)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = copy.deepcopy(_spec(d).get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        name = f"{_meta(d).get('name')}-{pod_hash}"
        new_rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace,
                         "ownerReferences": [controller_ref(d, "apps/v1", "Deployment")],
                         "labels": dict(template["metadata"]["labels"])},
            "spec": {"replicas": 0, "minReadySeconds": int(_spec(d).get("minReadySeconds") or 0),
                     "selector": selector, "template": template}}
        count = self._new_rs_replicas(d, [*olds, new_rs], new_rs)
        new_rs["spec"]["replicas"] = count
        self._set_new_rs_annotations(d, new_rs, new_revision, False)
        already = False
        try:
            created = await self.create(path("replicasets", namespace, group="apps"), new_rs)
        except errors.ApiError as err:
            if err.code == 409 and err.reason == "AlreadyExists":
                already = True
                found = self.replicasets.get((namespace, name))
                if found is None:
                    raise
                ref = controller_of(found)
                if ref is not None and ref.get("uid") == _meta(d).get("uid") and equal_ignore_hash(
                        _spec(d).get("template"), _spec(found).get("template")):
                    created = copy.deepcopy(found)
                else:
                    status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                    await self._update_status(d)
                    raise
            elif any(c.reason == "NamespaceTerminating" for c in err.status.details.causes):
                raise
            else:
                message = f'Failed to create new replica set "{name}": {err.status.message}'
                if has_progress_deadline(d):
                    set_condition(status, new_condition(PROGRESSING, "False", FAILED_RS_CREATE_REASON, message))
                    with contextlib.suppress(errors.ApiError):
                        await self._update_status(d)
                self._event(d, WARNING, FAILED_RS_CREATE_REASON, message)
                raise
        if not already and count > 0:
            self._event(d, NORMAL, "ScalingReplicaSet",
                        f"Scaled up replica set {_meta(created).get('name')} to {count}")
        needs_update = self._set_deployment_revision(d, new_revision)
        if not already and has_progress_deadline(d):
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_REASON,
                                                f'Created new replica set "{_meta(created).get("name")}"'))
            needs_update = True
        if needs_update:
            await self._update_status(d)
        rss.append(created)
        return created

    def _set_deployment_revision(self, d: Obj, value: str) -> bool:
        annotations = d.setdefault("metadata", {}).setdefault("annotations", {})
        if annotations.get(REVISION) == value:
            return False
        annotations[REVISION] = value
        return True

    @staticmethod
    def _replace(rss: list[Obj], updated: Obj) -> None:
        for i, rs in enumerate(rss):
            if _meta(rs).get("uid") == _meta(updated).get("uid"):
                rss[i] = updated
                return

    async def _scale_rs(self, rs: Obj, new_scale: int, d: Obj, operation: str, olds: list[Obj] | None = None
                        ) -> tuple[bool, Obj]:
        """scaleReplicaSet: the new size and the replica annotations written, ScalingReplicaSet recorded."""
        size_changes = replicas(rs) != new_scale
        desired, maximum = replicas(d), replicas(d) + max_surge(d)
        annotations = _annotations(rs)
        annotations_change = (annotations.get(DESIRED_REPLICAS) != str(desired)
                              or annotations.get(MAX_REPLICAS) != str(maximum))
        if not (size_changes or annotations_change):
            return False, rs
        old_scale = replicas(rs)
        body = copy.deepcopy(rs)
        body.setdefault("spec", {})["replicas"] = new_scale
        self._set_replicas_annotations(body, desired, maximum)
        updated = await self.update(path("replicasets", key_of(rs)[0], group="apps"), body)
        if size_changes:
            self._event(d, NORMAL, "ScalingReplicaSet",
                        f"Scaled {operation} replica set {_meta(updated).get('name')} to {new_scale} from {old_scale}")
        return size_changes, updated

    async def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        if replicas(rs) == new_scale:
            return False, rs
        return await self._scale_rs(rs, new_scale, d, "up" if replicas(rs) < new_scale else "down")

    async def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        new, olds = await self._get_all(d, rss, False)
        for rs in active([*olds, new]):
            desired = _annotations(rs).get(DESIRED_REPLICAS)
            if desired is None:
                continue
            try:
                if int(desired) != replicas(d):
                    return True
            except ValueError:
                continue
        return False

    async def _sync(self, d: Obj, rss: list[Obj]) -> None:
        """sync: scaling and, while paused, cleanup."""
        new, olds = await self._get_all(d, rss, False)
        await self._scale(d, new, olds, rss)
        new, olds = self._refresh(rss, new, olds)
        if _spec(d).get("paused"):
            await self._cleanup(d, olds)
        await self._sync_status(d, [*olds, *([new] if new else [])], new)

    @staticmethod
    def _refresh(rss: list[Obj], new: Obj | None, olds: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        """The ReplicaSets as this sync last wrote them."""
        by_uid = {_meta(rs).get("uid"): rs for rs in rss}
        fresh_new = by_uid.get(_meta(new).get("uid"), new) if new is not None else None
        return fresh_new, [by_uid.get(_meta(rs).get("uid"), rs) for rs in olds]

    def _refresh_new(self, rss: list[Obj], new: Obj, olds: list[Obj]) -> tuple[Obj, list[Obj]]:
        fresh, olds = self._refresh(rss, new, olds)
        return fresh or new, olds

    async def _scale(self, d: Obj, new: Obj | None, olds: list[Obj], rss: list[Obj]) -> None:
        """scale: one active (or the latest) ReplicaSet to the full count; a saturated new one makes the old
        ones 0; else every active one proportionally (RollingUpdate)."""
        latest = self._active_or_latest(new, olds)
        if latest is not None:
            if replicas(latest) == replicas(d):
                return
            _, updated = await self._scale_and_record(latest, replicas(d), d)
            self._replace(rss, updated)
            return
        if self._saturated(d, new):
            for old in active(olds):
                _, updated = await self._scale_and_record(old, 0, d)
                self._replace(rss, updated)
            return
        if not is_rolling(d):
            return
        all_rss = active([*olds, new])
        current = sum(replicas(rs) for rs in all_rss)
        allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
        to_add = allowed - current
        operation = ""
        if to_add > 0:
            all_rss = sorted(all_rss, key=cmp_to_key(self._bigger_newer_first))
            operation = "up"
        elif to_add < 0:
            all_rss = sorted(all_rss, key=cmp_to_key(self._bigger_older_first))
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            name = str(_meta(rs).get("name"))
            if to_add != 0:
                proportion = self._proportion(rs, d, to_add, added)
                sizes[name] = replicas(rs) + proportion
                added += proportion
            else:
                sizes[name] = replicas(rs)
        for i, rs in enumerate(all_rss):
            name = str(_meta(rs).get("name"))
            if i == 0 and to_add != 0:
                sizes[name] = max(0, sizes[name] + to_add - added)
            _, updated = await self._scale_rs(rs, sizes[name], d, operation)
            self._replace(rss, updated)

    @staticmethod
    def _bigger_newer_first(a: Obj, b: Obj) -> int:
        if replicas(a) != replicas(b):
            return -1 if replicas(a) > replicas(b) else 1
        ca, cb = _created(a), _created(b)
        if ca[0] == cb[0]:
            return -1 if ca[1] > cb[1] else (1 if ca[1] < cb[1] else 0)
        return -1 if ca[0] > cb[0] else 1

    @staticmethod
    def _bigger_older_first(a: Obj, b: Obj) -> int:
        if replicas(a) != replicas(b):
            return -1 if replicas(a) > replicas(b) else 1
        ca, cb = _created(a), _created(b)
        return -1 if ca < cb else (1 if ca > cb else 0)

    @staticmethod
    def _proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
        """GetProportion."""
        if replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        if replicas(d) == 0:
            fraction = -replicas(rs)
        else:
            total = replicas(d) + max_surge(d)
            try:
                annotated = int(_annotations(rs).get(MAX_REPLICAS, ""))
            except ValueError:
                annotated = _int(d, "replicas")
            if annotated == 0:
                fraction = 0
            else:
                size = replicas(rs) * total / annotated
                fraction = math.floor(size + 0.5) - replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    @staticmethod
    def _active_or_latest(new: Obj | None, olds: list[Obj]) -> Obj | None:
        if new is None and not olds:
            return None
        newest_first = list(reversed(by_creation(olds)))
        all_active = active([*newest_first, new])
        if not all_active:
            return new if new is not None else newest_first[0]
        return all_active[0] if len(all_active) == 1 else None

    @staticmethod
    def _saturated(d: Obj, rs: Obj | None) -> bool:
        if rs is None:
            return False
        desired = _annotations(rs).get(DESIRED_REPLICAS)
        return (desired == str(replicas(d)) and replicas(rs) == replicas(d)
                and _int(rs, "availableReplicas") == replicas(d))

    # Rollouts.

    async def _rollout_rolling(self, d: Obj, rss: list[Obj]) -> None:
        new, olds = await self._get_all(d, rss, True)
        assert new is not None
        if await self._reconcile_new(d, new, olds, rss):
            new, olds = self._refresh_new(rss, new, olds)
            await self._sync_rollout_status(d, [*olds, new], new)
            return
        new, olds = self._refresh_new(rss, new, olds)
        if await self._reconcile_olds(d, new, olds, rss):
            new, olds = self._refresh_new(rss, new, olds)
            await self._sync_rollout_status(d, [*olds, new], new)
            return
        if deployment_complete(d, _status(d)):
            await self._cleanup(d, olds)
        await self._sync_rollout_status(d, [*olds, new], new)

    async def _reconcile_new(self, d: Obj, new: Obj, olds: list[Obj], rss: list[Obj]) -> bool:
        if replicas(new) == replicas(d):
            return False
        if replicas(new) > replicas(d):
            scaled, updated = await self._scale_and_record(new, replicas(d), d)
        else:
            count = self._new_rs_replicas(d, [*olds, new], new)
            scaled, updated = await self._scale_and_record(new, count, d)
        self._replace(rss, updated)
        return scaled

    async def _reconcile_olds(self, d: Obj, new: Obj, olds: list[Obj], rss: list[Obj]) -> bool:
        olds = active(olds)
        if sum(replicas(rs) for rs in olds) == 0:
            return False
        all_count = sum(replicas(rs) for rs in [*olds, new])
        min_available = replicas(d) - max_unavailable(d)
        new_unavailable = replicas(new) - _int(new, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        olds = by_creation(olds)
        cleaned = 0
        for i, rs in enumerate(olds):
            if cleaned >= max_scaled_down:
                break
            if replicas(rs) == 0 or replicas(rs) == _int(rs, "availableReplicas"):
                continue
            count = min(max_scaled_down - cleaned, replicas(rs) - _int(rs, "availableReplicas"))
            _, updated = await self._scale_and_record(rs, replicas(rs) - count, d)
            self._replace(rss, updated)
            olds[i] = updated
            cleaned += count
        available = sum(_int(rs, "availableReplicas") for rs in [*olds, new])
        scaled_down = 0
        if available > min_available:
            budget = available - min_available
            for rs in by_creation(olds):
                if scaled_down >= budget:
                    break
                if replicas(rs) == 0:
                    continue
                count = min(replicas(rs), budget - scaled_down)
                _, updated = await self._scale_and_record(rs, replicas(rs) - count, d)
                self._replace(rss, updated)
                scaled_down += count
        return cleaned + scaled_down > 0

    async def _rollout_recreate(self, d: Obj, rss: list[Obj]) -> None:
        new, olds = await self._get_all(d, rss, False)
        scaled_down = False
        for rs in active(olds):
            scaled, updated = await self._scale_and_record(rs, 0, d)
            self._replace(rss, updated)
            scaled_down = scaled_down or scaled
        new, olds = self._refresh(rss, new, olds)
        if scaled_down or self._old_pods_running(new, olds, rss):
            await self._sync_rollout_status(d, [*olds, *([new] if new else [])], new)
            return
        if new is None:
            new, olds = await self._get_all(d, rss, True)
        assert new is not None
        _, updated = await self._scale_and_record(new, replicas(d), d)
        self._replace(rss, updated)
        new, olds = self._refresh_new(rss, new, olds)
        if deployment_complete(d, _status(d)):
            await self._cleanup(d, olds)
        await self._sync_rollout_status(d, [*olds, new], new)

    def _old_pods_running(self, new: Obj | None, olds: list[Obj], rss: list[Obj]) -> bool:
        if sum(_int(rs, "replicas") for rs in olds) > 0:
            return True
        owned = {_meta(rs).get("uid") for rs in rss} - ({_meta(new).get("uid")} if new is not None else set())
        for pod in self.pods.in_namespace(key_of(rss[0])[0] if rss else ""):
            if (controller_of(pod) or {}).get("uid") in owned and \
                    (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
        return False

    async def _cleanup(self, d: Obj, olds: list[Obj]) -> None:
        """cleanupDeployment: the oldest old ReplicaSets beyond revisionHistoryLimit, when scaled to 0."""
        limit = _spec(d).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in olds if not _meta(rs).get("deletionTimestamp")]
        diff = len(alive) - int(limit)
        if diff <= 0:
            return
        alive.sort(key=lambda rs: (revision(rs), _created(rs)))
        for rs in alive[:diff]:
            if _int(rs, "replicas") != 0 or replicas(rs) != 0 or \
                    int(_meta(rs).get("generation") or 0) > int(_status(rs).get("observedGeneration") or 0):
                continue
            await self.delete(path("replicasets", key_of(rs)[0], group="apps"), key_of(rs)[1],
                              uid=str(_meta(rs).get("uid")))

    # Status.

    def _calculate_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> Obj:
        available = sum(_int(rs, "availableReplicas") for rs in all_rss)
        total = sum(replicas(rs) for rs in all_rss)
        previous = _status(d)
        status: Obj = {
            "observedGeneration": _meta(d).get("generation"),
            "replicas": sum(_int(rs, "replicas") for rs in all_rss),
            "updatedReplicas": _int(new, "replicas") if new is not None else 0,
            "readyReplicas": sum(_int(rs, "readyReplicas") for rs in all_rss),
            "availableReplicas": available,
            "unavailableReplicas": max(0, total - available),
            "conditions": [dict(c) for c in previous.get("conditions") or []],
        }
        if previous.get("collisionCount") is not None:
            status["collisionCount"] = previous["collisionCount"]
        if available >= replicas(d) - max_unavailable(d):
            set_condition(status, new_condition(AVAILABLE, "True", MIN_AVAILABLE,
                                                "Deployment has minimum availability."))
        else:
            set_condition(status, new_condition(AVAILABLE, "False", MIN_UNAVAILABLE,
                                                "Deployment does not have minimum availability."))
        return status

    async def _sync_status_only(self, d: Obj, rss: list[Obj]) -> None:
        new, olds = await self._get_all(d, rss, False)
        await self._sync_status(d, [*olds, *([new] if new else [])], new)

    async def _sync_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> None:
        status = self._calculate_status(d, all_rss, new)
        if _normal(status) == _normal(_status(d)):
            return
        d["status"] = status
        await self._update_status(d)

    async def _sync_rollout_status(self, d: Obj, all_rss: list[Obj], new: Obj | None) -> None:
        status = self._calculate_status(d, all_rss, new)
        if not has_progress_deadline(d):
            remove_condition(status, PROGRESSING)
        current = get_condition(_status(d), PROGRESSING)
        complete = (int(status["replicas"]) == int(status["updatedReplicas"]) and current is not None
                    and current.get("reason") == NEW_RS_AVAILABLE_REASON)
        name = _meta(d).get("name")
        subject = f'ReplicaSet "{_meta(new).get("name")}"' if new is not None else f'Deployment "{name}"'
        if has_progress_deadline(d) and not complete:
            if deployment_complete(d, status):
                set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE_REASON,
                                                    f"{subject} has successfully progressed."))
            elif self._progressing(d, status):
                cond = new_condition(PROGRESSING, "True", RS_UPDATED_REASON, f"{subject} is progressing.")
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    remove_condition(status, PROGRESSING)
                set_condition(status, cond)
            elif self._timed_out(d, status):
                set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT_REASON,
                                                    f"{subject} has timed out progressing."))
        failure = self._replica_failure(all_rss, new)
        if failure is not None:
            set_condition(status, failure)
        else:
            remove_condition(status, REPLICA_FAILURE)
        if _normal(status) == _normal(_status(d)):
            self._requeue_stuck(d, status)
            return
        d["status"] = status
        await self._update_status(d)

    @staticmethod
    def _progressing(d: Obj, status: Obj) -> bool:
        old = _status(d)
        old_olds = _int(d, "replicas") - _int(d, "updatedReplicas")
        new_olds = int(status["replicas"]) - int(status["updatedReplicas"])
        return (int(status["updatedReplicas"]) > int(old.get("updatedReplicas") or 0) or new_olds < old_olds
                or int(status["readyReplicas"]) > int(old.get("readyReplicas") or 0)
                or int(status["availableReplicas"]) > int(old.get("availableReplicas") or 0))

    @staticmethod
    def _timed_out(d: Obj, status: Obj) -> bool:
        cond = get_condition(status, PROGRESSING)
        if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
            return False
        if cond.get("reason") == TIMED_OUT_REASON:
            return True
        since = parse_time(cond.get("lastUpdateTime"))
        deadline = int(_spec(d).get("progressDeadlineSeconds") or 0)
        return since is not None and since + deadline < time.time()

    def _requeue_stuck(self, d: Obj, status: Obj) -> None:
        current = get_condition(_status(d), PROGRESSING)
        if not has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.get("reason") == TIMED_OUT_REASON:
            return
        since = parse_time(current.get("lastUpdateTime")) or time.time()
        after = since + int(_spec(d).get("progressDeadlineSeconds") or 0) - time.time()
        self.queue_after(key_of(d), 0.5 if after < 1 else after + 1)

    @staticmethod
    def _replica_failure(all_rss: list[Obj], new: Obj | None) -> Obj | None:
        ordered = ([new] if new is not None else []) + [rs for rs in all_rss if rs is not new]
        for rs in ordered:
            for cond in _status(rs).get("conditions") or []:
                if cond.get("type") == REPLICA_FAILURE:
                    return {"type": REPLICA_FAILURE, "status": cond.get("status"),
                            "lastUpdateTime": cond.get("lastTransitionTime"),
                            "lastTransitionTime": cond.get("lastTransitionTime"), "reason": cond.get("reason"),
                            "message": cond.get("message")}
        return None

    async def _update_status(self, d: Obj) -> None:
        status = d.get("status") or {}
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status.get(field):
                status.pop(field, None)
        if not status.get("conditions"):
            status.pop("conditions", None)
        updated = await self.update(path("deployments", key_of(d)[0], group="apps"), d, subresource="status")
        d["metadata"] = updated.get("metadata") or d["metadata"]


def _normal(status: Obj) -> Any:
    """A status as compared: zero counts are absent, as they are once written."""
    out = {k: v for k, v in status.items() if v not in (0, None, [], {})}
    return semantic_form(out)


def singletons(core: Core, informers: SharedInformers) -> Sequence[Singleton]:
    controller = DeploymentController(core, informers)
    return [Singleton("DeploymentController", controller.start, controller.stop)]


