"""Lists in a strategic merge patch: merged by key or by value, then put in order.

A list merges only when its field is tagged patchStrategy=merge (or it is a deletion list);
otherwise the patch's list replaces the live one. Objects merge by patchMergeKey, scalars are
unioned. The objects of a list merge with the merge_map they are given (strategic's), so the
two modules recurse without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.machinery.gofmt import LIST_TYPE
from server.machinery.patch import order
from server.machinery.patch.directives import (
    DELETE,
    DIRECTIVE,
    MERGE,
    REPLACE,
    SET_ELEMENT_ORDER,
    JSONMap,
    field_of,
    strategy,
    without_directives,
)
from server.machinery.patch.errors import BAD_SET_ELEMENT_ORDER, bad_arg_type, bad_patch_type, failed, no_merge_key
from server.machinery.patch.schema import GoType, PatchMeta, lookup_slice
from server.machinery.patch.values import identity, same

MergeMap = Callable[[JSONMap, JSONMap, GoType], JSONMap]


def set_element_orders(live: JSONMap, patch: JSONMap, schema: GoType, merge_map: MergeMap) -> None:
    """mergePatchIntoOriginal: merge each list a $setElementOrder names, then order it so; both keys
    leave the patch."""
    for directive in [key for key in patch if key.startswith(SET_ELEMENT_ORDER)]:
        wanted = patch.pop(directive)
        if not isinstance(wanted, list):
            raise bad_arg_type(LIST_TYPE, wanted)
        key = field_of(directive, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)
        in_live, in_patch = key in live, key in patch
        current, change = live.get(key), patch.get(key)
        if in_live and not isinstance(current, list):
            raise bad_arg_type(LIST_TYPE, current)
        if in_patch and not isinstance(change, list):
            raise bad_arg_type(LIST_TYPE, change)
        current_list: list[Any] = current if isinstance(current, list) else []
        change_list: list[Any] = change if isinstance(change, list) else []
        element, meta = lookup_slice(schema, key)
        strategy(meta)  # a malformed strategy fails here, before the order is checked
        order.validate(change_list, wanted, meta.merge_key)
        if in_live and in_patch:
            merged = merge_list_field(current_list, change_list, element, meta, delete_list=False, merge_map=merge_map)
        elif in_live:
            merged = current_list
        elif in_patch:
            merged = without_directives(change_list)[0]
        else:
            continue
        named, others = order.partition(merged, wanted, meta.merge_key)
        objects = order.element_type(current_list, change_list) is dict
        live_order = current_list
        if in_live and in_patch and objects and strategy(meta) == MERGE:
            live_order = order.aliased_live(current_list, change_list, meta.merge_key)
        live[key] = order.normalize(named, others, wanted, live_order, merge_key=meta.merge_key, objects=objects)
        patch.pop(key, None)


def merge_list_field(current: list[Any], change: list[Any], element: GoType, meta: PatchMeta, *,
                     delete_list: bool, merge_map: MergeMap) -> list[Any]:
    """mergeSliceHandler: merge lists tagged patchStrategy=merge (and deletion lists); replace others."""
    if strategy(meta) != MERGE and not delete_list:
        return change
    if not current and not change:
        return current
    objects = order.element_type(current, change) is dict
    if not objects:
        if delete_list:
            doomed = {identity(item) for item in change}
            return [item for item in current if identity(item) not in doomed]
        merged = _union(current, change)
    else:
        if not meta.merge_key:
            raise failed(f"cannot merge lists without merge key for {element.kind}")
        current, change = _element_directives(current, change, meta.merge_key)
        merged = _merge_elements(current, change, meta.merge_key, element, merge_map)
    named, others = order.partition(merged, change, meta.merge_key)
    return order.normalize(named, others, change, current, merge_key=meta.merge_key, objects=objects)


def _union(current: list[Any], change: list[Any]) -> list[Any]:
    """The distinct scalars of both lists (deduplicateScalars; the order is settled afterwards)."""
    seen: set[Any] = set()
    result = []
    for item in (*current, *change):
        hashed = identity(item)
        if hashed not in seen:
            seen.add(hashed)
            result.append(item)
    return result


def _element_directives(current: list[Any], change: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """mergeSliceWithSpecialElements: apply the `$patch` elements; the live list and the plain patch elements."""
    plain = []
    replace = False
    for item in change:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            current = [kept for kept in current if not (merge_key in kept and same(kept[merge_key], item[merge_key]))]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise failed("merging lists cannot yet be specified in the patch")
        else:
            raise bad_patch_type(directive, item)
    return (plain, []) if replace else (current, plain)


def _merge_elements(current: list[Any], change: list[Any], merge_key: str, element: GoType,
                    merge_map: MergeMap) -> list[Any]:
    """mergeSliceWithoutSpecialElements: each patch object merges into the live one with its key, or joins."""
    merged = list(current)
    for item in change:
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        index = order.find(merged, merge_key, item[merge_key])
        if index is None:
            merged.append(item)
        else:
            merged[index] = merge_map(merged[index], item, element)
    return merged
