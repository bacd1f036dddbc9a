"""The disruption controller, as kube-controller-manager 1.28's (pkg/controller/disruption): each
PodDisruptionBudget's status, which the eviction subresource (server/kinds/eviction.py) charges.

Contracts, as kube's:
- the budget's Pods are those of its namespace its selector matches (an empty selector matches every Pod, as
  policy/v1 reads it); none: event NoPods;
- expectedPods and desiredHealthy: an integer minAvailable is desiredHealthy itself, expectedPods the number of
  Pods; a percentage minAvailable, or any maxUnavailable, is taken of the sum of the Pods' controllers' scale
  (each controller counted once: a ReplicaSet owned by a Deployment is the Deployment's, a StatefulSet's or
  ReplicationController's replicas, any other kind's /scale), rounded up; desiredHealthy = expected -
  maxUnavailable, at least 0. A Pod without a controller under a percentage or maxUnavailable: event
  UnmanagedPods (not counted); a controller that cannot be found fails the sync;
- currentHealthy: Ready Pods that are not being deleted and not in disruptedPods (an entry stays 2 minutes,
  then it is dropped with event NotDeleted on the Pod); disruptionsAllowed = currentHealthy - desiredHealthy,
  0 when negative or when no Pod is expected;
- the status is written (observedGeneration the budget's generation, the DisruptionAllowed condition True/
  SufficientPods or False/InsufficientPods) only when something changed; a failed sync writes
  disruptionsAllowed 0 and DisruptionAllowed False/SyncFailed with the error (failSafe).
- a Pod not being deleted nor terminal whose DisruptionTarget condition is True (and not the kubelet's
  TerminationByKubelet) for `stale_timeout` seconds (2 minutes) gets it False again, by server-side apply of
  pods/status with field manager DisruptionController (kube's stale pod disruption cleanup); such Pods are queued
  under the key (namespace, "pod/<name>") (budget names have no "/").
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.controllers.workload.pods import controller_of, is_pod_ready, parse_time
from server.machinery import errors
from server.machinery.selectors import labels as label_selectors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

API_VERSION, KIND = "policy/v1", "PodDisruptionBudget"
DELETION_TIMEOUT = 120.0  # DeletionTimeout: how long an evicted Pod may take to go
STALE_POD_DISRUPTION_TIMEOUT = 120.0  # stalePodDisruptionTimeout
STALE = "pod/"  # a queue key (namespace, "pod/<name>"): a Pod whose DisruptionTarget condition may be stale
FIELD_MANAGER = "DisruptionController"
CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
SCALED = (path("replicasets", group="apps"), path("deployments", group="apps"),
          path("statefulsets", group="apps"), path("replicationcontrollers"))


class SyncError(Exception):
    """A budget whose status cannot be worked out (kube's error text)."""


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def scaled_value(value: object, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent with roundUp."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        raise SyncError(f'invalid value for IntOrString: invalid type: string is not a percentage: "{text}"')
    return math.ceil(int(text[:-1]) * total / 100)


def set_condition(status: Obj, status_value: str, reason: str, message: str, generation: int, now: float) -> None:
    """meta.SetStatusCondition of DisruptionAllowed: lastTransitionTime moves only with the status."""
    conditions: list[Obj] = status.setdefault("conditions", []) or []
    status["conditions"] = conditions
    wanted = {"type": CONDITION, "status": status_value, "observedGeneration": generation, "reason": reason,
              "message": message}
    for condition in conditions:
        if condition.get("type") == CONDITION:
            if condition.get("status") != status_value:
                condition["lastTransitionTime"] = rfc3339(now)
            condition.update(wanted)
            return
    conditions.append({**wanted, "lastTransitionTime": rfc3339(now)})


def conditions_up_to_date(budget: Obj) -> bool:
    status = budget.get("status") or {}
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    if condition is None:
        return False
    generation = int(_meta(budget).get("generation") or 0)
    if int(status.get("observedGeneration") or 0) != generation:
        return False
    if int(condition.get("observedGeneration") or 0) != int(status.get("observedGeneration") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return bool(condition.get("status") == "True" and condition.get("reason") == SUFFICIENT)
    return bool(condition.get("status") == "False" and condition.get("reason") == INSUFFICIENT)


class DisruptionController(KeyedController):
    name = "disruption-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None, *,
                 clock: Callable[[], float] = time.time,
                 stale_timeout: float = STALE_POD_DISRUPTION_TIMEOUT) -> None:
        super().__init__(core, informers)
        self.clock = clock
        self.stale_timeout = stale_timeout
        self.recorder = EventRecorder(core, "controllermanager")
        self.budgets = self.follow(path("poddisruptionbudgets", group="policy"), self._budget_changed)
        self.pods = self.follow(path("pods"), self._pod_changed)
        for at in SCALED:
            self.follow(at, self._scaled_changed)

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    def _budget_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self.queue(key_of(new))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        pod = new or old or {}
        namespace = str(_meta(pod).get("namespace", ""))
        if new is not None and self._stale_in(new) is not None:
            self.queue((namespace, STALE + str(_meta(new).get("name", ""))))
        for budget in self.budgets.in_namespace(namespace):
            if any(self._selects(budget, p) for p in (old, new) if p is not None):
                self.queue(key_of(budget))

    def _scaled_changed(self, old: Obj | None, new: Obj | None) -> None:
        before = ((old or {}).get("spec") or {}).get("replicas")
        after = ((new or {}).get("spec") or {}).get("replicas")
        if before != after:
            for budget in self.budgets.in_namespace(str(_meta(new or old or {}).get("namespace", ""))):
                self.queue(key_of(budget))

    @staticmethod
    def _selects(budget: Obj, pod: Obj) -> bool:
        try:
            selector = label_selectors.from_label_selector((budget.get("spec") or {}).get("selector"))
        except (label_selectors.SelectorError, TypeError):
            return False
        return selector.matches(_meta(pod).get("labels") or {})

    def _event(self, obj: Obj, type_: str, reason: str, message: str, *, kind: str = KIND,
               api_version: str = API_VERSION) -> None:
        self.recorder.event(obj, type_, reason, message, kind=kind, api_version=api_version)

    def _stale_in(self, pod: Obj) -> float | None:
        """nonTerminatingPodHasStaleDisruptionCondition: seconds until the Pod's DisruptionTarget condition is
        stale (<= 0: it is), None when it has none that can be."""
        if _meta(pod).get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return None
        condition = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "DisruptionTarget"), None)
        if condition is None or condition.get("status") != "True" or condition.get("reason") == \
                "TerminationByKubelet":
            return None
        since = parse_time(condition.get("lastTransitionTime")) or self.clock()
        return self.stale_timeout - (self.clock() - since)

    async def _sync_stale(self, namespace: str, name: str) -> None:
        """syncStalePodDisruption: the condition set False by a forced apply of pods/status."""
        pod = self.pods.get((namespace, name))
        if pod is None:
            return
        wait = self._stale_in(pod)
        if wait is None:
            return
        if wait > 0:
            self.queue_after((namespace, STALE + name), wait)
            return
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": _meta(pod).get("resourceVersion")},
                "status": {"conditions": [{"type": "DisruptionTarget", "status": "False",
                                           "lastTransitionTime": rfc3339(self.clock())}]}}
        request = core_pb2.PatchRequest(path=named(path("pods", namespace), name, "status"),
                                        type=core_pb2.PATCH_TYPE_APPLY, patch=orjson.dumps(body))
        request.options.fieldManager = FIELD_MANAGER
        request.options.force = True
        try:
            await self.core.patch(request)
        except errors.ApiError as err:
            if err.code != 404:
                raise

    async def sync(self, key: Key) -> None:
        if key[1].startswith(STALE):
            await self._sync_stale(key[0], key[1][len(STALE):])
            return
        cached = self.budgets.get(key)
        if cached is None:
            return
        budget = copy.deepcopy(cached)
        try:
            await self._try_sync(budget)
        except errors.ApiError as err:
            if err.code == 409:
                raise
            await self._fail_safe(budget, err.status.message)
            raise
        except SyncError as err:
            await self._fail_safe(budget, str(err))

    async def _try_sync(self, budget: Obj) -> None:
        namespace = str(_meta(budget).get("namespace", ""))
        pods = [p for p in self.pods.in_namespace(namespace) if self._selects(budget, p)]
        if not pods:
            self._event(budget, NORMAL, "NoPods", "No matching pods found")
        expected, desired, unmanaged = await self._expected(budget, pods)
        if unmanaged:
            selector = (budget.get("spec") or {}).get("selector")
            self._event(budget, WARNING, "UnmanagedPods",
                        f"Pods selected by this PodDisruptionBudget (selector: {_selector_text(selector)}) were "
                        "found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
                        "which may result in undefined behavior. To account for these pods please set "
                        '".spec.minAvailable" field of the PDB to an integer value.')
        now = self.clock()
        disrupted, recheck = self._disrupted(budget, pods, now)
        healthy = sum(1 for p in pods if not _meta(p).get("deletionTimestamp")
                      and not (str(_meta(p).get("name")) in disrupted
                               and (parse_time(disrupted[str(_meta(p).get("name"))]) or 0) + DELETION_TIMEOUT > now)
                      and is_pod_ready(p))
        await self._update_status(budget, healthy, desired, expected, disrupted, now)
        if recheck is not None:
            self.queue_after(key_of(budget), recheck - now)

    async def _expected(self, budget: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        """getExpectedPodCount: (expectedPods, desiredHealthy, the unmanaged Pods' names)."""
        spec = budget.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = await self._expected_scale(pods)
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
            return expected, desired, unmanaged
        minimum = spec.get("minAvailable")
        if isinstance(minimum, int):
            return len(pods), minimum, []
        if minimum is not None:
            expected, unmanaged = await self._expected_scale(pods)
            return expected, scaled_value(minimum, expected), unmanaged
        return 0, 0, []

    async def _expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """getExpectedScale: the sum of the Pods' controllers' scale, each controller once."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(str(_meta(pod).get("name", "")))
                continue
            if ref.get("uid") in scales:
                continue
            found = await self._controller_scale(ref, str(_meta(pod).get("namespace", "")))
            if found is None:
                raise SyncError(f'found no controllers for pod "{_meta(pod).get("name", "")}"')
            uid, scale = found
            scales[uid] = scale
        return sum(scales.values()), unmanaged

    async def _get(self, at: core_pb2.ResourcePath, name: str, subresource: str = "") -> Obj | None:
        try:
            return decode((await self.core.get(core_pb2.GetRequest(path=named(at, name, subresource)))).object)
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise

    async def _controller_scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """The finders: a ReplicaSet's (its Deployment's when one controls it), then any kind's /scale."""
        group, _, version = str(ref.get("apiVersion", "")).rpartition("/")
        kind, name, uid = str(ref.get("kind", "")), str(ref.get("name", "")), str(ref.get("uid", ""))
        if kind == "ReplicaSet" and group in ("apps", "extensions"):
            replicaset = await self._get(path("replicasets", namespace, group="apps"), name)
            if replicaset is None or _meta(replicaset).get("uid") != uid:
                return None
            owner = controller_of(replicaset)
            if owner is not None and owner.get("kind") == "Deployment":
                deployment = await self._get(path("deployments", namespace, group="apps"), str(owner.get("name")))
                if deployment is None or _meta(deployment).get("uid") != owner.get("uid"):
                    return None
                return str(owner.get("uid")), int((deployment.get("spec") or {}).get("replicas", 1))
            return uid, int((replicaset.get("spec") or {}).get("replicas", 1))
        resource = self.core.registry.by_kind(group, version, kind)
        if resource is None or resource.subresource("scale") is None:
            return None
        at = path(resource.resource, namespace if resource.namespaced else "", group=resource.group,
                  version=resource.version)
        scale = await self._get(at, name, "scale")
        if scale is None or _meta(scale).get("uid") != uid:
            return None
        return uid, int((scale.get("spec") or {}).get("replicas") or 0)

    def _disrupted(self, budget: Obj, pods: list[Obj], now: float) -> tuple[dict[str, str], float | None]:
        """buildDisruptedPodMap: the entries still awaited, and when the soonest of them times out."""
        entries = (budget.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: float | None = None
        for pod in pods:
            name = str(_meta(pod).get("name", ""))
            if _meta(pod).get("deletionTimestamp") or name not in entries:
                continue
            expected = (parse_time(entries[name]) or now) + DELETION_TIMEOUT
            if expected < now:
                self._event(pod, WARNING, "NotDeleted",
                            f"Pod was expected by PDB {_meta(budget).get('namespace')}/"
                            f"{_meta(budget).get('namespace')} to be deleted but it wasn't",
                            kind="Pod", api_version="v1")
            else:
                recheck = expected if recheck is None else min(recheck, expected)
                kept[name] = str(entries[name])
        return kept, recheck

    async def _update_status(self, budget: Obj, healthy: int, desired: int, expected: int,
                             disrupted: dict[str, str], now: float) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status = budget.get("status") or {}
        generation = int(_meta(budget).get("generation") or 0)
        if (int(status.get("currentHealthy") or 0) == healthy and int(status.get("desiredHealthy") or 0) == desired
                and int(status.get("expectedPods") or 0) == expected
                and int(status.get("disruptionsAllowed") or 0) == allowed
                and (status.get("disruptedPods") or {}) == disrupted
                and int(status.get("observedGeneration") or 0) == generation and conditions_up_to_date(budget)):
            return
        new_status: Obj = {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                           "disruptionsAllowed": allowed, "observedGeneration": generation,
                           "conditions": copy.deepcopy(status.get("conditions") or [])}
        if disrupted:
            new_status["disruptedPods"] = disrupted
        if allowed > 0:
            set_condition(new_status, "True", SUFFICIENT, "", generation, now)
        else:
            set_condition(new_status, "False", INSUFFICIENT, "", generation, now)
        budget["status"] = new_status
        await self._write(budget)

    async def _fail_safe(self, budget: Obj, message: str) -> None:
        """failSafe: nothing may be disrupted while the budget cannot be worked out."""
        status = budget.setdefault("status", {})
        status["disruptionsAllowed"] = 0
        set_condition(status, "False", SYNC_FAILED, message, int(status.get("observedGeneration") or 0),
                      self.clock())
        await self._write(budget)

    async def _write(self, budget: Obj) -> None:
        body = copy.deepcopy(budget)
        body.setdefault("apiVersion", API_VERSION)
        body.setdefault("kind", KIND)
        await self.update(path("poddisruptionbudgets", str(_meta(budget).get("namespace", "")), group="policy"),
                          body, subresource="status")


def _selector_text(selector: Any) -> str:
    """The selector as kube's %v prints a *LabelSelector (close enough to read: its label query form)."""
    try:
        return str(label_selectors.from_label_selector(selector))
    except (label_selectors.SelectorError, TypeError):
        return str(selector)


def singletons(core: Core, informers: SharedInformers | None = None, **options: Any) -> list[Singleton]:
    controller = DisruptionController(core, informers, **options)
    return [Singleton("DisruptionController", controller.start, controller.stop)]
