"""A JSON body's repeated keys (server/objects/body.py keys): found whatever the body's spacing and escapes, and
nothing reported for a body that repeats none, including those whose strings hold `":`."""

from __future__ import annotations

import orjson
import pytest

from server.objects import body


@pytest.mark.parametrize(("data", "repeated"), [
    (b'{"a":1,"b":{"c":2}}', []),
    (b'{"a":1,"a":2}', ["a"]),
    (b'{"a":{"b":1,"b":2},"c":3}', ["a.b"]),
    # strings that hold a quote and colon, in keys and values
    (b'{"a":"x\\":y","b\\":":"\\":\\":"}', []),
    (b'{"a":"x\\":y","a":"z"}', ["a"]),
    (b'{"a":"z","a":"x\\":y"}', ["a"]),
    # space before a colon, alone and where it would hide a repeat from a count of `":`
    (b'{"a" :1,"b":2}', []),
    (b'{"a" :1,"a":2,"b":3}', ["a"]),
    (b'{\n  "a" : 1,\n  "a" : 2\n}', ["a"]),
    # \\u escapes: a quote written as one, and a key that is one
    (b'{"a":"\\u0022:","a":1}', ["a"]),
    (b'{"a":"\\u0022:","b":1}', []),
    (b'{"\\u0061":1,"a":2}', ["a"]),
    (b'{"list":[{"a":1},{"a":1,"a":2}]}', ["list[1].a"]),
    # an integer orjson reads and does not write again
    (b'{"big":18446744073709551616,"big":1}', ["big"]),
    (b'{"big":18446744073709551615}', []),
])
def test_repeated_keys(data: bytes, repeated: list[str]) -> None:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        pytest.skip("orjson does not read this integer")
    assert [path for path, again in body.keys(data, obj) if again] == repeated


@pytest.mark.parametrize(("data", "repeated"), [
    (b'{"a":1,"b":2}', ()),
    (b'{"a":1,"a":2}', ('line 1: key "a" already set in map',)),
    (b'{"a" :1,"a":2,"b":3}', ('line 1: key "a" already set in map',)),
    (b'{"a":"x\\":y","b":2}', ()),
])
def test_an_apply_body_that_repeats_a_key_is_read_as_yaml_reads_it(data: bytes, repeated: tuple[str, ...]) -> None:
    """Server-side apply reports a JSON body's repeated keys in YAML's words, as sigs.k8s.io/yaml reads it."""
    from server.objects import apply

    assert apply._read(data).duplicates == repeated
