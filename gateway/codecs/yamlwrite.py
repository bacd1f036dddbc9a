"""JSONToYAML as sigs.k8s.io/yaml (v1.4, over yaml.v2) writes it, for gateway/codecs/yaml.py: the object's JSON
read back as YAML 1.1 values and marshalled by yaml.v2 (what the result looks like: gateway/codecs/yaml.py).

Events go to libyaml (PyYAML's C emitter) when present: yaml.v2 is a Go port of it, so style
choices match; the pure-Python emitter stands in otherwise.
"""

from __future__ import annotations

import io
import json
import math
from functools import cmp_to_key
from typing import Any

from yaml import events as ev

from server.machinery.codec.yamlresolve import BASE60, STR, go_format_float, resolve_implicit

try:
    from yaml._yaml import CEmitter as _Emitter
except ImportError:  # PyYAML built without libyaml
    from yaml.emitter import Emitter as _PyEmitter

    class _Emitter(_PyEmitter):  # type: ignore[no-redef]
        def choose_scalar_style(self) -> str:
            style = super().choose_scalar_style()
            # libyaml (and yaml.v2) fall back from a block scalar to double quotes, PyYAML to single.
            return '"' if self.event.style == "|" and style == "'" else style  # type: ignore[union-attr]


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
    elif resolve_implicit("", value)[0] != STR or BASE60.fullmatch(value):
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
