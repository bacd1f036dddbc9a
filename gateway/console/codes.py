"""One-time login codes: how `capstan console` hands a browser a bearer token without putting the token in a URL.

A caller that holds a bearer token and may `post` the non-resource path /console/codes registers it and gets a
code back; the code goes in the login URL's fragment (never sent to a server, never in an access log), and the
page exchanges it once, by POST, for the token. Contract: a code is 256 random bits, redeems at most once, and
expires after `ttl` seconds; at most `capacity` codes wait at a time (the oldest is dropped for a new one), so
registering cannot grow memory without bound. Codes live in the gateway process that issued them.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

TTL = 300.0  # seconds a code may wait to be redeemed
CAPACITY = 64  # codes waiting at once


@dataclass(frozen=True, slots=True)
class _Waiting:
    token: str
    expires: float


class Codes:
    """The codes waiting to be redeemed, keyed by their SHA-256 (the codes themselves are not kept)."""

    def __init__(self, *, ttl: float = TTL, capacity: int = CAPACITY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._capacity = capacity
        self._clock = clock
        self._waiting: OrderedDict[bytes, _Waiting] = OrderedDict()

    def issue(self, token: str) -> str:
        """A new code that redeems for `token`."""
        self._expire()
        code = secrets.token_urlsafe(32)
        self._waiting[_key(code)] = _Waiting(token, self._clock() + self.ttl)
        while len(self._waiting) > self._capacity:
            self._waiting.popitem(last=False)
        return code

    def redeem(self, code: str) -> str | None:
        """The token `code` stands for, once; None for a code unknown, already redeemed or expired."""
        self._expire()
        waiting = self._waiting.pop(_key(code), None)
        return None if waiting is None else waiting.token

    def _expire(self) -> None:
        now = self._clock()
        while self._waiting:
            key, first = next(iter(self._waiting.items()))
            if first.expires > now:
                return
            del self._waiting[key]


def _key(code: str) -> bytes:
    return hashlib.sha256(code.encode()).digest()
