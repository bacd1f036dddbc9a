"""The syntax of a resource.Quantity ("500m", "1Gi", "2e3"), checked the way kube-apiserver checks it.

Go's Quantity.UnmarshalJSON runs ParseQuantity on the string (or bare number) it is given and
fails with one of three fixed messages, which clients see verbatim. This module accepts and
rejects exactly as ParseQuantity's scanner and suffix table do, and prints a quantity as
Quantity.String() does (`canonical`): the value rounded up to nano units, in the form its suffix
chose (DecimalSI, BinarySI, DecimalExponent) with the exponent a multiple of 3, e.g. "1000m" -> "1",
"1024Mi" -> "1Gi", "0.5" -> "500m", "1e3" stays "1e3"; an input already canonical is kept as written.
"""

from __future__ import annotations

import functools

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


# --- Values and the canonical form (resource.Quantity's String()). ---------------------------------------------------

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIXES = {exponent: suffix for suffix, exponent in _DECIMAL_EXPONENTS.items()}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIXES = {exponent // 10: suffix for suffix, exponent in _BINARY_EXPONENTS.items()}
_NANO = -9
_MAX_INT64 = (1 << 63) - 1


class Quantity:
    """A parsed quantity: the value coefficient * 10**exponent, and the format its suffix chose.

    `text` is the string Go's ParseQuantity keeps when the input is already canonical (String() then
    returns the input itself), else "".
    """

    __slots__ = ("coefficient", "exponent", "format", "text")

    def __init__(self, coefficient: int, exponent: int, fmt: str, text: str = "") -> None:
        self.coefficient = coefficient
        self.exponent = exponent
        self.format = fmt
        self.text = text

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1, as Quantity.Cmp."""
        low = min(self.exponent, other.exponent)
        a: int = self.coefficient * 10 ** (self.exponent - low)
        b: int = other.coefficient * 10 ** (other.exponent - low)
        return (a > b) - (a < b)

    def sign(self) -> int:
        return (self.coefficient > 0) - (self.coefficient < 0)

    def round_up(self, exponent: int) -> Quantity:
        """Quantity.RoundUp(scale): away from zero to a multiple of 10**exponent; the kept text is dropped."""
        if self.exponent >= exponent:
            return self
        return Quantity(_round_away(self.coefficient, exponent - self.exponent), exponent, self.format)

    def __str__(self) -> str:
        return self.text or canonical_string(self)


def _round_away(coefficient: int, digits: int) -> int:
    """coefficient / 10**digits rounded away from zero (inf.RoundUp)."""
    if digits > len(str(abs(coefficient))):  # below one unit: any non-zero value rounds to one
        return (coefficient > 0) - (coefficient < 0)
    step: int = 10**digits
    magnitude: int = -(-abs(coefficient) // step)
    return magnitude if coefficient >= 0 else -magnitude


def _split(text: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: (positive, num without leading zeros, denominator digits, suffix)."""
    pos = 0
    positive = True
    if text[:1] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < len(text) and text[pos] == "0":
        pos += 1
    end = _digits_end(text, pos)
    num = text[pos:end] or "0"
    denom = ""
    if end < len(text) and text[end] == ".":
        denom_end = _digits_end(text, end + 1)
        denom = text[end + 1 : denom_end]
        end = denom_end
    return positive, num, denom, text[end:]


def parse_quantity(text: str) -> Quantity:
    """Go's ParseQuantity (after check_quantity's syntax checks): the value, its format and any kept text.

    Values are rounded away from zero to nano units; BinarySI values are capped at 2**63-1, and those
    between 0 and 1 become DecimalSI. Examples: "1Gi" keeps its text; "1024Mi" is 2**30 BinarySI (no
    text, printed "1Gi"); "0.5" is 5e-1 DecimalSI (printed "500m"); "1e3" keeps its text.
    """
    text = check_quantity(text)
    positive, num, denom, suffix = _split(text)
    if suffix in _DECIMAL_EXPONENTS:
        base, exponent, fmt = 10, _DECIMAL_EXPONENTS[suffix], DECIMAL_SI
    elif suffix in _BINARY_EXPONENTS:
        base, exponent, fmt = 2, _BINARY_EXPONENTS[suffix], BINARY_SI
    else:
        base, exponent, fmt = 10, int(suffix[1:]), DECIMAL_EXPONENT
    digits = int(num + denom)
    kept = _kept_text(text, fmt, exponent, num, denom, digits)
    if base == 10:
        coefficient, scale = digits, exponent - len(denom)
    else:
        coefficient, scale = digits << exponent, -len(denom)
    if not positive:
        coefficient = -coefficient
    if scale < _NANO:
        coefficient, scale = _round_away(coefficient, _NANO - scale), _NANO
    if fmt == BINARY_SI:
        if abs(coefficient) * 10**scale > _MAX_INT64 if scale >= 0 else abs(coefficient) > _MAX_INT64 * 10**-scale:
            coefficient, scale = (_MAX_INT64 if coefficient > 0 else -_MAX_INT64), 0
        elif coefficient and scale < 0 and abs(coefficient) < 10**-scale:
            fmt = DECIMAL_SI  # between 0 and 1: "this avoids rounding and hopefully confusion"
    return Quantity(coefficient, scale, fmt, kept)


def _kept_text(text: str, fmt: str, exponent: int, num: str, denom: str, digits: int) -> str:
    """ParseQuantity's fast path keeps the input string when it is already in canonical form."""
    shifted = num + denom
    if fmt == BINARY_SI:
        if denom:
            return ""
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        if precision < 0 or digits << exponent > _MAX_INT64:
            return ""
        return text if exponent % 10 == 0 and digits & 0x07 else ""
    precision = 18 - len(num) - len(denom)
    scale = exponent - len(denom)
    if precision < 0 or scale < _NANO:
        return ""
    go_mod = abs(scale) % 3  # Go's % keeps the dividend's sign; only zero matters here
    return text if go_mod == 0 and not shifted.endswith("000") and shifted[0] != "0" else ""


def canonical_string(q: Quantity) -> str:
    """Quantity.CanonicalizeBytes: "0" for zero; BinarySI in powers of 1024 when exact and |q| >= 1024;
    otherwise a mantissa with an exponent that is a multiple of 3 and its SI (or e<n>) suffix."""
    if q.coefficient == 0:
        return "0"
    fmt = q.format
    sign = "-" if q.coefficient < 0 else ""
    magnitude = abs(q.coefficient)
    if fmt == BINARY_SI:
        whole = magnitude * 10**q.exponent if q.exponent >= 0 else None
        if whole is None and magnitude % 10**-q.exponent == 0:
            whole = magnitude // 10**-q.exponent
        if whole is None or whole < 1024:
            fmt = DECIMAL_SI
        else:
            power = 0
            while whole % 1024 == 0 and power < 6:
                whole //= 1024
                power += 1
            return f"{sign}{whole}{_BINARY_SUFFIXES.get(power, '')}"
    exponent = q.exponent
    while magnitude % 10 == 0:
        magnitude //= 10
        exponent += 1
    while exponent % 3:
        magnitude *= 10
        exponent -= 1
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{magnitude}{'e' + str(exponent) if exponent else ''}"
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    if suffix is None:  # beyond E (or below n): exponent notation rather than a wrong magnitude
        return f"{sign}{magnitude}e{exponent}"
    return f"{sign}{magnitude}{suffix}"


@functools.lru_cache(maxsize=8192)
def canonical(text: str) -> str:
    """What kube-apiserver prints for the quantity `text` (already syntax-checked), e.g. "1024Mi" -> "1Gi"."""
    return str(parse_quantity(text))
