"""Go's strconv.FormatFloat(v, 'g', -1, bits) for finite values: how Go prints a float in text.

Kubernetes' error messages and YAML output embed Go-printed floats; the callers add their own names
for NaN and the infinities (Go's "NaN"/"+Inf", yaml.v2's ".nan"/".inf").
"""

from __future__ import annotations

import math
import struct


def format_g(value: float, bits: int = 64) -> str:
    """The shortest digits that read back (as a float32 when bits is 32), with an exponent below 1e-4
    and from 1e6 on: 1e+06, 0.0001, 1e-05, 123.5."""
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, point = _shortest(abs(value), bits)
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _shortest(value: float, bits: int) -> tuple[str, int]:
    """The shortest digits that read back as value, and where the decimal point goes: 0.00123 is ("123", -2)."""
    text = repr(value)
    if bits == 32:
        single = struct.unpack("f", struct.pack("f", value))[0]
        text = next(
            t for p in range(9) if struct.unpack("f", struct.pack("f", float(t := f"{single:.{p}e}")))[0] == single
        )
    mantissa, _, exp = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = (whole + fraction).lstrip("0")
    point = len(whole) - (len(whole + fraction) - len(raw)) + int(exp or 0)
    return raw.rstrip("0") or "0", point
