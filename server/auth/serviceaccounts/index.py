"""Which ServiceAccounts, Pods and Secrets exist, by namespace and name: what a service account token's
check needs on every request, kept current by informers (server/runtime/informer.py) rather than read from
the store per request (kube's authenticator reads informer listers the same way).

Only identity is kept: uid and deletionTimestamp (an object being deleted stops vouching for tokens once its
deletion time has passed, as kube's validator decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Entry:
    uid: str
    deletion_timestamp: str = ""  # RFC 3339 as stored; "" when not being deleted


def entry_of(obj: dict[str, Any]) -> Entry:
    """What the informers cache of an object (their transform)."""
    m = obj.get("metadata") or {}
    return Entry(str(m.get("uid", "")), str(m.get("deletionTimestamp") or ""))
