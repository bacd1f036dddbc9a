"""The instruction count runs end to end at --quick sizes against a real `capstan serve` under callgrind, and
prints what it promises: one line per verb with the instructions a request took and where they ran, the parts
adding up to the whole.

It asserts the shape of the output, never the counts: those belong to real runs, recorded in
docs/performance.md.
"""

from __future__ import annotations

import shutil

import pytest

from tests.bench.quick import run_quick

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("callgrind_control") is None,
                                reason="valgrind (callgrind) is not installed")


@pytest.mark.parametrize(("only", "expected"), [
    ("get,update", {("get", "this"), ("update", "this")}),
])
def test_every_verb_reports_its_instructions(only: str, expected: set[tuple[str, str]]) -> None:
    lines = run_quick("bench.instructions", "--only", only)
    assert {(line["op"], line["impl"]) for line in lines} == expected
    for line in lines:
        assert line["metric"] == "instructions_per_req" and line["requests"] > 0
        assert line["instructions_per_req"] > 100_000  # a request over TLS is at least this much Python
        split = line["split"]
        assert split["interpreter"] > split.get("OpenSSL", 0) > 0
        assert sum(split.values()) == pytest.approx(line["instructions_per_req"], rel=0.02)
