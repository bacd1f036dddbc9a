"""One-time login codes (gateway/console/codes.py): a code redeems once, for its token, within its time, and
no more than the capacity of codes wait at once."""

from __future__ import annotations

import pytest

from gateway.console.codes import Codes


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("issued", "waited", "redeem", "expected"), [
    (["t1"], 0.0, [0], ["t1"]),
    (["t1"], 0.0, [0, 0], ["t1", None]),  # single use
    (["t1", "t2"], 0.0, [1, 0], ["t2", "t1"]),
    (["t1"], 299.0, [0], ["t1"]),
    (["t1"], 300.0, [0], [None]),  # expired
    (["t1", "t2", "t3"], 0.0, [0, 1, 2], [None, "t2", "t3"]),  # capacity 2: the oldest went
])
def test_codes(issued: list[str], waited: float, redeem: list[int], expected: list[str | None]) -> None:
    clock = Clock()
    codes = Codes(ttl=300.0, capacity=2, clock=clock)
    issued_codes = [codes.issue(token) for token in issued]
    assert len(set(issued_codes)) == len(issued_codes) and not set(issued_codes) & set(issued)
    clock.now += waited
    assert [codes.redeem(issued_codes[i]) for i in redeem] == expected
    assert codes.redeem("made-up") is None
