"""JSON merge patch (RFC 7386, application/merge-patch+json) and the patch between two documents.

    merge_patch({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"d": 3}})  ->  {"b": {"c": 2, "d": 3}}

Objects merge recursively, null deletes a member, anything else (arrays included) replaces.
create_merge_patch(a, b) is the patch that turns a into b: merge_patch(a, create_merge_patch(a, b))
equals b for any b whose objects hold no null members (RFC 7386 cannot set a member to null).

Known difference from kube-apiserver, which uses evanphx/json-patch: that library also prunes
null members of objects nested inside a patch's arrays; RFC 7386 keeps them.
"""

from __future__ import annotations

from typing import Any

from server.machinery.patch.values import copy_json, same


def merge_patch(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """original with patch applied (RFC 7386 MergePatch); a new dict, the inputs untouched."""
    result: dict[str, Any] = _merge(copy_json(original), patch)
    return result


def create_merge_patch(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    """The smallest merge patch that turns original into modified."""
    patch: dict[str, Any] = {key: None for key in original if key not in modified}
    for key, value in modified.items():
        if key not in original:
            patch[key] = copy_json(value)
        elif isinstance(value, dict) and isinstance(original[key], dict):
            nested = create_merge_patch(original[key], value)
            if nested:
                patch[key] = nested
        elif not same(original[key], value):
            patch[key] = copy_json(value)
    return patch


def _merge(target: Any, patch: Any) -> Any:
    """MergePatch(Target, Patch) of RFC 7386 section 2; target is owned here and changed in place."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target
