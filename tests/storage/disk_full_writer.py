"""The full-disk test's writer: a store whose file may not grow, as on a full disk, then may again.

Run from the repository root as `python -m tests.storage.disk_full_writer PATH`. It caps the size of
the files this process may write (RLIMIT_FSIZE, so the kernel refuses LMDB's page writes as a full
disk would), writes 1 KiB values until a write fails, lifts the cap and writes again, and prints one
line per step: `refused <error type> <message>`, `revision-unchanged <bool>`, `read <bool>`,
`recovered <bool>`. A separate process, since the cap applies to the whole process.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys

from storage import StorageError, StoreOptions
from storage.lmdb import LmdbStore

CAP = 512 << 10  # bytes data.mdb may reach: a few hundred 1 KiB writes


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(path: str) -> None:
    store = await LmdbStore.open(path, StoreOptions(sync=True, compact_interval=0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG from write(2) instead of being killed
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max(CAP, os.path.getsize(f"{path}/data.mdb")), hard))
    for i in range(4 * CAP // 1000):
        revision = store.current_revision()
        try:
            await store.create(b"/full/%06d" % i, b"x" * 1000)
        except StorageError as err:
            say(f"refused {type(err).__name__} {err}")
            say(f"revision-unchanged {store.current_revision() == revision}")
            break
    else:
        say("refused nothing")
    say(f"read {(await store.get(b'/full/000000')).kv is not None}")
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    say(f"recovered {(await store.create(b'/full/after', b'x' * 1000)).ok}")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
