"""Strategic merge patch against apimachinery's rules, its test fixtures and kube-apiserver's error
messages; JSON merge patch against RFC 7386; both against each other by property."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest
from google.protobuf.descriptor import Descriptor
from hypothesis import given
from hypothesis import strategies as st

from capstan.api.core.v1 import core_pb2
from server.machinery.gofmt import go_quote, go_s, go_v
from server.machinery.patch.strategic import (
    PatchError,
    UnsupportedPatchError,
    apply_strategic,
    create_merge_patch,
    merge_patch,
)
from server.machinery.patch.values import same

Obj = dict[str, Any]

CONFIG_MAP = cast(Descriptor, core_pb2.ConfigMap.DESCRIPTOR)
SECRET = cast(Descriptor, core_pb2.Secret.DESCRIPTOR)
NAMESPACE = cast(Descriptor, core_pb2.Namespace.DESCRIPTOR)


def meta(**fields: Any) -> Obj:
    return {"metadata": fields}


def ref(uid: str, name: str | None = None, kind: str | None = None) -> Obj:
    """An ownerReference (merge key uid); name and kind stand in for upstream fixtures' value and other."""
    element: Obj = {"uid": uid}
    if name is not None:
        element["name"] = name
    if kind is not None:
        element["kind"] = kind
    return element


def drop(uid: str) -> Obj:
    return {"$patch": "delete", "uid": uid}


def uids(*values: str) -> list[Obj]:
    return [{"uid": value} for value in values]


LIVE: Obj = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "cm",
        "namespace": "default",
        "labels": {"app": "web", "tier": "front"},
        "finalizers": ["a", "b"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": "u1"}],
    },
    "data": {"k": "v"},
}


def live_with(**metadata: Any) -> Obj:
    obj = copy.deepcopy(LIVE)
    obj["metadata"].update(metadata)
    return obj


def metadata_after(patch: Obj, live: Obj | None = None) -> Any:
    return apply_strategic(LIVE if live is None else live, patch, CONFIG_MAP)["metadata"]


# --- the rules, one at a time -----------------------------------------------------------------

@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param(meta(labels={"tier": None, "env": "prod"}), {"app": "web", "env": "prod"},
                     id="map-merge-null-deletes"),
        pytest.param(meta(labels={"nope": None}), {"app": "web", "tier": "front"}, id="null-for-absent-key"),
        pytest.param(meta(labels={"$patch": "replace", "x": "1"}), {"x": "1"}, id="patch-replace-map"),
        pytest.param(meta(labels={"$patch": "delete", "x": "1"}), {}, id="patch-delete-map-empties-it"),
        pytest.param(meta(labels={"$retainKeys": ["app", "new"], "new": "1"}), {"app": "web", "new": "1"},
                     id="retain-keys"),
        pytest.param(meta(labels={"$retainKeys": ["app"], "tier": None}), {"app": "web"}, id="retain-keys-with-null"),
        pytest.param(meta(labels="flat"), "flat", id="other-type-replaces"),
    ],
)
def test_labels(patch: Obj, want: Any) -> None:
    assert metadata_after(patch)["labels"] == want


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param({"data": None}, {k: v for k, v in LIVE.items() if k != "data"}, id="null-deletes-field"),
        pytest.param({"binaryData": None}, LIVE, id="null-for-absent-field"),
        pytest.param({"immutable": True, "data": {"k": "w"}}, {**LIVE, "immutable": True, "data": {"k": "w"}},
                     id="scalars-replace"),
        pytest.param({"$patch": "replace", "kind": "ConfigMap"}, {"kind": "ConfigMap"}, id="top-level-replace"),
        pytest.param({"$patch": "delete"}, {}, id="top-level-delete"),
    ],
)
def test_object(patch: Obj, want: Obj) -> None:
    assert apply_strategic(LIVE, patch, CONFIG_MAP) == want


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param(meta(annotations={"a": "1", "b": None}), {"a": "1"}, id="new-map-drops-nulls"),
        pytest.param(meta(annotations={"a": "1", "b": {"$patch": "delete"}}), {"a": "1"},
                     id="new-map-drops-directive-objects"),
        pytest.param(meta(annotations={"$patch": "replace", "a": "1"}), None, id="new-directive-map-dropped"),
    ],
)
def test_value_with_nothing_live(patch: Obj, want: Any) -> None:
    """Since kubernetes#117568, a patch value taken whole loses its nulls and `$patch` objects."""
    assert metadata_after(patch).get("annotations") == want


