"""The crash tests' victim: works on an LMDB store until killed, announcing its progress.

Run from the repository root, as `python -m tests.storage.crash_writer MODE PATH ARG`:

  write PATH TAG:         with sync=True, many coroutines create keys `/crash/TAG/<worker>/<n>`
                          as fast as they can; each write is printed as `<key hex> <revision>`
                          (and flushed) only after the store acknowledged it, so every line the
                          parent reads is a promise the store made.
  compact PATH REVISION:  compact to REVISION one log entry per transaction, so the parent
                          can kill it half-way.

Both print `ready <revision>` once the store is open.
"""

from __future__ import annotations

import asyncio
import sys

from storage import StoreOptions
from storage.lmdb import LmdbStore

WORKERS = 16


def value_for(key: bytes) -> bytes:
    """The value written under `key`, so the parent can check it without being told."""
    return key[::-1] * 3


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def write_forever(store: LmdbStore, tag: str, worker: int) -> None:
    n = 0
    while True:
        key = b"/crash/%s/%03d/%08d" % (tag.encode(), worker, n)
        result = await store.create(key, value_for(key))
        if not result.ok:
            raise SystemExit(f"create {key!r} failed: {result}")
        say(f"{key.hex()} {result.revision}")
        n += 1


async def write(path: str, tag: str) -> None:
    store = await LmdbStore.open(path, StoreOptions(sync=True, compact_interval=0))
    say(f"ready {store.current_revision()}")
    await asyncio.gather(*(write_forever(store, tag, w) for w in range(WORKERS)))


async def compact(path: str, revision: int) -> None:
    store = await LmdbStore.open(path, StoreOptions(sync=True, compact_interval=0, compact_batch=1))
    say(f"ready {store.current_revision()}")
    await store.compact(revision)
    say("compacted")
    await store.close()


if __name__ == "__main__":
    mode, path, arg = sys.argv[1:4]
    asyncio.run(write(path, arg) if mode == "write" else compact(path, int(arg)))
