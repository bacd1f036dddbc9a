"""JSON values as Go's decoded interface{} compares them: typed.

Go's `==` on interface values compares type and value, so int64 1, float64 1 and true are three
different merge keys or list members; Python's `1 == 1.0 == True` would merge them. `same` and
`identity` keep Go's distinction; `copy_json` lets the engines work on private copies, as
strategicpatch mutates its inputs.
"""

from __future__ import annotations

from typing import Any


def copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def same(left: Any, right: Any) -> bool:
    """Deep JSON equality that tells 1, 1.0 and true apart."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def identity(value: Any) -> tuple[type, Any] | None:
    """A hashable stand-in for a scalar (type included); None for an object or array."""
    if isinstance(value, dict | list):
        return None
    return (type(value), value)
