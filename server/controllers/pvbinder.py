"""kube-controller-manager's persistentvolume-binder (pkg/controller/volume/persistentvolume, 1.28), its simple
cases: PersistentVolumeClaims bound to PersistentVolumes, volumes provisioned for Capstan's simulated
provisioner, and released volumes reclaimed.

Contracts, as kube's pv_controller:
- a Pending claim without spec.volumeName binds the Available volume that fits it best: one pre-bound to it
  (claimRef naming it), else among volumes of the same storageClassName and volumeMode, whose accessModes
  include the claim's, whose capacity covers the request and whose labels the claim's selector matches, the one
  with the fewest access modes, then the smallest capacity; a claim with spec.volumeName binds that volume when
  it is free or pre-bound to the claim;
- binding writes, in order: the volume's claimRef (and pv.kubernetes.io/bound-by-controller: "yes" when the
  controller chose it), the volume's phase Bound, the claim's volumeName with pv.kubernetes.io/bind-completed
  (and bound-by-controller when the controller chose the volume), the claim's phase Bound with the volume's
  accessModes and capacity;
- a claim of a StorageClass whose provisioner is `capstan.io/simulated` gets a volume when none fits: the claim
  is annotated volume.kubernetes.io/storage-provisioner (and its beta form), then a volume `pvc-<claim uid>` is
  created (a CSI volume of driver capstan.io/simulated, pv.kubernetes.io/provisioned-by, the class's
  reclaimPolicy and mountOptions, pre-bound to the claim), which the next sync binds; nothing exists beneath
  it. A class with volumeBindingMode WaitForFirstConsumer waits (event WaitForFirstConsumer) until the claim
  carries volume.kubernetes.io/selected-node, which the scheduler writes; this controller writes it too when it
  sees a scheduled Pod (spec.nodeName) using the claim;
- a volume without claimRef, or pre-bound to a claim not yet bound, is Available; a bound volume whose claim is
  gone is Released, then deleted when its reclaim policy is Delete (Retain keeps it Released); a bound claim
  whose volume is gone is Lost;
- events about claims as kube's: FailedBinding, WaitForFirstConsumer, ProvisioningSucceeded, ClaimLost;
- not done: the retroactive default StorageClass for claims written without one (DefaultStorageClass admission
  names it in new claims), Recycle, volume node affinity, expansion. A deleted claim or volume in use is held by
  the protection controllers (server/controllers/protection.py).
"""

from __future__ import annotations

import copy
import functools

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.kinds.corev1 import storage_class_of
from server.machinery import errors
from server.machinery.codec.quantity import Quantity, QuantityError, parse_quantity
from server.machinery.selectors.labels import SelectorError, from_label_selector
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import Indexer, SharedInformers

VOLUMES = path("persistentvolumes")
CLAIMS = path("persistentvolumeclaims")
CLASSES = path("storageclasses", group="storage.k8s.io")
PODS = path("pods")
COMPONENT = "persistentvolume-controller"
PROVISIONER = "capstan.io/simulated"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("annotations") or {})


def _quantity(value: object) -> Quantity | None:
    return _parsed(str(value)) if value is not None else None


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> Quantity | None:
    """Quantities are parsed once per text: matching compares a claim with every volume."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def bound_to(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, when the ref has one)."""
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    meta = _meta(claim)
    return (ref.get("name") == meta.get("name") and ref.get("namespace") == meta.get("namespace")
            and (not ref.get("uid") or ref.get("uid") == meta.get("uid")))


def satisfies(volume: Obj, claim: Obj) -> bool:
    """Capacity, volumeMode and access modes (checkVolumeSatisfyClaim's part findMatchingVolume shares)."""
    spec, claim_spec = volume.get("spec") or {}, claim.get("spec") or {}
    capacity = _quantity((spec.get("capacity") or {}).get("storage"))
    requested = _quantity(((claim_spec.get("resources") or {}).get("requests") or {}).get("storage"))
    if capacity is None or requested is None or capacity.compare(requested) < 0:
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim_spec.get("volumeMode") or "Filesystem"):
        return False
    return set(claim_spec.get("accessModes") or []) <= set(spec.get("accessModes") or [])


