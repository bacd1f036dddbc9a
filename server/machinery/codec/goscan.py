"""Go encoding/json's syntax errors, in its words: why json.Unmarshal would refuse a document before decoding any
of it (checkValid, the scanner of Go 1.21's encoding/json, which kube-apiserver 1.28 is built with).

kube's serializers look a body's kind up by unmarshalling it first (the json serializer's Interpret), so a
malformed body reaches a client as

    couldn't get version/kind; json parse error: invalid character '}' looking for beginning of object key string

Go's scanner is a state machine over bytes; `syntax_error` walks the same states and stops where it stops, with
its message: `invalid character <c> <context>` (the character as Go's quoteChar prints it), or `unexpected end
of JSON input` when the document ends early. It is only run on a body a faster parser has already refused, so it
is written for fidelity, not speed. Hand-written because the words are Go's and no Python JSON parser says them.

`loads` reads a document as Go does: orjson first; what orjson refuses is refused in Go's words, or, when Go
reads it (a string that is not UTF-8, an integer past 64 bits), read as Go reads it.
"""

from __future__ import annotations

import codecs
import json
import unicodedata
from collections.abc import Callable
from typing import Any

import orjson

MAX_DEPTH = 10000  # Go's maxNestingDepth

_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_NAMED = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v"}

_OBJECT_KEY, _OBJECT_VALUE, _ARRAY_VALUE = range(3)


def quote_char(c: int) -> str:
    """Go's quoteChar(c): the byte as a rune in single quotes, escaped as strconv.Quote escapes it."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    if c == 0x5C:
        return "'\\\\'"
    if c in _NAMED:
        return f"'{_NAMED[c]}'"
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    char = chr(c)
    if c == 0x20 or unicodedata.category(char)[0] in "LMNPS":
        return f"'{char}'"
    return f"'\\u{c:04x}'"


class _Stop(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Scanner:
    """scanner.go's states as methods; `step` is the state the next byte goes to."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.end_top = False
        self.step: Callable[[int], None] = self.begin_value

    def error(self, c: int, context: str) -> None:
        raise _Stop(f"invalid character {quote_char(c)} {context}")

    def push(self, c: int, state: int) -> None:
        self.stack.append(state)
        if len(self.stack) > MAX_DEPTH:
            self.error(c, "exceeded max depth")

    def pop(self) -> None:
        self.stack.pop()
        if not self.stack:
            self.step, self.end_top = self.end_top_value, True
        else:
            self.step = self.end_value

    def begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x5D:  # ]
            self.end_value(c)
            return
        self.begin_value(c)

    def begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7B:  # {
            self.step = self.begin_string_or_empty
            self.push(c, _OBJECT_KEY)
        elif c == 0x5B:  # [
            self.step = self.begin_value_or_empty
            self.push(c, _ARRAY_VALUE)
        elif c == 0x22:
            self.step = self.in_string
        elif c == 0x2D:  # -
            self.step = self.neg
        elif c == 0x30:
            self.step = self.zero
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        elif c in _LITERALS:
            self.step = _literal(self, *_LITERALS[c], 1)
        else:
            self.error(c, "looking for beginning of value")

    def begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7D:  # }
            self.stack[-1] = _OBJECT_VALUE
            self.end_value(c)
            return
        self.begin_string(c)

    def begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x22:
            self.step = self.in_string
            return
        self.error(c, "looking for beginning of object key string")

    def end_value(self, c: int) -> None:
        if not self.stack:
            self.step, self.end_top = self.end_top_value, True
            self.end_top_value(c)
            return
        if c in _SPACE:
            self.step = self.end_value
            return
        state = self.stack[-1]
        if state == _OBJECT_KEY:
            if c == 0x3A:  # :
                self.stack[-1] = _OBJECT_VALUE
                self.step = self.begin_value
                return
            self.error(c, "after object key")
        elif state == _OBJECT_VALUE:
            if c == 0x2C:  # ,
                self.stack[-1] = _OBJECT_KEY
                self.step = self.begin_string
                return
            if c == 0x7D:
                self.pop()
                return
            self.error(c, "after object key:value pair")
        else:
            if c == 0x2C:
                self.step = self.begin_value
                return
            if c == 0x5D:
                self.pop()
                return
            self.error(c, "after array element")

    def end_top_value(self, c: int) -> None:
        if c not in _SPACE:
            self.error(c, "after top-level value")

    def in_string(self, c: int) -> None:
        if c == 0x22:
            self.step = self.end_value
        elif c == 0x5C:
            self.step = self.in_string_escape
        elif c < 0x20:
            self.error(c, "in string literal")

    def in_string_escape(self, c: int) -> None:
        if c in _ESCAPES:
            self.step = self.in_string
        elif c == 0x75:  # u
            self.step = self.unicode_escape(4)
        else:
            self.error(c, "in string escape code")

    def unicode_escape(self, left: int) -> Callable[[int], None]:
        def state(c: int) -> None:
            if c not in _HEX:
                self.error(c, "in \\u hexadecimal character escape")
            self.step = self.in_string if left == 1 else self.unicode_escape(left - 1)
        return state

    def neg(self, c: int) -> None:
        if c == 0x30:
            self.step = self.zero
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        else:
            self.error(c, "in numeric literal")

    def one(self, c: int) -> None:
        if c in _DIGITS:
            return
        self.zero(c)

    def zero(self, c: int) -> None:
        if c == 0x2E:  # .
            self.step = self.dot
        elif c in (0x65, 0x45):  # e E
            self.step = self.exponent
        else:
            self.end_value(c)

    def dot(self, c: int) -> None:
        if c in _DIGITS:
            self.step = self.dot_digits
            return
        self.error(c, "after decimal point in numeric literal")

    def dot_digits(self, c: int) -> None:
        if c in _DIGITS:
            return
        if c in (0x65, 0x45):
            self.step = self.exponent
            return
        self.end_value(c)

    def exponent(self, c: int) -> None:
        if c in (0x2B, 0x2D):  # + -
            self.step = self.exponent_sign
            return
        self.exponent_sign(c)

    def exponent_sign(self, c: int) -> None:
        if c in _DIGITS:
            self.step = self.exponent_digits
            return
        self.error(c, "in exponent of numeric literal")

    def exponent_digits(self, c: int) -> None:
        if c not in _DIGITS:
            self.end_value(c)


