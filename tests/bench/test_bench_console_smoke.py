"""The console benchmark runs end to end at --quick size and prints what it promises. It asserts the shape of
the output, never the speed."""

from __future__ import annotations

import pytest

from tests.bench.quick import run_quick
from tests.gateway.chromium import executable


@pytest.mark.skipif(executable() is None, reason="no chromium (apt-get install chromium)")
def test_every_figure_reported() -> None:
    lines = run_quick("bench.console")
    assert [line["op"] for line in lines] == ["paged-table-list", "console-first-rows", "console-all-rows",
                                              "console-dom-rows", "console-scroll-bottom", "console-watched-create"]
    assert all(line[line["metric"]] > 0 for line in lines)
