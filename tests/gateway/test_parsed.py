"""gateway/parsed.py: a request's routing information, kept across requests by the only inputs parse reads.
Asked in any order, each request gets what requestinfo.parse answers for it, however many asked before: the
same path as a list and as a watch, as a get and as a delete, long paths, and after the answers kept were
emptied."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from gateway import parsed, requestinfo

COLLECTION = "/api/v1/namespaces/default/configmaps"
ONE = COLLECTION + "/web"
LONG = COLLECTION + "/" + "n" * 300


@pytest.mark.parametrize("asked", [
    [("GET", COLLECTION), ("GET", COLLECTION + "?watch=true"), ("GET", COLLECTION + "?watch=1"),
     ("GET", COLLECTION + "?watch=false"), ("GET", COLLECTION)],
    [("GET", ONE), ("DELETE", ONE), ("PUT", ONE), ("PATCH", ONE), ("GET", ONE + "?watch=true"), ("GET", ONE)],
    [("POST", COLLECTION), ("DELETE", COLLECTION), ("POST", COLLECTION)],
    [("GET", "/apis/apps/v1"), ("GET", "/apis"), ("GET", "/version"), ("GET", "/apis/apps/v1")],
    [("GET", LONG), ("GET", LONG + "?watch=1"), ("DELETE", LONG)],
])
def test_each_request_gets_its_own_answer(asked: list[tuple[str, str]]) -> None:
    for method, url in asked * 2:
        http = make_mocked_request(method, url)
        assert parsed.info_of(http) == requestinfo.parse(method, http.path, http.query), (method, url)
        assert parsed.info_of(http) is parsed.info_of(http)  # kept on the request


def test_the_answers_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsed, "_REMEMBERED", 3)
    monkeypatch.setattr(parsed, "_answers", {})
    for i in range(10):
        http = make_mocked_request("GET", f"{COLLECTION}/cm-{i}")
        assert parsed.info_of(http) == requestinfo.parse("GET", http.path, http.query)
        assert len(parsed._answers) <= 3
    parsed.info_of(make_mocked_request("GET", LONG))
    assert all(len(path) <= parsed._LONGEST for _, path, _ in parsed._answers)


# Paths built from the segments requestinfo.parse decides on, after each API root: every object path among them
# (derived from its collection's answer) and every other (parsed) must get parse's own answer.
ROOTS = ["", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/x"]
SEGMENTS = ["namespaces", "ns", "status", "watch", "proxy", "x", ""]
METHODS = ["GET", "POST", "DELETE", "OPTIONS"]


def _tails(depth: int) -> list[str]:
    tails = [""]
    for _ in range(depth):
        tails += [tail + "/" + segment for tail in tails if tail.count("/") == _ for segment in SEGMENTS]
    return tails


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("query", [{}, {"watch": "1"}])
def test_every_path_gets_parses_answer_cold_and_warm(root: str, query: dict[str, str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsed, "_answers", {})
    monkeypatch.setattr(parsed, "_collections", {})
    paths = [root + tail for tail in _tails(4)] + ["*", "/", "//", "x"]
    for warm in (False, True):
        for path in paths:
            for method in METHODS:
                assert parsed._parse(method, path, query) == requestinfo.parse(method, path, query), (
                    method, path, query, warm)


def test_the_collections_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsed, "_REMEMBERED", 3)
    monkeypatch.setattr(parsed, "_collections", {})
    for i in range(10):
        path = f"/api/v1/namespaces/ns-{i}/configmaps/web"
        assert parsed._parse("GET", path, {}) == requestinfo.parse("GET", path, {})
        assert len(parsed._collections) <= 3
