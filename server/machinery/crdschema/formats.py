"""The string formats kube-openapi's strfmt registry checks (unknown formats are ignored, as there).

Each check answers whether a string is of the format; kube-apiserver reports a mismatch as
`spec.email in body must be of type email: "foo"`.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from urllib.parse import urlparse

from server.machinery.codec import gotime

_HOST_LABEL = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_UUID3 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_UUID4 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", re.I)
_UUID5 = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", re.I)
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")


def _hostname(value: str) -> bool:
    if not value or len(value) > 255:
        return False
    return all(_HOST_LABEL.match(label) for label in value.rstrip(".").split("."))


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def is_cidr(value: str) -> bool:
    """An IP network in CIDR notation (a prefix length required; host bits may be set), as Go's ParseCIDR reads it."""
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _uri(value: str) -> bool:
    parsed = urlparse(value)
    return bool(parsed.scheme) or value.startswith("/")


def _duration(value: str) -> bool:
    try:
        gotime.parse_duration(value)
    except gotime.TimeError:
        return False
    return True


def _date(value: str) -> bool:
    if not _DATE.match(value):
        return False
    year, month, day = (int(part) for part in value.split("-"))
    return 1 <= month <= 12 and 1 <= day <= 31 and year >= 0


CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda v: bool(_BSON.match(v)),
    "uri": _uri,
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": is_cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID3.match(v)),
    "uuid4": lambda v: bool(_UUID4.match(v)),
    "uuid5": lambda v: bool(_UUID5.match(v)),
    "hexcolor": lambda v: bool(_HEXCOLOR.match(v)),
    "rgbcolor": lambda v: bool(_RGBCOLOR.match(v)),
    "ssn": lambda v: bool(_SSN.match(v)),
    "byte": _byte,
    "password": lambda v: True,
    "date": _date,
    "duration": _duration,
    "datetime": lambda v: bool(_DATE_TIME.match(v)),
    "date-time": lambda v: bool(_DATE_TIME.match(v)),
}


def check(format_name: str, value: str) -> bool:
    """Whether value is of the format; True for formats kube-openapi does not know."""
    checker = CHECKS.get(format_name)
    return checker is None or checker(value)
