"""The `$`-keys of a strategic merge patch and the rules that touch only one object.

    "$patch": "replace" | "delete"        on an object or a list element
    "$retainKeys": [names]                on an object
    "$deleteFromPrimitiveList/<field>"    beside a list of scalars
    "$setElementOrder/<field>"            beside a merged list

Anything else starting with `$` is an ordinary key to strategicpatch (and an unknown field later).
"""

from __future__ import annotations

from typing import Any

from server.machinery.gofmt import go_v
from server.machinery.patch.errors import BAD_RETAIN_KEYS, bad_patch_type, bad_request, failed
from server.machinery.patch.schema import PatchMeta

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

JSONMap = dict[str, Any]


def object_directive(patch: JSONMap) -> JSONMap:
    """handleDirectiveInMergeMap: `$patch` on an object replaces it by the rest of the patch, or empties it."""
    directive = patch[DIRECTIVE]
    if directive == REPLACE:
        del patch[DIRECTIVE]
        return patch
    if directive == DELETE:
        return {}
    raise bad_patch_type(directive, patch)


def field_of(key: str, prefix: str, malformed: str) -> str:
    """"$setElementOrder/finalizers" -> "finalizers" (extractKey); 400 `malformed` for another shape."""
    head, slash, field = key.partition("/")
    if not slash or head != prefix:
        raise bad_request(malformed)
    return field


def strategy(meta: PatchMeta) -> str:
    """The field's patch strategy other than retainKeys (extractRetainKeysPatchStrategy)."""
    strategies = meta.strategies
    if len(strategies) <= 1:
        return "" if not strategies or strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2 and "retainKeys" in strategies:
        return strategies[1] if strategies[0] == "retainKeys" else strategies[0]
    raise failed(f"unexpected patch strategy: {go_v(list(strategies))}")


def retain_keys(live: JSONMap, patch: JSONMap) -> None:
    """applyRetainKeysDirective: keep only the named live keys; the patch may set no others.

    The directive applies wherever it appears, whatever the field's patch strategy."""
    if RETAIN_KEYS not in patch:
        return
    names = patch.pop(RETAIN_KEYS)
    if not isinstance(names, list):
        raise bad_request(BAD_RETAIN_KEYS)
    retained = {name for name in names if isinstance(name, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in retained:
            raise bad_request(BAD_RETAIN_KEYS)
    for key in [key for key in live if key not in retained]:
        del live[key]


def discard_nulls(value: Any) -> None:
    """discardNullValuesFromPatch: drop null members of every object in value, in place."""
    if isinstance(value, dict):
        for key in [key for key, item in value.items() if item is None]:
            del value[key]
        for item in value.values():
            discard_nulls(item)
    elif isinstance(value, list):
        for item in value:
            discard_nulls(item)


def without_directives(value: Any) -> tuple[Any, bool]:
    """removeDirectives: value without the objects holding `$patch`; False when value itself holds one."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for key, item in list(value.items()):
            kept, keep = without_directives(item)
            if keep:
                value[key] = kept
            else:
                del value[key]
        return value, True
    if isinstance(value, list):
        return [kept for kept, keep in map(without_directives, value) if keep], True
    return value, True
