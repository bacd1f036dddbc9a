"""Objects read through their shape: the field set an object sets, what changed between two
objects, an apply configuration merged onto a live object, and fields taken out of an object.

These are structured-merge-diff's walks (typed.TypedValue's ToFieldSet, Compare, Merge and
RemoveItems), with its rules:

    ToFieldSet  every leaf is a member; so is every list item, every free map key (labels.app), and
                a struct field whose value is null or {}; a struct field holding a non-empty
                object is reached through, not a member itself
    Compare     a path present on one side only is added/removed with everything below it; a leaf
                whose value differs is modified
    Merge       the configuration wins leaves and atomic values; objects merge key by key; lists of
                type set/map merge item by item, the configuration's order kept for its items
    RemoveItems a member goes with everything below it

Values are the JSON forms the core keeps (dict, list, str, int, float, bool, None); MISSING marks
an absent value, which JSON null is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.machinery.fields import path as fp
from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.path import Element
from server.machinery.fields.shapes import SCALAR, UNTYPED, ListShape, MapShape, Shape

MISSING: Any = object()
_MAPS = ("struct", "map", "untyped")


def to_field_set(value: Any, shape: Shape) -> FieldSet:
    root = FieldSet()
    _collect(value, shape, root)
    return root


@dataclass(frozen=True, slots=True)
class Comparison:
    added: FieldSet
    modified: FieldSet
    removed: FieldSet


def compare(old: Any, new: Any, shape: Shape, skip: FieldSet | None = None) -> Comparison:
    """What changed from old to new (either may be MISSING); both are objects of the shape. Paths that
    are leaves of `skip` (members without children there) are not looked at."""
    result = Comparison(FieldSet(), FieldSet(), FieldSet())
    _compare_children(old, new, shape, result.added, result.modified, result.removed, skip)
    return result


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """config merged onto live (a new value; unchanged parts are shared with the inputs)."""
    if config is MISSING:
        return live
    if live is MISSING:
        return config
    if is_map(live, shape) and is_map(config, shape):
        out = dict(live)
        for name, theirs in config.items():
            out[name] = merge(live.get(name, MISSING), theirs, shape.field(name) or UNTYPED)
        return out
    if isinstance(shape, ListShape) and is_list(live, shape) and is_list(config, shape):
        return _merge_list(live, config, shape)
    return config


def remove_items(value: Any, fields: FieldSet, shape: Shape) -> Any:
    """value without the members of fields (each with everything below it)."""
    if is_map(value, shape):
        out = {}
        for name, inner in value.items():
            element = ("f", name)
            if element in fields.members:
                continue
            below = fields.children.get(element)
            out[name] = remove_items(inner, below, shape.field(name) or UNTYPED) if below is not None else inner
        return out
    if isinstance(shape, ListShape) and is_list(value, shape):
        items = []
        for position, item in enumerate(value):
            element = item_element(shape, position, item)
            if element in fields.members:
                continue
            below = fields.children.get(element)
            items.append(remove_items(item, below, shape.elem) if below is not None else item)
        return items
    return value


def ensure_named_fields_are_members(fields: FieldSet, shape: Shape) -> FieldSet:
    """fields plus every struct field it reaches through (`a` for `a.b.c`), but not free map keys."""
    members = set(fields.members)
    children: dict[Element, FieldSet] = {}
    for element, below in fields.children.items():
        inner: Shape
        if element[0] == "f":
            if shape.is_declared(element[1]):
                members.add(element)
            inner = shape.field(element[1]) or UNTYPED
        else:
            inner = shape.elem if isinstance(shape, ListShape) else UNTYPED
        children[element] = ensure_named_fields_are_members(below, inner)
    return FieldSet(members, children)


# --- walks --------------------------------------------------------------------------------------


def is_map(value: Any, shape: Shape) -> bool:
    return type(value) is dict and shape.kind in _MAPS and not shape.atomic


def is_list(value: Any, shape: Shape) -> bool:
    return type(value) is list and shape.kind == "list" and not shape.atomic


def as_container(value: Any, other: Any, shape: Shape) -> Any:
    """A null compared with a list or map that merges item by item is that container, empty: a Go nil slice
    (a field without omitempty) is there, unlike an absent one, so structured-merge-diff records the items
    that came or went, not the field itself."""
    if value is None and (is_list(other, shape) or is_map(other, shape)):
        return type(other)()
    return value


def item_element(shape: ListShape, position: int, item: Any) -> Element:
    if shape.list_type == "map" and type(item) is dict:
        return fp.key({**dict(shape.key_defaults), **item} if shape.key_defaults else item, shape.keys)
    if shape.list_type == "set":
        return fp.value(item)
    return fp.index(position)


def _collect(value: Any, shape: Shape, node: FieldSet) -> None:
    if is_map(value, shape):
        for name, inner in value.items():
            inner_shape = shape.field(name)
            if inner_shape is None:
                continue  # not a field of the kind: dropped before it is stored
            element = ("f", name)
            if not (is_map(inner, inner_shape) or is_list(inner, inner_shape)):
                node.members.add(element)
                continue
            below = FieldSet()
            _collect(inner, inner_shape, below)
            if not below.empty():
                node.children[element] = below
            if not inner or not shape.is_declared(name):
                node.members.add(element)
    elif isinstance(shape, ListShape) and is_list(value, shape):
        for position, item in enumerate(value):
            element = item_element(shape, position, item)
            node.members.add(element)
            if is_map(item, shape.elem) or is_list(item, shape.elem):
                below = FieldSet()
                _collect(item, shape.elem, below)
                if not below.empty():
                    node.children[element] = below


def _compare_children(old: Any, new: Any, shape: Shape, added: FieldSet, modified: FieldSet,
                      removed: FieldSet, skip: FieldSet | None = None) -> None:
    """Fill the three nodes for the children of two containers of the same kind (or MISSING)."""
    if isinstance(shape, ListShape) and shape.kind == "list":
        old_items = index_items(shape, old) if old is not MISSING else {}
        new_items = index_items(shape, new) if new is not MISSING else {}
        names: Any = old_items.keys() | new_items.keys()
        elem: Shape = shape.elem
        for element in names:
            _compare_child(element, old_items.get(element, MISSING), new_items.get(element, MISSING), elem,
                           added, modified, removed)
        return
    old_map = old if old is not MISSING else {}
    new_map = new if new is not MISSING else {}
    if skip is None and isinstance(shape, MapShape) and shape.elem is SCALAR:
        _compare_scalars(old_map, new_map, added, modified, removed)
        return
    for name in old_map.keys() | new_map.keys():
        inner = shape.field(name)
        if inner is None:
            continue
        o, n = old_map.get(name, MISSING), new_map.get(name, MISSING)
        if type(o) is type(n) and o == n:
            continue  # unchanged: most of an update, settled in C
        element = ("f", name)
        below = None
        if skip is not None:
            below = skip.children.get(element)
            if below is None and element in skip.members:
                continue
        _compare_child(element, o, n, inner, added, modified, removed, below)


def _compare_scalars(old: dict[str, Any], new: dict[str, Any], added: FieldSet, modified: FieldSet,
                     removed: FieldSet) -> None:
    """_compare_children of a map of scalars (data, labels, annotations), key by key in one loop: every key
    is a leaf, added, removed or modified."""
    for name, n in new.items():
        o = old.get(name, MISSING)
        if o is MISSING:
            added.members.add(("f", name))
        elif not (type(o) is type(n) and o == n) and not json_equal(o, n):
            modified.members.add(("f", name))
    if not old.keys() <= new.keys():
        removed.members.update(("f", name) for name in old if name not in new)


def _compare_child(element: Element, old: Any, new: Any, shape: Shape, added: FieldSet, modified: FieldSet,
                   removed: FieldSet, skip: FieldSet | None = None) -> None:
    old, new = as_container(old, new, shape), as_container(new, old, shape)
    if old is MISSING or new is MISSING:
        target, value = (added, new) if old is MISSING else (removed, old)
        _everything_child(target, element, value, shape)
        return
    if (is_map(old, shape) and is_map(new, shape)) or (is_list(old, shape) and is_list(new, shape)):
        a, m, r = FieldSet(), FieldSet(), FieldSet()
        _compare_children(old, new, shape, a, m, r, skip)
        for node, below in ((added, a), (modified, m), (removed, r)):
            if below.members or below.children:
                node.children[element] = below
    elif not json_equal(old, new):
        modified.members.add(element)


def _everything(value: Any, shape: Shape) -> FieldSet:
    """Every path below value, each a member: what comes or goes with a whole subtree."""
    node = FieldSet()
    if is_map(value, shape):
        if isinstance(shape, MapShape) and shape.elem is SCALAR:  # labels, data: one member per key
            node.members.update(("f", name) for name in value)
            return node
        for name, inner in value.items():
            inner_shape = shape.field(name)
            if inner_shape is not None:
                _everything_child(node, ("f", name), inner, inner_shape)
    elif isinstance(shape, ListShape) and is_list(value, shape):
        for position, item in enumerate(value):
            _everything_child(node, item_element(shape, position, item), item, shape.elem)
    return node


def _everything_child(node: FieldSet, element: Element, value: Any, shape: Shape) -> None:
    node.members.add(element)
    if is_map(value, shape) or is_list(value, shape):
        below = _everything(value, shape)
        if below.members:
            node.children[element] = below


def index_items(shape: ListShape, items: list[Any]) -> dict[Element, Any]:
    out: dict[Element, Any] = {}
    for position, item in enumerate(items):
        out.setdefault(item_element(shape, position, item), item)
    return out


def _merge_list(live: list[Any], config: list[Any], shape: ListShape) -> list[Any]:
    """structured-merge-diff's list merge: the configuration's items in its order, merged with the
    live item of the same key; live items it does not name stay where they were."""
    live_elements = [item_element(shape, i, item) for i, item in enumerate(live)]
    config_elements = [item_element(shape, i, item) for i, item in enumerate(config)]
    live_items = index_items(shape, live)
    config_items = index_items(shape, config)
    shared = iter([e for e in config_elements if e in live_items])
    next_shared = next(shared, None)
    merged: set[Element] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(live) or ri < len(config):
        if li < len(live) and ri < len(config):
            element = live_elements[li]
            if element == config_elements[ri]:
                merged.add(element)
                out.append(merge(live_items[element], config_items[element], shape.elem))
                li, ri = li + 1, ri + 1
                next_shared = next(shared, None)
                continue
            if element in config_items and next_shared is not None and next_shared != element:
                li += 1  # shared, but not the one this round takes
                continue
        if li < len(live):
            element = live_elements[li]
            if element not in config_items:
                out.append(live[li])
                li += 1
                continue
            if element in merged:
                li += 1
                continue
        if ri < len(config):
            element = config_elements[ri]
            merged.add(element)
            out.append(merge(live_items.get(element, MISSING), config_items[element], shape.elem))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta is dict:
        return tb is dict and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if ta is list:
        return tb is list and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)  # scalars (a dict or list on one side only never equals one)
