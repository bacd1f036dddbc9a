"""How a worker asks the other workers of its server (`--workers N`) what only they hold in memory
(server/machinery/workerpeers.py's Peers).

The kernel hands each connection to any worker. So each worker also listens on a Unix socket of its own in the
private directory the parent made (`CAPSTAN_WORKER_DIR`, 0700: only this user reaches it), and answers
questions of the kinds its parts provide: the figures a scrape merges ("http", "rpc": gateway/metrics.py,
server/auth/guard.py) and the console's login codes ("console-code": gateway/console/). A worker asks the
others all at once; one that does not answer within PEER_TIMEOUT (starting again, stopped, overloaded) is left
out of that answer and logged.

The protocol is one line, the kind and the argument in hex, answered by the bytes of the answer and the end of
the stream (nothing: no answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from capstan.cli import workers
from server.machinery.workerpeers import Answer

log = logging.getLogger("capstan.workers")

PEER_TIMEOUT = 2.0  # seconds a worker waits for another's answer
MAX_QUESTION = 4096  # bytes of a question line
MAX_ANSWER = 256 * 1024 * 1024  # bytes of one worker's answer read at most (its whole /metrics)


class WorkerPeers:
    """This worker's side: its socket, and the other workers' when it asks."""

    def __init__(self, directory: Path, index: int, count: int) -> None:
        self.directory = directory
        self.index = index
        self.count = count
        self._answers: dict[str, Answer] = {}
        self._server: asyncio.AbstractServer | None = None

    def _path(self, index: int) -> str:
        return str(self.directory / f"{index}.sock")

    def provide(self, kind: str, answer: Answer) -> None:
        self._answers[kind] = answer

    async def start(self) -> None:
        path = self._path(self.index)
        with contextlib.suppress(FileNotFoundError):  # this worker's socket from before it was started again
            os.unlink(path)
        self._server = await asyncio.start_unix_server(self._answer, path=path, limit=MAX_QUESTION)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(PEER_TIMEOUT):
                line = await reader.readline()
            kind, _, argument = line.decode(errors="replace").strip().partition(" ")
            answer = self._answers.get(kind)
            if answer is not None:
                writer.write(await answer(bytes.fromhex(argument)))
                await writer.drain()
        except (TimeoutError, OSError, ValueError):
            pass  # a question cut short, too long or malformed goes unanswered
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def ask(self, kind: str, argument: bytes = b"") -> list[bytes]:
        question = f"{kind} {argument.hex()}\n".encode()
        if len(question) > MAX_QUESTION:
            raise ValueError(f"a question to the other workers is at most {MAX_QUESTION} bytes")
        answers = await asyncio.gather(*(self._ask(index, question) for index in range(self.count)
                                         if index != self.index))
        return [answer for answer in answers if answer]

    async def _ask(self, index: int, question: bytes) -> bytes:
        try:
            async with asyncio.timeout(PEER_TIMEOUT):
                return await self._read(index, question)
        except (TimeoutError, OSError) as err:
            log.warning("no answer from worker %d: %s", index, err or type(err).__name__)
            return b""

    async def _read(self, index: int, question: bytes) -> bytes:
        reader, writer = await asyncio.open_unix_connection(self._path(index))
        try:
            writer.write(question)
            await writer.drain()
            chunks: list[bytes] = []
            size = 0
            while chunk := await reader.read(1 << 16):
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise OSError(f"worker {index}'s answer exceeds {MAX_ANSWER} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def from_environment(environ: Mapping[str, str]) -> WorkerPeers | None:
    """This worker's WorkerPeers, or None when it is alone."""
    index = workers.worker_index(environ)
    directory = environ.get(workers.DIR_ENV)
    count = workers.worker_count(environ)
    if index is None or directory is None or count <= 1:
        return None
    return WorkerPeers(Path(directory), index, count)
