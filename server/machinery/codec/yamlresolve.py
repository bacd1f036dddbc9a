"""yaml.v2's scalar resolution (resolve.go): which plain scalars are booleans, integers, floats, nulls
or timestamps. One table for reading request bodies (server/machinery/codec/yamlread.py) and for writing YAML
responses (gateway/codecs/yaml.py), so a string the writer leaves unquoted reads back as that string.

YAML 1.1 as yaml.v2 resolves it: ``yes``/``on``/``y`` are true, ``0x1F`` is 31, ``08`` is the float 8,
``1_000`` is 1000, timestamps are recognised (and left strings by the reader).
"""

from __future__ import annotations

import calendar
import math
import re
from typing import Any

from server.machinery.codec import gofloat


class YAMLError(ValueError):
    """A YAML request body that does not convert to JSON. message is YAMLToJSON's error, which
    kube-apiserver embeds in "the object provided is unrecognized (must be of type K): ..."."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def converting(self) -> str:
        """The wording of sigs.k8s.io/yaml.Unmarshal, for callers that decode as it does."""
        return f"error converting YAML to JSON: {self.message}"


_TAG = "tag:yaml.org,2002:"
STR, BOOL, INT, FLOAT, NULL = (_TAG + name for name in ("str", "bool", "int", "float", "null"))
TIMESTAMP, BINARY, MERGE = (_TAG + name for name in ("timestamp", "binary", "merge"))
_RESOLVABLE = frozenset({"", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP})
_HINTS = dict.fromkeys("+-", "S") | dict.fromkeys("0123456789", "D") | dict.fromkeys("yYnNtTfFoO~", "M") | {".": "."}
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), (BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
}  # yaml.v2's map also has "<<", but no hint lets a scalar reach it: merge keys are found by value
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")  # what Go's ParseFloat takes from a leading "."
BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_TIMESTAMPS = (  # yaml.v2's allowedTimestampFormats, as regular expressions
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-]\d\d:\d\d)"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})()()()"),
)


def resolve(tag: str, value: str) -> tuple[str, Any]:
    """yaml.v2's resolve(tag, in): the tag a scalar resolves to, and its value."""
    if tag not in _RESOLVABLE:
        return tag, value
    rtag, out = resolve_implicit(tag, value)
    if tag in ("", rtag, STR, BINARY):
        return rtag, out
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(out)
    raise YAMLError(f"yaml: cannot decode {short(rtag)} `{value}` as a {short(tag)}")


def resolve_implicit(tag: str, value: str) -> tuple[str, Any]:
    hint = _HINTS.get(value[0]) if value else "N"
    if hint is None or tag == STR:
        return STR, value
    if value in _WORDS:
        return _WORDS[value]
    if hint == "." and _DOT_FLOAT.fullmatch(value):
        return FLOAT, float(value)
    if hint in ("D", "S"):
        if tag in ("", TIMESTAMP) and _is_timestamp(value):
            return TIMESTAMP, value
        plain = value.replace("_", "")
        number, _ = _go_parse_int(plain, 0, signed=True)
        out_of_range = False
        if number is None:
            number, out_of_range = _go_parse_int(plain, 0, signed=False)
        if number is not None:
            return INT, number
        if _YAML_FLOAT.fullmatch(plain) and not math.isinf(float(plain)):
            return FLOAT, float(plain)
        if plain.startswith(("0b", "-0b")):
            number, _ = _go_parse_int(plain.replace("0b", "", 1), 2, signed=True)
            if number is None and plain.startswith("0b"):
                number, _ = _go_parse_int(plain[2:], 2, signed=False)
            if number is not None:
                return INT, number
        if out_of_range:  # yaml.v2 keeps integers past 64 bits as big.Int
            number, _ = _go_parse_int(plain, 0, signed=True, bits=0)
            if number is not None:
                return INT, number
    return STR, value


def _go_parse_int(text: str, base: int, *, signed: bool, bits: int = 64) -> tuple[int | None, bool]:
    """strconv.ParseInt / ParseUint (bits=0: big.Int.SetString): (value, None) or (None, out of range)."""
    sign = 1
    if signed and text[:1] in ("+", "-"):
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    if not text:
        return None, False
    if base == 0:
        base, prefix = 10, text[1:2].lower()
        if text[0] == "0":
            base, text = (
                ({"b": 2, "o": 8, "x": 16}[prefix], text[2:])
                if len(text) >= 3 and prefix in ("b", "o", "x")
                else (8, text[1:])
            )
    digits = "0123456789abcdef"[:base]
    if not all(c in digits for c in text.lower()):
        return None, False
    number = sign * int(text or "0", base)
    if bits and not (-(1 << 63) <= number < (1 << 63) if signed else 0 <= number < (1 << 64)):
        return None, True
    return number, False


def _is_timestamp(value: str) -> bool:
    for pattern in _TIMESTAMPS:
        match = pattern.fullmatch(value)
        if match:
            year, month, day, hour, minute, second = (int(g or 0) for g in match.groups())
            return (
                1 <= month <= 12
                and 1 <= day <= calendar.monthrange(year, month)[1]
                and hour < 24
                and minute < 60
                and second < 60
            )
    return False


def short(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag



def go_format_float(value: float, bits: int = 64) -> str:
    """strconv.FormatFloat(value, 'g', -1, bits) with yaml.v2's names for the infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return gofloat.format_g(value, bits)
