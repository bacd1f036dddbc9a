"""The gRPC list paging benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a known machine.
"""

from __future__ import annotations

import pytest

from tests.bench.quick import run_quick


@pytest.mark.parametrize("form", ["json", "protobuf"])
def test_each_form_reports_one_answer_paged_and_their_ratio(form: str) -> None:
    lines = [line for line in run_quick("bench.grpclist") if line["op"] == f"list-600-{form}"]
    assert [line["impl"] for line in lines] == ["one answer (64 MiB client)", "paged (default client)",
                                                "paged / one answer"]
    assert [line["metric"] for line in lines] == ["seconds", "seconds", "ratio"]
    assert all(line[line["metric"]] > 0 for line in lines)
    assert lines[1]["pages"] >= 1 and lines[2]["goal"] == "<=1.25x"
