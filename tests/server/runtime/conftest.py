"""A real core over LMDB in tmp_path (no controller, no transport): what the runtime lists and watches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.kinds import BUILTIN
from server.objects.core import Core
from server.registry.resources import Registry
from server.startup import bootstrap
from storage import StoreOptions
from storage.lmdb import LmdbStore


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Core]:
    """Compacted only when a test says so."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=0.5))
    try:
        core = Core(store, Registry(BUILTIN))
        await bootstrap.ensure_default_namespaces(core)
        yield core
    finally:
        await store.close()
