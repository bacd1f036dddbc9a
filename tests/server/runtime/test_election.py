"""Several cores over one store elect one to run the singletons (server/runtime/election.py): one Lease
in kube-system as kube-controller-manager's, a dead leader replaced within the lease duration, a leader that
cannot renew stopping at once, and the new leader resuming from the store."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from capstan.cli.commands import _election, parse_args
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import INSECURE
from server.machinery import errors
from server.runtime.election import LEASE_NAME, ElectionConfig
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.memory import MemoryStore

FAST = dict(lease_duration=1.0, renew_deadline=0.7, retry_period=0.2)
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
LEASE = core_pb2.ResourcePath(group="coordination.k8s.io", version="v1", resource="leases", namespace="kube-system",
                              name=LEASE_NAME)
NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
CONFIGMAPS = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="team")


async def _start(store: MemoryStore, **timings: float) -> RunningCore:
    return await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            election=ElectionConfig(**{**FAST, **timings}))  # type: ignore[arg-type]


@pytest.fixture
async def cores() -> AsyncIterator[tuple[RunningCore, RunningCore]]:
    """Two cores over one store, the first started first (so it leads)."""
    store = await MemoryStore.open(StoreOptions(compact_interval=0))
    first = await _start(store)
    second = await _start(store)
    try:
        yield first, second
    finally:
        await second.stop()
        await first.stop()
        await store.close()


def _leading(running: RunningCore) -> bool:
    assert running.singletons is not None and running.election is not None
    return running.singletons.leading() and running.election.leading()


async def _lease(running: RunningCore) -> dict[str, Any]:
    got = await running.core.get(core_pb2.GetRequest(path=LEASE))
    spec: dict[str, Any] = orjson.loads(got.object.data)["spec"]
    return spec


async def _until(condition: Any, timeout: float) -> float:
    """Seconds until condition() held; fails after `timeout`."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, "condition not reached in time"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def _raw(body: dict[str, Any]) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))


