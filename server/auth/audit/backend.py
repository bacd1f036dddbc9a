"""The log backend (--audit-log-path): audit events as JSON lines in a file rotated as kube's lumberjack rotates
it, or on standard output for "-".

Blocking mode, kube's default for the log backend: each event is one write(2) of one line to a file opened with
O_APPEND, made in the event loop before the request goes on. A local append lands in the page cache (no fsync),
so it costs microseconds, and the answer to "was this request audited?" is known before the request proceeds —
which a writer thread with a queue could only say later, after the request it describes had been answered.
Memory is bounded by one line.

Rotation (lumberjack): when a line would take the file past --audit-log-maxsize megabytes (0: lumberjack's
default of 100), the file is renamed to `<name>-<UTC time, 2006-01-02T15-04-05.000>.<ext>` beside it and a new
one is opened; beyond --audit-log-maxbackup old files (0: all kept) the oldest are removed. Files are 0600:
audit logs name users and objects.

Shared (`--workers N`: every worker of one server appends to one file): each write holds an flock on a lock
file beside the log (`.<name>.lock`), reads the file's size from the file itself and, when another worker has
rotated it, opens the new one first; so the file rotates at the size asked, once, and no worker appends to a
renamed file. One write then costs an flock, a stat and an unlock more (~2 µs).

A write that fails returns False and is logged with logging.error once per burst of failures (and once more
when writing works again); what the caller does about it is the auditor's decision.
"""

from __future__ import annotations

import datetime
import fcntl
import logging
import os
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

MEGABYTE = 1024 * 1024
DEFAULT_MAXSIZE_MB = 100  # lumberjack's when --audit-log-maxsize is 0
STDOUT = "-"


class Backend(Protocol):
    def write(self, line: bytes) -> bool:
        """Append one event's line (with its newline); False when it could not be written."""
        ...

    def close(self) -> None: ...


def backup_name(path: Path, moment: datetime.datetime) -> Path:
    """lumberjack's backup file name: audit.log rotated at 16:11:09.123 UTC is audit-2026-11-26T16-11-09.123.log."""
    stamp = moment.strftime("%Y-%m-%dT%H-%M-%S.") + f"{moment.microsecond // 1000:03d}"
    return path.with_name(f"{path.stem}-{stamp}{path.suffix}")


class LogBackend:
    def __init__(self, path: str, *, maxsize_mb: int = 0, maxbackup: int = 0, shared: bool = False) -> None:
        self._stdout = path == STDOUT
        self._shared = shared and not self._stdout
        self._lock = -1  # the lock file's descriptor, when shared
        self._inode = -1  # the open file's, when shared
        self._path = Path(path)
        self._limit = (maxsize_mb or DEFAULT_MAXSIZE_MB) * MEGABYTE
        self._maxbackup = maxbackup
        self._fd = -1
        self._size = 0
        self._failing = False

    def _open(self) -> None:
        if self._stdout:
            self._fd = 1
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        stat = os.fstat(self._fd)
        self._size, self._inode = stat.st_size, stat.st_ino

    def _rotate(self) -> None:
        os.close(self._fd)
        self._fd = -1
        moment = datetime.datetime.now(datetime.UTC)
        while (backup := backup_name(self._path, moment)).exists():  # two rotations within one millisecond
            moment += datetime.timedelta(milliseconds=1)
        os.rename(self._path, backup)
        self._prune()
        self._open()

    def _prune(self) -> None:
        if self._maxbackup <= 0:
            return
        prefix, suffix = self._path.stem + "-", self._path.suffix
        backups = sorted(p for p in self._path.parent.iterdir()
                         if p.name.startswith(prefix) and p.name.endswith(suffix) and p != self._path)
        for old in backups[:-self._maxbackup]:
            old.unlink(missing_ok=True)

    def write(self, line: bytes) -> bool:
        if not self._shared:
            return self._write(line)
        try:
            if self._lock < 0:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._lock = os.open(self._path.with_name(f".{self._path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        except OSError as err:
            return self._failed(err)
        try:
            try:
                stat = os.stat(self._path)
            except FileNotFoundError:
                stat = None
            if self._fd >= 0 and (stat is None or stat.st_ino != self._inode):  # another worker rotated it
                os.close(self._fd)
                self._fd = -1
            elif stat is not None:
                self._size = stat.st_size
            return self._write(line)
        except OSError as err:
            return self._failed(err)
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def _write(self, line: bytes) -> bool:
        try:
            if self._fd < 0:
                self._open()
            if not self._stdout and self._size and self._size + len(line) > self._limit:
                self._rotate()
            view = memoryview(line)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._size += len(line)
        except OSError as err:
            return self._failed(err)
        if self._failing:
            self._failing = False
            log.error("audit: the audit log %s is written again", self._name())
        return True

    def _failed(self, err: OSError) -> bool:
        if not self._failing:
            self._failing = True
            log.error("audit: cannot write the audit log %s: %s; requests whose events cannot be written "
                      "are refused (500) until it can be written again", self._name(), err)
        if self._fd >= 0 and not self._stdout:
            os.close(self._fd)
        self._fd = -1
        return False

    def _name(self) -> str:
        return STDOUT if self._stdout else str(self._path)

    def close(self) -> None:
        if self._fd >= 0 and not self._stdout:
            os.close(self._fd)
        self._fd = -1
        if self._lock >= 0:
            os.close(self._lock)
        self._lock = -1
