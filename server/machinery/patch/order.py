"""The element order of a merged list, as strategicpatch settles it.

A merged list is split into the items the patch names and the items only the server has. Each part
keeps its own order (the patch's, or $setElementOrder's; the live list's), then the two are
interleaved by the live order where both items are live, the patch item first otherwise
(normalizeElementOrder, mergeSortedSlice). Example, finalizers live [a, b, c] patched with [d, a]:

    patch items [d, a], server-only [b, c]  ->  [d, a, b, c]
      (b vs d: d is not live, so d goes first; b vs a: a is live before b, so a; then b, c)

Lists of objects are matched by their merge key, other lists by value, comparing as Go does
(server/machinery/patch/values.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.machinery.gofmt import MAP_TYPE, go_v
from server.machinery.patch.directives import DELETE, DIRECTIVE, REPLACE, SET_ELEMENT_ORDER
from server.machinery.patch.errors import bad_arg_type, failed, lists_of_lists, no_merge_key
from server.machinery.patch.values import identity, same


def element_type(*lists: list[Any]) -> type:
    """The one type of every element of the lists (sliceElementType)."""
    first: type | None = None
    for items in lists:
        for item in items:
            if first is None:
                first = type(item)
                if first is list:
                    raise lists_of_lists()
            elif type(item) is not first:
                raise failed(f"list element types are not identical: {go_v(list(lists))}")
    if first is None:
        raise failed("no elements in any of the given slices")
    return first


def find(items: list[Any], merge_key: str, value: Any) -> int | None:
    """The index of the first object whose merge key equals value (findMapInSliceBasedOnKeyValue)."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise failed(f"value for key {index} is not a map.")
        if merge_key in item and same(item[merge_key], value):
            return index
    return None


def partition(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """The items of merged that `by` names, and the others (partition*ByPresentInList)."""
    named: list[Any] = []
    others: list[Any] = []
    if not merge_key:
        present = {identity(item) for item in by} - {None}
        for item in merged:
            (named if identity(item) in present else others).append(item)
        return named, others
    for item in merged:
        if not isinstance(item, dict):
            raise bad_arg_type(MAP_TYPE, item)
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        (named if find(by, merge_key, item[merge_key]) is not None else others).append(item)
    return named, others


def normalize(named: list[Any], others: list[Any], named_order: list[Any], live: list[Any], *,
              merge_key: str, objects: bool) -> list[Any]:
    """Sort named by named_order and others by live, then interleave them by live (normalizeElementOrder)."""
    named = _sort(named, named_order, merge_key, objects)
    others = _sort(others, live, merge_key, objects)
    position = _positions(live, merge_key, objects)
    result: list[Any] = []
    i = j = 0
    while i < len(others) and j < len(named):
        left, right = position(others[i]), position(named[j])
        if 0 <= left < right:
            result.append(others[i])
            i += 1
        else:
            result.append(named[j])
            j += 1
    return result + others[i:] + named[j:]


def aliased_live(live: list[Any], change: list[Any], merge_key: str) -> list[Any]:
    """The live list of objects as strategicpatch's Go slice reads it once change is merged into it.

    mergeSlice deletes `$patch: delete` elements by shifting the live slice's tail down in place
    (append(s[:k], s[k+1:]...)) and then appends new elements into the room that frees, all in the
    live slice's backing array, so the live slice (its length unchanged) reads differently after:

        live [1, 2, 4]  merged with  [3, {1: delete}]  reads  [2, 4, 3]

    $setElementOrder interleaves server-only items by this order, and kube-apiserver's results (and
    apimachinery's test fixtures, e.g. "add map and delete map from merging list") depend on it.
    Writes past the live length land outside the slice, whatever its capacity."""
    view = list(live)
    length = len(view)
    replaced = False
    for item in change:
        if item.get(DIRECTIVE) == DELETE:
            while (index := find(view[:length], merge_key, item[merge_key])) is not None:
                view[index:length - 1] = view[index + 1:length]
                length -= 1
        elif item.get(DIRECTIVE) == REPLACE:
            replaced = True  # the merged list is a new slice: nothing more is written through
    if replaced:
        return view
    merged = view[:length]
    for item in change:
        if DIRECTIVE not in item and find(merged, merge_key, item[merge_key]) is None:
            if len(merged) < len(view):
                view[len(merged)] = item
            merged.append(item)
    return view


def validate(change: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list's items must appear in $setElementOrder, in its order (validatePatchWithSetOrderList)."""
    if not order or not change:
        return
    items = split_deletes(change)[0] if merge_key else change
    i = j = 0
    while i < len(items) and j < len(order):
        if isinstance(items[i], dict) and DIRECTIVE in items[i]:
            i += 1
            continue
        if _key_equal(items[i], order[j], merge_key):
            i += 1
        j += 1
    if i < len(items) and j >= len(order):
        raise failed(f"The order in patch list:\n{go_v(change)}\n doesn't match {SET_ELEMENT_ORDER} list:\n"
                     f"{go_v(order)}\n")


def split_deletes(items: list[Any]) -> tuple[list[Any], list[Any]]:
    """Objects without and with `$patch: delete` (extractToDeleteItems)."""
    kept: list[Any] = []
    deleted: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise bad_arg_type(MAP_TYPE, item)
        (deleted if item.get(DIRECTIVE) == DELETE else kept).append(item)
    return kept, deleted


def _sort(items: list[Any], order: list[Any], merge_key: str, objects: bool) -> list[Any]:
    """Items stably sorted by their place in order, `$patch: delete` objects last (normalizeSliceOrder).

    Every item reachable here is in order; strategicpatch leaves unmatched items' places to Go's
    sort, and here they go after the matched ones."""
    deleted: list[Any] = []
    if objects:
        for item in (*items, *order):
            if not isinstance(item, dict):
                raise bad_arg_type(MAP_TYPE, item)
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
        items, deleted = split_deletes(items)
    position = _positions(order, merge_key, objects)

    def place(item: Any) -> int:
        index = position(item)
        return index if index >= 0 else len(order)

    return sorted(items, key=place) + deleted


def _positions(order: list[Any], merge_key: str, objects: bool) -> Callable[[Any], int]:
    """item -> the index of its first match in order, or -1 (strategicpatch's index())."""

    def key_of(item: Any) -> Any:
        if not objects:
            return item
        return item.get(merge_key) if isinstance(item, dict) else None

    first: dict[tuple[type, Any], int] = {}
    compound: list[tuple[int, Any]] = []
    for index, item in enumerate(order):
        value = key_of(item)
        hashed = identity(value)
        if hashed is None:
            compound.append((index, value))
        else:
            first.setdefault(hashed, index)

    def position(item: Any) -> int:
        value = key_of(item)
        hashed = identity(value)
        if hashed is not None:
            return first.get(hashed, -1)
        return next((index for index, other in compound if same(other, value)), -1)

    return position


def _key_equal(left: Any, right: Any, merge_key: str) -> bool:
    """mergeKeyValueEqual: whole values for scalars, merge keys for objects."""
    if not merge_key:
        return same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise bad_arg_type(MAP_TYPE, item)
    for item in (left, right):
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
    return same(left[merge_key], right[merge_key])
