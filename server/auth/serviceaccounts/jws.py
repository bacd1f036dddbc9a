"""Compact JWS tokens read once: the three segments decoded strictly, the header and claims parsed, the signature
checked by PyJWT's algorithm objects (the cryptography stays the library's), and the time claims judged as
go-jose judges them.

The authenticator reads a token's issuer before deciding it is its own, then its header, then verifies it; PyJWT's
own decode would parse the token three times and validates the base64url alphabet a character at a time in Python
(~60 µs a token here, more than the RS256 verification). A segment here is accepted exactly when PyJWT accepts it:
the base64url alphabet, unpadded, in its canonical encoding (the unused bits of the last character zero).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import orjson
from jwt.algorithms import Algorithm, get_default_algorithms

_SEGMENT = re.compile(rb"[A-Za-z0-9_-]*")
# The algorithms a verification key may be used with (keys.algorithm names one of these per key).
_ALGORITHMS: dict[str, Algorithm] = {name: alg for name, alg in get_default_algorithms().items()
                                     if name in ("RS256", "ES256", "ES384", "ES512")}


class Invalid(ValueError):
    """The token is ours but not valid: the message is what the 401 says."""


@dataclass(frozen=True, slots=True)
class Token:
    header: dict[str, Any]
    claims: dict[str, Any]
    signing_input: bytes
    signature: bytes


def _segment(text: bytes) -> bytes | None:
    if len(text) % 4 == 1 or _SEGMENT.fullmatch(text) is None:
        return None
    try:
        decoded = base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))
    except binascii.Error:
        return None
    if base64.urlsafe_b64encode(decoded).rstrip(b"=") != text:
        return None
    return decoded


def _object(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse(token: str) -> Token | None:
    """The token's parts, or None when it is no compact JWS with JSON object header and claims."""
    if token.count(".") != 2 or not token.isascii():
        return None
    raw = token.encode()
    signing_input, _, signature_text = raw.rpartition(b".")
    header_text, _, claims_text = signing_input.partition(b".")
    header = _object(_segment(header_text))
    if header is None:
        return None
    claims = _object(_segment(claims_text))
    signature = _segment(signature_text)
    if claims is None or signature is None:
        return None
    return Token(header, claims, signing_input, signature)


def verify(token: Token, key: Any, algorithm: str) -> bool:
    """Whether `key` signed the token with `algorithm` (the caller matched the header's alg to the key's)."""
    return _ALGORITHMS[algorithm].verify(token.signing_input, key, token.signature)


def _numeric(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(f"service account token is invalid: the {name} claim must be a number")
    return float(value)


@dataclass(frozen=True, slots=True)
class Window:
    """When the token is valid, leeway applied: not_before <= now < expires."""

    not_before: float
    expires: float


def window(claims: dict[str, Any], leeway: float) -> Window:
    """exp (required), nbf and iat, each with go-jose's leeway: expired when exp + leeway <= now, not yet valid
    when now < nbf - leeway or iat - leeway (issued in the future)."""
    expires = _numeric(claims, "exp")
    if expires is None:
        raise Invalid("service account token is invalid: Token is missing the \"exp\" claim")
    not_before = max(_numeric(claims, "nbf") or 0.0, _numeric(claims, "iat") or 0.0) - leeway
    return Window(not_before, expires + leeway)
