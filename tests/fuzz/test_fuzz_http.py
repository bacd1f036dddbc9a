"""Bent HTTP requests against the real gateway (in-process and over gRPC, one real core): bodies of every
encoding and patch type, query strings, Accept and Content-Type. Whatever is sent, the answer is one kube
could give: no 5xx but 503/504 with Retry-After and 507, every error a Status in the negotiated encoding,
nothing logged with a traceback, and /readyz still fast after every batch. A fixed budget of examples,
drawn the same way each run; `python -m bench.fuzz` draws many more from the same strategies.
"""

from __future__ import annotations

from hypothesis import given

from tests.fuzz.harness import HttpRequest, Judge, budget
from tests.fuzz.inputs import body_requests, header_requests, query_requests


@budget(300)
@given(request=body_requests())
def test_bent_bodies_of_every_encoding_answer_as_kube_would(judge: Judge, request: HttpRequest) -> None:
    _, problems = judge.http(request)
    assert not problems, f"{request.reproducer()}\n{problems}"


@budget(300)
@given(request=query_requests())
def test_bent_query_strings_answer_as_kube_would(judge: Judge, request: HttpRequest) -> None:
    _, problems = judge.http(request)
    assert not problems, f"{request.reproducer()}\n{problems}"


@budget(200)
@given(request=header_requests())
def test_bent_media_types_answer_as_kube_would(judge: Judge, request: HttpRequest) -> None:
    _, problems = judge.http(request)
    assert not problems, f"{request.reproducer()}\n{problems}"
