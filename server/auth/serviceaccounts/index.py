"""Which ServiceAccounts, Pods and Secrets exist, by namespace and name: what a service account token's
check needs on every request, kept current by watches through the core (the Informer) rather than read from
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


class ObjectIndex:
    """A Sink for the Informer: (namespace, name) -> Entry."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}

    @staticmethod
    def _key_entry(obj: dict[str, Any]) -> tuple[tuple[str, str], Entry]:
        m = obj.get("metadata") or {}
        key = (str(m.get("namespace", "")), str(m.get("name", "")))
        return key, Entry(str(m.get("uid", "")), str(m.get("deletionTimestamp") or ""))

    def replace(self, objs: list[dict[str, Any]]) -> None:
        self._entries = dict(self._key_entry(o) for o in objs)

    def put(self, obj: dict[str, Any]) -> None:
        key, entry = self._key_entry(obj)
        self._entries[key] = entry

    def remove(self, obj: dict[str, Any]) -> None:
        key, _ = self._key_entry(obj)
        self._entries.pop(key, None)

    def get(self, namespace: str, name: str) -> Entry | None:
        return self._entries.get((namespace, name))
