"""Stores that a core has already started on, copied for each test that starts one.

A core's first start on an empty store writes its bootstrap: namespaces, RBAC's default roles, API Priority and
Fairness' configuration, every APIService and its status, ~100 writes and most of a start's time. A restart on
that data writes nothing new. So each worker makes one bootstrapped store per way of starting a core, stopped
cleanly (its leases released), and every test gets a file copy of it: the test then starts its own core on it as a
restart, with the same objects and revision a fresh start leaves.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

_TEMPLATES: dict[tuple[tuple[str, str], ...], Path] = {}
_ROOT: list[Path] = []


def _root() -> Path:
    if not _ROOT:
        root = Path(tempfile.mkdtemp(prefix="capstan-bootstrapped-"))
        atexit.register(shutil.rmtree, root, True)
        _ROOT.append(root)
    return _ROOT[0]


async def store(path: Path, options: StoreOptions, **core: Any) -> LmdbStore:
    """An LMDB store at `path` holding what `start_core(store, **core)` bootstraps (on 127.0.0.1, gRPC on a free
    port), opened with `options`."""
    key = tuple(sorted((name, repr(sorted(value) if isinstance(value, frozenset | set) else value))
                       for name, value in core.items()))
    template = _TEMPLATES.get(key)
    if template is None:
        template = _root() / f"template-{len(_TEMPLATES)}"
        made = await LmdbStore.open(template, options)
        try:
            running = await start_core(made, listen="127.0.0.1", grpc_port=0, **core)
            await running.stop()
        finally:
            await made.close()
        _TEMPLATES[key] = template
    shutil.copytree(template, path)
    return await LmdbStore.open(path, options)


async def started(path: Path, options: StoreOptions, **core: Any) -> tuple[LmdbStore, RunningCore]:
    """`store`, and the core started on it with the same arguments."""
    opened = await store(path, options, **core)
    try:
        return opened, await start_core(opened, listen="127.0.0.1", grpc_port=0, **core)
    except BaseException:
        await opened.close()
        raise
