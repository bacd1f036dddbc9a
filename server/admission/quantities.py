"""Resource lists (name -> Quantity) and the arithmetic quota admission and the quota controller share
(k8s.io/apiserver/pkg/quota/v1 resources.go): Add, Subtract, Mask, LessThanOrEqual and the `a=1,b=2`
form kube's quota messages print.

A sum keeps the format of its left operand unless that is zero (Quantity.Add), so "1Gi" + "1Gi" prints
"2Gi" and 0 + "500m" prints "500m".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from server.machinery.codec.quantity import DECIMAL_SI, Quantity, QuantityError, parse_quantity

ResourceList = dict[str, Quantity]


def zero() -> Quantity:
    return Quantity(0, 0, DECIMAL_SI)


def one() -> Quantity:
    return Quantity(1, 0, DECIMAL_SI)


def parse(values: Mapping[str, Any] | None) -> ResourceList:
    """A JSON resource list as Quantities; values that are no quantity are left out (validation refused them)."""
    out: ResourceList = {}
    for name, value in (values or {}).items():
        try:
            out[name] = parse_quantity(str(value))
        except QuantityError:
            continue
    return out


def dump(values: ResourceList) -> dict[str, str]:
    return {name: str(q) for name, q in sorted(values.items())}


def plus(a: Quantity, b: Quantity) -> Quantity:
    low = min(a.exponent, b.exponent)
    total = a.coefficient * 10 ** (a.exponent - low) + b.coefficient * 10 ** (b.exponent - low)
    return Quantity(total, low, a.format if a.coefficient else b.format)


def minus(a: Quantity, b: Quantity) -> Quantity:
    return plus(a, Quantity(-b.coefficient, b.exponent, b.format))


def larger(a: Quantity, b: Quantity) -> Quantity:
    return a if a.compare(b) >= 0 else b


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, q in b.items():
        out[name] = plus(out[name], q) if name in out else q
    return out


def subtract_non_negative(a: ResourceList, b: ResourceList) -> ResourceList:
    """quota.SubtractWithNonNegativeResult: a - b per name of a, never below zero."""
    out: ResourceList = {}
    for name, q in a.items():
        diff = minus(q, b[name]) if name in b else q
        out[name] = diff if diff.sign() > 0 else zero()
    return out


def mask(values: ResourceList, names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {name: q for name, q in values.items() if name in keep}


def remove_zeros(values: ResourceList) -> ResourceList:
    return {name: q for name, q in values.items() if q.sign() != 0}


def exceeded(used: ResourceList, hard: ResourceList) -> list[str]:
    """quota.LessThanOrEqual's exceeded names: those of `used` above their `hard` value (absent: no limit)."""
    return sorted(name for name, q in used.items() if name in hard and q.compare(hard[name]) > 0)


def pretty(values: ResourceList) -> str:
    return ",".join(f"{name}={values[name]}" for name in sorted(values))


def milli(q: Quantity) -> int:
    """Quantity.MilliValue: the value in thousandths, rounded up."""
    exponent = q.exponent + 3
    if exponent >= 0:
        return int(q.coefficient * 10**exponent)
    step = 10**-exponent
    return int(-(-q.coefficient // step))


def value(q: Quantity) -> int:
    """Quantity.Value: the value rounded up to a whole number."""
    if q.exponent >= 0:
        return int(q.coefficient * 10**q.exponent)
    step = 10**-q.exponent
    return int(-(-q.coefficient // step))
