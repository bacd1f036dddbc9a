"""The syntax of a resource.Quantity ("500m", "1Gi", "2e3"), checked the way kube-apiserver checks it.

Go's Quantity.UnmarshalJSON runs ParseQuantity on the string (or bare number) it is given and
fails with one of three fixed messages, which clients see verbatim. This module accepts and
rejects exactly as ParseQuantity's scanner and suffix table do. It does not canonicalise: the
wire keeps the text as written (trimmed), e.g. "1000m" stays "1000m".
"""

from __future__ import annotations

ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_SUFFIXES = frozenset({"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")


class QuantityError(ValueError):
    """str() is one of Go's three ParseQuantity errors."""


def _digits_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return end


def check_quantity(text: str) -> str:
    """text, trimmed of surrounding whitespace, when Go's ParseQuantity accepts it; QuantityError otherwise.

    Examples: " 1Gi " -> "1Gi"; "1.5" -> "1.5"; "1e3" -> "1e3"; "" and "1Qi" fail (format, suffix).
    """
    text = text.strip()
    if not text:
        raise QuantityError(ERR_FORMAT)
    pos = 1 if text[0] in "+-" else 0
    number_start = pos
    pos = _digits_end(text, pos)
    if pos < len(text) and text[pos] == ".":
        pos = _digits_end(text, pos + 1)
    number = text[number_start:pos]
    suffix_start = pos
    while pos < len(text) and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < len(text) and text[pos] in "+-":
        pos += 1
    if _digits_end(text, pos) != len(text):
        raise QuantityError(ERR_FORMAT)
    if suffix_start == len(text) and number.strip("0") == "" and "." not in number:
        return text  # a sign and zeros only: Go reads 0 (even "-" and "+")
    suffix = text[suffix_start:]
    if suffix not in _SUFFIXES and not (len(suffix) > 1 and suffix[0] in "eE" and _is_int64(suffix[1:])):
        raise QuantityError(ERR_SUFFIX)
    if not any("0" <= c <= "9" for c in number):
        raise QuantityError(ERR_NUMERIC)
    return text


def _is_int64(text: str) -> bool:
    """Go's strconv.ParseInt(text, 10, 64) succeeds."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit() and -(1 << 63) <= int(text) < 1 << 63
