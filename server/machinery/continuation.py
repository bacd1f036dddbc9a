"""List continue tokens, in kube-apiserver's format so tokens look and behave the same.

A token is base64url (no padding) of {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>"}
where start is the next key relative to the listed prefix. It pins the
revision of the first page: every later page is read at that revision, and once
it is compacted the token is expired (410).
"""

from __future__ import annotations

import base64
import posixpath
from dataclasses import dataclass

import orjson

from server.machinery import errors
from server.machinery.codec import goscan
from server.machinery.codec.gojson import json_kind

API_VERSION = "meta.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class Continue:
    revision: int
    start: str  # the first key (relative to the prefix) the next page may hold


def encode(revision: int, start: str) -> str:
    raw = orjson.dumps({"v": API_VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str) -> Continue:
    """400 BadRequest `invalid continue token: ...` (storage.DecodeContinue's words) for anything we could not
    have issued: what Go's base64.RawURLEncoding and json.Unmarshal say of a token they refuse, then the token's
    own checks."""
    try:
        data = goscan.loads(_raw_url_b64decode(token))
    except ValueError as err:  # goscan.Refused, a base64 refusal, orjson's depth refusal
        raise _invalid(f"continue key is not valid: {err}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _invalid(f"continue key is not valid: json: cannot unmarshal {json_kind(data)} into Go value of type "
                       "storage.continueToken")
    for key, value in data.items():  # the first mistyped field in document order, matched regardless of case
        go_type = _TOKEN_FIELDS.get(key.casefold())
        if go_type is None or value is None:
            continue
        name, wanted = go_type
        fits = isinstance(value, int) and not isinstance(value, bool) if wanted == "int64" else isinstance(value, str)
        if not fits:
            raise _invalid(f"continue key is not valid: json: cannot unmarshal {json_kind(value)} into Go struct "
                           f"field continueToken.{name} of type {wanted}")
    if data.get("v") != API_VERSION:
        raise _invalid(f"continue key is not valid: server does not recognize this encoded version {data.get('v')}")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv <= 0:
        raise _invalid("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise _invalid("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    if posixpath.normpath(start) != start or start.startswith(("/", "..")):
        raise _invalid(f"continue key is not valid: {start}")
    return Continue(rv, start)


_TOKEN_FIELDS = {"v": ("v", "string"), "rv": ("rv", "int64"), "start": ("start", "string")}
_RAW_URL = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _raw_url_b64decode(token: str) -> bytes:
    """Go's base64.RawURLEncoding.DecodeString: newlines skipped, anything else outside the alphabet (padding
    too) refused at its index, as is a lone character at the end."""
    kept: list[int] = []
    last = -1
    for index, c in enumerate(token.encode("utf-8", "surrogateescape")):
        if c in (0x0A, 0x0D):
            continue
        if c not in _RAW_URL:
            raise ValueError(f"illegal base64 data at input byte {index}")
        kept.append(c)
        last = index
    if len(kept) % 4 == 1:
        raise ValueError(f"illegal base64 data at input byte {last}")
    text = bytes(kept)
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def _invalid(detail: str) -> errors.ApiError:
    return errors.bad_request(f"invalid continue token: {detail}")