_LITERALS = {0x74: ("true",), 0x66: ("false",), 0x6E: ("null",)}


def _literal(scanner: _Scanner, word: str, at: int) -> Callable[[int], None]:
    """The state after `word[:at]` of a literal (stateT, stateTr, ...)."""
    def state(c: int) -> None:
        if c != ord(word[at]):
            scanner.error(c, f"in literal {word} (expecting {quote_char(ord(word[at]))})")
        scanner.step = scanner.end_value if at + 1 == len(word) else _literal(scanner, word, at + 1)
    return state


def syntax_error(data: bytes) -> str | None:
    """What Go's json.Unmarshal says of `data` before decoding it; None when the document is valid JSON."""
    scanner = _Scanner()
    try:
        for c in data:
            scanner.step(c)
        if scanner.end_top:
            return None
        scanner.step(0x20)  # the end of input, as scanner.eof feeds it
    except _Stop as stop:
        return stop.message
    return None if scanner.end_top else "unexpected end of JSON input"


class Refused(ValueError):
    """Go's encoding/json refuses the document: the message is its words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    """Go's decoder puts U+FFFD for each byte of a string that is not UTF-8."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("capstan-go-replace", _go_replace)
_ORJSON_TOO_DEEP = "depth limit exceeded"


def loads(data: bytes) -> Any:
    """The document as Go's json.Unmarshal reads it into an interface{}; Refused with Go's words for one it refuses.
    orjson's own refusal of a document nested past its depth passes through (orjson.JSONDecodeError), for the
    caller's depth bound to word."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        if str(err).startswith(_ORJSON_TOO_DEEP):
            raise
        problem = syntax_error(data)
        if problem is not None:
            raise Refused(problem) from None
        try:
            return json.loads(data.decode("utf-8", "capstan-go-replace"))
        except (ValueError, RecursionError):
            raise err from None
