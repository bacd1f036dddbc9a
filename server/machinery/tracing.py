"""OpenTelemetry tracing as kube-apiserver's `--tracing-config-file` turns it on: one trace per request, through
gateway -> core -> store, and on to the webhooks it calls.

Off unless configured: `span()` then returns one shared do-nothing context manager and `inject` adds nothing,
so an untraced request pays a global's test per span, and OpenTelemetry (the `capstan[tracing]` extra) is
imported only by `configure`, never at start-up otherwise.

The configuration is kube's TracingConfiguration (apiserver.config.k8s.io/v1alpha1 or v1beta1):
  endpoint                the OTLP gRPC collector (default localhost:4317, plaintext as kube's default dial)
  samplingRatePerMillion  traces sampled per million requests that arrive without a sampled parent (default 0);
                          a request whose parent was sampled is traced, as kube's ParentBased sampler does.
Only a request's spans are made: a server span per request (sampled or not, so its decision travels on), then,
in a sampled request only, its children. Spans are kube's where kube has one: the HTTP server span
"KubernetesAPI" (otelhttp's, with http.* attributes), the gRPC server span named by the method
("capstan.core.v1.CoreService/Get", as otelgrpc names them), "Authentication", "Authorization", "Admission",
each webhook call ("Call webhook"), and the store's calls ("Store.Create", ...). The W3C `traceparent` (and
`tracestate`) is carried in gRPC metadata between gateway and core and in the HTTP headers of webhook calls.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import secrets
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

API_VERSIONS = ("apiserver.config.k8s.io/v1alpha1", "apiserver.config.k8s.io/v1beta1")
KIND = "TracingConfiguration"
DEFAULT_ENDPOINT = "localhost:4317"
SERVICE_NAME = "apiserver"  # kube-apiserver's service.name resource attribute
HEADERS = ("traceparent", "tracestate")  # what the W3C propagator reads and writes


@dataclass(frozen=True, slots=True)
class TracingConfig:
    endpoint: str = DEFAULT_ENDPOINT
    sampling_rate_per_million: int = 0


def load_config(path: Path) -> TracingConfig:
    """A TracingConfiguration file; ValueError with what is wrong, as kube refuses one at start."""
    import yaml  # only with a configuration: a start without one never loads it

    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"unable to read tracing configuration from {str(path)!r}: {err}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"tracing configuration {str(path)!r} is not an object")
    if doc.get("apiVersion") not in API_VERSIONS or doc.get("kind") != KIND:
        raise ValueError(f"tracing configuration {str(path)!r}: want kind {KIND} of {' or '.join(API_VERSIONS)}, "
                         f"got {doc.get('kind')!r} of {doc.get('apiVersion')!r}")
    endpoint = doc.get("endpoint", DEFAULT_ENDPOINT)
    rate = doc.get("samplingRatePerMillion", 0)
    if not isinstance(endpoint, str) or not endpoint:
        raise ValueError("tracingConfiguration.endpoint: Invalid value: must be a host:port")
    if not isinstance(rate, int) or isinstance(rate, bool) or not 0 <= rate <= 1_000_000:
        raise ValueError(f"tracingConfiguration.samplingRatePerMillion: Invalid value: {rate!r}: must be a "
                         "non-negative integer no greater than 1000000")
    return TracingConfig(endpoint, rate)


_NULL = contextlib.nullcontext()
_tracer: Any = None  # opentelemetry.trace.Tracer once configured
_rate = 0.0  # the share of requests without a parent that are sampled
_propagator: Any = None
_provider: Any = None
_current: Any = None  # opentelemetry.trace.get_current_span


def enabled() -> bool:
    return _tracer is not None


def configure(config: TracingConfig, exporter: Any = None) -> None:
    """Trace from now on: spans go to `exporter` when given (tests: the SDK's InMemorySpanExporter, exported as
    each span ends), else to the OTLP gRPC exporter at config.endpoint, batched."""
    global _tracer, _propagator, _provider, _current, _rate
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
    from opentelemetry.trace import get_current_span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    # span() decides a request's sampling before OpenTelemetry sees it (an unsampled request makes no span at all),
    # so what reaches the SDK is a sampled root, or a child of a sampled parent: ParentBased over ALWAYS_ON.
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON), resource=Resource.create({"service.name": SERVICE_NAME}))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=config.endpoint, insecure=True)))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _provider = provider
    _tracer = provider.get_tracer("capstan")
    _propagator = TraceContextTextMapPropagator()
    _current = get_current_span
    _rate = config.sampling_rate_per_million / 1_000_000


def shutdown() -> None:
    """Flush what is batched and stop tracing."""
    global _tracer, _propagator, _provider, _current
    if _provider is not None:
        _provider.shutdown()
    _tracer = _propagator = _provider = _current = None


def span(name: str, attributes: Mapping[str, Any] | None = None, *, server: bool = False,
         parent: Mapping[str, str] | None = None) -> contextlib.AbstractContextManager[Any]:
    """A span around a block. `server`: the span of a request this process serves, a child of `parent` (the W3C
    headers the request came with) when given, the sampling decided here. Any other span is a child of the
    current one, and only of a sampled one: work outside a request (controllers, informers) and requests not
    sampled make no spans. Nothing when tracing is off."""
    tracer = _tracer
    if tracer is None:
        return _NULL
    if not server:
        return _start(tracer, name, attributes, False, None) if _current().is_recording() else _NULL
    flags = _sampled_flags(parent.get("traceparent", "")) if parent else None
    if flags is None:  # no parent: kube's TraceIdRatioBased share of the requests
        sampled = _rate > 0 and random.random() < _rate
        parent = None
    else:  # a parent: its decision (ParentBased)
        sampled = flags
    if not sampled:
        return _Unsampled()
    return _start(tracer, name, attributes, True, parent)


def _sampled_flags(traceparent: str) -> bool | None:
    """Whether a W3C traceparent says its span was sampled; None when there is none or it is malformed."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        return bool(int(parts[3], 16) & 1)
    except ValueError:
        return None


