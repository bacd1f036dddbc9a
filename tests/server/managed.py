"""A core that also runs kube-controller-manager's parts, for the admission tests that need them: imported by
the test modules that use `managed_client` (the shared conftest keeps envtest's controller-less core)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client


@pytest.fixture(name="managed_client")
async def managed_client_fixture(tmp_path: Path) -> AsyncIterator[Client]:
    """A client of a core that also runs kube-controller-manager's parts (the default ServiceAccount, the quota
    controller) and so the ServiceAccount admission plugin, as a cluster does; for tests that need them."""
    store, core = await bootstrapped.started(tmp_path / "managed", StoreOptions(sync=False, compact_interval=0),
                                             security=INSECURE)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()
