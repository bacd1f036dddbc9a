"""The other workers of one server (`--workers N`), as the layers above reach them.

A server's workers share its ports, so consecutive requests of one client may reach different workers. What a
worker holds in memory alone and a client expects of the server as a whole is asked of the others through this
interface: the figures /metrics and the Metrics call serve (server/machinery/metricsmerge.py), and the
console's one-time login codes (gateway/console/). capstan/cli/workerpeers.py implements it over Unix sockets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from server.machinery.metricsmerge import merge

Answer = Callable[[bytes], Awaitable[bytes]]  # a question's argument -> this worker's answer (b"": none)


class Peers(Protocol):
    def provide(self, kind: str, answer: Answer) -> None:
        """Answer the other workers' questions of `kind` with `answer`."""
        ...

    async def ask(self, kind: str, argument: bytes = b"") -> list[bytes]:
        """Every other worker's answer to a question of `kind`, in worker order; a worker that does not answer
        in time (starting again, stopping) is left out, logged."""
        ...


async def server_figures(own: bytes, peers: Peers | None, kind: str) -> bytes:
    """This worker's exposition `own`, merged with every other worker's figures of `kind` when it has peers:
    what one server answers a scrape with."""
    return own if peers is None else merge([own, *await peers.ask(kind)])
