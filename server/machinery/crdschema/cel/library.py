"""kube's CEL library as apiserver 1.28 enables it for CRD rules, over the engine's plain values.

k8s.io/apiserver/pkg/cel/library: lists (isSorted, sum, min, max, indexOf, lastIndexOf), regex (find,
findAll), urls (url, isURL, getScheme, getHost, getHostname, getPort, getEscapedPath, getQuery); and
cel-go's ext.Strings v2 (charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring,
trim, join). The engine calls a member function with its receiver first: `'a'.upperAscii()` is
upperAscii('a'). Sets and quantities arrive in 1.29's environment, so 1.28 (and Capstan) refuse them
as undeclared. A URL is carried as its text: url(s) checks it and getScheme(url) parses it again.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs, urlsplit


class LibraryError(ValueError):
    """A library function's runtime error, worded as cel-go words it."""


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise LibraryError(f"error parsing regexp: {err}") from None


def is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(items))


def sum_(items: list[Any]) -> Any:
    return sum(items) if items else 0


def min_(items: Any, *more: Any) -> Any:
    values = list(items) if isinstance(items, list) else [items, *more]
    if not values:
        raise LibraryError("min(list) called on empty list")
    return min(values)


def max_(items: Any, *more: Any) -> Any:
    values = list(items) if isinstance(items, list) else [items, *more]
    if not values:
        raise LibraryError("max(list) called on empty list")
    return max(values)


def index_of(target: Any, value: Any, start: int = 0) -> int:
    if isinstance(target, list):
        return next((i for i, item in enumerate(target) if item == value), -1)
    if start < 0 or start > len(target):
        raise LibraryError(f"index out of range: {start}")
    return int(target.find(value, start))


def last_index_of(target: Any, value: Any, start: int | None = None) -> int:
    if isinstance(target, list):
        return next((i for i in range(len(target) - 1, -1, -1) if target[i] == value), -1)
    if start is None:
        return int(target.rfind(value))
    if start < 0 or start >= len(target) + 1:
        raise LibraryError(f"index out of range: {start}")
    return int(target.rfind(value, 0, start + len(value)))


def char_at(s: str, index: int) -> str:
    if index < 0 or index > len(s):
        raise LibraryError(f"index out of range: {index}")
    return s[index] if index < len(s) else ""


def lower_ascii(s: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in s)


def upper_ascii(s: str) -> str:
    return "".join(c.upper() if c.isascii() else c for c in s)


def replace(s: str, old: str, new: str, limit: int = -1) -> str:
    return s.replace(old, new, limit)


def split(s: str, sep: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    if sep == "":
        parts = list(s)
        return parts if limit < 0 or limit >= len(parts) else [*parts[:limit - 1], s[limit - 1:]]
    return s.split(sep, limit - 1 if limit > 0 else -1)


def substring(s: str, start: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise LibraryError(f"index out of range: {start}")
    if stop < start or stop > len(s):
        raise LibraryError(f"index out of range: {stop}")
    return s[start:stop]


def trim(s: str) -> str:
    return s.strip()


def join(items: list[str], sep: str = "") -> str:
    return sep.join(items)


def find(s: str, pattern: str) -> str:
    found = _regex(pattern).search(s)
    return found.group(0) if found else ""


def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


def _parsed(text: str) -> Any:
    parts = urlsplit(text)
    if not parts.scheme and not text.startswith("/"):
        raise LibraryError(f"URL parse error during conversion from string: parse {text!r}: "
                           "invalid URI for request")
    return parts


def url(text: str) -> str:
    _parsed(text)
    return text


def is_url(text: str) -> bool:
    try:
        _parsed(text)
    except (LibraryError, ValueError):
        return False
    return True


def get_scheme(text: str) -> str:
    return str(_parsed(text).scheme)


def get_host(text: str) -> str:
    return str(_parsed(text).netloc.rpartition("@")[2])


def get_hostname(text: str) -> str:
    return str(_parsed(text).hostname or "")


def get_port(text: str) -> str:
    host = get_host(text)
    return host.rpartition(":")[2] if ":" in host.rpartition("]")[2] else ""


def get_escaped_path(text: str) -> str:
    return str(_parsed(text).path)


def get_query(text: str) -> dict[str, list[str]]:
    return {k: list(v) for k, v in parse_qs(_parsed(text).query, keep_blank_values=True).items()}


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "isSorted": is_sorted, "sum": sum_, "min": min_, "max": max_, "indexOf": index_of,
    "lastIndexOf": last_index_of, "charAt": char_at, "lowerAscii": lower_ascii, "upperAscii": upper_ascii,
    "replace": replace, "split": split, "substring": substring, "trim": trim, "join": join, "find": find,
    "findAll": find_all, "url": url, "isURL": is_url, "getScheme": get_scheme, "getHost": get_host,
    "getHostname": get_hostname, "getPort": get_port, "getEscapedPath": get_escaped_path, "getQuery": get_query,
}
