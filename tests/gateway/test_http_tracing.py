"""OpenTelemetry traces (server/machinery/tracing.py) through both transports: one trace per request from the
gateway's "KubernetesAPI" span down to the store, the client's traceparent continued, the W3C context carried
over gRPC and on to webhooks, and kube's sampling (ParentBased over samplingRatePerMillion); the SDK's in-memory
exporter collects what would go to the collector."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from capstan.cli.inprocess import InProcessClient
from capstan.testing.webhooks import serve
from gateway.app import build_app, start_http
from gateway.client import CoreClient
from gateway.transport.grpc import GrpcClient
from server.auth.config import INSECURE
from server.machinery import tracing
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.gateway.test_http_admission_webhooks import configure as configure_webhook
from tests.server.admission.test_admission_webhooks import configmap, webhook

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


class Traced:
    def __init__(self, url: str, session: aiohttp.ClientSession, exporter: InMemorySpanExporter,
                 transport: str, core: Any) -> None:
        self.url, self.session, self.exporter, self.transport, self.core = url, session, exporter, transport, core

    async def call(self, method: str, path: str, json: Any = None, headers: dict[str, str] | None = None) -> int:
        async with self.session.request(method, self.url + path, json=json, headers=headers or {}) as resp:
            await resp.read()
            return resp.status

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def names(self) -> set[str]:
        return {span.name for span in self.spans()}

    async def ended(self, names: set[str]) -> None:
        """Wait (up to 5 s) until spans of every one of `names` have ended: a gRPC server span ends once its
        answer is sent, which may be after the client has read it."""
        for _ in range(500):
            if names <= self.names():
                return
            await asyncio.sleep(0.01)


async def _traced(tmp_path: Path, transport: str, rate: int) -> AsyncIterator[Traced]:
    exporter = InMemorySpanExporter()
    tracing.configure(tracing.TracingConfig(sampling_rate_per_million=rate), exporter)
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)
    client: CoreClient = (InProcessClient(core.guard) if transport == "inprocess"
                          else GrpcClient(f"127.0.0.1:{core.grpc_port}"))
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        exporter.clear()  # start-up's own writes
        yield Traced(f"http://127.0.0.1:{port}", session, exporter, transport, core)
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()
        tracing.shutdown()


@pytest.fixture(params=["inprocess", "grpc"])
async def traced(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Traced]:
    async for server in _traced(tmp_path, request.param, 1_000_000):
        yield server


@pytest.fixture(params=["inprocess", "grpc"])
async def unsampled(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Traced]:
    async for server in _traced(tmp_path, request.param, 0):
        yield server


def _request_trace(server: Traced) -> list[ReadableSpan]:
    """The spans of the one trace whose root is the gateway's KubernetesAPI span."""
    roots = [s for s in server.spans() if s.name == "KubernetesAPI"]
    assert len(roots) == 1, [s.name for s in server.spans()]
    trace_id = roots[0].context.trace_id
    return [s for s in server.spans() if s.context.trace_id == trace_id]


@pytest.mark.parametrize(("method", "path", "body", "rpc", "expected"), [
    ("POST", CONFIGMAPS, configmap("traced"), "Create",
     {"KubernetesAPI", "Authentication", "Authorization", "Admission", "Store.Create"}),
    ("GET", CONFIGMAPS + "/missing", None, "Get",
     {"KubernetesAPI", "Authentication", "Authorization", "Store.Get"}),
    ("GET", CONFIGMAPS, None, "List", {"KubernetesAPI", "Authentication", "Authorization", "Store.List"}),
])
async def test_one_trace_per_request(traced: Traced, method: str, path: str, body: Any, rpc: str,
                                     expected: set[str]) -> None:
    await traced.call(method, path, body)
    core_span = f"capstan.core.v1.CoreService/{rpc}"
    await traced.ended(expected | ({core_span} if traced.transport == "grpc" else set()))
    spans = _request_trace(traced)
    names = {span.name for span in spans}
    assert expected <= names, names
    # the core's server span, over gRPC only
    assert (core_span in names) == (traced.transport == "grpc")
    by_id = {span.context.span_id: span for span in spans}
    for span in spans:  # every span descends from the request's root
        node = span
        while node.parent is not None:
            node = by_id[node.parent.span_id]
        assert node.name == "KubernetesAPI"
    root = next(span for span in spans if span.name == "KubernetesAPI")
    assert root.attributes is not None and root.attributes["http.method"] == method


async def test_clients_trace_continued(unsampled: Traced) -> None:
    """A sampled parent is followed even at samplingRatePerMillion 0 (ParentBased), through both transports."""
    await unsampled.call("GET", CONFIGMAPS, headers={"traceparent": PARENT})
    spans = unsampled.spans()
    assert {format(span.context.trace_id, "032x") for span in spans} == {TRACE_ID}
    assert "Store.List" in {span.name for span in spans}


async def test_unsampled_requests_leave_no_spans(unsampled: Traced) -> None:
    await unsampled.call("GET", CONFIGMAPS)
    assert unsampled.spans() == []


async def test_webhooks_continue_the_trace(traced: Traced) -> None:
    async with serve(lambda request: {"allowed": True}) as hook:
        class Configurable:
            core = traced.core

            async def create(self, path: str, obj: Any) -> Any:
                assert await traced.call("POST", path, obj) == 201

        await configure_webhook(Configurable(), "validatingwebhookconfigurations",  # type: ignore[arg-type]
                                webhook("v.example.com", hook.client_config()))
        traced.exporter.clear()
        assert await traced.call("POST", CONFIGMAPS, configmap("hooked"), headers={"traceparent": PARENT}) == 201
    assert hook.headers[-1]["traceparent"].split("-")[1] == TRACE_ID
    assert "Call webhook" in traced.names()
