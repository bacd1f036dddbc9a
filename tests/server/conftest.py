"""A real core for every test: LMDB in tmp_path, the CoreService on a grpc.aio server on port 0,
and a client talking to it over a real channel; or `core`, the core alone (no transport, no controller
started: each test starts what it tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.kinds import BUILTIN
from server.objects.core import Core
from server.registry.resources import Registry
from server.startup import apienablement, bootstrap
from server.startup.apienablement import ApiEnablement
from server.startup.app import RunningCore
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests import bootstrapped
from tests.server.client import Client


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


@pytest.fixture
def enablement() -> ApiEnablement:
    """The feature gates and group versions `running` starts with: kube 1.28's defaults. A module overrides this
    fixture, or a test parametrizes it, for others."""
    return apienablement.DEFAULT


@pytest.fixture
async def running(tmp_path: Path, enablement: ApiEnablement) -> AsyncIterator[RunningCore]:
    # No default ServiceAccount per namespace (kube-controller-manager's part, as envtest leaves it out): these
    # tests count the store's revisions.
    store, core = await bootstrapped.started(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0,
                                                                             future_wait=0.5),
                                             security=INSECURE, namespace_controllers=False, api=enablement)
    try:
        yield core
    finally:
        await core.stop()
        await store.close()


@pytest.fixture
async def client(running: RunningCore) -> AsyncIterator[Client]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        yield Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
