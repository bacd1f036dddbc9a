"""The nesting bound: the bytes' bracket count settles most bodies without walking them, and never hides one
that nests too deep."""

from __future__ import annotations

import orjson
import pytest

from server.machinery.codec import depth


def _nested(levels: int, bracket: str = "[") -> bytes:
    if bracket == "{":
        return ('{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)).encode()
    return ("[" * levels + "1" + "]" * levels).encode()


@pytest.mark.parametrize(("data", "limit", "expected"), [
    (b'{"a":[1,2,{"b":3}]}', 3, None),
    (b'{"a":[1,2,{"b":3}]}', 2, "invalid character '{' exceeded max depth"),
    (_nested(5), 5, None),
    (_nested(6), 5, "invalid character '[' exceeded max depth"),
    (_nested(6, "{"), 5, "invalid character '{' exceeded max depth"),
    # brackets in strings count toward the bound but not the depth: the walk decides
    (b'{"a":"[[[[[[[[[[{{{{{"}', 3, None),
    (b'{"a":"[[[[[[[[[[","b":[[[[1]]]]}', 3, "invalid character '[' exceeded max depth"),
    (b'"[[[[[[[[["', 1, None),
    (b"[]", 1, None),
    (b"[[]]", 1, "invalid character '[' exceeded max depth"),
])
def test_exceeded_in_agrees_with_the_walk(data: bytes, limit: int, expected: str | None) -> None:
    value = orjson.loads(data)
    assert depth.exceeded(value, limit) == expected
    assert depth.exceeded_in(data, value, limit) == expected
