"""The processes sharing one LMDB environment, and how one tells the others it committed.

LMDB serialises write transactions across processes, so several serving processes can write one environment
and their revisions form one total order; what each still needs is to hear, without polling, that another
committed, so its watchers see that write at once. Every process has an eventfd it is woken through; after each
commit a process adds 1 to every other process's eventfd (one small syscall each). The receiver drains its
eventfd and reads the log entries it has not published yet (storage/lmdb/store.py), so a wake-up carries no
data and none can be lost: any number of notifications coalesce into one read of whatever was committed.

The eventfds are made by the supervising parent (capstan/cli/workers.py) and inherited by every worker, a
restarted one included, so the set never changes while the server runs. `CAPSTAN_WORKER_FDS` names them in a
worker's environment: `own` first, then every other worker's, comma-separated.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

ENV = "CAPSTAN_WORKER_FDS"


@dataclass(frozen=True, slots=True)
class Peers:
    own: int  # the eventfd this process is woken through (non-blocking)
    others: tuple[int, ...]  # the other processes' eventfds

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Peers | None:
        """The peers named by CAPSTAN_WORKER_FDS, or None when this process is the environment's only one."""
        text = environ.get(ENV, "")
        if not text:
            return None
        fds = tuple(int(part) for part in text.split(","))
        return cls(fds[0], fds[1:])

    def notify(self) -> None:
        """Tell every other process that something was committed. Safe from any thread."""
        for fd in self.others:
            with contextlib.suppress(OSError):  # a full counter: the peer has wake-ups pending already
                os.eventfd_write(fd, 1)

    def drain(self) -> bool:
        """Consume this process's pending wake-ups; True when there was one."""
        try:
            os.eventfd_read(self.own)
        except BlockingIOError:
            return False
        return True

