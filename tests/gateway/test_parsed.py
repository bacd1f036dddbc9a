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