def best_match(volumes: list[Obj], claim: Obj) -> Obj | None:
    """findMatchingVolume: a volume pre-bound to the claim, else the free one with the fewest access modes and
    the smallest capacity among those that satisfy the claim, its class and selector."""
    try:
        selector = from_label_selector((claim.get("spec") or {}).get("selector") or {})
    except (SelectorError, TypeError):
        return None
    candidates: list[tuple[int, Quantity, str, Obj]] = []
    wanted_class = storage_class_of(claim)
    for volume in volumes:
        if _meta(volume).get("deletionTimestamp"):
            continue
        if (volume.get("spec") or {}).get("claimRef"):
            if bound_to(volume, claim) and satisfies(volume, claim):
                return volume
            continue
        if (volume.get("status") or {}).get("phase") != "Available" or storage_class_of(volume) != wanted_class:
            continue
        if not satisfies(volume, claim) or not selector.matches(_meta(volume).get("labels") or {}):
            continue
        capacity = _quantity(((volume.get("spec") or {}).get("capacity") or {}).get("storage"))
        assert capacity is not None
        candidates.append((len(set((volume.get("spec") or {}).get("accessModes") or [])), capacity,
                           str(_meta(volume).get("name", "")), volume))
    if not candidates:
        return None

    def order(a: tuple[int, Quantity, str, Obj], b: tuple[int, Quantity, str, Obj]) -> int:
        return (a[0] - b[0]) or a[1].compare(b[1]) or (a[2] > b[2]) - (a[2] < b[2])

    return min(candidates, key=functools.cmp_to_key(order))[3]


def _revision(obj: Obj) -> int:
    try:
        return int(_meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Assumed:
    """An informer's cache with the controller's own writes laid over it until the cache has caught up with them
    (kube's pv controller stores what it wrote in its caches), so the next sync does not choose a volume already
    bound or write over an object it has just changed."""

    def __init__(self, cache: Indexer[Obj]) -> None:
        self.cache = cache
        self._written: dict[Key, Obj] = {}

    def assume(self, obj: Obj) -> None:
        self._written[key_of(obj)] = obj

    def forget(self, key: Key) -> None:
        self._written.pop(key, None)

    def get(self, key: Key) -> Obj | None:
        cached, mine = self.cache.get(key), self._written.get(key)
        if mine is None:
            return cached
        if cached is not None and _revision(cached) >= _revision(mine):
            del self._written[key]
            return cached
        return mine

    def __contains__(self, key: Key) -> bool:
        return self.get(key) is not None

    def items(self) -> list[tuple[Key, Obj]]:
        keys = dict.fromkeys([*self.cache, *self._written])
        return [(key, obj) for key in keys if (obj := self.get(key)) is not None]

    def values(self) -> list[Obj]:
        return [obj for _, obj in self.items()]


def _claim_ref(claim: Obj) -> Obj:
    meta = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"), "name": meta.get("name"),
            "uid": meta.get("uid"), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}


