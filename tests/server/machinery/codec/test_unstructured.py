"""The unstructured converter's refusals (server/machinery/codec/unstructured.py), as apimachinery's
fromUnstructured words them for each Go type and JSON value."""

from __future__ import annotations

import pytest

from server.machinery.codec import unstructured


@pytest.mark.parametrize(("go_type", "value", "expected"), [
    ("int32", "x", "unrecognized type: int32"),
    ("int32", 1.5, "cannot convert float64 to int32"),
    ("int32", 2.0, None),  # an integral float converts
    ("int64", 3, None),
    ("float64", 3, None),
    ("bool", 1, "unrecognized type: bool"),
    ("bool", True, None),
    ("string", 7, "cannot convert int64 to string"),
    ("string", 7.5, "unrecognized type: string"),
    ("string", [], "unrecognized type: string"),
    ("*int32", "x", "unrecognized type: int32"),
    ("[]v1.Container", "x", "cannot restore slice from string"),
    ("[]v1.Container", {}, "cannot restore slice from map"),
    ("[]byte", "aGk=", None),
    ("map[string]string", 1, "cannot restore map from int64"),
    ("v1.PodSpec", "x", "cannot restore struct from: string"),
    ("*v1.PodSpec", [], "cannot restore struct from: slice"),
    ("v1.PodSpec", {}, None),
    ("resource.Quantity", True, None),  # its own unmarshaler's words
])
def test_refusal(go_type: str, value: object, expected: str | None) -> None:
    assert unstructured.refusal(go_type, value) == expected


@pytest.mark.parametrize(("message", "value", "expected"), [
    ("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32", "x",
     "unrecognized type: int32"),
    ("json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32", 1.5,
     "cannot convert float64 to int32"),
    ("json: cannot unmarshal string into Go value of type []v1.Container", "x", "cannot restore slice from string"),
    ("illegal base64 data at input byte 0", "!!", "error decoding from json: illegal base64 data at input byte 0"),
    ("quantities must match the regular expression", "x", None),
])
def test_from_decode_error(message: str, value: object, expected: str | None) -> None:
    assert unstructured.from_decode_error(message, value) == expected
