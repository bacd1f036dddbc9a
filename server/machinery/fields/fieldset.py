"""A set of field paths, stored as a tree: structured-merge-diff's fieldpath.Set.

A node holds `members` (elements whose path, from the root to here plus the element, is in the set)
and `children` (sub-trees, one per element). A path can be in the set and have children too: the
FieldsV1 form writes that as `".": {}` in the child, e.g. for a list item and its fields:

    {"f:data": {"f:a": {}}, "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}}}}}

holds .data.a, .spec.containers[name="c"] and .spec.containers[name="c"].image. Operations return
new sets; a set is never changed once another holds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from server.machinery.fields import path as fp
from server.machinery.fields.path import Element, Path


class FieldSet:
    __slots__ = ("children", "members")

    def __init__(self, members: set[Element] | None = None, children: dict[Element, FieldSet] | None = None) -> None:
        self.members: set[Element] = members if members is not None else set()
        self.children: dict[Element, FieldSet] = children if children is not None else {}

    # --- building (only while a set is being made) -----------------------------------------

    def insert(self, path: Path) -> None:
        node = self
        for element in path[:-1]:
            node = node.child(element)
        if path:
            node.members.add(path[-1])

    def child(self, element: Element) -> FieldSet:
        """The sub-tree under element, created when missing (the caller must put a path in it)."""
        node = self.children.get(element)
        if node is None:
            node = self.children[element] = FieldSet()
        return node

    # --- reading ----------------------------------------------------------------------------

    def empty(self) -> bool:
        # Children are never empty (every operation drops empty ones), so this is O(1).
        return not self.members and not self.children

    def has(self, path: Path) -> bool:
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element) if node is not None else None
        return node is not None and bool(path) and path[-1] in node.members

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every path in the set, sorted (a member before its children)."""
        for element in sorted(self.members | self.children.keys()):
            here = (*prefix, element)
            if element in self.members:
                yield here
            child = self.children.get(element)
            if child is not None:
                yield from child.paths(here)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and _pruned(self) == _pruned(other)

    def __repr__(self) -> str:
        return f"FieldSet({[fp.to_string(p) for p in self.paths()]})"

    # --- algebra ----------------------------------------------------------------------------

    def union(self, other: FieldSet) -> FieldSet:
        """self itself when other adds nothing (an update that changes fields its manager owns already)."""
        if other.empty():
            return self
        if self.empty():
            return other
        children: dict[Element, FieldSet] | None = None
        for element, theirs in other.children.items():
            mine = self.children.get(element)
            merged = theirs if mine is None else mine.union(theirs)
            if merged is not mine:
                if children is None:
                    children = dict(self.children)
                children[element] = merged
        members = self.members | other.members
        if children is None and len(members) == len(self.members):
            return self
        return FieldSet(members, children if children is not None else self.children)

    def difference(self, other: FieldSet) -> FieldSet:
        """Paths in self and not in other (other's members do not take self's children with them)."""
        children: dict[Element, FieldSet] = {}
        for element, mine in self.children.items():
            theirs = other.children.get(element)
            rest = mine if theirs is None else mine.difference(theirs)
            if not rest.empty():
                children[element] = rest
        return FieldSet(self.members - other.members, children)

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Paths in self that are neither in other nor below a path in other."""
        children: dict[Element, FieldSet] = {}
        for element, mine in self.children.items():
            if element in other.members:
                continue
            theirs = other.children.get(element)
            rest = mine if theirs is None else mine.recursive_difference(theirs)
            if not rest.empty():
                children[element] = rest
        return FieldSet(self.members - other.members, children)

    def intersection(self, other: FieldSet) -> FieldSet:
        children: dict[Element, FieldSet] = {}
        for element, mine in self.children.items():
            theirs = other.children.get(element)
            if theirs is not None:
                both = mine.intersection(theirs)
                if not both.empty():
                    children[element] = both
        return FieldSet(self.members & other.members, children)

    # --- FieldsV1 ---------------------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """The set as FieldsV1 JSON: one key per element, `".": {}` marking a member with children."""
        out: dict[str, Any] = {}
        members, children = self.members, self.children
        for element in sorted(members.union(children) if children else members):
            kind, data = element
            text = "f:" + data if kind == "f" else f"{kind}:{data}"
            child = children.get(element)
            if child is None:
                out[text] = {}
            elif element in members:
                out[text] = {".": {}, **child.to_fields_v1()}
            else:
                out[text] = child.to_fields_v1()
        return out

    @classmethod
    def from_fields_v1(cls, data: object) -> FieldSet:
        """Raises ValueError for JSON that is not FieldsV1."""
        if not isinstance(data, dict):
            raise ValueError("FieldsV1 must be a JSON object")
        node = cls()
        for text, inner in data.items():
            if text == ".":
                continue
            element = fp.from_fields_v1(text)
            if not isinstance(inner, dict):
                raise ValueError(f"FieldsV1 value of {text!r} must be an object")
            if not inner or "." in inner:
                node.members.add(element)
            child = cls.from_fields_v1(inner)
            if not child.empty():
                node.children[element] = child
        return node


def _pruned(node: FieldSet) -> tuple[frozenset[Element], dict[Element, Any]]:
    return frozenset(node.members), {e: _pruned(c) for e, c in node.children.items() if not c.empty()}
