"""Several workers' /metrics merged into one server's: counters and histograms summed, gauges summed or taken
from the worker that knows best, series by series, with no label of the merge's own."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.machinery.metricsmerge import merge

WORKER_0 = b"""# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",verb="POST"} 3.0
apiserver_request_total{code="200",verb="GET"} 5.0
# HELP apiserver_request_duration_seconds Response latency.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{le="0.1",verb="POST"} 2.0
apiserver_request_duration_seconds_bucket{le="+Inf",verb="POST"} 3.0
apiserver_request_duration_seconds_count{verb="POST"} 3.0
apiserver_request_duration_seconds_sum{verb="POST"} 0.5
# HELP apiserver_current_inflight_requests In flight.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="readOnly"} 2.0
# HELP apiserver_storage_objects Objects stored.
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="configmaps"} 40.0
# HELP leader_election_master_status Leading.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="capstan-controllers"} 0.0
# HELP process_start_time_seconds Start time.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1000.0
"""
WORKER_1 = b"""# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",verb="POST"} 4.0
apiserver_request_total{code="409",verb="POST"} 1.0
# HELP apiserver_request_duration_seconds Response latency.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{le="0.1",verb="POST"} 4.0
apiserver_request_duration_seconds_bucket{le="+Inf",verb="POST"} 5.0
apiserver_request_duration_seconds_count{verb="POST"} 5.0
apiserver_request_duration_seconds_sum{verb="POST"} 0.75
# HELP apiserver_current_inflight_requests In flight.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="readOnly"} 1.0
# HELP apiserver_storage_objects Objects stored.
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="configmaps"} 41.0
# HELP leader_election_master_status Leading.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="capstan-controllers"} 1.0
# HELP process_start_time_seconds Start time.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1002.0
"""


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


@pytest.mark.parametrize(("name", "labels", "value"), [
    ("apiserver_request_total", {"code": "201", "verb": "POST"}, 7.0),  # counters: summed
    ("apiserver_request_total", {"code": "200", "verb": "GET"}, 5.0),  # a series one worker has
    ("apiserver_request_total", {"code": "409", "verb": "POST"}, 1.0),
    ("apiserver_request_duration_seconds_bucket", {"le": "0.1", "verb": "POST"}, 6.0),  # histograms: summed
    ("apiserver_request_duration_seconds_count", {"verb": "POST"}, 8.0),
    ("apiserver_request_duration_seconds_sum", {"verb": "POST"}, 1.25),
    ("apiserver_current_inflight_requests", {"request_kind": "readOnly"}, 3.0),  # what each worker holds: summed
    ("apiserver_storage_objects", {"resource": "configmaps"}, 41.0),  # one store: the newest count
    ("leader_election_master_status", {"name": "capstan-controllers"}, 1.0),  # the server leads if one worker does
    ("process_start_time_seconds", {}, 1000.0),  # the server started with its first worker
])
def test_merged_series(name: str, labels: dict[str, str], value: float) -> None:
    merged = samples(merge([WORKER_0, WORKER_1]))
    assert merged[(name, tuple(sorted(labels.items())))] == value


def test_merge_adds_no_series() -> None:
    merged = samples(merge([WORKER_0, WORKER_1]))
    assert set(merged) == set(samples(WORKER_0)) | set(samples(WORKER_1))


@pytest.mark.parametrize("texts", [[WORKER_0], [WORKER_1]])
def test_one_worker_is_served_as_it_is(texts: list[bytes]) -> None:
    assert merge(texts) == texts[0]
