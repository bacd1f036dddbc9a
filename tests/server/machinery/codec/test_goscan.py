"""Go encoding/json's syntax errors (server/machinery/codec/goscan.py), each row as Go's json.Unmarshal words it:
the answers were taken from encoding/json's own scanner (a Go program built without the json v2 experiment, so
with the scanner of Go 1.21, which kube-apiserver 1.28 is built with)."""

from __future__ import annotations

import random

import orjson
import pytest

from server.machinery.codec.goscan import MAX_DEPTH, quote_char, syntax_error

ROWS = [
    (b"{", "unexpected end of JSON input"),
    (b'{"a":', "unexpected end of JSON input"),
    (b"", "unexpected end of JSON input"),
    (b"   ", "unexpected end of JSON input"),
    (b'"', "unexpected end of JSON input"),
    (b'{"a":"\\"}', "unexpected end of JSON input"),
    (b"[1,", "unexpected end of JSON input"),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    (b"{1:2}", "invalid character '1' looking for beginning of object key string"),
    (b"{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b'{"a":{"b":1]}', "invalid character ']' after object key:value pair"),
    (b"[1 2]", "invalid character '2' after array element"),
    (b'{"a":[1,2}', "invalid character '}' after array element"),
    (b'{"a":1} x', "invalid character 'x' after top-level value"),
    (b"01", "invalid character '1' after top-level value"),
    (b"[]]", "invalid character ']' after top-level value"),
    (b"{}\x00", "invalid character '\\x00' after top-level value"),
    (b'{"a":"\\x"}', "invalid character 'x' in string escape code"),
    (b'{"a":"\x01"}', "invalid character '\\x01' in string literal"),
    (b'{"a":"\n"}', "invalid character '\\n' in string literal"),
    (b'{"a":"\\u12g4"}', "invalid character 'g' in \\u hexadecimal character escape"),
    (b"nul", "invalid character ' ' in literal null (expecting 'l')"),
    (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
    (b"fals", "invalid character ' ' in literal false (expecting 'e')"),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    (b"nx", "invalid character 'x' in literal null (expecting 'u')"),
    (b'{"a":-}', "invalid character '}' in numeric literal"),
    (b'{"a":1.}', "invalid character '}' after decimal point in numeric literal"),
    (b'{"a":1e}', "invalid character '}' in exponent of numeric literal"),
    (b'{"a":1e+}', "invalid character '}' in exponent of numeric literal"),
    (b"garbage", "invalid character 'g' looking for beginning of value"),
    (b"]", "invalid character ']' looking for beginning of value"),
    (b"\\", "invalid character '\\\\' looking for beginning of value"),
    (b"\x81abc", "invalid character '\\u0081' looking for beginning of value"),
    (b"\x7f", "invalid character '\\x7f' looking for beginning of value"),
    (b"\xa0", "invalid character '\\u00a0' looking for beginning of value"),
    (b"\xad", "invalid character '\\u00ad' looking for beginning of value"),
    (b"\xe9", "invalid character '\u00e9' looking for beginning of value"),
    (b"\xef\xbb\xbf{}", "invalid character '\u00ef' looking for beginning of value"),  # no BOM is skipped
    (b"[" * (MAX_DEPTH + 1), "invalid character '[' exceeded max depth"),
    # valid for Go's scanner (a string that is not UTF-8 is read, not refused)
    (b'{"a":"\xff"}', None), (b"null", None), (b" 1 ", None), (b"-0.5e+3", None), (b'[[],{},""]', None),
    (b"\t\n{}", None), (b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, None),
]


@pytest.mark.parametrize(("data", "error"), ROWS, ids=[repr(r[0][:24]) for r in ROWS])
def test_syntax_error(data: bytes, error: str | None) -> None:
    assert syntax_error(data) == error


@pytest.mark.parametrize(("byte", "quoted"), [
    (ord("a"), "'a'"), (ord("'"), "'\\''"), (ord('"'), "'\"'"), (ord("\\"), "'\\\\'"), (0x09, "'\\t'"),
    (0x0B, "'\\v'"), (0x01, "'\\x01'"), (0x7F, "'\\x7f'"), (0x80, "'\\u0080'"), (0xA0, "'\\u00a0'"), (0xFF, "'\u00ff'"),
])
def test_quote_char(byte: int, quoted: str) -> None:
    assert quote_char(byte) == quoted


def test_valid_documents_agree_with_a_json_parser() -> None:
    """Whatever orjson reads, Go's scanner accepts; and what the scanner refuses, orjson refuses too."""
    rng = random.Random(11)
    alphabet = b'{}[]":,0123456789-+.eEtrufalsn \\'
    for _ in range(3000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        assert syntax_error(data) is None, data
