"""Bent gRPC requests to every CoreService method of a real grpc.aio core: arbitrary bytes, valid requests
with their bytes bent, and well-formed messages holding any field values. A failure is always a code kube's
Status maps to (server/machinery/errors.py) with the Status in the rich error details, never INTERNAL or UNKNOWN (a
500), nothing is logged with a traceback, and /readyz stays fast.
"""

from __future__ import annotations

import grpc
import pytest
from hypothesis import given

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.fuzz.harness import Judge, budget
from tests.fuzz.inputs import SEEDED, VALID_CALLS, field_calls, mutated_calls, raw_calls

_PATH = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default", name=SEEDED)


@budget(200)
@given(call=raw_calls())
def test_arbitrary_bytes_to_every_method_answer_a_status(judge: Judge, call: tuple[str, bytes]) -> None:
    _, problems = judge.grpc(*call)
    assert not problems, f"{call!r}\n{problems}"


@budget(300)
@given(call=mutated_calls())
def test_bent_valid_requests_answer_a_status(judge: Judge, call: tuple[str, bytes]) -> None:
    _, problems = judge.grpc(*call)
    assert not problems, f"{call!r}\n{problems}"


@budget(200)
@given(call=field_calls())
def test_any_field_values_answer_a_status(judge: Judge, call: tuple[str, bytes]) -> None:
    _, problems = judge.grpc(*call)
    assert not problems, f"{call!r}\n{problems}"


def _with_options(method: str, field_number: int, options: bytes) -> bytes:
    """The method's valid request with an options message appended (a later message field merges into it)."""
    valid = next(request for name, request in VALID_CALLS if name == method)
    return valid + bytes([field_number << 3 | 2, len(options)]) + options


def _string(field_number: int, value: bytes) -> bytes:
    return bytes([field_number << 3 | 2, len(value)]) + value


NOT_UTF8 = b"a\xffb"


# upstream's meta/v1 options are proto2, whose strings python's protobuf hands over as bytes when they are not
# UTF-8: the CoreService refuses each on parse, a 400 naming the field, never a 500 (INTERNAL).
@pytest.mark.parametrize(("method", "options_field", "option", "name"), [
    ("Create", 3, 3, "options.fieldManager"),
    ("Create", 3, 1, "options.dryRun"),
    ("Update", 3, 2, "options.fieldManager"),
    ("Patch", 4, 3, "options.fieldManager"),
    ("Delete", 2, 4, "options.propagationPolicy"),
    ("List", 2, 1, "options.labelSelector"),
    ("List", 2, 2, "options.fieldSelector"),
    ("List", 2, 8, "options.continue"),
    ("Watch", 2, 1, "options.labelSelector"),
    ("DeleteCollection", 2, 2, "list_options.fieldSelector"),
])
def test_option_strings_that_are_not_utf8_are_a_bad_request(
        judge: Judge, method: str, options_field: int, option: int, name: str) -> None:
    answer, problems = judge.grpc(method, _with_options(method, options_field, _string(option, NOT_UTF8)))
    assert not problems
    assert answer.code == grpc.StatusCode.INVALID_ARGUMENT
    assert answer.status is not None and (answer.status.code, answer.status.reason) == (400, "BadRequest")
    assert answer.status.message.endswith(f"{name} is not valid UTF-8"), answer.status.message


# A view's meta.k8s.io version other than v1 or v1beta1 was a ValueError deep in printing (INTERNAL, a
# logged traceback): the gateway's negotiation never asks for one, a gRPC client may.
@pytest.mark.parametrize(("method", "request_bytes"), [
    ("Get", core_pb2.GetRequest(path=_PATH, view=core_pb2.ViewOptions(
        view=core_pb2.VIEW_TABLE, api_version="meta.k8s.io/y1")).SerializeToString()),
    ("Get", core_pb2.GetRequest(path=_PATH, view=core_pb2.ViewOptions(
        view=core_pb2.VIEW_PARTIAL_OBJECT_METADATA, api_version="\x00eta.k8s.io/v1")).SerializeToString()),
    ("List", core_pb2.ListRequest(path=core_pb2.ResourcePath(version="v1", resource="configmaps"),
                                  view=core_pb2.ViewOptions(view=core_pb2.VIEW_TABLE, api_version="v1"),
                                  ).SerializeToString()),
])
def test_views_of_a_version_without_tables_are_not_acceptable(judge: Judge, method: str, request_bytes: bytes) -> None:
    answer, problems = judge.grpc(method, request_bytes)
    assert not problems
    assert answer.status is not None and (answer.status.code, answer.status.reason) == (406, "NotAcceptable")
