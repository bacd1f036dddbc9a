"""The fields a create gives its manager, as FieldsV1, in one walk.

Every create records an Update entry for its manager. The general answer is
updater.update(zero, new, ...) with nobody owning anything yet: compare the kind's zero object
with the new one, take what was added or changed, drop the fields the endpoint ignores and the
server-set metadata (updater.STRIPPED), then print the set as FieldsV1. fields_v1 computes exactly
that set and prints it directly, without building the comparison's three field sets, because a
create is the most frequent write there is. tests/server/machinery/fields/test_created.py holds it to
updater.update over every kind's objects.
"""

from __future__ import annotations

from typing import Any

from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.path import Element
from server.machinery.fields.shapes import SCALAR, ListShape, MapShape, Shape
from server.machinery.fields.typed import (
    MISSING,
    as_container,
    index_items,
    is_list,
    is_map,
    item_element,
    json_equal,
)
from server.machinery.fields.updater import STRIPPED

FieldsV1 = dict[str, Any]


def fields_v1(zero: Any, new: Any, shape: Shape, ignored: FieldSet | None) -> FieldsV1:
    """What updater.update would record for a create of `new` (compared with the kind's `zero`), as
    FieldsV1; {} when the create sets nothing a manager can own."""
    return _print(_changed(zero, new, shape, STRIPPED, ignored))


# A node of the result: element -> (member, entries below it).
_Node = dict[Element, tuple[bool, "_Node"]]


def _changed(old: Any, new: Any, shape: Shape, stripped: FieldSet | None, ignored: FieldSet | None) -> _Node:
    """The added and modified paths below two containers of the same kind (old may be MISSING)."""
    node: _Node = {}
    if isinstance(shape, ListShape) and shape.kind == "list":
        old_items = index_items(shape, old) if old is not MISSING else {}
        for element, item in index_items(shape, new).items():
            _child(node, element, old_items.get(element, MISSING), item, shape.elem, stripped, ignored, False)
        return node
    old_map = old if old is not MISSING else {}
    for name, value in new.items():
        inner = shape.field(name)
        if inner is None:
            continue
        before = old_map.get(name, MISSING)
        if type(before) is type(value) and before == value:
            continue
        _child(node, ("f", name), before, value, inner, stripped, ignored, True)
    return node


def _child(node: _Node, element: Element, old: Any, new: Any, shape: Shape, stripped: FieldSet | None,
           ignored: FieldSet | None, skips: bool) -> None:
    """Record element's part of the change. `skips`: compare's skip set applies here (map fields, not
    list items)."""
    below_stripped = stripped.children.get(element) if stripped is not None else None
    if skips and below_stripped is None and stripped is not None and element in stripped.members:
        return  # server-set, never compared
    if ignored is not None and element in ignored.members:
        return  # the endpoint resets it: with everything below
    below_ignored = ignored.children.get(element) if ignored is not None else None
    old = as_container(old, new, shape)
    if old is MISSING:
        member, below = True, _everything(new, shape, below_stripped, below_ignored)
    elif (is_map(old, shape) and is_map(new, shape)) or (is_list(old, shape) and is_list(new, shape)):
        member, below = False, _changed(old, new, shape, below_stripped, below_ignored)
    elif not json_equal(old, new):
        member, below = True, {}
    else:
        return
    if member and stripped is not None and element in stripped.members:
        member = False
    if member or below:
        node[element] = (member, below)


def _everything(value: Any, shape: Shape, stripped: FieldSet | None, ignored: FieldSet | None) -> _Node:
    """Every path below an added value, each a member."""
    node: _Node = {}
    if is_map(value, shape):
        if isinstance(shape, MapShape) and shape.elem is SCALAR and stripped is None and ignored is None:
            return {("f", name): (True, {}) for name in value}  # labels, data: one member per key
        for name, inner in value.items():
            inner_shape = shape.field(name)
            if inner_shape is not None:
                _added(node, ("f", name), inner, inner_shape, stripped, ignored)
    elif isinstance(shape, ListShape) and is_list(value, shape):
        for position, item in enumerate(value):
            _added(node, item_element(shape, position, item), item, shape.elem, stripped, ignored)
    return node


def _added(node: _Node, element: Element, value: Any, shape: Shape, stripped: FieldSet | None,
           ignored: FieldSet | None) -> None:
    if ignored is not None and element in ignored.members:
        return
    below_stripped = stripped.children.get(element) if stripped is not None else None
    below_ignored = ignored.children.get(element) if ignored is not None else None
    below: _Node = {}
    if is_map(value, shape) or is_list(value, shape):
        below = _everything(value, shape, below_stripped, below_ignored)
    member = stripped is None or element not in stripped.members
    if member or below:
        node[element] = (member, below)


def _print(node: _Node) -> FieldsV1:
    """FieldsV1 as FieldSet.to_fields_v1 writes it: elements sorted, `".": {}` for a member with children."""
    out: FieldsV1 = {}
    for element in sorted(node):
        member, below = node[element]
        kind, data = element
        text = "f:" + data if kind == "f" else f"{kind}:{data}"
        if not below:
            out[text] = {}
        elif member:
            out[text] = {".": {}, **_print(below)}
        else:
            out[text] = _print(below)
    return out
