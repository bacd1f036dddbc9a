"""Who owns what after a write: structured-merge-diff's Updater, with kube-apiserver's field manager
layers around it (server-set metadata never owned, at most ten Update entries, time stamps).

    update  a create, PUT or non-apply patch by `owner`: every field it added or changed becomes
            its own, taken from whoever had it (an update never conflicts); removed fields are
            nobody's any more.
    apply   a server-side apply: the configuration is merged onto the live object, fields the
            owner applied last time and dropped now are removed unless someone else owns them, and
            a change to a field another owner holds is a conflict unless forced (then it moves).

`ignored` are the fields the endpoint resets (status on the main resource, all but status on
/status): nobody gains them through that endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.machinery.fields import typed
from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.managers import UPDATE, Managed, Owned, Owner
from server.machinery.fields.path import Path
from server.machinery.fields.shapes import Shape

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"


def _strip_set() -> FieldSet:
    stripped = FieldSet()
    for path in (("apiVersion",), ("kind",), ("metadata",)):
        stripped.insert(tuple(("f", p) for p in path))
    for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
                 "managedFields", "resourceVersion"):
        stripped.insert((("f", "metadata"), ("f", name)))
    return stripped


# Set by the server, never owned by a manager (apimachinery's stripMetaManager).
STRIPPED = _strip_set()


class Conflicts(Exception):
    """An apply would change fields other owners hold: (owner, path) pairs, sorted."""

    def __init__(self, conflicts: list[tuple[Owner, Path]]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


def update(live: Any, new: Any, shape: Shape, managed: Managed, owner: Owner, api_version: str,
           ignored: FieldSet | None, now: str | None) -> Managed:
    comparison = _compare(live, new, shape, ignored)
    # Others lose what the write touched; the writer loses only what it removed (what it added or
    # changed is its own again below), so an unchanged entry keeps its FieldsV1.
    managed = _take(managed, owner, comparison)
    mine = managed.get(owner)
    if mine is not None and not mine.fields.intersection(comparison.removed).empty():
        rest = mine.fields.difference(comparison.removed)
        if rest.empty():
            del managed[owner]
        else:
            managed[owner] = Owned(rest, mine.api_version, mine.time)
    changed = comparison.modified.union(comparison.added)
    if ignored is not None:
        changed = changed.recursive_difference(ignored)
    changed = changed.difference(STRIPPED)
    if not changed.empty():
        previous = managed.get(owner)
        if previous is None:
            managed[owner] = Owned(changed, api_version, now)
        else:
            managed[owner] = previous.retimed(previous.fields.union(changed), api_version, now)
    return _cap(managed)


def apply(live: Any, config: Any, shape: Shape, managed: Managed, owner: Owner, api_version: str,
          ignored: FieldSet | None, now: str | None, *, force: bool, normalize: Callable[[Any], Any],
          zero: Any) -> tuple[Any, Managed]:
    """(the new object, its owners); zero is the kind's empty object. Raises Conflicts."""
    if not managed and live is not zero:
        # An object written before anyone tracked it: what it holds so far belongs to one updater.
        managed = update(zero, live, shape, {}, Owner(BEFORE_FIRST_APPLY, UPDATE, api_version),
                         api_version, ignored, now)
    merged = typed.merge(live, config, shape)
    fields = typed.to_field_set(config, shape)
    if ignored is not None:
        fields = fields.recursive_difference(ignored)
    previous = managed.get(owner)
    managed = {**managed, owner: Owned(fields, api_version, previous.time if previous else None)}
    if previous is not None and not previous.fields.empty():
        merged = _prune(merged, managed, previous.fields, shape)
    new = normalize(merged)
    comparison = _compare(live, new, shape, ignored)
    touched = comparison.modified.union(comparison.added)
    conflicts = [(other, path) for other, owned in sorted(managed.items(), key=lambda kv: kv[0].describe())
                 if other != owner for path in owned.fields.intersection(touched).paths()]
    if conflicts and not force:
        raise Conflicts(conflicts)
    managed = _take(managed, owner, comparison)
    mine = managed[owner].fields.difference(STRIPPED)
    if mine.empty():
        del managed[owner]
    else:
        changed = not touched.empty() or not comparison.removed.empty()
        managed[owner] = Owned(mine, api_version, now if changed else managed[owner].time)
    return new, _cap(managed)


def _compare(live: Any, new: Any, shape: Shape, ignored: FieldSet | None) -> typed.Comparison:
    comparison = typed.compare(live, new, shape, STRIPPED)
    if ignored is None:
        return comparison
    return typed.Comparison(comparison.added.recursive_difference(ignored),
                            comparison.modified.recursive_difference(ignored),
                            comparison.removed.recursive_difference(ignored))


def _take(managed: Managed, keep: Owner | None, comparison: typed.Comparison) -> Managed:
    """Every owner but `keep` loses the fields the write added, changed or removed."""
    touched = comparison.modified.union(comparison.added).union(comparison.removed)
    out: Managed = {}
    for owner, owned in managed.items():
        if owner == keep:
            out[owner] = owned
            continue
        if owned.fields.intersection(touched).empty():
            out[owner] = owned
            continue
        rest = owned.fields.difference(touched)
        if not rest.empty():
            out[owner] = Owned(rest, owned.api_version, owned.time)
    return out


def _prune(merged: Any, managed: Managed, last: FieldSet, shape: Shape) -> Any:
    """merged without the fields the owner applied last time and dropped now, unless owned still."""
    named = typed.ensure_named_fields_are_members

    def fields_of(value: Any) -> FieldSet:
        return named(typed.to_field_set(value, shape), shape)

    last = named(last, shape)
    owned = FieldSet()
    for entry in managed.values():
        owned = owned.union(entry.fields)
    merged_fields = fields_of(merged)
    pruned = typed.remove_items(merged, last, shape)
    pruned = typed.remove_items(merged, merged_fields.difference(fields_of(pruned).union(named(owned, shape))), shape)
    return typed.remove_items(merged, merged_fields.difference(fields_of(pruned)).intersection(last), shape)


def _cap(managed: Managed) -> Managed:
    """At most ten Update entries: the oldest are merged, per apiVersion, into `ancient-changes`."""
    updaters = [o for o in managed if o.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    managed = dict(managed)
    updaters.sort(key=lambda o: (managed[o].time or "", o.manager))
    first_of_version: dict[str, Owner] = {}
    count = len(updaters)
    for owner in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        owned = managed[owner]
        bucket = Owner(ANCIENT_CHANGES, UPDATE, owned.api_version)
        first = first_of_version.get(owned.api_version)
        if first is None:
            first_of_version[owned.api_version] = owner
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first)
        managed[bucket] = Owned(owned.fields.union(managed[bucket].fields), owned.api_version, owned.time)
        del managed[owner]
        count -= 1
    return managed
