"""The deadline of the request in progress, where one is known: what the calls a request makes on its way
(admission webhooks) are capped by, as kube-apiserver caps a webhook's timeoutSeconds by the request context's
deadline.

Contract: whoever knows the request's deadline binds it for the request's task (`within(seconds)`): the gateway
for a request it cuts at its ?timeout (at most --request-timeout), and the gRPC servicer for a call that
carries a gRPC deadline; the gateway's gRPC transport sends what remains as the call's deadline. `remaining()`
is the seconds left (never below 0), or None when no deadline is known (a call from the core's own controllers,
or a gRPC client that set none). asyncio copies the binding into the tasks the request starts.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("capstan_request_deadline", default=None)


def remaining() -> float | None:
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Bind a deadline `seconds` from now for the current context (None binds nothing); an earlier deadline
    already bound is kept."""
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + seconds
    bound = _DEADLINE.get()
    token = _DEADLINE.set(deadline if bound is None else min(bound, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def capped(seconds: float) -> float:
    """`seconds`, or what remains of the request's deadline when that is sooner."""
    left = remaining()
    return seconds if left is None else min(seconds, left)
