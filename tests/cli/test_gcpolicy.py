"""capstan/cli/gcpolicy.py: once started, a serving process collects rarely and never walks what it loaded."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from capstan.cli import gcpolicy


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.disable()  # as the console script starts (capstan/cli/launch.py)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        gc.enable()


@pytest.mark.parametrize(("figure", "expected"), [
    (lambda: gc.get_threshold(), gcpolicy.THRESHOLDS),
    (lambda: gc.get_freeze_count() > 0, True),  # what was loaded is out of every collection
    (lambda: gc.get_threshold()[0] >= 10_000, True),  # CPython's 700 ran a full collection every ~1.3 s under load
    (lambda: gc.isenabled(), True),  # off during start-up, on once serving
])
def test_after_start(restored_gc: None, figure: object, expected: object) -> None:
    gcpolicy.after_start()
    assert callable(figure) and figure() == expected
