"""Another process serving the same LMDB environment, for the multi-process tests (test_processes.py).

Run from the repository root as `python -m tests.storage.peer_process MODE PATH TAG ARG`, with
CAPSTAN_WORKER_FDS naming its eventfds (storage/lmdb/peers.py):

  write PATH TAG COUNT:    16 coroutines create keys `/peers/TAG/<worker>/<n>` until COUNT are acknowledged
                           (COUNT 0: until killed); each acknowledged write is printed as `<key> <revision>`,
                           flushed, so every line the parent reads is a promise the store made; then `done`.
  compact PATH TAG COUNT:  COUNT creates, then a compaction to the current revision; prints `compacted <rev>`.

Every mode prints `ready <revision>` once the store is open, and waits for a line on stdin before it ends
(so the store stays open, its peers keep being woken, until the parent says).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys

from storage import StoreOptions
from storage.lmdb import LmdbStore
from storage.lmdb.peers import Peers

WORKERS = 16


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def write(store: LmdbStore, tag: str, count: int) -> None:
    numbers = itertools.count() if count == 0 else iter(range(count))

    async def one(worker: int) -> None:
        for n in numbers:
            key = b"/peers/%s/%03d/%08d" % (tag.encode(), worker, n)
            result = await store.create(key, key[::-1])
            if not result.ok:
                raise SystemExit(f"create {key!r} failed: {result}")
            say(f"{key.decode()} {result.revision}")

    await asyncio.gather(*(one(w) for w in range(WORKERS)))


async def main(mode: str, path: str, tag: str, arg: str) -> None:
    store = await LmdbStore.open(path, StoreOptions(sync=True, compact_interval=0),
                                 peers=Peers.from_environ(os.environ))
    say(f"ready {store.current_revision()}")
    await write(store, tag, int(arg))
    if mode == "compact":
        say(f"compacted {await store.compact(store.current_revision())}")
    say("done")
    await asyncio.to_thread(sys.stdin.readline)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
