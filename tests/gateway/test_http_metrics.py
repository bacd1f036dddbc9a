"""/metrics under kube's names: REST requests on the gateway, gRPC calls in the core's request metrics, process
and runtime figures, and the core's own (authentication, admission, watches, leader election) over both
transports (in-process: as `capstan serve`; gRPC: as `capstan gateway --core`, through the core's Metrics)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from server.machinery import apimetrics
from tests.gateway.conftest import Server

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "figures"}, "data": {"a": "1"}}


def sample(text: str, name: str, labels: dict[str, str]) -> float | None:
    """The value of the sample `name` whose labels include `labels`, None when there is none."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return None


async def _scrape(server: Server) -> str:
    resp = await server.request("GET", "/metrics")
    assert resp.status == 200, resp.body
    return resp.body.decode()


def _core_figures(server: Server) -> str:
    """What a scrape of the core's own figures shows: its gRPC request metrics and the process-wide REGISTRY."""
    registry = server.core.request_metrics.registry if server.core.request_metrics is not None else None
    assert registry is not None
    return (generate_latest(registry) + generate_latest(apimetrics.REGISTRY)).decode()


@pytest.mark.parametrize(("where", "name", "labels"), [
    # the REST request, on the gateway
    ("gateway", "apiserver_request_total", {"verb": "POST", "resource": "configmaps", "scope": "namespace",
                                            "code": "201", "component": "apiserver"}),
    ("gateway", "apiserver_request_total", {"verb": "GET", "resource": "configmaps", "scope": "resource",
                                            "code": "200"}),
    ("gateway", "apiserver_request_total", {"verb": "GET", "resource": "configmaps", "code": "404"}),
    ("gateway", "apiserver_request_duration_seconds_count", {"verb": "LIST", "resource": "configmaps"}),
    ("gateway", "process_cpu_seconds_total", {}),
    ("gateway", "process_resident_memory_bytes", {}),
    ("gateway", "python_info", {"implementation": "CPython"}),
    ("gateway", "apiserver_flowcontrol_dispatched_requests_total", {"priority_level": "readOnly"}),
    ("gateway", "apiserver_flowcontrol_current_limit_seats", {"priority_level": "mutating"}),
    # the core's figures: on the gateway beside it (in-process) or through its Metrics call (gRPC)
    ("gateway", "leader_election_master_status", {"name": "capstan-controllers"}),
    ("core", "authentication_attempts_total", {"result": "success"}),
    ("core", "apiserver_admission_step_admission_duration_seconds_count", {"type": "validate",
                                                                            "operation": "CREATE",
                                                                            "rejected": "false"}),
    ("core", "apiserver_admission_controller_admission_duration_seconds_count", {"name": "LimitRanger",
                                                                                  "type": "admit"}),
    ("core", "apiserver_watch_events_total", {"group": "", "version": "v1", "kind": "ConfigMap"}),
    ("serve", "apiserver_storage_objects", {"resource": "configmaps"}),  # where the store is beside the gateway
])
async def test_figures(server: Server, where: str, name: str, labels: dict[str, str]) -> None:
    if where == "serve" and server.transport != "inprocess":
        pytest.skip("a split gateway has no store beside it: its core's --metrics-port serves the counts")
    await server.create("/api/v1/namespaces/default/configmaps", CM)
    await server.request("GET", "/api/v1/namespaces/default/configmaps/figures")
    await server.request("GET", "/api/v1/namespaces/default/configmaps/missing")
    await server.request("GET", "/api/v1/namespaces/default/configmaps")
    async with server.watch("/api/v1/namespaces/default/configmaps?watch=true") as stream:
        await stream.lines(1)
    text = await _scrape(server) if where != "core" or server.transport == "grpc" else _core_figures(server)
    value = sample(text, name, labels)
    assert value is not None and value >= 1, f"{name}{labels} not in:\n{text}"


@pytest.mark.parametrize(("labels", "expected"), [
    ({"verb": "POST", "resource": "configmaps", "code": "201"}, 1),
    ({"verb": "GET", "resource": "configmaps", "scope": "resource", "code": "404"}, 1),
    ({"verb": "LIST", "resource": "configmaps", "scope": "namespace", "code": "200"}, 1),
])
async def test_grpc_calls_counted_as_rest(server: Server, labels: dict[str, str], expected: int) -> None:
    """The core counts the CoreService calls it serves over gRPC as the REST requests they stand for; the
    in-process gateway's calls do not reach the servicer (the gateway counted them)."""
    await server.create("/api/v1/namespaces/default/configmaps", CM)
    await server.request("GET", "/api/v1/namespaces/default/configmaps/missing")
    await server.request("GET", "/api/v1/namespaces/default/configmaps")
    text = _core_figures(server)
    found = sample(text, "apiserver_request_total", {**labels, "component": "apiserver"})
    assert found == (expected if server.transport == "grpc" else None), text


async def test_registered_watchers(server: Server) -> None:
    labels = {"group": "", "version": "v1", "kind": "Secret"}
    before = sample(_core_figures(server), "apiserver_registered_watchers", labels) or 0.0
    async with server.watch("/api/v1/namespaces/default/secrets?watch=true&resourceVersion=0") as stream:
        assert stream.status == 200
        for _ in range(50):
            if sample(_core_figures(server), "apiserver_registered_watchers", labels) == before + 1:
                break
            await asyncio.sleep(0.02)
        assert sample(_core_figures(server), "apiserver_registered_watchers", labels) == before + 1
    for _ in range(100):
        if sample(_core_figures(server), "apiserver_registered_watchers", labels) == before:
            break
        await asyncio.sleep(0.05)
    assert sample(_core_figures(server), "apiserver_registered_watchers", labels) == before
