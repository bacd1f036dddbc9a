"""The security benchmark runs end to end at --quick sizes, against real server processes, and prints what it
promises: every server's figure for each HTTP workload (the static token, ServiceAccount token and certificate
requests answered 200/201 by a server that authorizes them), what security costs beside them, and the in-process
authn+authz figures with their goal.

It asserts the shape of the output, never the speed: timing belongs to real runs on a known machine, not to CI.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench.quick import run_quick

IMPLS = ("insecure", "token", "sa-token", "cert", "ceiling-http", "ceiling-https")


def run_bench(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    lines = run_quick("bench.security", *args)
    by_key = {(line["op"], line["impl"]): line for line in lines}
    assert len(by_key) == len(lines)
    for line in lines:
        assert line[line["metric"]] >= 0 or line["op"].endswith("-security-cost")
        assert isinstance(line["ok"], bool), line  # a missed goal is a figure, not a failure
    return by_key


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        ("get,create", {*((op, impl) for op in ("get", "create") for impl in IMPLS),
                        ("get-security-cost", "capstan"), ("create-security-cost", "capstan")}),
        ("admit", {("admit", "token-get"), ("admit", "token-create"), ("admit", "sa-token-get"), ("admit", "cert-get"),
                   ("credentials", "token"), ("credentials", "cert"),
                   ("authn-authz", "token"), ("authn-authz", "sa-token"), ("authn-authz", "cert")}),
    ],
)
def test_every_workload_reports_every_server(only: str, expected: set[tuple[str, str]]) -> None:
    lines = run_bench("--only", only)
    assert set(lines) == expected
    for (op, _), line in lines.items():
        if op in ("get", "create"):
            assert line["server_cpu_us"] >= 0 and len(line["rounds"]) == 2
            assert "error" not in line, line
        if op == "authn-authz":
            assert line["goal"] == "<=20 us"
            assert line["us_per_request"] == pytest.approx(line["admit_us"] + line["credentials_us"], abs=0.02)
    cost = lines.get(("get-security-cost", "capstan"))
    if cost is not None:
        assert {"tls_us", "authn_authz_estimate_us", "cert_minus_insecure_us", "sa_token_minus_insecure_us",
                "sa_token_over_cert"} <= set(cost)


def test_impls_pick_servers() -> None:
    lines = run_bench("--only", "get", "--impls", "insecure,token")
    assert set(lines) == {("get", "insecure"), ("get", "token"), ("get-security-cost", "capstan")}
    assert "tls_us" not in lines[("get-security-cost", "capstan")]