@pytest.mark.parametrize(
    ("live", "patch", "want"),
    [
        pytest.param(["a", "b"], ["c", "a"], ["c", "a", "b"], id="union-patch-order-first"),
        pytest.param(["a", "b", "c"], ["d", "a"], ["d", "a", "b", "c"], id="new-before-live-after-patch"),
        pytest.param(["a"], ["a", "a"], ["a"], id="duplicates-collapse"),
        pytest.param(["a", "b"], [], ["a", "b"], id="empty-patch-keeps"),
    ],
)
def test_finalizers_merge_as_a_set(live: list[str], patch: list[str], want: list[str]) -> None:
    assert metadata_after(meta(finalizers=patch), live=live_with(finalizers=live))["finalizers"] == want


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param({"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}, ["b"], id="delete-values"),
        pytest.param({"$deleteFromPrimitiveList/finalizers": None}, None, id="null-delete-list-drops-field"),
        pytest.param({"$setElementOrder/finalizers": ["b", "a"]}, ["b", "a"], id="set-order"),
        pytest.param({"$setElementOrder/finalizers": ["a", "c", "b"], "finalizers": ["c"]}, ["a", "c", "b"],
                     id="set-order-with-addition"),
        pytest.param({"$setElementOrder/finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]}, ["b"],
                     id="set-order-with-deletion"),
    ],
)
def test_finalizer_directives(patch: Obj, want: Any) -> None:
    assert metadata_after(meta(**patch)).get("finalizers") == want


P1 = {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": "u1"}
P2 = {"apiVersion": "v1", "kind": "Pod", "name": "p2", "uid": "u2"}


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param([P2], [P2, P1], id="new-element-joins-first"),
        pytest.param([{"uid": "u1", "controller": True}], [{**P1, "controller": True}], id="merge-by-uid"),
        pytest.param([{"uid": "u1", "kind": None}], [{k: v for k, v in P1.items() if k != "kind"}],
                     id="null-inside-element"),
        pytest.param([drop("u1")], [], id="patch-delete-element"),
        pytest.param([drop("u9"), P2], [P2, P1], id="patch-delete-missing-element"),
        pytest.param([{"$patch": "replace"}, P2], [P2], id="patch-replace-list"),
        pytest.param([{"$patch": "replace"}], [], id="patch-replace-with-nothing"),
        pytest.param([P2, {"uid": "u2", "name": "p3"}], [{**P2, "name": "p3"}, P1], id="same-key-twice-merges"),
    ],
)
def test_owner_references_merge_by_uid(patch: list[Obj], want: list[Obj]) -> None:
    assert metadata_after(meta(ownerReferences=patch))["ownerReferences"] == want