_UNSAMPLED: contextvars.ContextVar[bool] = contextvars.ContextVar("capstan_unsampled", default=False)


class _Unsampled:
    """A request not sampled: no span, but the traceparent handed on (gRPC metadata, webhooks) says so, so the
    next process does not decide again (one decision per request, as ParentBased gives kube)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _UNSAMPLED.set(True)

    def __exit__(self, *exc: object) -> None:
        _UNSAMPLED.reset(self._token)


@contextlib.contextmanager
def _start(tracer: Any, name: str, attributes: Mapping[str, Any] | None, server: bool,
           parent: Mapping[str, str] | None) -> Iterator[Any]:
    from opentelemetry.trace import SpanKind

    context = _propagator.extract(parent) if parent else None
    kind = SpanKind.SERVER if server else SpanKind.INTERNAL
    with tracer.start_as_current_span(name, context=context, kind=kind, attributes=attributes) as current:
        yield current


def set_attribute(current: Any, key: str, value: Any) -> None:
    """Set an attribute on the span `span()` yielded (None when tracing is off)."""
    if current is not None:
        current.set_attribute(key, value)


def inject(carrier: MutableMapping[str, str]) -> None:
    """Add the current span's W3C headers to `carrier` (gRPC metadata, a webhook call's headers); in a request
    not sampled, a traceparent that says so."""
    if _propagator is None:
        return
    if _UNSAMPLED.get():
        carrier["traceparent"] = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-00"
    else:
        _propagator.inject(carrier)


def headers_of(pairs: Any) -> dict[str, str]:
    """The W3C headers among metadata pairs or a header mapping (empty when tracing is off)."""
    if _propagator is None:
        return {}
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return {str(key).lower(): str(value) for key, value in items if str(key).lower() in HEADERS}
