"""What the admission plugin tests share: cores started with a chosen set of kube's plugins."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server import admission
from server.auth.config import INSECURE
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client


@pytest.fixture
async def with_plugins(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """`start(*enabled, disable=())` starts a core with kube's default plugins, those named enabled beside them
    and those in `disable` off, and returns a client of it; every core started is stopped after the test."""
    running: list[Any] = []

    async def start(*names: str, disable: Iterable[str] = ()) -> Client:
        store, core = await bootstrapped.started(tmp_path / f"lmdb{len(running)}", StoreOptions(
            sync=False, compact_interval=0), security=INSECURE, namespace_controllers=False,
            admission_plugins=admission.enabled(enable=names, disable=disable))
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}")
        running.append((store, core, channel))
        return Client(core_pb2_grpc.CoreServiceStub(channel), core)  # type: ignore[no-untyped-call]

    try:
        yield start
    finally:
        for store, core, channel in running:
            await channel.close()
            await core.stop()
            await store.close()
