"""Authenticators: each answers who one kind of credential proves (kube's authenticator.Request).

`authenticate` returns the user, or None when the credential it knows is absent (the union asks the next one);
it raises Unauthorized (server/auth/errors.py) when its credential is present but bad: an expired, forged or
unknown token is a 401, never a fall-through to anonymous.
"""

from __future__ import annotations

from typing import Protocol

from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo


class Authenticator(Protocol):
    async def authenticate(self, credentials: Credentials) -> UserInfo | None: ...


class RequestAuthenticator(Protocol):
    """What the guard asks (server/auth/guard.py): the user a request's credentials prove, after every
    configured authenticator and anonymous (UnionAuthenticator), or one user whatever it sends (--insecure).
    Never None: a request that proves nobody raises Unauthorized."""

    async def authenticate(self, credentials: Credentials) -> UserInfo: ...
