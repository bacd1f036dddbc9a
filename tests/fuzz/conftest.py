"""One Capstan for the whole fuzz session (both suites), with the objects the fuzzed requests aim at."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.harness import Judge, running
from tests.fuzz.inputs import SEED_OBJECTS


@pytest.fixture(scope="session")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judge]:
    with running(tmp_path_factory.mktemp("fuzz")) as capstan:
        for path, obj in SEED_OBJECTS:
            capstan.seed("POST", path, obj)
        judge = Judge(capstan)
        yield judge
        capstan.ready_within()


