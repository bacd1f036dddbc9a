"""ControllerRevisions as the StatefulSet and DaemonSet controllers keep them (kube's pkg/controller/history and
the two controllers' getPatch): a revision's data is the owner's pod template as a strategic merge patch that
replaces it, so applying a revision gives back the template it recorded.

Contracts, as kube's:
- data is {"spec": {"template": <template> + {"$patch": "replace"}}} in the shape Go's encoding/json gives it
  (getPatch marshals the typed object, reads it into a map and marshals that map): every object's keys sorted,
  and each ObjectMeta the template embeds with "creationTimestamp": null, as a zero metav1.Time prints. Clients
  compare a revision's bytes with the patch they compute from the owner (kube's daemon.Match, kubectl's rollout
  undo and history), so the bytes are theirs, not only the value;
- revisions are ordered by revision number, then creation time, then name (SortControllerRevisions); the next
  number is the highest plus one;
- two revisions are equal when their data is (EqualRevision over the raw bytes; here over the JSON value);
- history is truncated to revisionHistoryLimit: the oldest revisions no live Pod uses and that are neither the
  current nor the update revision are deleted first.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from server.controllers.workload.keyed import Obj, path
from server.machinery.selectors.labels import Selector

REVISIONS = path("controllerrevisions", group="apps")
HASH_LABEL = "controller.kubernetes.io/hash"  # history.ControllerRevisionHashLabel
NAME_PREFIX_MAX = 223  # ControllerRevisionName keeps the name under 253 characters


def patch_of(template: Obj) -> Obj:
    """getPatch: the revision data recording `template`, its keys in the order Go's json.Marshal of a map
    writes them."""
    recorded = copy.deepcopy(template)
    for metadata in _object_metas(recorded, make=True):
        metadata.setdefault("creationTimestamp", None)
    recorded["$patch"] = "replace"
    data: Obj = _sorted({"spec": {"template": recorded}})
    return data


def template_of(revision: Obj) -> Obj:
    """ApplyRevision's result for the template: what the revision recorded (a null creationTimestamp, Go's
    zero time, is no field)."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    for metadata in _object_metas(template, make=False):
        if metadata.get("creationTimestamp", "") is None:
            del metadata["creationTimestamp"]
    return template


def _object_metas(template: Obj, *, make: bool) -> list[Obj]:
    """The ObjectMetas a pod template holds: its own and its generic ephemeral volumes' claim templates'
    (`make`: an absent one is added, as Go prints every embedded ObjectMeta)."""
    holders: list[Obj] = [template]
    for volume in (template.get("spec") or {}).get("volumes") or []:
        claim = ((volume or {}).get("ephemeral") or {}).get("volumeClaimTemplate")
        if isinstance(claim, dict):
            holders.append(claim)
    out = []
    for holder in holders:
        if make and not isinstance(holder.get("metadata"), dict):
            holder["metadata"] = {}
        if isinstance(holder.get("metadata"), dict):
            out.append(holder["metadata"])
    return out


def _sorted(value: object) -> Any:
    """`value` with every object's keys sorted (Go sorts a map's keys by their bytes; for UTF-8 that is code
    point order)."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def revision_name(prefix: str, hash_: str) -> str:
    """ControllerRevisionName."""
    return f"{prefix[:NAME_PREFIX_MAX]}-{hash_}"


def number(revision: Obj) -> int:
    return int(revision.get("revision") or 0)


def ordered(revisions: Iterable[Obj]) -> list[Obj]:
    """SortControllerRevisions."""
    def key(r: Obj) -> tuple[int, str, str]:
        metadata = r.get("metadata") or {}
        return number(r), str(metadata.get("creationTimestamp") or ""), str(metadata.get("name") or "")
    return sorted(revisions, key=key)


def next_number(revisions: Iterable[Obj]) -> int:
    return max((number(r) for r in revisions), default=0) + 1


def equal(a: Obj, b: Obj) -> bool:
    return (a.get("data") or {}) == (b.get("data") or {})


def owned(revisions: Iterable[Obj], uid: str, selector: Selector) -> list[Obj]:
    """The revisions whose controller is the owner of `uid` and that its selector still matches."""
    out = []
    for revision in revisions:
        refs = (revision.get("metadata") or {}).get("ownerReferences") or []
        if any(r.get("controller") and r.get("uid") == uid for r in refs) and selector.matches(
                (revision.get("metadata") or {}).get("labels") or {}):
            out.append(revision)
    return out


def to_truncate(revisions: list[Obj], live: set[str], limit: int) -> list[Obj]:
    """truncateHistory/cleanupHistory: the revisions to delete so that at most `limit` not `live` ones remain
    (oldest first)."""
    history = [r for r in ordered(revisions) if (r.get("metadata") or {}).get("name") not in live]
    excess = len(history) - max(limit, 0)
    return history[:excess] if excess > 0 else []
