"""YAML bodies, written and read as kube-apiserver does through sigs.k8s.io/yaml (v1.4, over yaml.v2).

Writing is JSONToYAML: the object's JSON read back as YAML 1.1 values and marshalled by yaml.v2.
So keys come out sorted (yaml.v2's "natural" order: letters by code point, non-letters before
letters, digit runs by value), two spaces per level with "- " level with its key, lines folded
at 80 columns, multi-line strings as ``|`` blocks, and a string that would read back as something
else double-quoted: ``"true"``, ``"8080"``, ``"2024-01-01T00:00:00Z"`` (a timestamp), ``"1:20"``,
``""``. Numbers print as Go prints them (1.0 as ``1``, 1e6 as ``1e+06``).

Reading is YAMLToJSON: YAML 1.1 resolution as yaml.v2 does it (``yes``/``on``/``y`` are true,
``0x1F`` is 31, ``08`` is the float 8, timestamps stay strings), anchors, aliases and ``<<`` merge
keys, non-string keys turned to strings, then JSON with sorted keys for the core. Errors carry
yaml.v2's words and its line numbers (1-based for scanner errors, one less for parser errors,
a quirk clients see from kube-apiserver), e.g. ``yaml: line 3: mapping values are not allowed in
this context``. Unlike yaml.v2, which silently reads only the first document, a body holding a
second document with content is refused.

Events go to libyaml (PyYAML's C parser and emitter) when present: yaml.v2 is a Go port of it, so
style choices and error texts match; the pure-Python classes stand in otherwise.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import io
import json
import math
import re
from collections.abc import Iterator
from functools import cmp_to_key
from typing import Any

import yaml
from yaml import events as ev

from server.codec import gofloat

try:
    from yaml._yaml import CEmitter as _Emitter
    from yaml._yaml import CParser as _Parser
except ImportError:  # PyYAML built without libyaml
    from yaml.emitter import Emitter as _PyEmitter

    class _Emitter(_PyEmitter):  # type: ignore[no-redef]
        def choose_scalar_style(self) -> str:
            style = super().choose_scalar_style()
            # libyaml (and yaml.v2) fall back from a block scalar to double quotes, PyYAML to single.
            return '"' if self.event.style == "|" and style == "'" else style  # type: ignore[union-attr]

    from yaml.loader import BaseLoader as _Parser  # type: ignore[assignment]


_TOO_DEEP = "yaml: the document nests too deeply"  # Capstan's own: Go's stack is deeper than Python's
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"  # libyaml's own bound (PyYAML >= 6.0.4): the same refusal


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


def encode(data: bytes, *, api_version: str = "", kind: str = "", pretty: bool = False) -> bytes:
    """The response body for an object the core rendered as JSON."""
    del api_version, kind, pretty  # YAML is always indented
    return json_to_yaml(data)


def decode(body: bytes) -> bytes:
    return yaml_to_json(body)


def json_to_yaml(data: bytes) -> bytes:
    """sigs.k8s.io/yaml.JSONToYAML."""
    value = json.loads(data, parse_float=_json_float)
    events: list[ev.Event] = [ev.StreamStartEvent(), ev.DocumentStartEvent(explicit=False)]
    _emit_value(value, events)
    events += [ev.DocumentEndEvent(explicit=False), ev.StreamEndEvent()]
    out = io.StringIO()
    emitter = _Emitter(out, allow_unicode=True)
    for event in events:
        emitter.emit(event)
    text = out.getvalue()
    # libyaml closes a document ending in a kept line break ("|+") with "..."; yaml.v2 does not.
    return (text[:-4] if text.endswith("\n...\n") else text).encode()


def yaml_to_json(body: bytes) -> bytes:
    """sigs.k8s.io/yaml.YAMLToJSON: compact JSON with sorted keys. Raises YAMLError."""
    value = load(body)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    except RecursionError:
        raise YAMLError(_TOO_DEEP) from None


def load(body: bytes) -> Any:
    """The JSON value of a YAML body (None for an empty one). Raises YAMLError."""
    parser = None
    try:
        parser = _Parser(body)  # the pure-Python reader checks the encoding at once
        events: Iterator[ev.Event] = iter(parser.get_event, None)
        next(events)  # StreamStart
        event = next(events)
        if isinstance(event, ev.StreamEndEvent):
            return None
        root = _Composer(events).document()
        event = next(events)
        while isinstance(event, ev.DocumentStartEvent):
            if not _Composer(events).document().is_empty:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise YAMLError(f"yaml: line {line}: the body holds more than one YAML document")
            event = next(events)
        return _json_value(_Decoder().value(root))
    except yaml.MarkedYAMLError as err:
        raise YAMLError(_TOO_DEEP if err.problem == _LIBYAML_TOO_DEEP else _v2_message(err)) from None
    except yaml.reader.ReaderError as err:
        raise YAMLError(f"yaml: {err.reason}") from None
    except RecursionError:
        raise YAMLError(_TOO_DEEP) from None
    finally:
        if parser is not None:
            parser.dispose()


# --- yaml.v2's scalar resolution (resolve.go) ------------------------------------------------

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
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_TIMESTAMPS = (  # yaml.v2's allowedTimestampFormats, as regular expressions
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-]\d\d:\d\d)"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})()()()"),
)


def resolve(tag: str, value: str) -> tuple[str, Any]:
    """yaml.v2's resolve(tag, in): the tag a scalar resolves to, and its value."""
    if tag not in _RESOLVABLE:
        return tag, value
    rtag, out = _resolve(tag, value)
    if tag in ("", rtag, STR, BINARY):
        return rtag, out
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(out)
    raise YAMLError(f"yaml: cannot decode {_short(rtag)} `{value}` as a {_short(tag)}")


