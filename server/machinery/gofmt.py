"""Go's fmt, for the JSON values kube-apiserver's patch errors print.

strategicpatch builds its messages with `%v`, `%s` and `%q` over decoded JSON
(map[string]interface{}, []interface{}, string, int64, float64, bool, nil), and clients match
those texts. Examples:

    go_v({"b": [1, 2.5], "a": None})  ->  'map[a:<nil> b:[1 2.5]]'   (keys sorted, as fmt does)
    go_s(5)                           ->  '%!s(int64=5)'            (%s of a non-string)
    go_type([])                       ->  '[]interface {}'          (reflect.TypeOf(...).String())

Integers are int64 and others float64, as apimachinery's UnmarshalCaseSensitivePreserveInts
decodes them.
"""

from __future__ import annotations

import math
from typing import Any

from server.machinery.codec import gofloat

MAP_TYPE = "map[string]interface {}"
LIST_TYPE = "[]interface {}"


def go_type(value: Any) -> str:
    """reflect.TypeOf(value).String(), or what `%s` prints for the nil type."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, dict):
        return MAP_TYPE
    if isinstance(value, list):
        return LIST_TYPE
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"


def go_v(value: Any) -> str:
    """fmt's %v."""
    return _format(value, "v")


def go_s(value: Any) -> str:
    """fmt's %s: strings as they are, other scalars as %!s(type=value)."""
    return _format(value, "s")


def go_quote(text: str) -> str:
    """fmt's %q (strconv.Quote): double-quoted, Go escapes, printable runes kept."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            "\\": "\\\\", '"': '\\"'}


def _format(value: Any, verb: str) -> str:
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_format(value[key], verb)}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_format(item, verb) for item in value) + "]"
    if isinstance(value, str):
        return value
    text = _scalar(value)
    if verb == "s":
        return "%!s(<nil>)" if value is None else f"%!s({go_type(value)}={text})"
    return text


def _scalar(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float(value)
    return str(value)


def _float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64) with Go's names for NaN and the infinities."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return gofloat.format_g(value)

