"""The garbage collector's graph: every object's owners, and for every uid the objects that name it.

kube-controller-manager's GraphBuilder, without its virtual nodes: an owner the
graph has not observed is simply a uid that dependents name, and a dependent
naming one is checked against the API (server/controllers/gc/collector.py).
Applying a change is pure bookkeeping that answers the work it makes:

- a dependent naming an owner the graph has not seen (or has seen under other
  coordinates), or one being deleted in the foreground: check the dependent;
- an object starting to be deleted with the `orphan` finalizer: orphan its dependents;
- one starting with `foregroundDeletion`: check each dependent and the object itself;
- an object gone: check its dependents, and its owners waiting for dependents to go;
- a dependent that drops a blocking reference: check the owner waiting for it.

Example: B names A (blockOwnerDeletion) and A is deleted in the foreground. A's
MODIFIED event yields Check(B) and Check(A); B is deleted, and B's removal yields
Check(A), which now finds no blocking dependent and removes A's finalizer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from server.machinery.values import Obj
from server.objects.delete import FOREGROUND_FINALIZER, ORPHAN_FINALIZER

# Identity, OwnerRef and Node are NamedTuples rather than frozen dataclasses because every write in the store
# builds them (a tuple builds several times faster), as storage's KeyValue explains.


class Identity(NamedTuple):
    """An object's uid and where the core serves it: enough to get, patch or delete it."""

    uid: str
    group: str
    version: str
    resource: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} ({self.uid})"


class OwnerRef(NamedTuple):
    """One entry of metadata.ownerReferences, as the graph needs it."""

    uid: str
    api_version: str
    kind: str
    name: str
    block: bool  # blockOwnerDeletion

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


class Node(NamedTuple):
    identity: Identity
    owners: tuple[OwnerRef, ...]
    being_deleted: bool  # deletionTimestamp is set
    deleting_dependents: bool  # ... with the foregroundDeletion finalizer
    orphaning: bool  # ... with the orphan finalizer

    def blocks(self, owner_uid: str) -> bool:
        return any(o.uid == owner_uid and o.block for o in self.owners)


@dataclass(frozen=True, slots=True)
class Check:
    """attemptToDelete: decide from the API whether the object goes, loses references, or lets its owner go."""

    uid: str


@dataclass(frozen=True, slots=True)
class Orphan:
    """attemptToOrphan: remove the owner's reference from its dependents, then its `orphan` finalizer."""

    owner: Identity


Work = Check | Orphan


def owner_refs(obj: Obj) -> tuple[OwnerRef, ...]:
    refs: list[Any] = (obj.get("metadata") or {}).get("ownerReferences") or []
    return tuple(
        OwnerRef(str(r.get("uid", "")), str(r.get("apiVersion", "")), str(r.get("kind", "")), str(r.get("name", "")),
                 bool(r.get("blockOwnerDeletion")))
        for r in refs if isinstance(r, dict)
    )


def node_of(identity: Identity, obj: Obj) -> Node:
    m = obj.get("metadata") or {}
    deleting = bool(m.get("deletionTimestamp"))
    finalizers = m.get("finalizers") or ()
    return Node(identity, owner_refs(obj), deleting, deleting and FOREGROUND_FINALIZER in finalizers,
                deleting and ORPHAN_FINALIZER in finalizers)


class Graph:
    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._by_key: dict[bytes, str] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> uids of the objects naming it

    def __len__(self) -> int:
        return len(self._nodes)

    def node(self, uid: str) -> Node | None:
        return self._nodes.get(uid)

    def dependents(self, uid: str) -> list[Node]:
        return [self._nodes[d] for d in self._dependents.get(uid, ()) if d in self._nodes]

    def blocking_dependents(self, uid: str) -> list[Node]:
        return [d for d in self.dependents(uid) if d.blocks(uid)]

    def put(self, key: bytes, node: Node) -> list[Work]:
        """An object created or changed (ADDED/MODIFIED)."""
        uid = node.identity.uid
        work: list[Work] = []
        if self._by_key.get(key, uid) != uid:  # the key now holds another object: the old one is gone
            work += self.remove(key)
        old = self._nodes.get(uid)
        self._nodes[uid] = node
        self._by_key[key] = uid
        before = {o.uid: o for o in old.owners} if old else {}
        now = {o.uid: o for o in node.owners}
        for owner_uid, ref in before.items():
            if owner_uid not in now:
                self._forget_dependent(owner_uid, uid)
            if ref.block and not (owner_uid in now and now[owner_uid].block):
                work += self._waiting_owner(owner_uid)
        for owner_uid, ref in now.items():
            self._dependents.setdefault(owner_uid, set()).add(uid)
            owner = self._nodes.get(owner_uid)
            if owner is None or not _names(ref, owner.identity, node.identity.namespace) or owner.deleting_dependents:
                work.append(Check(uid))
        if node.orphaning and not (old and old.orphaning):
            work.append(Orphan(node.identity))
        if node.deleting_dependents and not (old and old.deleting_dependents):
            work += [Check(d) for d in self._dependents.get(uid, ())]
            work.append(Check(uid))
        return work

    def remove(self, key: bytes) -> list[Work]:
        """An object deleted (DELETED)."""
        uid = self._by_key.pop(key, None)
        if uid is None:
            return []
        node = self._nodes.pop(uid)
        work: list[Work] = [Check(d) for d in self._dependents.get(uid, ())]
        for ref in node.owners:
            self._forget_dependent(ref.uid, uid)
            work += self._waiting_owner(ref.uid)
        return work

    def replace(self, objects: Iterable[tuple[bytes, Node]]) -> list[Work]:
        """Everything the store holds, after a (re)list: what is no longer there was deleted meanwhile."""
        listed = dict(objects)
        work: list[Work] = []
        for key in [k for k in self._by_key if k not in listed]:
            work += self.remove(key)
        for key, node in listed.items():
            work += self.put(key, node)
        return work

    def _waiting_owner(self, owner_uid: str) -> list[Work]:
        owner = self._nodes.get(owner_uid)
        return [Check(owner_uid)] if owner is not None and owner.deleting_dependents else []

    def _forget_dependent(self, owner_uid: str, uid: str) -> None:
        dependents = self._dependents.get(owner_uid)
        if dependents is not None:
            dependents.discard(uid)
            if not dependents:
                del self._dependents[owner_uid]


def _names(ref: OwnerRef, owner: Identity, namespace: str) -> bool:
    """Whether a reference from an object in `namespace` names the observed owner by its coordinates: a
    namespaced owner is only ever in its dependent's namespace."""
    return (ref.group == owner.group and ref.kind == owner.kind and ref.name == owner.name
            and owner.namespace in ("", namespace))
