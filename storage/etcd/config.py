"""Where the etcd cluster is and how to reach it: kube-apiserver's --etcd-* flags as one value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_PREFIX = "/registry"  # kube-apiserver's --etcd-prefix default


@dataclass(frozen=True, slots=True)
class EtcdConfig:
    # Client URLs (http://host:port or https://host:port); a call goes to one reachable member.
    servers: tuple[str, ...]
    # Every key is stored under this prefix, so several Capstans can share one cluster as long as
    # no one's prefix is a prefix of another's (/registry and /registry2 would overlap).
    prefix: str = DEFAULT_PREFIX
    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    # The longest one etcd call may take before it fails as a BackendFailure: a request never hangs
    # on an unreachable cluster (kube-apiserver bounds its etcd calls by the request's deadline).
    call_timeout: float = 5.0
    # How often the watch asks etcd how far it has got, so current_revision() follows writes made by
    # other processes outside this prefix, and bookmarks do too on etcd 3.4.25, 3.5.8 and later (an
    # older etcd's answer may overtake events: storage/etcd/feed.py).
    progress_interval: float = 1.0
    # Events the in-process watch window holds (see storage/etcd/feed.py).
    window_events: int = 100_000
    # The key the cores' compactors take turns through (storage/etcd/compactor.py): kube-apiserver's,
    # outside the prefix, since etcd's compaction is the whole cluster's.
    compact_key: bytes = b"compact_rev_key"

    @property
    def root(self) -> bytes:
        """The prefix as stored: "/" + the prefix without trailing slashes (path.Join("/", prefix))."""
        return ("/" + self.prefix.strip("/")).rstrip("/").encode()
