"""Path elements: how a field set names one step into an object, and how Kubernetes prints them.

    ("f", "data")                      a field or map key       FieldsV1 `f:data`        printed `.data`
    ("k", '{"name":"nginx"}')          a list item by its keys  `k:{"name":"nginx"}`     `[name="nginx"]`
    ("v", '"x"')                       a set item by its value  `v:"x"`                  `[="x"]`
    ("i", 3)                           a list item by position  `i:3`                    `[3]`

Key and value texts are compact JSON with keys sorted, so equal items give equal elements. Elements
sort as tuples (kind letter, then name, text or position): FieldsV1 is written in that order.
"""

from __future__ import annotations

from typing import Any

import orjson

Element = tuple[str, Any]
Path = tuple[Element, ...]

_KINDS = frozenset("fkvi")


def field(name: str) -> Element:
    return ("f", name)


def key(item: dict[str, Any], names: tuple[str, ...]) -> Element:
    return ("k", orjson.dumps({n: item[n] for n in names if n in item}, option=orjson.OPT_SORT_KEYS).decode())


def value(item: Any) -> Element:
    return ("v", orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode())


def index(position: int) -> Element:
    return ("i", position)


def to_fields_v1(element: Element) -> str:
    """The element as a FieldsV1 key: `f:name`, `k:{...}`, `v:...`, `i:n`."""
    kind, data = element
    return f"{kind}:{data}"


def from_fields_v1(text: str) -> Element:
    """Raises ValueError for a key that is not a FieldsV1 path element."""
    kind, sep, data = text.partition(":")
    if not sep or kind not in _KINDS:
        raise ValueError(f"unknown path element {text!r}")
    if kind == "f":
        return ("f", data)
    if kind == "i":
        return ("i", int(data))
    parsed = orjson.loads(data)
    if kind == "k":
        if not isinstance(parsed, dict):
            raise ValueError(f"key element is not an object: {text!r}")
        return ("k", orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode())
    return ("v", orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode())


def to_string(path: Path) -> str:
    """A path as Kubernetes prints it in conflicts: `.spec.containers[name="nginx"].image`."""
    out: list[str] = []
    for kind, data in path:
        if kind == "f":
            out.append("." + data)
        elif kind == "k":
            out.append("[" + ",".join(f"{k}={_go_value(v)}" for k, v in sorted(orjson.loads(data).items())) + "]")
        elif kind == "v":
            out.append(f"[={_go_value(orjson.loads(data))}]")
        else:
            out.append(f"[{data}]")
    return "".join(out)


def _go_value(item: Any) -> str:
    """structured-merge-diff's value.ToString: strings quoted (%q), everything else as Go prints it."""
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, str):
        return orjson.dumps(item).decode()
    if isinstance(item, list):
        return "[" + ",".join(_go_value(v) for v in item) + "]"
    if isinstance(item, dict):
        return "{" + ",".join(f"{k}={_go_value(v)}" for k, v in sorted(item.items())) + "}"
    return str(item)
