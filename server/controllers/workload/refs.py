"""kube's controller-ref manager (pkg/controller/controller_ref_manager.go): which objects matching a
controller's selector it owns, adopting orphans and releasing what no longer matches, with kube's patches.

Contracts, as kube's ClaimObject:
- owned by another controller: ignored;
- owned by this one: kept while the selector matches; else released (unless the owner is being deleted);
- an orphan: adopted when the selector matches, it is in the owner's namespace and neither it nor the owner is
  being deleted; before the first adoption the owner is read afresh from the core (RecheckDeletionTimestamp)
  and adoption refused when it is gone, replaced (another uid) or being deleted;
- adopt is the strategic merge patch {"metadata": {"ownerReferences": [<controller ref>], "uid": <uid>}}, release
  {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": <owner uid>}], "uid": <uid>}}; an object gone
  (404) is neither claimed nor an error; any other failure is raised after the rest are claimed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import MANAGER, Obj, decode, named, raw
from server.controllers.workload.pods import controller_of, controller_ref
from server.machinery import errors
from server.machinery.selectors.labels import Selector
from server.objects.core import Core


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class ControllerRefManager:
    """One claim pass for one controller object (`owner`, of `api_version` and `kind`, read at `owner_path`)."""

    def __init__(self, core: Core, owner: Obj, owner_path: core_pb2.ResourcePath, api_version: str, kind: str,
                 selector: Selector) -> None:
        self._core = core
        self.owner = owner
        self._owner_path = owner_path
        self.api_version = api_version
        self.kind = kind
        self.selector = selector
        self._adoptable: errors.ApiError | bool | None = None  # None: not checked yet; True: may adopt

    @property
    def uid(self) -> str:
        return str(_meta(self.owner).get("uid", ""))

    async def claim(self, objs: Sequence[Obj], at: Callable[[str], core_pb2.ResourcePath],
                    match: Callable[[Obj], bool] | None = None) -> list[Obj]:
        """The objects this controller owns after adopting and releasing (objects as the patches left them);
        `at(namespace)` is where the objects live; `match` replaces the selector."""
        matches = match or (lambda obj: self.selector.matches(_meta(obj).get("labels") or {}))
        claimed: list[Obj] = []
        failure: Exception | None = None
        for obj in objs:
            try:
                got = await self._claim_one(obj, at, matches)
            except errors.ApiError as err:
                failure = failure or err
                continue
            if got is not None:
                claimed.append(got)
        if failure is not None:
            raise failure
        return claimed

    async def _claim_one(self, obj: Obj, at: Callable[[str], core_pb2.ResourcePath],
                         matches: Callable[[Obj], bool]) -> Obj | None:
        meta = _meta(obj)
        ref = controller_of(obj)
        owner_deleting = bool(_meta(self.owner).get("deletionTimestamp"))
        if ref is not None:
            if ref.get("uid") != self.uid:
                return None
            if matches(obj):
                return obj
            if owner_deleting:
                return None
            await self._patch(obj, at, {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": self.uid}],
                                                     "uid": meta.get("uid")}})
            return None
        if owner_deleting or not matches(obj) or meta.get("deletionTimestamp"):
            return None
        if _meta(self.owner).get("namespace") and _meta(self.owner).get("namespace") != meta.get("namespace"):
            return None
        await self._can_adopt()
        adopted = await self._patch(obj, at, {"metadata": {
            "ownerReferences": [controller_ref(self.owner, self.api_version, self.kind)], "uid": meta.get("uid")}})
        return adopted

    async def _can_adopt(self) -> None:
        """RecheckDeletionTimestamp over a fresh read of the owner, once per pass."""
        if self._adoptable is None:
            name = str(_meta(self.owner).get("name", ""))
            try:
                fresh = decode((await self._core.get(core_pb2.GetRequest(path=named(self._owner_path, name))))
                               .object)
            except errors.ApiError as err:
                self._adoptable = err
            else:
                fresh_meta = _meta(fresh)
                namespace = _meta(self.owner).get("namespace", "")
                if fresh_meta.get("uid") != self.uid:
                    self._adoptable = errors.conflict(
                        self._owner_path.resource, self._owner_path.group, name,
                        f"original {namespace}/{name} is gone: got uid {fresh_meta.get('uid')}, wanted {self.uid}")
                elif fresh_meta.get("deletionTimestamp"):
                    self._adoptable = errors.conflict(
                        self._owner_path.resource, self._owner_path.group, name,
                        f"{namespace}/{name} has just been deleted at {fresh_meta.get('deletionTimestamp')}")
                else:
                    self._adoptable = True
        if isinstance(self._adoptable, errors.ApiError):
            raise self._adoptable

    async def _patch(self, obj: Obj, at: Callable[[str], core_pb2.ResourcePath], patch: Obj) -> Obj | None:
        """The patched object; None when it is gone."""
        meta = _meta(obj)
        request = core_pb2.PatchRequest(path=named(at(str(meta.get("namespace", ""))), str(meta.get("name", ""))),
                                        type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE, patch=raw(patch).data)
        request.options.fieldManager = MANAGER
        try:
            return decode((await self._core.patch(request)).object)
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise
