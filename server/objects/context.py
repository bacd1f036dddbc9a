"""What every verb needs: the store and the registry."""

from __future__ import annotations

from dataclasses import dataclass, field

from server.objects.admitting import AdmissionSlot
from server.objects.keygate import KeyGate
from server.objects.render import Renderings
from server.objects.storeerrors import store_call
from server.objects.watchcache import WatchCaches
from server.registry.resources import Registry
from storage import Store

NAMESPACES_KEY_PREFIX = b"/core/namespaces/"


class NamespaceIndex:
    """Which namespaces exist and which are terminating, as the namespace controller's watch last saw them.

    A cache for the namespace check every namespaced create makes (kube-apiserver's NamespaceLifecycle
    admission reads an informer the same way): only "exists and is active" is trusted; anything else is
    read from the store.
    """

    def __init__(self) -> None:
        self._terminating: dict[str, bool] = {}

    def observe(self, name: str, terminating: bool) -> None:
        self._terminating[name] = terminating

    def forget(self, name: str) -> None:
        self._terminating.pop(name, None)

    def known_active(self, name: str) -> bool:
        return self._terminating.get(name) is False


async def reach(ctx: Context, revision: int) -> None:
    """Return once the store has reached `revision` ("not older than N"); 504 Too large resource version
    if it does not within the store's wait. A read at the revision is what waits; any key will do."""
    if revision > ctx.store.current_revision():
        await store_call(ctx.store.get(b"/", at_revision=revision))


@dataclass(frozen=True, slots=True)
class Context:
    store: Store
    registry: Registry
    namespaces: NamespaceIndex = field(default_factory=NamespaceIndex)
    renderings: Renderings = field(default_factory=Renderings)
    writers: KeyGate = field(default_factory=KeyGate)  # turns of the writers of one object (keygate.py)
    caches: WatchCaches | None = None  # the watch cache of the reads kube serves from memory (watchcache.py)
    admission: AdmissionSlot = field(default_factory=AdmissionSlot)  # the admission chain (admitting.py)
    # kube's WatchList feature gate (alpha in 1.28, off by default): whether a watch may ask for its initial
    # events (sendInitialEvents); off, such a watch is refused as 1.28's ValidateListOptions refuses it.
    watch_list: bool = False

    def namespace_key(self, name: str) -> bytes:
        return NAMESPACES_KEY_PREFIX + name.encode()
