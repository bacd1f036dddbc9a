"""What every verb needs: the store and the registry."""

from __future__ import annotations

from dataclasses import dataclass

from server.registry import Registry
from storage import Store

NAMESPACES_KEY_PREFIX = b"/core/namespaces/"


@dataclass(frozen=True, slots=True)
class Context:
    store: Store
    registry: Registry

    def namespace_key(self, name: str) -> bytes:
        return NAMESPACES_KEY_PREFIX + name.encode()