class PersistentVolumeBinder(KeyedController):
    """Keys are (namespace, name) of a claim, or ("", name) of a volume (volumes are cluster-scoped)."""

    name = COMPONENT

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.volumes = Assumed(self.follow(VOLUMES, self._volume_changed))
        self.claims = Assumed(self.follow(CLAIMS, self._claim_changed))
        self.classes = self.follow(CLASSES, self._class_changed)
        self.pods = self.follow(PODS, self._pod_changed)
        self.recorder = EventRecorder(core, COMPONENT)

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    async def update(self, at: core_pb2.ResourcePath, obj: Obj, *, subresource: str = "") -> Obj:
        written = await super().update(at, obj, subresource=subresource)
        (self.volumes if at.resource == "persistentvolumes" else self.claims).assume(written)
        return written

    def _volume_changed(self, old: Obj | None, new: Obj | None) -> None:
        volume = new or old or {}
        self.queue(("", str(_meta(volume).get("name", ""))))
        if new is None:
            self.volumes.forget(key_of(volume))
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("namespace"):
            self.queue((str(ref["namespace"]), str(ref.get("name", ""))))
        if new is not None and (new.get("status") or {}).get("phase") == "Available" and (
                old is None or (old.get("status") or {}).get("phase") != "Available"):
            self._queue_unbound()  # a volume became available: the claims waiting may take it

    def _claim_changed(self, old: Obj | None, new: Obj | None) -> None:
        claim = new or old or {}
        if new is None:
            self.claims.forget(key_of(claim))
        self.queue(key_of(claim))
        volume = (claim.get("spec") or {}).get("volumeName")
        if volume:
            self.queue(("", str(volume)))
        if new is None:
            for volume_obj in self.volumes.values():
                if bound_to(volume_obj, claim):
                    self.queue(("", str(_meta(volume_obj).get("name", ""))))

    def _class_changed(self, old: Obj | None, new: Obj | None) -> None:
        self._queue_unbound()

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None or not (new.get("spec") or {}).get("nodeName"):
            return
        namespace = str(_meta(new).get("namespace", ""))
        for volume in (new.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                self.queue((namespace, str(claim)))

    def _queue_unbound(self) -> None:
        for key, claim in self.claims.items():
            if not (claim.get("spec") or {}).get("volumeName"):
                self.queue(key)

    async def sync(self, key: Key) -> None:
        if key[0]:
            claim = self.claims.get(key)
            if claim is not None and not _meta(claim).get("deletionTimestamp"):
                await self._sync_claim(claim)
        else:
            volume = self.volumes.get(key)
            if volume is not None:
                await self._sync_volume(volume)

    # -- claims ---------------------------------------------------------------------------------------------------

    async def _sync_claim(self, claim: Obj) -> None:
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if not volume_name:
            await self._sync_unbound_claim(claim)
            return
        volume = self.volumes.get(("", str(volume_name)))
        if volume is None:
            if (claim.get("status") or {}).get("phase") == "Bound":
                await self._claim_status(claim, {"phase": "Lost"})
                self._event(claim, WARNING, "ClaimLost",
                            "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            else:
                self._event(claim, NORMAL, "FailedBinding", f'volume "{volume_name}" not found')
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref and not bound_to(volume, claim):
            self._event(claim, WARNING, "FailedBinding", f'volume "{volume_name}" already bound to a different claim.')
            return
        if not ref and not satisfies(volume, claim):
            self._event(claim, WARNING, "FailedBinding", "Cannot bind to requested volume "
                        f'"{volume_name}": requested PV is too small or has incompatible access modes')
            return
        await self._bind(volume, claim)

    async def _sync_unbound_claim(self, claim: Obj) -> None:
        class_name = storage_class_of(claim)
        klass = self.classes.get(("", class_name)) if class_name else None
        if klass is not None and klass.get("volumeBindingMode") == "WaitForFirstConsumer" \
                and SELECTED_NODE not in _annotations(claim):
            node = self._consumer_node(claim)
            if node is None:
                self._event(claim, NORMAL, "WaitForFirstConsumer",
                            "waiting for first consumer to be created before binding")
                return
            claim = await self._annotate(claim, {SELECTED_NODE: node})
        volume = best_match(self.volumes.values(), claim)
        if volume is not None:
            await self._bind(volume, claim)
            return
        if not class_name:
            self._event(claim, NORMAL, "FailedBinding",
                        "no persistent volumes available for this claim and no storage class is set")
            return
        if klass is None:
            self._event(claim, WARNING, "ProvisioningFailed", f'storageclass.storage.k8s.io "{class_name}" not found')
            return
        provisioner = str(klass.get("provisioner", ""))
        if provisioner != PROVISIONER:
            if provisioner != "kubernetes.io/no-provisioner":
                self._event(claim, NORMAL, "ExternalProvisioning",
                            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                            "or manually by the system administrator. If volume creation is delayed, please verify "
                            "that the provisioner is running and correctly registered.")
            return
        await self._provision(claim, klass)

    def _consumer_node(self, claim: Obj) -> str | None:
        """The node of a scheduled Pod using the claim (the scheduler's selected node)."""
        meta = _meta(claim)
        for pod in self.pods.in_namespace(str(meta.get("namespace", ""))):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and any((v.get("persistentVolumeClaim") or {}).get("claimName") == meta.get("name")
                            for v in (pod.get("spec") or {}).get("volumes") or []):
                return str(node)
        return None

    async def _provision(self, claim: Obj, klass: Obj) -> None:
        """provisionClaimOperation: the claim annotated with its provisioner, then its volume made."""
        annotations = _annotations(claim)
        if annotations.get(STORAGE_PROVISIONER) != PROVISIONER:
            claim = await self._annotate(claim, {STORAGE_PROVISIONER: PROVISIONER,
                                                 BETA_STORAGE_PROVISIONER: PROVISIONER})
        meta, spec = _meta(claim), claim.get("spec") or {}
        name = f"pvc-{meta.get('uid')}"
        if ("", name) in self.volumes:
            return
        volume: Obj = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
            "spec": {"capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage")},
                     "accessModes": list(spec.get("accessModes") or []),
                     "persistentVolumeReclaimPolicy": klass.get("reclaimPolicy") or "Delete",
                     "storageClassName": storage_class_of(claim), "volumeMode": spec.get("volumeMode") or "Filesystem",
                     "claimRef": _claim_ref(claim),
                     "csi": {"driver": PROVISIONER, "volumeHandle": name}}}
        if klass.get("mountOptions"):
            volume["spec"]["mountOptions"] = list(klass["mountOptions"])
        try:
            await self.create(VOLUMES, volume)
        except errors.ApiError as err:
            if err.code != 409:
                self._event(claim, WARNING, "ProvisioningFailed", f"Failed to provision volume with StorageClass "
                            f'"{storage_class_of(claim)}": {err.status.message}')
                raise
            return
        self._event(claim, NORMAL, "ProvisioningSucceeded", f"Successfully provisioned volume {name} using "
                    f"{PROVISIONER}")

    async def _bind(self, volume: Obj, claim: Obj) -> None:
        """bind: each of the four writes that is not done yet."""
        if not (volume.get("spec") or {}).get("claimRef") or \
                ((volume.get("spec") or {}).get("claimRef") or {}).get("uid") != _meta(claim).get("uid"):
            changed = copy.deepcopy(volume)
            if not (volume.get("spec") or {}).get("claimRef"):
                changed["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
            changed["spec"]["claimRef"] = _claim_ref(claim)
            volume = await self.update(VOLUMES, changed)
        if (volume.get("status") or {}).get("phase") != "Bound":
            volume = await self.update(VOLUMES, {**volume, "status": {**(volume.get("status") or {}),
                                                                        "phase": "Bound"}}, subresource="status")
        volume_name = _meta(volume).get("name")
        annotations = _annotations(claim)
        if (claim.get("spec") or {}).get("volumeName") != volume_name or annotations.get(BIND_COMPLETED) != "yes":
            changed = copy.deepcopy(claim)
            wanted = {BIND_COMPLETED: "yes"}
            if not (claim.get("spec") or {}).get("volumeName"):
                wanted[BOUND_BY_CONTROLLER] = "yes"
            changed["metadata"]["annotations"] = {**annotations, **wanted}
            changed["spec"]["volumeName"] = volume_name
            claim = await self.update(path("persistentvolumeclaims", str(_meta(claim).get("namespace", ""))),
                                      changed)
        spec = volume.get("spec") or {}
        await self._claim_status(claim, {"phase": "Bound", "accessModes": list(spec.get("accessModes") or []),
                                         "capacity": dict(spec.get("capacity") or {})})

    async def _claim_status(self, claim: Obj, wanted: Obj) -> None:
        status = dict(claim.get("status") or {})
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        at = path("persistentvolumeclaims", str(_meta(claim).get("namespace", "")))
        await self.update(at, {**claim, "status": {**status, **wanted}}, subresource="status")

    async def _annotate(self, claim: Obj, annotations: dict[str, str]) -> Obj:
        changed = copy.deepcopy(claim)
        changed["metadata"]["annotations"] = {**_annotations(claim), **annotations}
        return await self.update(path("persistentvolumeclaims", str(_meta(claim).get("namespace", ""))), changed)

    # -- volumes --------------------------------------------------------------------------------------------------

    async def _sync_volume(self, volume: Obj) -> None:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        phase = (volume.get("status") or {}).get("phase")
        if not ref or not ref.get("uid"):
            await self._volume_phase(volume, "Available")
            return
        claim = self.claims.get((str(ref.get("namespace", "")), str(ref.get("name", ""))))
        if claim is not None and _meta(claim).get("uid") != ref.get("uid"):
            claim = None
        if claim is None:
            claim = await self._fresh_claim(ref)
        if claim is None:
            if phase not in ("Released", "Failed"):
                volume = await self._volume_phase(volume, "Released")
            if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
                await self.delete(VOLUMES, str(_meta(volume).get("name", "")), uid=str(_meta(volume).get("uid", "")))
            return
        claimed = (claim.get("spec") or {}).get("volumeName")
        if not claimed:
            self.queue(key_of(claim))
        elif claimed == _meta(volume).get("name"):
            await self._volume_phase(volume, "Bound")
        elif _annotations(volume).get(BOUND_BY_CONTROLLER):
            changed = copy.deepcopy(volume)  # unbindVolume: the claim went to another volume
            del changed["spec"]["claimRef"]
            changed["metadata"]["annotations"].pop(BOUND_BY_CONTROLLER, None)
            await self._volume_phase(await self.update(VOLUMES, changed), "Available")

    async def _fresh_claim(self, ref: Obj) -> Obj | None:
        """The claim the reference names, read from the core (the cache may not have it yet)."""
        at = named(path("persistentvolumeclaims", str(ref.get("namespace", ""))), str(ref.get("name", "")))
        try:
            claim = decode((await self.core.get(core_pb2.GetRequest(path=at))).object)
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise
        return claim if _meta(claim).get("uid") == ref.get("uid") else None

    async def _volume_phase(self, volume: Obj, phase: str) -> Obj:
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        return await self.update(VOLUMES, {**volume, "status": {**(volume.get("status") or {}), "phase": phase}},
                                 subresource="status")

    def _event(self, claim: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(claim, type_, reason, message, kind="PersistentVolumeClaim", api_version="v1")


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    binder = PersistentVolumeBinder(core, informers)
    return [Singleton("PersistentVolumeBinder", binder.start, binder.stop)]
