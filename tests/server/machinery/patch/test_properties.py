"""Properties of the merge patch and JSON patch engines, over random JSON documents.

The tables in test_strategic.py and tests/server/objects/test_patch.py hold the cases we thought of;
these hold for every document hypothesis makes (nested objects of scalars and arrays, keys that need
JSON pointer escaping):

    merge_patch(a, create_merge_patch(a, b)) == b       when b's objects hold no null member (RFC 7386
                                                         cannot set one); nulls inside arrays are kept
    a JSON patch from a to b (jsonpatch.make_patch), applied by Capstan to a, gives b; the patch from b
    to a, applied to b, gives a back
    a `test` of a value the document holds passes and changes nothing; of any other value, it is 422
    with evanphx/json-patch's words, as kube-apiserver answers

Equality is `same`: Go's, where 1, 1.0 and true differ.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.machinery import errors
from server.machinery.patch.merge import create_merge_patch, merge_patch
from server.machinery.patch.values import copy_json, same
from server.objects.patch import JsonPatchFailed, apply_json_patch, json_patched, parse_json_patch

Obj = dict[str, Any]

FAST = settings(max_examples=200, deadline=None)
SCALARS = (st.none() | st.booleans() | st.integers(-(2**53), 2**53)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3))
# Few keys, so documents overlap; "/" and "~" need escaping in a JSON pointer (~1, ~0), "" is a valid key.
KEYS = st.sampled_from(["a", "b", "c", "data", "labels", "x/y", "m~n", ""])


def documents(*, null_members: bool) -> st.SearchStrategy[Obj]:
    """JSON objects of objects, arrays and scalars; without null object members when null_members is False
    (arrays may hold anything, nulls and objects with null members included)."""
    anything = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8)
    members = SCALARS if null_members else SCALARS.filter(lambda v: v is not None)

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.lists(anything, max_size=3) | st.dictionaries(KEYS, inner, max_size=3)

    return st.dictionaries(KEYS, st.recursive(members, extend, max_leaves=10), max_size=4)


def pointers(document: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every (JSON pointer, value) in document below its root."""
    if isinstance(document, dict):
        items = [(key.replace("~", "~0").replace("/", "~1"), value) for key, value in document.items()]
    elif isinstance(document, list):
        items = [(str(index), value) for index, value in enumerate(document)]
    else:
        return []
    found = []
    for token, value in items:
        found.append((f"{prefix}/{token}", value))
        found.extend(pointers(value, f"{prefix}/{token}"))
    return found


def capstan_json_patch(document: Obj, operations: list[Obj]) -> Obj:
    """The patch as Capstan receives it (bytes) and applies it."""
    return apply_json_patch(parse_json_patch(json.dumps(operations).encode()), document)


# --- merge patch (RFC 7386) ---------------------------------------------------------------------------------------


@FAST
@given(documents(null_members=True), documents(null_members=False))
def test_merge_patch_from_a_to_b_turns_a_into_b(a: Obj, b: Obj) -> None:
    before = copy_json(a)
    patch = create_merge_patch(a, b)
    assert same(merge_patch(a, patch), b)
    assert same(a, before)  # the inputs are left alone


@FAST
@given(documents(null_members=True), documents(null_members=True))
def test_merge_patch_is_idempotent(a: Obj, patch: Obj) -> None:
    once = merge_patch(a, patch)
    assert same(merge_patch(once, patch), once)


@FAST
@given(documents(null_members=True), documents(null_members=False))
def test_merge_patch_names_only_what_differs(a: Obj, b: Obj) -> None:
    assert create_merge_patch(a, a) == {}
    for key, value in create_merge_patch(a, b).items():
        if value is None:
            assert key in a and key not in b
        else:
            assert key not in a or not same(a[key], b[key])


# --- JSON patch (RFC 6902) ----------------------------------------------------------------------------------------


@FAST
@given(documents(null_members=True), documents(null_members=True))
def test_json_patch_round_trips(a: Obj, b: Obj) -> None:
    forward = jsonpatch.make_patch(a, b).patch
    backward = jsonpatch.make_patch(b, a).patch
    before = copy_json(a)
    assert same(capstan_json_patch(a, forward), b), forward
    assert same(capstan_json_patch(b, backward), a), backward
    assert same(a, before)


@FAST
@given(st.data(), documents(null_members=True).filter(lambda d: bool(pointers(d))))
def test_json_patch_test_op(data: st.DataObject, a: Obj) -> None:
    path, value = data.draw(st.sampled_from(pointers(a)), label="pointer")
    assert same(capstan_json_patch(a, [{"op": "test", "path": path, "value": value}]), a)

    with pytest.raises(errors.ApiError) as failed:
        capstan_json_patch(a, [{"op": "test", "path": path, "value": ["not", value]},
                               {"op": "remove", "path": path}])
    status = failed.value.status
    assert (status.code, status.reason, status.message) == (
        422, "Invalid", "the server rejected our request due to an error in our request")
    assert status.HasField("details") and not status.details.causes  # kube's details {}
    with pytest.raises(JsonPatchFailed, match=re.escape(f"testing value {path} failed: test failed")):
        json_patched(parse_json_patch(json.dumps([{"op": "test", "path": path, "value": ["not", value]}]).encode()),
                     a)
