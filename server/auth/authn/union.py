"""The authenticators in kube-apiserver's order, and what a request proves when none of them applies.

Order: request header (front proxy), x509 client certificate, bearer tokens (static file, then service account
JWTs). The first that answers a user wins; the others' errors then do not matter. When none answers:
- a bearer token was sent: 401 (kube's "invalid bearer token"), never anonymous;
- another credential failed (a certificate no CA issued): 401;
- nothing was sent: anonymous (system:anonymous, group system:unauthenticated) when --anonymous-auth is on,
  else 401.
Every authenticated user also gets system:authenticated.

Static token results are cached for TOKEN_TTL seconds by the token's bytes (kube caches successes for 10 s). The
service account authenticator keeps its own cache of verified tokens and checks the objects a token names on
every request (serviceaccounts/authenticator.py), so a deleted account's token fails at once.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Sequence

from server.auth.authn import Authenticator
from server.auth.errors import Unauthorized
from server.machinery.credentials import Credentials
from server.machinery.user import ANONYMOUS_USER, UserInfo

log = logging.getLogger(__name__)

TOKEN_TTL = 10.0
TOKEN_CACHE_SIZE = 4096
MAX_TOKEN_BYTES = 16 * 1024  # longer "tokens" are refused unread


class TokenCache:
    """Successful static-token answers by token, for TOKEN_TTL seconds (bounded, least recently used out)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, tuple[float, UserInfo]] = OrderedDict()

    def get(self, token: str) -> UserInfo | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            del self._entries[token]
            return None
        self._entries.move_to_end(token)
        return entry[1]

    def put(self, token: str, user: UserInfo) -> None:
        self._entries[token] = (time.monotonic() + TOKEN_TTL, user)
        if len(self._entries) > TOKEN_CACHE_SIZE:
            self._entries.popitem(last=False)


class UnionAuthenticator:
    def __init__(self, *, connection: Sequence[Authenticator], tokens: Sequence[Authenticator],
                 anonymous: bool, cacheable_tokens: Sequence[Authenticator] = ()) -> None:
        """connection: request header and x509, tried first, and only for a request with a client certificate
        or a front proxy's assertion (what they judge); tokens: bearer-token authenticators in order (those
        also in cacheable_tokens have their successes cached)."""
        self._connection = tuple(connection)
        self._tokens = tuple(tokens)
        self._cacheable = frozenset(id(a) for a in cacheable_tokens)
        self._anonymous = anonymous
        self._cache = TokenCache()

    async def authenticate(self, credentials: Credentials) -> UserInfo:
        """The caller's user, system:authenticated added; raises Unauthorized when the request proves nobody."""
        user = await self._find(credentials)
        if user is not None:
            return user.with_authenticated()
        if self._anonymous:
            return ANONYMOUS_USER
        raise Unauthorized("no credentials, and anonymous requests are disabled")

    async def _find(self, credentials: Credentials) -> UserInfo | None:
        errors: list[Unauthorized] = []
        if credentials.certificate or credentials.proxy is not None:
            found = await _first(self._connection, credentials, errors)
            if found is not None:
                return found[1]
        token = credentials.token
        if token:
            if len(token) > MAX_TOKEN_BYTES:
                raise Unauthorized("bearer token too long")
            cached = self._cache.get(token)
            if cached is not None:
                return cached
            found = await _first(self._tokens, credentials, errors)
            if found is None:
                raise Unauthorized("; ".join(e.why for e in errors) or "invalid bearer token")
            authenticator, user = found
            if id(authenticator) in self._cacheable:
                user = user.with_authenticated()  # cached as answered: a hit then adds no group
                self._cache.put(token, user)
            return user
        if errors:
            raise errors[0]
        return None


async def _first(authenticators: tuple[Authenticator, ...], credentials: Credentials,
                 errors: list[Unauthorized]) -> tuple[Authenticator, UserInfo] | None:
    """The first authenticator that answers a user, and the user; the others' errors are added to `errors`."""
    for authenticator in authenticators:
        try:
            user = await authenticator.authenticate(credentials)
        except Unauthorized as err:
            errors.append(err)
            continue
        if user is not None:
            return authenticator, user
    return None
