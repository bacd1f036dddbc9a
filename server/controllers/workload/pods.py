"""Pods as kube's workload controllers see and make them (pkg/api/v1/pod, pkg/controller/controller_utils.go):
readiness and availability, which Pods are active, a Pod from a controller's template, and RealPodControl's
creates and deletes with their events.

Contracts, as kube's:
- ready: the Pod's Ready condition is True; available: ready, and for minReadySeconds > 0 its Ready condition's
  lastTransitionTime is more than minReadySeconds ago;
- active: not Succeeded, not Failed, not being deleted;
- a Pod from a template carries the template's labels, annotations, finalizers and spec, generateName
  `<owner name>-` (the name alone when that is not a valid prefix), and the controller ownerReference; a
  template without labels is refused ("unable to create pods, no labels");
- a create records SuccessfulCreate "Created pod: <name>" or FailedCreate "Error creating: <error>" (Warning);
  a delete SuccessfulDelete "Deleted pod: <name>" or FailedDelete "Error deleting: <error>"; a Pod already gone
  is no event and raises the 404 (the caller lowers its expectations).
"""

from __future__ import annotations

import copy
import re
import time
from datetime import datetime

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.keyed import MANAGER, Obj, decode, named, path, raw
from server.machinery import errors
from server.objects.core import Core

FAILED_CREATE = "FailedCreate"
SUCCESSFUL_CREATE = "SuccessfulCreate"
FAILED_DELETE = "FailedDelete"
SUCCESSFUL_DELETE = "SuccessfulDelete"
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_time(value: object) -> float | None:
    """An RFC 3339 timestamp as Unix seconds; None when absent or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def is_pod_ready(pod: Obj) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float | None = None) -> bool:
    """podutil.IsPodAvailable."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = parse_time((condition(pod, "Ready") or {}).get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds < (time.time() if now is None else now)


def ready_since(pod: Obj) -> float | None:
    """When the Pod's Ready condition last became True (None when not ready)."""
    return parse_time((condition(pod, "Ready") or {}).get("lastTransitionTime")) if is_pod_ready(pod) else None


def is_pod_active(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def controller_of(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the ownerReference with controller: true."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def controller_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    """metav1.NewControllerRef."""
    metadata = owner.get("metadata") or {}
    return {"apiVersion": api_version, "kind": kind, "name": metadata.get("name"), "uid": metadata.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def pods_prefix(owner_name: str) -> str:
    """getPodsPrefix: `<name>-`, or the name alone when that is not a valid generateName prefix."""
    prefix = f"{owner_name}-"
    return prefix if _PREFIX.match(prefix[:-1]) and len(prefix) <= 253 else owner_name


def pod_from_template(template: Obj, owner: Obj, ref: Obj | None) -> Obj:
    """GetPodFromTemplate."""
    metadata = template.get("metadata") or {}
    pod_meta: Obj = {"generateName": pods_prefix(str((owner.get("metadata") or {}).get("name", "")))}
    for field in ("labels", "annotations"):
        if metadata.get(field):
            pod_meta[field] = dict(metadata[field])
    if metadata.get("finalizers"):
        pod_meta["finalizers"] = list(metadata["finalizers"])
    if ref is not None:
        pod_meta["ownerReferences"] = [dict(ref)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


class PodControl:
    """RealPodControl: Pods created and deleted through the core, each recorded as an Event about the owner."""

    def __init__(self, core: Core, recorder: EventRecorder) -> None:
        self._core = core
        self._recorder = recorder

    async def create(self, namespace: str, template: Obj, owner: Obj, ref: Obj, *, kind: str = "",
                     api_version: str = "", name: str = "", generate_name: str = "") -> Obj:
        """CreatePodsWithControllerRef (with `name`, a Pod of that name instead of a generated one, as the
        StatefulSet controller makes them; with `generate_name`, CreatePodsWithGenerateName's prefix instead of
        the owner's, as an Indexed Job's). The created Pod; the ApiError of a refused create, recorded."""
        pod = pod_from_template(template, owner, ref)
        if generate_name:
            pod["metadata"]["generateName"] = generate_name
        if name:
            pod["metadata"]["name"] = name
            pod["metadata"].pop("generateName", None)
        if not (pod["metadata"].get("labels")):
            raise errors.bad_request("unable to create pods, no labels")
        request = core_pb2.CreateRequest(path=path("pods", namespace), object=raw(pod))
        request.options.fieldManager = MANAGER
        try:
            created = decode((await self._core.create(request)).object)
        except errors.ApiError as err:
            self._recorder.event(owner, WARNING, FAILED_CREATE, f"Error creating: {err.status.message}",
                                 kind=kind, api_version=api_version)
            raise
        self._recorder.event(owner, NORMAL, SUCCESSFUL_CREATE,
                             f"Created pod: {(created.get('metadata') or {}).get('name', '')}",
                             kind=kind, api_version=api_version)
        return created

    async def delete(self, namespace: str, name: str, owner: Obj, *, kind: str = "", api_version: str = "") -> None:
        """DeletePod; the 404 of a Pod already gone is raised without an event."""
        try:
            await self._core.delete(core_pb2.DeleteRequest(path=named(path("pods", namespace), name)))
        except errors.ApiError as err:
            if err.code == 404:
                raise
            self._recorder.event(owner, WARNING, FAILED_DELETE, f"Error deleting: {err.status.message}",
                                 kind=kind, api_version=api_version)
            raise
        self._recorder.event(owner, NORMAL, SUCCESSFUL_DELETE, f"Deleted pod: {name}", kind=kind,
                             api_version=api_version)
