"""The parts that run in one core per cluster, started and stopped together (server/runtime/election.py
decides when): the garbage collector, the pod terminator, namespace finalization, the CRD status writer and
cleanup, ClusterRole aggregation, the default ServiceAccount and the root CA publisher.

They start in order and stop all at once, every stop awaited, so a core that stops leading has stopped writing
before it is a candidate again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from server.runtime.election import Singleton

log = logging.getLogger(__name__)


class Singletons:
    def __init__(self, parts: Sequence[Singleton]) -> None:
        self.parts = list(parts)
        self._leading = False

    def leading(self) -> bool:
        """Every part started and none stopped since."""
        return self._leading

    async def start(self) -> None:
        for part in self.parts:
            await part.start()
        self._leading = True

    async def stop(self) -> None:
        """Stops every part at once (they are independent: each cancels its own tasks), so none keeps
        working for the time the others take to stop once leadership is lost."""
        self._leading = False
        await asyncio.gather(*(_stop(part) for part in self.parts))


async def _stop(part: Singleton) -> None:
    try:
        await part.stop()
    except Exception:
        log.exception("stopping %s failed", part.name)
