"""The deadline of the request in progress, where one is known, and the cut that enforces it: what the calls a
request makes on its way (admission webhooks) are capped by, as kube-apiserver caps a webhook's timeoutSeconds by
the request context's deadline, and what ends a request that outlives it.

Contract: whoever knows the request's deadline binds it for the request's task (`within(seconds)`): the gateway
for a request it cuts at its ?timeout (at most --request-timeout), and the gRPC servicer for a call that
carries a gRPC deadline; the gateway's gRPC transport sends what remains as the call's deadline. `remaining()`
is the seconds left (never below 0), or None when no deadline is known (a call from the core's own controllers,
or a gRPC client that set none). asyncio copies the binding into the tasks the request starts.

`cut(seconds)` is `asyncio.timeout` for the request path: the same contract (the task is cancelled at the
deadline, and the block raises TimeoutError in its place; a cancellation from elsewhere stays a cancellation),
without a timer of its own per block. Every request has a deadline and nearly all finish long before it, so a
loop's cuts share one timer armed at the soonest of them: under load, entering and leaving a cut is a dict
insert and delete, where asyncio.timeout starts and stops a loop timer and looks up the running loop three
times.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
import weakref
from types import TracebackType

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("capstan_request_deadline", default=None)

# A sweep takes every cut due within this much of its timer: a loop's clock and its timers round to milliseconds.
_SLACK = 0.001


def remaining() -> float | None:
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class within:  # a context manager, named as contextlib's are
    """Bind a deadline `seconds` from now for the current context (None binds nothing); an earlier deadline
    already bound is kept."""

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> None:
        if self._seconds is None:
            return
        deadline = time.monotonic() + self._seconds
        bound = _DEADLINE.get()
        self._token = _DEADLINE.set(deadline if bound is None else min(bound, deadline))

    def __exit__(self, *_: object) -> None:
        if self._token is not None:
            _DEADLINE.reset(self._token)
            self._token = None


def capped(seconds: float) -> float:
    """`seconds`, or what remains of the request's deadline when that is sooner."""
    left = remaining()
    return seconds if left is None else min(seconds, left)


class cut:  # a context manager, named as asyncio.timeout is
    """Cancel the current task `seconds` from now unless the block has left by then; the block then raises
    TimeoutError. Entered in a task on a running loop."""

    __slots__ = ("_cancelling", "_cuts", "_seconds", "_task", "at", "fired")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self.fired = False

    def __enter__(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("deadline.cut must be entered in a task")
        self._task = task
        self._cancelling = task.cancelling()
        self.at = loop.time() + self._seconds
        self._cuts = _cuts_of(loop)
        self._cuts.add(self)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._cuts.discard(self)
        # As asyncio.timeout: the cancellation this cut asked for is taken back; the block's CancelledError
        # becomes TimeoutError unless somebody else also cancelled the task.
        if self.fired and self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def fire(self) -> None:
        self.fired = True
        self._task.cancel()


class _Cuts:
    """A loop's cuts in progress and the timer that fires them, armed at the soonest.

    The timer stays armed when the last cut leaves (a cut's block nearly always leaves long before its
    deadline, and re-arming for each would cost what asyncio.timeout costs); only the loop then holds it, so a
    closed loop is not kept alive by its cuts. A timer armed for an earlier time than the current one is
    stale: its sweep does nothing."""

    __slots__ = ("_cuts", "_timer", "_timer_at", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)  # the loop's entry in _LOOPS must not keep it alive
        self._cuts: dict[cut, None] = {}
        self._timer: asyncio.TimerHandle | None = None  # the current timer while cuts are in progress
        self._timer_at = math.inf  # when the current timer fires; inf: none is armed

    def add(self, entry: cut) -> None:
        self._cuts[entry] = None
        if entry.at < self._timer_at:
            self._arm(entry.at)

    def discard(self, entry: cut) -> None:
        cuts = self._cuts
        cuts.pop(entry, None)
        if not cuts:
            self._timer = None  # left to the loop: see the class's contract

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        loop = self.loop()
        if loop is None:
            return
        self._timer_at = at
        self._timer = loop.call_at(at, self._sweep, at)

    def _sweep(self, armed_at: float) -> None:
        """Fire the cuts that are due, soonest first, as a loop runs its timers (cuts found due together, after
        the loop was held, are cancelled in their deadlines' order); re-arm at the soonest of the rest (a cut
        that left since the timer was armed leaves it early, and this sweep then finds nothing due)."""
        if armed_at != self._timer_at:
            return  # stale: a sooner timer replaced this one
        self._timer = None
        self._timer_at = math.inf
        loop = self.loop()
        if loop is None:
            return
        now = loop.time() + _SLACK
        due = sorted((entry for entry in self._cuts if entry.at <= now), key=_deadline)
        for entry in due:
            del self._cuts[entry]
            entry.fire()
        if self._cuts:
            self._arm(max(min(entry.at for entry in self._cuts), now))


def _deadline(entry: cut) -> float:
    return entry.at


_LOOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Cuts] = weakref.WeakKeyDictionary()
_last: _Cuts | None = None  # the loop asked for last: nearly always the only one


def _cuts_of(loop: asyncio.AbstractEventLoop) -> _Cuts:
    global _last
    cuts = _last
    if cuts is not None and cuts.loop() is loop:
        return cuts
    cuts = _LOOPS.get(loop)
    if cuts is None:
        cuts = _LOOPS[loop] = _Cuts(loop)
    _last = cuts
    return cuts