def test_atomic_lists_are_replaced() -> None:
    live = live_with(managedFields=[{"manager": "a", "operation": "Update"}])
    assert metadata_after(meta(managedFields=[{"manager": "b"}]), live=live)["managedFields"] == [{"manager": "b"}]
    namespace = {"metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes", "x"]}}
    assert apply_strategic(namespace, {"spec": {"finalizers": ["y"]}}, NAMESPACE)["spec"] == {"finalizers": ["y"]}
    # deletion lists apply whatever the field's strategy
    deleted = apply_strategic(namespace, {"spec": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, NAMESPACE)
    assert deleted["spec"] == {"finalizers": ["kubernetes"]}


def test_namespace_conditions_merge_by_type() -> None:
    live = {"metadata": {"name": "ns"}, "status": {"phase": "Active", "conditions": [
        {"type": "A", "status": "True", "reason": "r"}]}}
    patch = {"status": {"conditions": [{"type": "B", "status": "True"}, {"type": "A", "status": "False"}]}}
    assert apply_strategic(live, patch, NAMESPACE)["status"] == {"phase": "Active", "conditions": [
        {"type": "B", "status": "True"}, {"type": "A", "status": "False", "reason": "r"}]}


def test_secret_maps_merge() -> None:
    live = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "YQ==", "b": "Yg=="}}
    patch = {"data": {"b": None, "c": "Yw=="}, "stringData": {"d": "plain"}}
    assert apply_strategic(live, patch, SECRET) == {
        "metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "YQ==", "c": "Yw=="}, "stringData": {"d": "plain"}}


def test_inputs_untouched() -> None:
    live = live_with(ownerReferences=[P1, P2])
    patch = meta(labels={"$retainKeys": ["app"], "app": None},
                 ownerReferences=[drop("u1"), {"uid": "u2", "kind": None}],
                 **{"$setElementOrder/finalizers": ["b", "a"], "$deleteFromPrimitiveList/finalizers": ["a"]})
    live_before, patch_before = copy.deepcopy(live), copy.deepcopy(patch)
    result = apply_strategic(live, patch, CONFIG_MAP)
    assert live == live_before and patch == patch_before
    assert result["metadata"]["ownerReferences"] == [{k: v for k, v in P2.items() if k != "kind"}]
    assert result["metadata"]["labels"] == {}
    assert result["metadata"]["finalizers"] == ["b"]


# --- apimachinery's fixtures (pkg/util/strategicpatch/patch_test.go), in ObjectMeta's fields ----
# mergingList -> ownerReferences (name -> uid, value -> name, other -> kind), mergingIntList ->
# finalizers, retainKeysMap -> metadata itself (name, value -> namespace, other -> generateName,
# simpleMap -> labels). Each row is a Current + ThreeWay -> Result (or Original + TwoWay) case.

FIXTURES = [
    ("nested patch merge with empty list (two-way)",
     meta(name="hi"), meta(ownerReferences=[ref("hello"), drop("doesntexist")]),
     meta(name="hi", ownerReferences=[ref("hello")])),
    ("nested patch merge with empty list",
     meta(name="hi", ownerReferences=[ref("hello2")]),
     meta(ownerReferences=[ref("hello")], **{"$setElementOrder/ownerReferences": uids("hello", "doesntexist")}),
     meta(name="hi", ownerReferences=[ref("hello"), ref("hello2")])),
    ("delete all duplicate items in lists of scalars",
     meta(finalizers=["1", "2", "3", "3", "4"]),
     meta(**{"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}),
     meta(finalizers=["1", "2", "4"])),
    ("add and delete items in lists of scalars (two-way)",
     meta(finalizers=["1", "2", "3"]),
     meta(finalizers=["4"], **{"$setElementOrder/finalizers": ["1", "2", "4"],
                               "$deleteFromPrimitiveList/finalizers": ["3"]}),
     meta(finalizers=["1", "2", "4"])),
    ("merge lists of maps",
     meta(ownerReferences=[ref("1", kind="a"), ref("2", "2", "b")]),
     meta(ownerReferences=[ref("4", "4"), ref("3", "3")],
          **{"$setElementOrder/ownerReferences": uids("4", "1", "2", "3")}),
     meta(ownerReferences=[ref("4", "4"), ref("1", kind="a"), ref("2", "2", "b"), ref("3", "3")])),
    ("delete map from merging list",
     meta(ownerReferences=[ref("1"), ref("2", kind="b")]),
     meta(ownerReferences=[drop("1")], **{"$setElementOrder/ownerReferences": uids("2")}),
     meta(ownerReferences=[ref("2", kind="b")])),
    ("add map and delete map from merging list",
     meta(ownerReferences=[ref("1"), ref("2", kind="b"), ref("4", kind="c")]),
     meta(ownerReferences=[ref("3"), drop("1")], **{"$setElementOrder/ownerReferences": uids("2", "3")}),
     meta(ownerReferences=[ref("2", kind="b"), ref("4", kind="c"), ref("3")])),
    ("add map and delete map from merging list with conflict",
     meta(ownerReferences=[ref("1", kind="a"), ref("4", kind="c")]),
     meta(ownerReferences=[ref("2"), ref("3"), drop("1")], **{"$setElementOrder/ownerReferences": uids("2", "3")}),
     meta(ownerReferences=[ref("4", kind="c"), ref("2"), ref("3")])),
    ("delete field from map in merging list",
     meta(ownerReferences=[ref("1", "1", "a"), ref("2", "2", "b")]),
     meta(ownerReferences=[{"uid": "1", "name": None}], **{"$setElementOrder/ownerReferences": uids("1", "2")}),
     meta(ownerReferences=[ref("1", kind="a"), ref("2", "2", "b")])),
    ("delete missing map from merging list with conflict",
     meta(ownerReferences=[ref("3", kind="a")]),
     meta(ownerReferences=[ref("2"), drop("1")], **{"$setElementOrder/ownerReferences": uids("2")}),
     meta(ownerReferences=[ref("2"), ref("3", kind="a")])),
    ("add an item in a list of primitives and preserve order",
     meta(finalizers=["1", "4", "2"]),
     meta(finalizers=["3"], **{"$setElementOrder/finalizers": ["3", "1", "2"]}),
     meta(finalizers=["3", "1", "4", "2"])),
    ("delete an item in a list and preserve order",
     meta(ownerReferences=[ref("1", kind="a"), ref("2", "2", "b"), ref("3", "3")]),
     meta(ownerReferences=[drop("3")], **{"$setElementOrder/ownerReferences": uids("2", "1")}),
     meta(ownerReferences=[ref("2", "2", "b"), ref("1", kind="a")])),
    ("add and delete an item in a list and preserve order",
     meta(ownerReferences=[ref("1", kind="a"), ref("2", "2", "b"), ref("3", "3")]),
     meta(ownerReferences=[ref("4", "4"), drop("3")], **{"$setElementOrder/ownerReferences": uids("4", "2", "1")}),
     meta(ownerReferences=[ref("4", "4"), ref("2", "2", "b"), ref("1", kind="a")])),
    ("set elements order in a list with server-only items 3",
     meta(ownerReferences=[ref("1", kind="a"), ref("2", "2"), ref("7"), ref("9"), ref("8"), ref("3", "3"),
                           ref("4", "4")]),
     meta(**{"$setElementOrder/ownerReferences": uids("2", "1", "4", "3")}),
     meta(ownerReferences=[ref("2", "2"), ref("1", kind="a"), ref("7"), ref("9"), ref("8"), ref("4", "4"),
                           ref("3", "3")])),
    ("set elements order in a int list with server-only items 2",
     meta(finalizers=["1", "2", "9", "3", "4"]),
     meta(**{"$setElementOrder/finalizers": ["2", "1", "4", "3"]}),
     meta(finalizers=["2", "1", "9", "4", "3"])),
    ("behavior of set element order for a merging list with duplicate",
     meta(ownerReferences=[ref("1"), ref("2", "dup1"), ref("3"), ref("2", "dup2"), ref("4")]),
     meta(**{"$setElementOrder/ownerReferences": uids("2", "1", "4", "3", "2")}),
     meta(ownerReferences=[ref("2", "dup1"), ref("2", "dup2"), ref("1"), ref("4"), ref("3")])),
    ("behavior of set element order for a merging int list with duplicate",
     meta(finalizers=["1", "2", "3", "2", "4"]),
     meta(**{"$setElementOrder/finalizers": ["2", "1", "4", "3", "2"]}),
     meta(finalizers=["2", "2", "1", "4", "3"])),
    ("retainKeys map should clear defaulted field with conflict (discriminated union)",
     meta(name="type1", namespace="foo"),
     meta(**{"$retainKeys": ["name", "generateName"]}, name="type2", generateName="bar"),
     meta(name="type2", generateName="bar")),
    ("retainKeys map deletes a field and clears a field",
     meta(name="foo", namespace="bar", generateName="a"),
     meta(**{"$retainKeys": ["name"]}, namespace=None),
     meta(name="foo")),
    ("retainKeys map adds a field in a nested map",
     meta(name="foo", namespace="bar", labels={"key1": "a", "key3": "c"}),
     meta(**{"$retainKeys": ["name", "labels", "namespace"]}, labels={"key2": "b"}),
     meta(name="foo", namespace="bar", labels={"key1": "a", "key2": "b", "key3": "c"})),
]


@pytest.mark.parametrize(("current", "patch", "result"), [f[1:] for f in FIXTURES], ids=[f[0] for f in FIXTURES])
def test_upstream_fixture(current: Obj, patch: Obj, result: Obj) -> None:
    assert apply_strategic(current, patch, CONFIG_MAP) == result


# --- refusals: kube-apiserver's code, reason and message ---------------------------------------

UNKNOWN = (500, "")  # strategicpatch's plain errors, answered by ErrorToAPIStatus
BAD = (400, "BadRequest")
REJECTED = "the server rejected our request due to an error in our request"


@pytest.mark.parametrize(
    ("live", "patch", "status", "message"),
    [
        pytest.param(LIVE, meta(ownerReferences=[{"name": "p2"}]), UNKNOWN,
                     "map: map[name:p2] does not contain declared merge key: uid", id="no-merge-key"),
        pytest.param(LIVE, meta(ownerReferences=[{"$patch": "delete"}]), UNKNOWN,
                     "map: map[$patch:delete] does not contain declared merge key: uid", id="delete-without-key"),
        pytest.param(LIVE, meta(ownerReferences=[{"$patch": "merge", "uid": "u1"}]), UNKNOWN,
                     "merging lists cannot yet be specified in the patch", id="merge-directive-in-list"),
        pytest.param(LIVE, meta(ownerReferences=[{"$patch": "bogus", "uid": "u1"}]), UNKNOWN,
                     "unknown patch type: bogus in map: map[$patch:bogus uid:u1]", id="unknown-list-directive"),
        pytest.param(LIVE, meta(labels={"$patch": "merge"}), UNKNOWN,
                     "unknown patch type: merge in map: map[$patch:merge]", id="merge-directive-on-map"),
        pytest.param(LIVE, meta(labels={"$patch": 1, "a": "b"}), UNKNOWN,
                     "unknown patch type: %!s(int64=1) in map: map[$patch:1 a:b]", id="non-string-directive"),
        pytest.param(LIVE, {"$patch": None}, UNKNOWN,
                     "unknown patch type: %!s(<nil>) in map: map[$patch:<nil>]", id="null-directive"),
        pytest.param(LIVE, meta(labels={"$retainKeys": "app"}), BAD,
                     "invalid patch format of retainKeys", id="retain-keys-not-a-list"),
        pytest.param(LIVE, meta(labels={"$retainKeys": ["app"], "tier": "x"}), BAD,
                     "invalid patch format of retainKeys", id="retain-keys-missing-a-set-key"),
        pytest.param(LIVE, meta(**{"$deleteFromPrimitiveListfinalizers": ["a"]}), BAD,
                     "invalid patch format of primitive list", id="delete-list-without-slash"),
        pytest.param(LIVE, meta(**{"$setElementOrder": ["a"]}), BAD,
                     "invalid patch format of setElementOrder list", id="set-order-without-field"),
        pytest.param(LIVE, meta(**{"$setElementOrder/finalizers": "a"}), UNKNOWN,
                     "expected a []interface {}, but received a string", id="set-order-not-a-list"),
        pytest.param(LIVE, meta(finalizers=["b", "a"], **{"$setElementOrder/finalizers": ["a", "b"]}), UNKNOWN,
                     "The order in patch list:\n[b a]\n doesn't match $setElementOrder list:\n[a b]\n",
                     id="set-order-contradicts-patch"),
        pytest.param(LIVE, meta(**{"$setElementOrder/ownerReferences": [{"name": "p1"}]}), UNKNOWN,
                     "map: map[name:p1] does not contain declared merge key: uid", id="set-order-without-key"),
        pytest.param(LIVE, meta(**{"$setElementOrder/labels": ["app"]}), UNKNOWN,
                     "expected a []interface {}, but received a map[string]interface {}", id="set-order-of-a-map"),
        pytest.param(LIVE, meta(**{"$setElementOrder/annotations": ["a"]}), UNKNOWN,
                     "expected slice or array type, but got: struct", id="set-order-of-a-map-field"),
        pytest.param(live_with(finalizers=[]), meta(**{"$setElementOrder/finalizers": ["a"]}), UNKNOWN,
                     "no elements in any of the given slices", id="set-order-of-empty-list"),
        pytest.param(LIVE, meta(finalizers=[1]), UNKNOWN,
                     "list element types are not identical: [[a b] [1]]", id="mixed-element-types"),
        pytest.param(LIVE, meta(ownerReferences=["u2"]), UNKNOWN,
                     "list element types are not identical: [[map[apiVersion:v1 kind:Pod name:p1 uid:u1]] [u2]]",
                     id="scalar-in-object-list"),
        pytest.param(live_with(finalizers=[]), meta(finalizers=[{"a": "b"}]), UNKNOWN,
                     "cannot merge lists without merge key for string", id="objects-in-scalar-list"),
        pytest.param(live_with(finalizers=[]), meta(finalizers=[["x"]]), (422, "Invalid"), REJECTED,
                     id="list-of-lists"),
        pytest.param({"spec": {"a": 1}}, {"spec": {"a": 2}}, UNKNOWN,
                     'unable to find api field in struct ConfigMap for the json field "spec"', id="unknown-field"),
        pytest.param({"data": {"k": {"x": 1}}}, {"data": {"k": {"y": 2}}}, UNKNOWN,
                     "merging an object in json but data type is not struct, instead is: map", id="object-in-map"),
    ],
)
def test_refusal(live: Obj, patch: Obj, status: tuple[int, str], message: str) -> None:
    with pytest.raises(PatchError) as caught:
        apply_strategic(live, patch, CONFIG_MAP)
    assert (caught.value.code, caught.value.reason, str(caught.value)) == (*status, message)


def test_list_of_lists_keeps_its_detail() -> None:
    with pytest.raises(PatchError) as caught:
        apply_strategic(live_with(finalizers=[]), meta(finalizers=[["x"]]), CONFIG_MAP)
    assert caught.value.detail == "lists of lists are not supported"


def test_no_schema_is_unsupported_media_type() -> None:
    with pytest.raises(UnsupportedPatchError) as caught:
        apply_strategic({"spec": {}}, {"spec": {"a": 1}}, None)
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")
    assert str(caught.value) == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")


# --- Go's fmt, as the messages print values -----------------------------------------------------

@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"), (1e-05, "1e-05"), (0.0001, "0.0001"),
        (1.5, "1.5"), (100.0, "100"), (-2.5e-07, "-2.5e-07"), (0.0, "0"), (12, "12"), (True, "true"), (None, "<nil>"),
        ({"b": [1, "x"], "a": {}}, "map[a:map[] b:[1 x]]"),
    ],
)
def test_go_v(value: Any, text: str) -> None:
    assert go_v(value) == text


def test_go_s_and_quote() -> None:
    assert go_s(["a", 2.5, False]) == "[a %!s(float64=2.5) %!s(bool=false)]"
    assert go_quote('a"b\n\x00é\\') == '"a\\"b\\n\\x00é\\\\"'


# --- JSON merge patch -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("target", "patch", "want"),
    [  # RFC 7386 appendix A, the cases whose target and patch are objects
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc7386(target: Obj, patch: Obj, want: Obj) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == want
    assert target == before


def test_create_merge_patch() -> None:
    original = {"a": 1, "b": {"c": 1, "d": 2}, "e": [1], "g": True}
    modified = {"a": 1.0, "b": {"c": 1}, "e": [1], "f": 0, "g": 1}
    assert create_merge_patch(original, modified) == {"a": 1.0, "b": {"d": None}, "f": 0, "g": 1}


SCALARS = (st.none() | st.booleans() | st.integers(-(2**53), 2**53)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4))
KEYS = st.sampled_from(["a", "b", "c", "metadata", "labels", "data", "name", "x/y"])


def json_objects(*, null_members: bool) -> st.SearchStrategy[Obj]:
    """JSON objects; without null members (at any depth) when null_members is False."""
    members = SCALARS if null_members else SCALARS.filter(lambda v: v is not None)

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4)

    return st.dictionaries(KEYS, st.recursive(members, extend, max_leaves=10), max_size=4)


@given(json_objects(null_members=True), json_objects(null_members=False))
def test_merge_patch_reaches_the_target(original: Obj, target: Obj) -> None:
    assert same(merge_patch(original, create_merge_patch(original, target)), target)


STRINGS = st.dictionaries(st.text("abc/.", min_size=1, max_size=3), st.text(max_size=3), max_size=3)


def pure_maps() -> st.SearchStrategy[Any]:
    """Patch values of objects and scalars only: no lists, no directives."""
    return st.recursive(SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=8)


@given(
    st.fixed_dictionaries({"metadata": st.fixed_dictionaries(
        {"name": st.text(max_size=3)}, optional={"labels": STRINGS, "annotations": STRINGS})},
        optional={"data": STRINGS, "immutable": st.booleans()}),
    st.dictionaries(KEYS, pure_maps(), max_size=4),
)
def test_strategic_pure_map_patch_is_a_merge_patch(live: Obj, patch: Obj) -> None:
    assert same(apply_strategic(live, patch, CONFIG_MAP), merge_patch(live, patch))
