"""The caller of the CoreService call in progress, for the parts of the core that decide by who asks:
escalation checks on RBAC writes, reviews (SelfSubjectAccessReview, SelfSubjectReview), TokenRequest and
ServiceAccount admission, audit.

Contract: the guard (guard.py) sets it for the duration of one call, in that call's own task, so concurrent
calls never see each other's caller (asyncio copies context per task; a watch keeps the caller it opened
with). Code that runs outside any call — the core's own controllers, bootstrap — sees SYSTEM.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from server.auth.authn import RequestAuthenticator
from server.auth.authorizer import AlwaysAllow, Authorizer
from server.machinery.user import SYSTEM, UserInfo


@dataclass(frozen=True, slots=True)
class Caller:
    user: UserInfo
    authorizer: Authorizer
    # The server's authenticators and API audiences, for TokenReview; None outside a call (nothing to ask).
    authenticator: RequestAuthenticator | None = None
    audiences: tuple[str, ...] = ()


_INTERNAL = Caller(SYSTEM, AlwaysAllow())
_CURRENT: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("capstan_caller", default=None)


def current() -> Caller:
    return _CURRENT.get() or _INTERNAL


def bind(caller: Caller) -> contextvars.Token[Caller | None]:
    return _CURRENT.set(caller)


def unbind(token: contextvars.Token[Caller | None]) -> None:
    _CURRENT.reset(token)
