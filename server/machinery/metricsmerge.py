"""One /metrics answer for several serving processes (`--workers N`), as one kube-apiserver would give it.

Each worker counts its own requests, so a scrape answered by one worker alone would go back and forth between
workers' values, which Prometheus reads as counter resets. `merge` takes every worker's exposition (the text
format) and adds them up into one, series by series, without any label of its own:

- counters, histograms and summaries are summed: the server's requests are every worker's;
- gauges are summed where they count something each worker holds (requests in flight, watchers, resident
  memory, open descriptors, seats), and take the largest value where every worker reports the same fact
  (the store's object counts and size, the quota, an APIService's availability, the leader's status, limits,
  `*_info`), or the smallest for a start time (`process_start_time_seconds`, the `*_created` timestamps).

Pure: it reads and writes the exposition format with prometheus_client alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

SUMMED_TYPES = frozenset({"counter", "histogram", "summary", "gaugehistogram"})
# Gauges every worker reports alike, about the server as a whole: the largest is the server's.
SHARED_GAUGES = frozenset({
    "apiserver_storage_objects", "apiserver_storage_size_bytes", "etcd_server_quota_backend_bytes",
    "aggregator_unavailable_apiservice", "leader_election_master_status", "process_max_fds",
})
EARLIEST_GAUGES = frozenset({"process_start_time_seconds"})

Key = tuple[str, tuple[tuple[str, str], ...]]


def rule(family: Metric) -> str:
    """How `family`'s samples of several workers combine: "sum", "max" or "min"."""
    if family.type in SUMMED_TYPES:
        return "sum"
    if family.name in EARLIEST_GAUGES or family.name.endswith("_created"):
        return "min"
    if family.name in SHARED_GAUGES or family.name.endswith("_info") or family.type == "info":
        return "max"
    return "sum"


def merge(texts: Sequence[bytes]) -> bytes:
    """The exposition of every worker's figures combined (see the module's rules); one text is returned as it
    is."""
    if len(texts) == 1:
        return texts[0]
    families: dict[str, Metric] = {}
    values: dict[str, dict[Key, float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text.decode()):
            seen = families.setdefault(family.name, family)
            combine = rule(seen)
            samples = values.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                old = samples.get(key)
                if old is None:
                    samples[key] = sample.value
                elif combine == "sum":
                    samples[key] = old + sample.value
                elif combine == "max":
                    samples[key] = max(old, sample.value)
                else:
                    samples[key] = min(old, sample.value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged(families, values))
    return generate_latest(registry)


class _Merged(Collector):
    def __init__(self, families: dict[str, Metric], values: dict[str, dict[Key, float]]) -> None:
        self._families = families
        self._values = values

    def collect(self) -> Iterator[Metric]:
        for name, family in self._families.items():
            merged = Metric(family.name, family.documentation, family.type, family.unit)
            for (sample_name, labels), value in self._values[name].items():
                merged.add_sample(sample_name, dict(labels), value)
            yield merged

