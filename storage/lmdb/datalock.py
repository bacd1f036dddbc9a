"""One server per data directory: an exclusive lock that a second server, or an offline tool, is refused by.

LMDB lets any number of processes open one environment, so two servers started on one data directory would
both serve it, each with its own clock, watchers and compactor, and neither knowing of the other: the
`--workers` processes are the only ones meant to share it (they wake one another, storage/lmdb/peers.py). The
lock is an exclusive flock(2) on `capstan.lock` beside the data file, held for the whole life of the server and
released by the kernel when the process dies (a SIGKILLed server leaves no stale lock); the holder's pid is
written in it, for the message.

With `--workers N` the supervising parent takes the lock (capstan/cli/workers.py) and its workers inherit the
open file, named by `CAPSTAN_DATA_LOCK_FD`: a flock belongs to the open file, so the workers hold it with the
parent, and a worker restarted by the parent holds it again. `capstan snapshot save` takes no lock: it is a
reader, which LMDB serves beside the writers. `capstan defrag` and `capstan snapshot restore` take it, so they
never rewrite a file a server has open.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from storage import files
from storage.errors import BackendFailure

LOCK_FILE: Final = "capstan.lock"
FD_ENV: Final = "CAPSTAN_DATA_LOCK_FD"


class DataDirInUse(BackendFailure):
    """Another process holds the data directory's lock."""


class DataLock:
    """The held lock; `release` (or the process's end) gives it up."""

    def __init__(self, fd: int, path: Path, *, inherited: bool) -> None:
        self.fd = fd
        self.path = path
        self._inherited = inherited

    def release(self) -> None:
        if self.fd >= 0 and not self._inherited:  # an inherited lock is the parent's to give up
            os.close(self.fd)
        self.fd = -1


def acquire(directory: Path, environ: Mapping[str, str] | None = None) -> DataLock:
    """Lock `directory` (an LMDB environment's directory, created 0700 if missing) for this process.

    When `environ` names an inherited lock on the same file, that is the lock (a worker under its parent);
    otherwise DataDirInUse if another process holds it.
    """
    files.private_dir(directory)
    path = directory / LOCK_FILE
    inherited = (environ or {}).get(FD_ENV)
    if inherited:
        fd = int(inherited)
        try:
            mine, there = os.fstat(fd), os.stat(path)
        except OSError:
            pass
        else:
            if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino):
                return DataLock(fd, path, inherited=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, files.FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        holder = _holder(fd)
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise BackendFailure(f"cannot lock {path}: {err}") from err
        raise DataDirInUse(
            f"the data directory {directory} is in use by another process{holder} (it holds {path}): stop it"
            " first, or use another --data-dir") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    files.private_file(path)
    return DataLock(fd, path, inherited=False)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {text})" if text.isdigit() else ""
