"""The `kubernetes` Service and Endpoints send to the server's secure port, as kube-apiserver's bootstrap controller
writes them with its --secure-port, and a restart on another port sets them to it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.startup.app import start_core
from server.startup.system_objects import advertise_address
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests import bootstrapped

OPTIONS = StoreOptions(sync=False, compact_interval=0)
SERVICE = core_pb2.ResourcePath(version="v1", resource="services", namespace="default", name="kubernetes")
ENDPOINTS = core_pb2.ResourcePath(version="v1", resource="endpoints", namespace="default", name="kubernetes")
SLICE = core_pb2.ResourcePath(group="discovery.k8s.io", version="v1", resource="endpointslices",
                              namespace="default", name="kubernetes")


async def ports(core: object) -> tuple[object, object, object]:
    """(the Service's target port, the Endpoints' port, the EndpointSlice's port)."""
    read = {}
    for name, path in (("service", SERVICE), ("endpoints", ENDPOINTS), ("slice", SLICE)):
        got = await core.get(core_pb2.GetRequest(path=path))  # type: ignore[attr-defined]
        read[name] = orjson.loads(got.object.data)
    return (read["service"]["spec"]["ports"][0]["targetPort"], read["endpoints"]["subsets"][0]["ports"][0]["port"],
            read["slice"]["ports"][0]["port"])


@pytest.mark.parametrize(("first", "then"), [(6443, 16445), (16445, 16445), (16445, 7443)])
async def test_the_kubernetes_service_and_endpoints_follow_the_secure_port(tmp_path: Path, first: int,
                                                                           then: int) -> None:
    if not advertise_address("127.0.0.1"):
        pytest.skip("this host has no address but loopback: no Endpoints are written")
    store, running = await bootstrapped.started(tmp_path / "lmdb", OPTIONS, security=INSECURE,
                                                advertise_port=first)
    try:
        assert await ports(running.core) == (first, first, first)
    finally:
        await running.stop()
        await store.close()
    store = await LmdbStore.open(tmp_path / "lmdb", OPTIONS)
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, advertise_port=then)
    try:
        assert await ports(running.core) == (then, then, then)
        service = orjson.loads((await running.core.get(core_pb2.GetRequest(path=SERVICE))).object.data)
        assert service["spec"]["ports"] == [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": then}]
    finally:
        await running.stop()
        await store.close()


@pytest.mark.parametrize(("namespace", "expected"), [
    ({"secure_port": 16445, "insecure": False}, 16445),  # `serve --secure-port 16445`, envtest's kube flags
    ({"secure_port": 0, "insecure": False}, 6443),  # picked at bind time: not known as the core starts
    ({"secure_port": 6443, "insecure": True}, 6443),  # no secure port served
    ({}, 6443),  # `capstan core`: its gateway is elsewhere
])
def test_the_port_a_command_advertises(namespace: dict[str, object], expected: int) -> None:
    import argparse

    from capstan.cli.commands import _advertise_port

    assert _advertise_port(argparse.Namespace(**namespace)) == expected
