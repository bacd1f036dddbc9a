"""gzip of answers as kube-apiserver compresses them (APIResponseCompression): answers of GZIP_THRESHOLD bytes
and more, to a client whose Accept-Encoding names gzip, at kube's level 1 (defaultGzipContentEncodingLevel: the
least CPU, a ratio within ~1.1-1.3x of higher levels), with Content-Encoding: gzip and Vary: Accept-Encoding.
Large inputs are compressed on the loop's executor, so the event loop serves other requests meanwhile.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Mapping

from multidict import MutableMultiMapping

GZIP_THRESHOLD = 128 * 1024  # kube-apiserver compresses answers from this size on
LEVEL = 1
INLINE = 16 * 1024  # bytes compressed on the event loop itself; more go to the executor


def accepts_gzip(headers: Mapping[str, str]) -> bool:
    return "gzip" in headers.get("Accept-Encoding", "")


def mark(headers: MutableMultiMapping[str]) -> None:
    """The headers of a gzipped answer."""
    headers["Content-Encoding"] = "gzip"
    headers.add("Vary", "Accept-Encoding")


class Gzip:
    """One answer's gzip stream: compress() each part in order, then flush() once."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

    async def compress(self, data: bytes) -> bytes:
        if len(data) <= INLINE:
            return self._compressor.compress(data)
        return await asyncio.get_running_loop().run_in_executor(None, self._compressor.compress, data)

    def flush(self) -> bytes:
        return self._compressor.flush()


async def gzipped(data: bytes) -> bytes:
    """`data` as one gzip member."""
    stream = Gzip()
    return await stream.compress(data) + stream.flush()
