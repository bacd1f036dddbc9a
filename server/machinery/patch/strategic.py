"""Strategic merge patch (application/strategic-merge-patch+json), applied as kube-apiserver applies it.

This is the apply half of apimachinery's strategicpatch (StrategicMergeMapPatch: parallel lists
merged, unmatched nulls ignored), with the kind's Go struct tags read from its protobuf descriptors
and server/machinery/schema_hints.py (server/machinery/patch/schema.py). The rules, for a patch key k:

    null                    deletes k
    k not live, or live with another JSON type
                            takes the patch value, its nulls and `$patch` objects dropped
    object over object      merges recursively (a field tagged patchStrategy=replace is replaced)
    list over list          replaced, unless the field is tagged patchStrategy=merge: then objects
                            merge by patchMergeKey (new ones join) and scalars are unioned
                            (server/machinery/patch/lists.py)
    scalar                  replaces

and the directives (server/machinery/patch/directives.py):

    {"$patch": "replace", ...}           this object is the patch minus the directive
    {"$patch": "delete"}                 this object becomes {}
    [{"$patch": "delete", "uid": x}]     in a merged list: drop the element whose key is x
    [{"$patch": "replace"}, ...]         in a merged list: the list is the other elements
    "$retainKeys": [names]               drop the live keys not named (the patch may only set those)
    "$deleteFromPrimitiveList/f": [v]    drop values v from the list f
    "$setElementOrder/f": [v or {key}]   order the merged list f so

`$patch: merge` is an error, as in kube-apiserver ("merging lists cannot yet be specified in the
patch" in a list, "unknown patch type" on an object). Example, ObjectMeta.ownerReferences merging
by uid and finalizers as a set; the patch's items come first unless the live order puts a
server-only item before one of them (server/machinery/patch/order.py):

    live   {"metadata": {"ownerReferences": [{"uid": "a", "name": "x"}], "finalizers": ["f"]}}
    patch  {"metadata": {"ownerReferences": [{"uid": "b", "name": "y"}], "finalizers": ["g"]}}
    result {"metadata": {"ownerReferences": [{"uid": "b", ...}, {"uid": "a", ...}], "finalizers": ["g", "f"]}}

Where Go iterates a map (the patch's keys) in random order, this follows the patch's key order.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor

from server.machinery.patch import directives, lists
from server.machinery.patch.directives import DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE, REPLACE, JSONMap
from server.machinery.patch.errors import BAD_PRIMITIVE_LIST, PatchError, UnsupportedPatchError
from server.machinery.patch.merge import create_merge_patch, merge_patch
from server.machinery.patch.schema import GoType, lookup_slice, lookup_struct, struct_of
from server.machinery.patch.values import copy_json

__all__ = ["PatchError", "UnsupportedPatchError", "apply_strategic", "create_merge_patch", "merge_patch"]


def apply_strategic(original: JSONMap, patch: JSONMap, descriptor: Descriptor | None) -> JSONMap:
    """original patched by patch, for an object of the message `descriptor`; a new dict.

    Raises UnsupportedPatchError when descriptor is None (an object without a schema, as a custom
    resource: kube-apiserver takes no strategic merge patch for those) and PatchError for a patch
    kube-apiserver refuses, carrying its code, reason and message."""
    if descriptor is None:
        raise UnsupportedPatchError()
    return _merge_map(copy_json(original), copy_json(patch), struct_of(descriptor))


def _merge_map(live: JSONMap, patch: JSONMap, schema: GoType) -> JSONMap:
    """mergeMap: patch merged into live, both owned here and changed in place."""
    if DIRECTIVE in patch:
        return directives.object_directive(patch)
    directives.retain_keys(live, patch)
    lists.set_element_orders(live, patch, schema, _merge_map)
    for key, value in list(patch.items()):
        delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if delete_list:
            key = directives.field_of(key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST)
        if value is None:
            live.pop(key, None)
            continue
        current = live.get(key)
        if key not in live or type(current) is not type(value):
            if not delete_list:  # a deletion list with nothing to delete from is dropped
                _take(live, key, value)
            continue
        if isinstance(current, dict) and isinstance(value, dict):
            field_type, meta = lookup_struct(schema, key)
            merge = directives.strategy(meta) != REPLACE
            live[key] = _merge_map(current, value, field_type) if merge else value
        elif isinstance(current, list) and isinstance(value, list):
            element, meta = lookup_slice(schema, key)
            live[key] = lists.merge_list_field(current, value, element, meta, delete_list=delete_list,
                                               merge_map=_merge_map)
        else:
            live[key] = value
    return live


def _take(live: JSONMap, key: str, value: Any) -> None:
    """A patch value with nothing live to merge into: kept without its nulls and `$patch` objects."""
    directives.discard_nulls(value)
    kept, keep = directives.without_directives(value)
    if keep:
        live[key] = kept
    else:
        live.pop(key, None)
