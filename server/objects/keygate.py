"""Writers of one object in this core take turns, so a hot object costs one attempt per write, not one per race.

A write without a precondition is retried until its compare-and-swap holds (update.py, as kube-apiserver's
GuaranteedUpdate). With n writers racing on one key, every round has one winner and n - 1 losers that redo
their whole work (decode, patch, validate, render): n² attempts for n writes. Queueing them per key in the
process makes the attempts n; the store's compare still decides, so writers in other cores (or a turn given
up, below) stay safe, only racing.

A turn is waited for at most `max_wait`; past it the writer goes ahead without one and races as it would
have. So no writer waits without bound and no nesting can deadlock: a write whose admission writes another
object (a quota's usage) holds its own key's turn while it waits for the other's, at most `max_wait`.
Memory: one entry per key being written, gone when its last writer leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

MAX_WAIT = 1.0  # seconds a writer waits for its turn before racing instead


class KeyGate:
    def __init__(self, max_wait: float = MAX_WAIT) -> None:
        self._max_wait = max_wait
        self._waiting: dict[bytes, deque[asyncio.Future[bool]]] = {}  # present: the key's turn is held

    async def enter(self, key: bytes) -> bool:
        """True: the caller holds the key's turn and must `leave` it; False: it waited max_wait and holds none."""
        waiting = self._waiting.get(key)
        if waiting is None:
            self._waiting[key] = deque()
            return True
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[bool] = loop.create_future()
        waiting.append(turn)
        timer = loop.call_later(self._max_wait, self._give_up, waiting, turn)
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled() and turn.result():
                self.leave(key)  # the turn came as the caller was cancelled: pass it on
            else:
                _discard(waiting, turn)
            raise
        finally:
            timer.cancel()

    def leave(self, key: bytes) -> None:
        """The holder is done: the next waiter of the key gets the turn."""
        waiting = self._waiting[key]
        while waiting:
            turn = waiting.popleft()
            if not turn.done():
                turn.set_result(True)
                return
        del self._waiting[key]

    @staticmethod
    def _give_up(waiting: deque[asyncio.Future[bool]], turn: asyncio.Future[bool]) -> None:
        if not turn.done():
            _discard(waiting, turn)
            turn.set_result(False)

    def __len__(self) -> int:
        """Keys whose turn is held now."""
        return len(self._waiting)


def _discard(waiting: deque[asyncio.Future[bool]], turn: asyncio.Future[bool]) -> None:
    with contextlib.suppress(ValueError):
        waiting.remove(turn)
