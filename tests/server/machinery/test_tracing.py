"""server/machinery/tracing.py: kube's TracingConfiguration read as kube-apiserver reads --tracing-config-file, and
nothing done (nor imported) while tracing is off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
