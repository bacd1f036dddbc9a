"""Reading untyped JSON (objects as the core holds them) without tripping over a member of the wrong type:
each reader answers the member when it has the expected type and an empty value otherwise, as Go's typed
structs read a missing or mistyped field as its zero value."""

from __future__ import annotations

from typing import Any

# A JSON-shaped object: the Kubernetes "unstructured" form the core works on.
Obj = dict[str, Any]


def dict_of(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def list_of(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""
