"""The one YAML reader every request body goes through: yaml.v2's values, its repeated-key errors
(UnmarshalStrict's words and lines) and its bounds."""

from __future__ import annotations

import time
from typing import Any

import pytest

from server.machinery.codec import yamlread

# A 306-byte alias bomb: nine levels of nine aliases, about 387 million nodes when expanded.
BOMB = ("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{name}: &{name} [{','.join(['*' + prev] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True))).encode()
# Seconds a refusal of BOMB may take on a loaded machine: expanding its nodes would take minutes, so the bound tells
# a refusal from an expansion without timing the refusal itself.
REFUSED_WITHIN = 20.0


@pytest.mark.parametrize(("body", "value", "duplicates"), [
    pytest.param(b'{"a": 1, "b": 2,}', {"a": 1, "b": 2}, (), id="trailing comma in a flow mapping"),
    pytest.param(b"[80, 443,]", [80, 443], (), id="trailing comma in a flow sequence"),
    pytest.param(b"a: 1\nb:\n  c: 2\n  c: 3\na: 4\n", {"a": 4, "b": {"c": 3}},
                 ('line 4: key "c" already set in map', 'line 5: key "a" already set in map'), id="last wins"),
    pytest.param(b"spec:\n  a: 1\nspec:\n  b: 2\n", {"spec": {"b": 2}},
                 ('line 4: key "spec" already set in map',), id="a block value's line is its first key's"),
    pytest.param(b'{"a":1,"a":2}', {"a": 2}, ('line 1: key "a" already set in map',), id="JSON"),
    pytest.param(b"base: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n", {"base": {"x": 1}, "m": {"x": 2}},
                 ('line 4: key "x" already set in map',), id="a key over a merged one"),
    pytest.param(b"1: a\n1: b\ntrue: c\nyes: d\n", {"1": "b", "true": "d"},
                 ("line 2: key 1 already set in map", "line 4: key true already set in map"), id="typed keys"),
    pytest.param(b'1: a\n"1": b\n', {"1": "b"}, (), id="1 and '1' are different keys to yaml.v2"),
    pytest.param(b"on: yes\nport: 0x1F\nv: 08\n", {"true": True, "port": 31, "v": 8}, (), id="yaml.v2 values"),
    pytest.param(b"", None, (), id="empty"),
])
def test_read(body: bytes, value: Any, duplicates: tuple[str, ...]) -> None:
    document = yamlread.read(body)
    assert (document.value, document.duplicates) == (value, duplicates)


def test_strict_error_is_yaml_v2s_type_error() -> None:
    document = yamlread.read(b"a: 1\na: 2\nb: 1\nb: 2\n")
    assert document.strict_error == (
        'yaml: unmarshal errors:\n  line 2: key "a" already set in map\n  line 4: key "b" already set in map')


def test_an_alias_bomb_is_refused_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(yamlread.YAMLError, match=r"^yaml: document contains excessive aliasing$"):
        yamlread.read(BOMB)
    assert time.monotonic() - started < REFUSED_WITHIN
