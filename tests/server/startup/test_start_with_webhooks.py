"""A restart with admission webhooks whose backend is down: the start looks before it writes, so it calls no
webhook when the system objects are there; and one it must write that a webhook refuses is logged, not fatal (as
kube-apiserver serves on while its bootstrap controllers retry)."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.machinery import errors
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests import bootstrapped

OPTIONS = StoreOptions(sync=False, compact_interval=0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def refusing_everything(port: int) -> bytes:
    """A webhook on every write of every resource, failing closed, whose backend is not listening."""
    return orjson.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "down"},
        "webhooks": [{"name": "down.example.com", "clientConfig": {"url": f"https://127.0.0.1:{port}/"},
                      "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}],
                      "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "timeoutSeconds": 1}]})


ENDPOINTS = core_pb2.ResourcePath(version="v1", resource="endpoints", namespace="default", name="kubernetes")


@pytest.mark.parametrize("missing", [False, True], ids=["nothing-to-write", "endpoints-to-write"])
async def test_a_restart_is_not_stopped_by_a_webhook_that_is_down(tmp_path: Path, missing: bool,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    store, core = await bootstrapped.started(tmp_path / "lmdb", OPTIONS, security=INSECURE)
    try:
        if missing:
            await core.core.delete(core_pb2.DeleteRequest(path=ENDPOINTS))
        await core.core.create(core_pb2.CreateRequest(
            path=core_pb2.ResourcePath(group="admissionregistration.k8s.io", version="v1",
                                       resource="validatingwebhookconfigurations"),
            object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=refusing_everything(free_port()))))
    finally:
        await core.stop()
        await store.close()
    store = await LmdbStore.open(tmp_path / "lmdb", OPTIONS)
    with caplog.at_level(logging.WARNING, logger="server.startup.app"):
        core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
    try:
        warned = [r.getMessage() for r in caplog.records if "not written at start" in r.getMessage()]
        if missing:
            assert warned and warned[0].startswith("the kubernetes endpoints not written at start: ")
            with pytest.raises(errors.ApiError) as gone:
                await core.core.get(core_pb2.GetRequest(path=ENDPOINTS))
            assert gone.value.code == 404
        else:
            assert warned == []
        namespaces = await core.core.list(core_pb2.ListRequest(
            path=core_pb2.ResourcePath(version="v1", resource="namespaces")))
        assert len(namespaces.items) >= 4  # it serves
    finally:
        await core.stop()
        await store.close()
