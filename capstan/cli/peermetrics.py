"""How a worker's /metrics answers for every worker of its server (`--workers N`).

The kernel hands a scrape to any worker; each counts only what it served. So each worker also listens on a
Unix socket of its own in the private directory the parent made (`CAPSTAN_WORKER_DIR`, 0700: only this user
reaches it), and answers a request naming a kind of figures ("http": what /metrics serves, "rpc": what the
core's Metrics call answers, "core-http": `capstan core --metrics-port`'s own) with this worker's exposition.
The worker that takes a scrape asks the others, all at once, and merges their answers into its own
(server/machinery/metricsmerge.py). A worker that does not answer within PEER_TIMEOUT (starting again,
stopped, overloaded) is left out of that scrape and logged; the next scrape asks it again.

The protocol is one line naming the kind, answered by the exposition bytes and the end of the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from capstan.cli import workers
from server.machinery.metricsmerge import Provider, merge

log = logging.getLogger("capstan.workers")

PEER_TIMEOUT = 2.0  # seconds a worker waits for another's figures
MAX_KIND = 64  # bytes of a request line
MAX_ANSWER = 256 * 1024 * 1024  # bytes of one worker's exposition read at most


class PeerMetrics:
    """This worker's side (metricsmerge.Peers): its socket, and the other workers' when a scrape comes."""

    def __init__(self, directory: Path, index: int, count: int) -> None:
        self.directory = directory
        self.index = index
        self.count = count
        self._providers: dict[str, Provider] = {}
        self._server: asyncio.AbstractServer | None = None

    def _path(self, index: int) -> str:
        return str(self.directory / f"{index}.sock")

    def provide(self, kind: str, own: Provider) -> None:
        self._providers[kind] = own

    async def start(self) -> None:
        path = self._path(self.index)
        with contextlib.suppress(FileNotFoundError):  # this worker's socket from before it was started again
            os.unlink(path)
        self._server = await asyncio.start_unix_server(self._answer, path=path)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), PEER_TIMEOUT)
            provider = self._providers.get(line[:MAX_KIND].decode(errors="replace").strip())
            if provider is not None:
                writer.write(await provider())
                await writer.drain()
        except (TimeoutError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def combined(self, kind: str, own: bytes) -> bytes:
        others = await asyncio.gather(*(self._ask(index, kind) for index in range(self.count) if index != self.index))
        return merge([own, *(answer for answer in others if answer)])

    async def _ask(self, index: int, kind: str) -> bytes:
        try:
            return await asyncio.wait_for(self._read(index, kind), PEER_TIMEOUT)
        except (TimeoutError, OSError, asyncio.LimitOverrunError, asyncio.IncompleteReadError) as err:
            log.warning("/metrics without worker %d's figures: %s", index, err or type(err).__name__)
            return b""

    async def _read(self, index: int, kind: str) -> bytes:
        reader, writer = await asyncio.open_unix_connection(self._path(index))
        try:
            writer.write(kind.encode() + b"\n")
            await writer.drain()
            chunks: list[bytes] = []
            size = 0
            while chunk := await reader.read(1 << 16):
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise OSError(f"worker {index}'s figures exceed {MAX_ANSWER} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def from_environment(environ: Mapping[str, str]) -> PeerMetrics | None:
    """This worker's PeerMetrics, or None when it is alone."""
    index = workers.worker_index(environ)
    directory = environ.get(workers.DIR_ENV)
    count = workers.worker_count(environ)
    if index is None or directory is None or count <= 1:
        return None
    return PeerMetrics(Path(directory), index, count)
