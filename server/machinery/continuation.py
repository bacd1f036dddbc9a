"""List continue tokens, in kube-apiserver's format so tokens look and behave the same.

A token is base64url (no padding) of {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>"}
where start is the next key relative to the listed prefix. It pins the
revision of the first page: every later page is read at that revision, and once
it is compacted the token is expired (410).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from dataclasses import dataclass

import orjson

from server.machinery import errors

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
    have issued."""
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError) as err:
        raise _invalid(f"continue key is not valid: {err}") from None
    if not isinstance(data, dict):
        raise _invalid("continue key is not valid")
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


def _invalid(detail: str) -> errors.ApiError:
    return errors.bad_request(f"invalid continue token: {detail}")
