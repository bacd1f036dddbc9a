"""The storage object in-use protection controllers, as kube-controller-manager 1.28's pvc-protection and
pv-protection (pkg/controller/volume/pvcprotection, pvprotection): a claim a Pod still uses, and a volume still
bound to a claim, are not removed when deleted; they wait, Terminating, until nothing needs them.

The StorageObjectInUseProtection admission plugin (server/admission/protection.py) gives every new claim the
`kubernetes.io/pvc-protection` finalizer and every new volume `kubernetes.io/pv-protection`; these controllers
give them to claims and volumes that lack them (written before, or with the plugin off), and take them away from
a deleted one once:
- a claim: no scheduled Pod of its namespace names it in a `persistentVolumeClaim` volume, or as the claim of a
  generic ephemeral volume it owns while that Pod is not being deleted at once. Terminated Pods still count until
  they are deleted, as kube's. When the Pods' cache finds no user, the Pods are listed afresh before the finalizer
  goes, as kube asks the API server;
- a volume: its status.phase is not Bound.

Writes are PUTs with the object's resourceVersion as precondition; a conflict is retried from the cache.
"""

from __future__ import annotations

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission.protection import FINALIZERS
from server.controllers.workload.keyed import Key, KeyedController, Obj, key_of, path
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

PVC_FINALIZER = FINALIZERS["persistentvolumeclaims"]
PV_FINALIZER = FINALIZERS["persistentvolumes"]
PODS = path("pods")
CLAIMS = path("persistentvolumeclaims")
VOLUMES = path("persistentvolumes")


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def needs_finalizer(obj: Obj, finalizer: str) -> bool:
    """NeedToAddFinalizer: not being deleted, and without it."""
    meta = _meta(obj)
    return not meta.get("deletionTimestamp") and finalizer not in (meta.get("finalizers") or [])


def deletion_candidate(obj: Obj, finalizer: str) -> bool:
    """IsDeletionCandidate: being deleted, and still held by it."""
    meta = _meta(obj)
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


def ephemeral_claim_name(pod: Obj, volume: Obj) -> str:
    """ephemeral.VolumeClaimName: a generic ephemeral volume's claim is named <pod>-<volume>."""
    return f"{_meta(pod).get('name', '')}-{volume.get('name', '')}"


def _shut_down(pod: Obj) -> bool:
    """podIsShutDown: deleted with grace period 0, so its volumes are released at once."""
    meta = _meta(pod)
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def _owned_by(claim: Obj, pod: Obj) -> bool:
    uid = _meta(pod).get("uid")
    return any(ref.get("uid") == uid and ref.get("controller") for ref in _meta(claim).get("ownerReferences") or [])


def pod_uses_claim(pod: Obj, claim: Obj) -> bool:
    """podUsesPVC: only a scheduled Pod holds a claim (a kubelet starts no Pod whose claim is being deleted)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    name = _meta(claim).get("name")
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if (volume.get("persistentVolumeClaim") or {}).get("claimName") == name:
            return True
        if ("ephemeral" in volume and not _shut_down(pod) and ephemeral_claim_name(pod, volume) == name
                and _owned_by(claim, pod)):
            return True
    return False


def _claims_of(pod: Obj) -> list[str]:
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if "persistentVolumeClaim" in volume:
            names.append(str((volume.get("persistentVolumeClaim") or {}).get("claimName") or ""))
        elif "ephemeral" in volume:
            names.append(ephemeral_claim_name(pod, volume))
    return names


def _without(obj: Obj, finalizer: str) -> Obj:
    meta = dict(_meta(obj))
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
    return {**obj, "metadata": meta}


def _with(obj: Obj, finalizer: str) -> Obj:
    meta = dict(_meta(obj))
    meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
    return {**obj, "metadata": meta}


class PVCProtectionController(KeyedController):
    name = "pvc-protection-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.claims = self.follow(CLAIMS, self._claim_changed)
        self.pods = self.follow(PODS, self._pod_changed)

    def _claim_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (needs_finalizer(new, PVC_FINALIZER) or deletion_candidate(new, PVC_FINALIZER)):
            self.queue(key_of(new))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        """podAddedDeletedUpdated: a Pod deleted, replaced (another uid), finished or not scheduled may have let go
        of a claim being deleted."""
        if old is not None and (new is None or _meta(old).get("uid") != _meta(new).get("uid")):
            self._queue_claims(old)
        if new is not None and (not (new.get("spec") or {}).get("nodeName")
                                or (new.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            self._queue_claims(new)

    def _queue_claims(self, pod: Obj) -> None:
        namespace = str(_meta(pod).get("namespace") or "")
        for claim in _claims_of(pod):
            self.queue((namespace, claim))

    async def _in_use(self, claim: Obj) -> bool:
        namespace = str(_meta(claim).get("namespace") or "")
        if any(pod_uses_claim(pod, claim) for pod in self.pods.in_namespace(namespace)):
            return True
        listed = await self.core.list(core_pb2.ListRequest(path=path("pods", namespace),
                                                           accept=core_pb2.ENCODING_JSON))
        return any(pod_uses_claim(orjson.loads(item), claim) for item in listed.items)

    async def sync(self, key: Key) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        at = path("persistentvolumeclaims", key[0])
        if deletion_candidate(claim, PVC_FINALIZER):
            if not await self._in_use(claim):
                await self.update(at, _without(claim, PVC_FINALIZER))
            return
        if needs_finalizer(claim, PVC_FINALIZER):
            await self.update(at, _with(claim, PVC_FINALIZER))


class PVProtectionController(KeyedController):
    name = "pv-protection-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.volumes = self.follow(VOLUMES, self._volume_changed)

    def _volume_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (needs_finalizer(new, PV_FINALIZER) or deletion_candidate(new, PV_FINALIZER)):
            self.queue(key_of(new))

    async def sync(self, key: Key) -> None:
        volume = self.volumes.get(key)
        if volume is None:
            return
        if deletion_candidate(volume, PV_FINALIZER):
            if (volume.get("status") or {}).get("phase") != "Bound":
                await self.update(VOLUMES, _without(volume, PV_FINALIZER))
            return
        if needs_finalizer(volume, PV_FINALIZER):
            await self.update(VOLUMES, _with(volume, PV_FINALIZER))


PVC_PROTECTION = PVCProtectionController
PV_PROTECTION = PVProtectionController


def singletons(core: Core, informers: SharedInformers | None,
               controller: type[PVCProtectionController] | type[PVProtectionController]) -> list[Singleton]:
    built = controller(core, informers)
    return [Singleton(controller.__name__, built.start, built.stop)]