def _resolve(tag: str, value: str) -> tuple[str, Any]:
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


def _short(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag


# --- Writing: yaml.v2's marshalling of the JSON value (encode.go, sorter.go) ------------------


def _emit_value(value: Any, out: list[ev.Event]) -> None:
    if isinstance(value, dict):
        out.append(ev.MappingStartEvent(None, None, True, flow_style=False))
        for key in sorted(value, key=_KEY_ORDER):
            _emit_string(key, out)
            _emit_value(value[key], out)
        out.append(ev.MappingEndEvent())
    elif isinstance(value, list):
        out.append(ev.SequenceStartEvent(None, None, True, flow_style=False))
        for item in value:
            _emit_value(item, out)
        out.append(ev.SequenceEndEvent())
    elif isinstance(value, str):
        _emit_string(value, out)
    else:
        out.append(ev.ScalarEvent(None, None, (True, True), _plain(value)))


def _emit_string(value: str, out: list[ev.Event]) -> None:
    """yaml.v2's stringv: a block if multi-line, else plain unless it would read back as another
    type (or is a YAML 1.1 base-60 number), then double-quoted. libyaml may still quote a plain one."""
    if "\n" in value:
        style: str | None = "|"
    elif _resolve("", value)[0] != STR or _BASE60.fullmatch(value):
        style = '"'
    else:
        style = None
    out.append(ev.ScalarEvent(None, None, (True, True), value, style=style))


def _plain(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 64):
        return str(value)
    return go_format_float(float(value))  # yaml.v2 reads a JSON integer past 64 bits as a float


def _json_float(text: str) -> float | str:
    number = float(text)
    return text if math.isinf(number) else number  # yaml.v2 leaves an overflowing number a string


def go_format_float(value: float, bits: int = 64) -> str:
    """strconv.FormatFloat(value, 'g', -1, bits) with yaml.v2's names for the infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return gofloat.format_g(value, bits)


def _key_less(a: str, b: str) -> bool:
    """yaml.v2's keyList.Less for two string keys."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        x_letter, y_letter = x.isalpha(), y.isalpha()
        if x_letter and y_letter:
            return x < y
        if x_letter or y_letter:
            return y_letter
        a_number = b_number = 0
        if x == "0" or y == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    a_number = b_number = 1
                    break
                j -= 1
        a_end, a_number = _digit_run(a, i, a_number)
        b_end, b_number = _digit_run(b, i, b_number)
        if a_number != b_number:
            return a_number < b_number
        if a_end != b_end:
            return a_end < b_end
        return x < y
    return len(a) < len(b)


def _digit_run(text: str, start: int, number: int) -> tuple[int, int]:
    end = start
    while end < len(text) and text[end].isdecimal():
        number = (number * 10 + ord(text[end]) - ord("0") + (1 << 63)) % (1 << 64) - (1 << 63)  # Go's int64 wraps
        end += 1
    return end, number


def _key_compare(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else int(_key_less(b, a))


_KEY_ORDER = cmp_to_key(_key_compare)


# --- Reading: yaml.v2's parser and decoder into interface{} (decode.go) -----------------------


class _Node:
    __slots__ = ("alias", "children", "implicit", "kind", "tag", "value")

    def __init__(self, kind: str, tag: str = "", value: str = "", implicit: bool = False) -> None:
        self.kind, self.tag, self.value, self.implicit = kind, tag, value, implicit
        self.children: list[_Node] = []
        self.alias: _Node | None = None

    @property
    def is_empty(self) -> bool:
        return self.kind == "scalar" and self.implicit and not self.tag and not self.value


class _Composer:
    """Events to nodes, with anchors resolved as yaml.v2's parser resolves them."""

    def __init__(self, events: Iterator[ev.Event]) -> None:
        self.events = events
        self.anchors: dict[str, _Node] = {}

    def document(self) -> _Node:
        node = self.node(next(self.events))
        next(self.events)  # DocumentEnd
        return node

    def node(self, event: ev.Event) -> _Node:
        if isinstance(event, ev.AliasEvent):
            target = self.anchors.get(event.anchor or "")
            if target is None:
                raise YAMLError(f"yaml: unknown anchor '{event.anchor}' referenced")
            node = _Node("alias", value=event.anchor or "")
            node.alias = target
            return node
        if isinstance(event, ev.ScalarEvent):
            node = _Node("scalar", event.tag or "", event.value, bool(event.implicit[0]))
        else:
            assert isinstance(event, ev.CollectionStartEvent)
            node = _Node("mapping" if isinstance(event, ev.MappingStartEvent) else "sequence", event.tag or "")
        if event.anchor:
            self.anchors[event.anchor] = node
        if node.kind != "scalar":
            child = next(self.events)
            while not isinstance(child, ev.CollectionEndEvent):
                node.children.append(self.node(child))
                child = next(self.events)
        return node


class _Decoder:
    """Nodes to Python values as yaml.v2 decodes into interface{}, with its guard against
    alias bombs ("document contains excessive aliasing")."""

    def __init__(self) -> None:
        self.decoded = self.aliased = self.alias_depth = 0
        self.active: set[int] = set()

    def value(self, node: _Node, into: dict[tuple[str, Any], tuple[Any, Any]] | None = None) -> Any:
        self.decoded += 1
        if self.alias_depth:
            self.aliased += 1
        if (
            self.aliased > 100
            and self.decoded > 1000
            and self.aliased / self.decoded > _allowed_alias_ratio(self.decoded)
        ):
            raise YAMLError("yaml: document contains excessive aliasing")
        if node.kind == "alias":
            assert node.alias is not None
            if id(node) in self.active:
                raise YAMLError(f"yaml: anchor '{node.value}' value contains itself")
            self.active.add(id(node))
            self.alias_depth += 1
            try:
                return self.value(node.alias, into)
            finally:
                self.alias_depth -= 1
                self.active.discard(id(node))
        if node.kind == "scalar":
            return self.scalar(node)
        if node.kind == "sequence":
            return [self.value(child) for child in node.children]
        pairs = {} if into is None else into
        for key_node, value_node in zip(node.children[::2], node.children[1::2], strict=True):
            if key_node.kind == "scalar" and key_node.value == "<<" and (key_node.implicit or key_node.tag == MERGE):
                self.merge(value_node, pairs)
                continue
            key = self.value(key_node)
            if isinstance(key, (dict, list)):
                raise YAMLError(f"yaml: invalid map key: {key!r}")
            pairs[(type(key).__name__, key)] = (key, self.value(value_node))
        return pairs

    def merge(self, node: _Node, into: dict[tuple[str, Any], tuple[Any, Any]]) -> None:
        target = node.alias if node.kind == "alias" else node
        if target is not None and target.kind == "mapping":
            self.value(node, into)
        elif node.kind == "sequence" and all((c.alias or c).kind == "mapping" for c in node.children):
            for child in reversed(node.children):
                self.value(child, into)
        else:
            raise YAMLError("yaml: map merge requires map or sequence of maps as the value")

    def scalar(self, node: _Node) -> Any:
        if not node.tag and not node.implicit:
            return node.value  # quoted
        tag, value = resolve(node.tag, node.value)
        if tag == BINARY:
            try:
                data = base64.b64decode(
                    value.replace("\n", "").replace("\r", ""), validate=True
                )  # Go skips line breaks
                return data.decode("utf-8", "replace")
            except binascii.Error:
                raise YAMLError("yaml: !!binary value contains invalid base64 data") from None
        return node.value if tag == TIMESTAMP else value  # timestamps stay strings in interface{}


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


def _json_value(value: Any) -> Any:
    """sigs.k8s.io/yaml's convertToJSONableObject, then what encoding/json refuses or prints."""
    if isinstance(value, dict):
        return {_json_key(key): _json_value(item) for key, item in value.values()}
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YAMLError(f"json: unsupported value: {_go_float_name(value)}")
        if value.is_integer() and abs(value) < 1e21:
            return int(value)  # encoding/json prints 1.0 as 1, which Go's integer fields accept
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and -(1 << 63) <= key < (1 << 63):
        return str(key)
    if isinstance(key, float):
        return go_format_float(key, 32)  # sic: sigs.k8s.io/yaml formats float keys at 32 bits
    raise YAMLError(f"unsupported map key of type: {_go_type(key)}, key: {key!r}")


def _go_type(value: Any) -> str:
    return "<nil>" if value is None else "uint64" if isinstance(value, int) and value > 0 else "*big.Int"


def _go_float_name(value: float) -> str:
    return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"


def _v2_message(err: yaml.MarkedYAMLError) -> str:
    """yaml.v2's parser.fail(): the problem, after the problem's line (scanner errors count from
    1, parser errors from 0), or else the context's line, or no line at all when that is 0."""
    line = 0
    if err.problem_mark is not None and err.problem_mark.line:
        line = err.problem_mark.line + (1 if isinstance(err, yaml.scanner.ScannerError) else 0)
    elif err.context_mark is not None and err.context_mark.line:
        line = err.context_mark.line
    where = f"line {line}: " if line else ""
    problem = _V2_WORDING.get(err.problem or "", err.problem) or "unknown problem parsing YAML content"
    return f"yaml: {where}{problem}"


# Where libyaml 0.2 reworded a message that yaml.v2, ported from libyaml 0.1, still prints the old way.
_V2_WORDING = {"found a tab character that violates indentation": "found a tab character that violate indentation"}
