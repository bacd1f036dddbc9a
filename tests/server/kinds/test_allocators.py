"""Service cluster IPs and node ports are allocated cluster-wide (server/kinds/reservations.py): two cores
over one store, creating at once, never hand out the same address or port. Each is found by kube's random scan
(server/kinds/services.py), whose contract the last table holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.kinds import services
from server.kinds.reservations import KEYS
from server.machinery import errors
from server.runtime.election import ElectionConfig
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

ELECTION = ElectionConfig(lease_duration=1.0, renew_deadline=0.7, retry_period=0.2)
SERVICES = core_pb2.ResourcePath(version="v1", resource="services", namespace="default")


@pytest.fixture
async def two_cores(tmp_path: Path) -> AsyncIterator[tuple[RunningCore, RunningCore]]:
    """Two cores over one LMDB store, allocating from 10.0.0.0/29: 6 addresses, the first the `kubernetes`
    Service's."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    cores = [await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                              service_cluster_ip_range="10.0.0.0/29", election=ELECTION) for _ in range(2)]
    try:
        yield cores[0], cores[1]
    finally:
        for running in cores:
            await running.stop()
        await store.close()


def _service(name: str, **spec: Any) -> core_pb2.RawObject:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}], **spec}}
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))


async def _create(running: RunningCore, name: str, **spec: Any) -> dict[str, Any]:
    created = await running.core.create(core_pb2.CreateRequest(path=SERVICES, object=_service(name, **spec)))
    obj: dict[str, Any] = orjson.loads(created.object.data)
    return obj


@pytest.mark.parametrize(("kind", "count"), [
    ("ClusterIP", 5),  # every free address of the range, taken at once through both cores
    ("NodePort", 16),  # headless NodePort Services: two node ports each, no address
])
async def test_concurrent_creates_through_two_cores_never_collide(two_cores: tuple[RunningCore, RunningCore],
                                                                  kind: str, count: int) -> None:
    first, second = two_cores
    if kind == "NodePort":  # no cluster IP (headless), so only node ports are allocated
        creates = [_create((first, second)[i % 2], f"s{i}", type="NodePort", clusterIP="None") for i in range(count)]
    else:
        creates = [_create((first, second)[i % 2], f"s{i}") for i in range(count)]
    created = await asyncio.gather(*creates)
    ips = [s["spec"]["clusterIP"] for s in created if s["spec"]["clusterIP"] != "None"]
    ports = [p["nodePort"] for s in created for p in s["spec"]["ports"] if "nodePort" in p]
    assert len(ips) == len(set(ips)) and "10.0.0.1" not in ips
    assert len(ports) == len(set(ports)) == (2 * count if kind == "NodePort" else 0)
    if kind == "ClusterIP":  # the range is now full for both
        for running in (first, second):
            with pytest.raises(errors.ApiError) as refused:
                await _create(running, "more")
            assert refused.value.code == 500
            assert "failed to allocate a serviceIP: range is full" in refused.value.status.message


async def test_an_address_requested_through_one_core_is_taken_for_the_other(
        two_cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = two_cores
    results = await asyncio.gather(_create(first, "a", clusterIP="10.0.0.3"),
                                   _create(second, "b", clusterIP="10.0.0.3"), return_exceptions=True)
    refused = [r for r in results if isinstance(r, errors.ApiError)]
    assert len(refused) == 1 and refused[0].code == 422
    assert "provided IP is already allocated" in refused[0].status.message


async def test_a_deleted_services_address_is_free_again(two_cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = two_cores
    created = await asyncio.gather(*(_create((first, second)[i % 2], f"s{i}") for i in range(5)))
    await second.core.delete(core_pb2.DeleteRequest(path=core_pb2.ResourcePath(
        version="v1", resource="services", namespace="default", name="s0")))
    again = await _create(first, "again")
    assert again["spec"]["clusterIP"] == created[0]["spec"]["clusterIP"]


async def test_the_record_keeps_only_allocations_in_flight(two_cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = two_cores
    for i in range(4):
        await _create((first, second)[i % 2], f"s{i}")
    got = await first.core.context.store.get(KEYS["ip"])
    assert got.kv is not None
    reserved = orjson.loads(got.kv.value)["reserved"]
    assert [entry[1] for entry in reserved] == ["/core/services/default/s3"]  # the others' Services are stored


@pytest.mark.parametrize(("low", "high", "free", "found"), [
    (0, 8, {3}, 3),
    (0, 8, {0}, 0),
    (0, 8, {7}, 7),
    (4, 8, {2, 5}, 5),  # only offsets in [low, high)
    (0, 8, set(), None),
    (5, 5, {5}, None),  # an empty band
    (0, 1 << 20, {0}, 0),  # a /12's million offsets: whichever the random start, the scan wraps to the one free
    (0, 1 << 20, {(1 << 20) - 1}, (1 << 20) - 1),
])
def test_the_random_scan_finds_a_free_offset_visiting_each_once(low: int, high: int, free: set[int],
                                                                found: int | None) -> None:
    visited: list[int] = []

    def is_free(offset: int) -> bool:
        visited.append(offset)
        return offset in free

    for _ in range(5 if high - low < 1000 else 1):  # from five random starts (one over a million offsets)
        visited.clear()
        assert services._free_offset(low, high, is_free) == found
        assert len(visited) == len(set(visited)) <= high - low
        assert all(low <= offset < high for offset in visited)
