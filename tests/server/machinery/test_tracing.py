"""server/machinery/tracing.py: kube's TracingConfiguration read as kube-apiserver reads --tracing-config-file, and
nothing done (nor imported) while tracing is off."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from server.machinery import tracing

V1ALPHA1 = "apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: TracingConfiguration\n"
V1BETA1 = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n"


@pytest.mark.parametrize(("text", "expected"), [
    (V1ALPHA1, tracing.TracingConfig("localhost:4317", 0)),
    (V1BETA1 + "endpoint: otel:4317\nsamplingRatePerMillion: 1000000\n", tracing.TracingConfig("otel:4317", 1_000_000)),
    (V1BETA1 + "samplingRatePerMillion: 100\n", tracing.TracingConfig("localhost:4317", 100)),
    ("apiVersion: v1\nkind: ConfigMap\n", "want kind TracingConfiguration"),
    (V1BETA1 + "samplingRatePerMillion: -1\n", "samplingRatePerMillion: Invalid value"),
    (V1BETA1 + "samplingRatePerMillion: 1000001\n", "samplingRatePerMillion: Invalid value"),
    (V1BETA1 + "endpoint: ''\n", "endpoint: Invalid value"),
    ("- a list\n", "is not an object"),
])
def test_load_config(tmp_path: Path, text: str, expected: tracing.TracingConfig | str) -> None:
    path = tmp_path / "tracing.yaml"
    path.write_text(text)
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            tracing.load_config(path)
    else:
        assert tracing.load_config(path) == expected


@pytest.mark.parametrize(("probe", "expected"), [
    ("tracing.enabled()", "False"),
    ("tracing.span('x') is tracing.span('y')", "True"),  # one shared do-nothing context
    ("(lambda c: (tracing.inject(c), c)[1])({})", "{}"),
    ("tracing.headers_of({'traceparent': 'x'})", "{}"),
    ("any(m.startswith('opentelemetry') for m in sys.modules)", "False"),  # imported only by configure
])
def test_off_costs_nothing(probe: str, expected: str) -> None:
    code = f"import sys\nfrom server.machinery import tracing\nprint({probe})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


PARENT_SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PARENT_UNSAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    yield exported
    tracing.shutdown()


@pytest.mark.parametrize(("rate", "parent", "spans", "sampled"), [
    (0, None, [], False),  # not sampled: no span, and the next process is told so
    (1_000_000, None, ["child", "request"], True),
    (0, PARENT_SAMPLED, ["child", "request"], True),  # ParentBased: the parent's decision
    (1_000_000, PARENT_UNSAMPLED, [], False),
    (0, "not-a-traceparent", [], False),  # malformed: as no parent
])
def test_one_decision_per_request(exporter: InMemorySpanExporter, rate: int, parent: str | None,
                                  spans: list[str], sampled: bool) -> None:
    tracing.configure(tracing.TracingConfig(sampling_rate_per_million=rate), exporter)
    carrier: dict[str, str] = {}
    with tracing.span("request", server=True, parent={"traceparent": parent} if parent else None), \
            tracing.span("child"):
        tracing.inject(carrier)
    assert [span.name for span in exporter.get_finished_spans()] == spans
    assert bool(int(carrier["traceparent"].split("-")[3], 16) & 1) == sampled  # the W3C sampled flag
    if parent == PARENT_SAMPLED:
        assert carrier["traceparent"].split("-")[1] == PARENT_SAMPLED.split("-")[1]


def test_no_spans_outside_requests(exporter: InMemorySpanExporter) -> None:
    """Controllers' and informers' store calls are not traced: a span needs a sampled request around it."""
    tracing.configure(tracing.TracingConfig(sampling_rate_per_million=1_000_000), exporter)
    with tracing.span("Store.List"):
        pass
    assert exporter.get_finished_spans() == ()
