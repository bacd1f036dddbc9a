"""The one nesting bound for every decoded request body (JSON, YAML, patches, apply configurations).

kube-apiserver's JSON decoder refuses nesting past 10,000 levels; Capstan's code walks documents
recursively and orjson writes at most 254 levels, so a body nested deeper than MAX_DEPTH would end
in a RecursionError (a 500) or an object that can be stored but never rendered. Every body is
measured here right after parsing, iteratively, and refused with the words Go's scanner uses for
kube's own bound, ``invalid character '[' exceeded max depth`` (a deliberate difference: the bound is
lower than kube's, never a 500).

MAX_DEPTH counts containers: ``{"a": [1]}`` is 2 deep. It leaves room under orjson's limit for what
the server nests around a body (managedFields' fieldsV1 mirrors an object a few levels deeper).
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 200


def exceeded_in(data: bytes, value: Any, limit: int = MAX_DEPTH) -> str | None:
    """exceeded() of `value` parsed from the JSON `data`: a document with no more opening brackets than `limit`
    (counted in C, those in strings too) cannot nest deeper, so most bodies are never walked."""
    if data.count(b"{") + data.count(b"[") <= limit:
        return None
    return exceeded(value, limit)


def exceeded(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """None when value nests at most `limit` containers deep; else Go's scanner error for the bracket
    that went past it: "invalid character '[' exceeded max depth"."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) is dict:
            children: Any = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        if depth > limit:
            return f"invalid character {'{' if type(item) is dict else '['!r} exceeded max depth"
        stack.extend((child, depth + 1) for child in children if type(child) is dict or type(child) is list)
    return None
