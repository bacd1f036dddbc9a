"""The bytecode count runs end to end at --quick sizes against a real `capstan serve` with bench/_opcounter.py
loaded, and prints what it promises: one line per verb with the bytecodes and calls a request took, split by part
of the server (the parts adding up to the whole) and its busiest functions.

It asserts the shape of the output, never the counts: those belong to real runs, recorded in
docs/performance.md.
"""

from __future__ import annotations

import pytest

from tests.bench.quick import run_quick


@pytest.mark.parametrize(("only", "expected"), [
    ("get,create", {("get", "this"), ("create", "this")}),
])
def test_every_verb_reports_its_bytecodes(only: str, expected: set[tuple[str, str]]) -> None:
    lines = run_quick("bench.bytecodes", "--only", only, "--top", "5")
    assert {(line["op"], line["impl"]) for line in lines} == expected
    for line in lines:
        assert line["metric"] == "bytecodes_per_req" and line["requests"] > 0
        assert line["bytecodes_per_req"] > 1_000 and line["calls_per_req"] > 50  # a request runs this much at least
        split = line["split"]
        assert split["gateway/"] > 0 and split["server/"] > 0 and split["aiohttp, multidict, yarl"] > 0
        assert sum(split.values()) == pytest.approx(line["bytecodes_per_req"], abs=len(split))
        assert 0 < len(line["functions"]) <= 5
        assert all(f["bytecodes"] > 0 and ":" in f["function"] for f in line["functions"])
