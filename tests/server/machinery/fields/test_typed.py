"""Field sets, FieldsV1 and the typed walks (to_field_set, compare, merge, prune), as structured-merge-diff
has them; expectations are FieldsV1 as kube-apiserver writes it and merge results as its apply gives."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.api.core.v1 import core_pb2 as core_v1
from server.machinery.fields import path as fp
from server.machinery.fields import typed
from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.shapes import SCALAR, UNTYPED, ListShape, ListType, MapShape, StructShape, of_message

NAMESPACE = of_message(core_v1.Namespace.DESCRIPTOR)
CONFIG_MAP = of_message(core_v1.ConfigMap.DESCRIPTOR)
ITEMS = ListShape(MapShape(SCALAR), ListType("map", ("name",)))  # e.g. containers by name
HOLDER = CONFIG_MAP


def fields(value: Any, shape: Any) -> dict[str, Any]:
    return typed.to_field_set(value, shape).to_fields_v1()


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param({"data": {"a": "1", "b": "2"}}, {"f:data": {"f:a": {}, "f:b": {}}}, id="map keys are members"),
    pytest.param({"data": {}}, {"f:data": {}}, id="an empty map is a member"),
    pytest.param({"metadata": {"labels": {"app": "x"}, "name": "n"}},
                 {"f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}}}, id="struct fields are reached through"),
    pytest.param({"metadata": {"finalizers": ["b", "a"]}}, {"f:metadata": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}}},
                 id="a set's items by value"),
    pytest.param({"metadata": {"ownerReferences": [{"uid": "u", "name": "o"}]}},
                 {"f:metadata": {"f:ownerReferences": {'k:{"uid":"u"}': {}}}}, id="atomic items of a keyed list"),
    pytest.param({"unknown": {"x": 1}}, {}, id="undeclared fields are not the kind's"),
])
def test_to_field_set(value: Any, expected: dict[str, Any]) -> None:
    assert fields(value, CONFIG_MAP) == expected


def test_keyed_items_are_members_with_their_fields() -> None:
    value = [{"name": "c", "image": "i"}]
    assert fields(value, ITEMS) == {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}


def test_fields_v1_round_trips() -> None:
    data = {"f:data": {".": {}, "f:k": {}}, "f:spec": {"f:list": {'k:{"name":"c"}': {".": {}, "f:x": {}},
                                                              'v:"s"': {}, "i:3": {}}}}
    parsed = FieldSet.from_fields_v1(data)
    assert parsed.to_fields_v1() == data
    assert [fp.to_string(p) for p in parsed.paths()] == [
        ".data", ".data.k", ".spec.list[3]", '.spec.list[name="c"]', '.spec.list[name="c"].x', '.spec.list[="s"]']


@pytest.mark.parametrize("bad", [[], {"x:y": {}}, {"f:a": []}, {'k:[1]': {}}])
def test_malformed_fields_v1(bad: Any) -> None:
    with pytest.raises(ValueError):
        FieldSet.from_fields_v1(bad)


def set_of(*paths: str) -> FieldSet:
    out = FieldSet()
    for text in paths:
        out.insert(tuple(("f", part) for part in text.split(".")))
    return out


@pytest.mark.parametrize(("op", "a", "b", "expected"), [
    ("union", ("x.a",), ("x.b",), ("x.a", "x.b")),
    ("difference", ("x.a", "x.b"), ("x.b",), ("x.a",)),
    ("difference", ("x", "x.a"), ("x",), ("x.a",)),
    ("recursive_difference", ("x", "x.a", "y"), ("x",), ("y",)),
    ("intersection", ("x.a", "x.b", "y"), ("x.b", "y", "z"), ("x.b", "y")),
])
def test_set_algebra(op: str, a: tuple[str, ...], b: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert getattr(set_of(*a), op)(set_of(*b)) == set_of(*expected)


@pytest.mark.parametrize(("a", "b", "same"), [
    (("x.a", "x.b", "y"), ("x.a",), True),
    (("x.a", "x.b", "y"), ("y", "x.b"), True),
    (("x.a",), ("x.a", "x.b"), False),
    (("x.a",), ("z",), False),
])
def test_a_union_adding_nothing_is_the_set_itself(a: tuple[str, ...], b: tuple[str, ...], same: bool) -> None:
    mine = set_of(*a)
    union = mine.union(set_of(*b))
    assert (union is mine) is same
    assert union == set_of(*a, *b)


@pytest.mark.parametrize(("old", "new", "added", "modified", "removed"), [
    pytest.param({"data": {"a": "1"}}, {"data": {"a": "2"}}, {}, {"f:data": {"f:a": {}}}, {}, id="modified leaf"),
    pytest.param({}, {"data": {"a": "1"}}, {"f:data": {".": {}, "f:a": {}}}, {}, {}, id="added with its children"),
    pytest.param({"data": {"a": "1"}}, {}, {}, {}, {"f:data": {".": {}, "f:a": {}}}, id="removed with its children"),
    pytest.param({"data": {"a": "1", "b": "2"}}, {"data": {"a": "1", "c": "2"}}, {"f:data": {"f:c": {}}}, {},
                 {"f:data": {"f:b": {}}}, id="as many keys, one of them another"),
    pytest.param({"data": {"a": "1", "b": "2"}}, {"data": {"b": "3"}}, {}, {"f:data": {"f:b": {}}},
                 {"f:data": {"f:a": {}}}, id="one changed, one gone"),
    pytest.param({"data": {"a": None, "b": "2"}}, {"data": {"a": "1", "b": "2", "c": "3"}},
                 {"f:data": {"f:c": {}}}, {"f:data": {"f:a": {}}}, {}, id="null to a value, one more"),
    pytest.param({"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"b": "2"}}}, {}, {},
                 {"f:metadata": {"f:labels": {"f:a": {}}}}, id="fewer labels"),
    pytest.param({"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": ["a", "b"]}},
                 {"f:metadata": {"f:finalizers": {'v:"b"': {}}}}, {}, {}, id="set items by value"),
    pytest.param({"immutable": True}, {"immutable": 1}, {}, {"f:immutable": {}}, {}, id="true is not 1"),
    pytest.param({"nope": 1}, {"nope": 2}, {}, {}, {}, id="undeclared fields are not compared"),
])
def test_compare(old: Any, new: Any, added: Any, modified: Any, removed: Any) -> None:
    result = typed.compare(old, new, CONFIG_MAP)
    assert (result.added.to_fields_v1(), result.modified.to_fields_v1(), result.removed.to_fields_v1()) == (
        added, modified, removed)


@pytest.mark.parametrize(("live", "config", "expected"), [
    pytest.param([{"name": "a", "x": "1"}, {"name": "b"}], [{"name": "b", "y": "2"}],
                 [{"name": "a", "x": "1"}, {"name": "b", "y": "2"}], id="live items stay, named ones merge"),
    pytest.param([{"name": "a"}, {"name": "b"}], [{"name": "b"}, {"name": "a"}],
                 [{"name": "b"}, {"name": "a"}], id="the configuration's order wins for its items"),
    pytest.param([{"name": "a"}, {"name": "x"}, {"name": "b"}], [{"name": "b"}, {"name": "c"}, {"name": "a"}],
                 [{"name": "x"}, {"name": "b"}, {"name": "c"}, {"name": "a"}], id="new items go where applied"),
])
def test_merge_keyed_lists(live: Any, config: Any, expected: Any) -> None:
    assert typed.merge(live, config, ITEMS) == expected


@pytest.mark.parametrize(("live", "config", "expected"), [
    pytest.param({"data": {"a": "1"}}, {"data": {"b": "2"}}, {"data": {"a": "1", "b": "2"}}, id="maps merge"),
    pytest.param({"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": ["b"]}},
                 {"metadata": {"finalizers": ["a", "b"]}}, id="sets union"),
    pytest.param({"metadata": {"ownerReferences": [{"uid": "u", "name": "x", "kind": "K"}]}},
                 {"metadata": {"ownerReferences": [{"uid": "u", "name": "y"}]}},
                 {"metadata": {"ownerReferences": [{"uid": "u", "name": "y"}]}}, id="atomic items are replaced"),
])
def test_merge(live: Any, config: Any, expected: Any) -> None:
    assert typed.merge(live, config, CONFIG_MAP) == expected


def test_remove_items_takes_members_with_what_is_below() -> None:
    value = {"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"x": "1"}}}
    assert typed.remove_items(value, set_of("data.a", "metadata"), CONFIG_MAP) == {"data": {"b": "2"}}


def test_ensure_named_fields_are_members() -> None:
    named = typed.ensure_named_fields_are_members(set_of("metadata.labels.app"), CONFIG_MAP)
    assert named.to_fields_v1() == {"f:metadata": {".": {}, "f:labels": {".": {}, "f:app": {}}}}
    untyped = typed.ensure_named_fields_are_members(set_of("a.b"), UNTYPED)
    assert untyped.to_fields_v1() == {"f:a": {"f:b": {}}}


def test_namespace_shape_keys_conditions_by_type() -> None:
    value = {"status": {"conditions": [{"type": "A", "status": "True"}]}}
    assert fields(value, NAMESPACE) == {"f:status": {"f:conditions": {'k:{"type":"A"}': {
        ".": {}, "f:status": {}, "f:type": {}}}}}
    assert isinstance(HOLDER, StructShape) and HOLDER.is_declared("data") and not HOLDER.is_declared("nope")
