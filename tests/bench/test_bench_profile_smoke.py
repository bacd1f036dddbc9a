"""The per-stage profile runs end to end at --quick sizes against a real `capstan serve` under the sampler, and
prints what it promises: one line per verb and server, its /proc CPU per request, the stages' µs per request
summing to it, and the frames behind each stage; and the stage rules attribute a stack by its innermost frame a
rule names.

It asserts the shape of the output, never the speed: timing belongs to real runs on a known machine, not to CI.
"""

from __future__ import annotations

import pytest

from bench.profile import ORDER, stage_of
from tests.bench.quick import REPO_ROOT, run_quick


@pytest.mark.parametrize(("args", "expected"), [
    (("--only", "create,get"), {("create", "this"), ("get", "this")}),
    (("--only", "update,list", "--insecure"), {("update", "this"), ("list", "this")}),
    (("--only", "get", "--compare", str(REPO_ROOT)), {("get", "this"), ("get", REPO_ROOT.name)}),
])
def test_every_verb_reports_its_stages(args: tuple[str, ...], expected: set[tuple[str, str]]) -> None:
    lines = run_quick("bench.profile", *args)
    assert {(line["op"], line["impl"]) for line in lines} == expected
    for line in lines:
        stages = line["stages_us"]
        assert set(stages) <= set(ORDER) and "unseen" in stages, line
        assert sum(stages.values()) == pytest.approx(line["server_cpu_us_per_req"], abs=0.1 * len(stages))
        assert set(line["frames"]) == set(stages)
        assert line["requests"] > 0


@pytest.mark.parametrize(("stack", "stage"), [
    (["/x/lib/python3.11/ssl.py:read", "/x/lib/python3.11/asyncio/sslproto.py:_do_read"], "TLS"),
    (["/r/server/machinery/codec/json.py:dumps", "/r/server/objects/render.py:to_value"], "encoding"),
    (["/r/server/kinds/shaped.py:retype", "/r/server/objects/body.py:decode"], "decoding"),
    (["/r/server/objects/create.py:prepare_for_create", "/r/server/objects/create.py:create_object"], "strategy"),
    (["/r/server/objects/create.py:create_object", "/r/gateway/handlers/write.py:create"], "core verb"),
    (["/x/lib/python3.11/threading.py:wait", "thread:capstan-lmdb-writer"], "storage"),
    (["/x/lib/python3.11/json/encoder.py:encode"], "other"),
])
def test_a_stack_belongs_to_its_innermost_named_frame(stack: list[str], stage: str) -> None:
    assert stage_of(stack, {})[0] == stage
