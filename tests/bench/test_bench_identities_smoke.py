"""The identities benchmark runs end to end at --quick sizes and prints what it promises. It asserts the shape
of the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_identity_part_reports_its_cost() -> None:
    lines = run_quick("bench.identities")
    assert [(line["op"], line["impl"]) for line in lines] == [
        ("oidc", "verify"), ("oidc", "union-cached"), ("token-webhook", "round-trip"), ("token-webhook", "cached"),
        ("authorization-webhook", "round-trip"), ("authorization-webhook", "cached"),
        ("node-authorizer", "secret-allowed-110-pods"), ("node-authorizer", "secret-refused-110-pods"),
        ("node-authorizer", "system-node-rule")]
    for line in lines:
        assert line["metric"] == "us_per_call" and line["us_per_call"] > 0 and len(line["rounds"]) == 3