async def test_exactly_one_core_runs_the_singletons(cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = cores
    for _ in range(5):  # over several renewals
        assert [_leading(first), _leading(second)] == [True, False]
        assert [first.garbage_collector.running(), second.garbage_collector.running()] == [True, False]
        assert [first.terminator.running(), second.terminator.running()] == [True, False]
        assert [first.namespaces.leading(), second.namespaces.leading()] == [True, False]
        assert second.namespaces.running() and second.crds is not None and second.crds.running()  # serving: all
        await asyncio.sleep(FAST["retry_period"])
    assert await second.core.health.run("poststarthook/start-garbage-collector-controller")  # a standby is healthy


async def test_the_lease_is_kube_controller_managers_shape(cores: tuple[RunningCore, RunningCore]) -> None:
    first, _ = cores
    assert first.election is not None
    spec = await _lease(first)
    assert set(spec) == {"holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions"}
    assert spec["holderIdentity"] == first.election.config.identity
    assert re.fullmatch(r".+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", spec["holderIdentity"])
    assert spec["leaseDurationSeconds"] == 1 and spec["leaseTransitions"] == 0
    assert MICRO_TIME.fullmatch(spec["acquireTime"]) and MICRO_TIME.fullmatch(spec["renewTime"])
    await asyncio.sleep(FAST["retry_period"] * 2.5)
    renewed = await _lease(first)
    assert renewed["renewTime"] > spec["renewTime"] and renewed["acquireTime"] == spec["acquireTime"]
    assert renewed["holderIdentity"] == spec["holderIdentity"] and renewed["leaseTransitions"] == 0


def test_kube_controller_managers_defaults() -> None:
    config = _election(parse_args(["core"]))
    assert (config.enabled, config.lease_duration, config.renew_deadline, config.retry_period) == (True, 15, 10, 2)
    assert (config.namespace, config.name) == ("kube-system", "capstan-controllers")
    assert not _election(parse_args(["core", "--leader-elect=false"])).enabled


@pytest.mark.parametrize(("flags", "message"), [
    (["--leader-elect-lease-duration=10s"], "leaseDuration must be greater than renewDeadline"),
    (["--leader-elect-retry-period=9"], "renewDeadline must be greater than retryPeriod*JitterFactor"),
    (["--leader-elect-lease-duration=3", "--leader-elect-renew-deadline=2", "--leader-elect-retry-period=1"], ""),
])
def test_timings_that_cannot_elect_are_refused(flags: list[str], message: str) -> None:
    args = parse_args(["core", *flags])
    if not message:
        assert _election(args).lease_duration == 3
        return
    with pytest.raises(SystemExit, match=re.escape(message)):
        _election(args)


@pytest.mark.parametrize(("release", "within"), [
    (False, FAST["lease_duration"] + FAST["retry_period"] * 2.2 + 0.5),  # died: the Lease expires on its own
    (True, FAST["retry_period"] * 2.2 + 0.5),  # stopped cleanly: released, taken at the standby's next try
])
async def test_a_standby_takes_over_when_the_leader_goes(cores: tuple[RunningCore, RunningCore], release: bool,
                                                         within: float) -> None:
    first, second = cores
    assert first.election is not None and second.election is not None
    await first.election.stop(release=release)
    assert not first.garbage_collector.running() and not first.namespaces.leading()
    await _until(lambda: _leading(second), within)
    assert second.garbage_collector.running() and second.namespaces.leading()
    spec = await _lease(second)
    assert spec["holderIdentity"] == second.election.config.identity and spec["leaseTransitions"] == 1
    assert not _leading(first)


async def test_a_leader_that_cannot_renew_stops_its_singletons_at_once(
        cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = cores
    assert second.election is not None
    await second.election.stop(release=False)  # no standby to take over: the leader must notice alone
    got = await first.core.get(core_pb2.GetRequest(path=LEASE))
    lease = orjson.loads(got.object.data)
    lease["spec"]["holderIdentity"] = "elsewhere_1"  # as though another core had taken it meanwhile
    lease["spec"]["leaseDurationSeconds"] = 60
    await first.core.update(core_pb2.UpdateRequest(path=LEASE, object=_raw(lease)))
    assert first.election is not None
    await _until(lambda: not _leading(first), FAST["renew_deadline"] + FAST["retry_period"] + 0.5)
    # not before the renew deadline has passed since the last renewal that succeeded
    assert time.monotonic() - first.election.renewed_at() >= FAST["renew_deadline"]
    # the singletons stop as leading ends; stopping awaits their workers, which a loaded machine may delay a little
    await _until(lambda: not first.garbage_collector.running() and not first.terminator.running()
                 and not first.namespaces.leading(), 2.0)


async def test_a_namespace_deletion_begun_under_the_old_leader_completes_under_the_new(
        cores: tuple[RunningCore, RunningCore]) -> None:
    first, second = cores
    assert first.election is not None
    await first.core.create(core_pb2.CreateRequest(path=NAMESPACES, object=_raw(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})))
    await first.core.create(core_pb2.CreateRequest(path=CONFIGMAPS, object=_raw(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})))
    await first.core.delete(core_pb2.DeleteRequest(path=core_pb2.ResourcePath(
        version="v1", resource="namespaces", name="team")))
    held = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="team", name="held")

    async def marked() -> bool:
        got = await first.core.get(core_pb2.GetRequest(path=held))
        return bool(orjson.loads(got.object.data)["metadata"].get("deletionTimestamp"))

    for _ in range(100):  # the old leader's controller has begun: it deleted the ConfigMap, held by its finalizer
        if await marked():
            break
        await asyncio.sleep(0.02)
    assert await marked()
    await first.election.stop(release=False)  # the leader dies mid-deletion
    got = await second.core.get(core_pb2.GetRequest(path=held))
    configmap = orjson.loads(got.object.data)
    configmap["metadata"]["finalizers"] = []
    await second.core.update(core_pb2.UpdateRequest(path=held, object=_raw(configmap)))
    # what this test reads is the deletion's completion, not how soon the Lease moves (the tests above time that)
    await _until(lambda: _leading(second), FAST["lease_duration"] + FAST["retry_period"] * 2.2 + 3.0)
    for _ in range(200):
        try:
            await second.core.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(
                version="v1", resource="namespaces", name="team")))
        except errors.ApiError as err:
            assert err.code == 404
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the namespace was not deleted under the new leader")
