"""Failures over HTTP: every non-2xx answer is a Status whose code is the HTTP status (never a traceback,
never a 500 for a client's mistake), Retry-After on the 504 of a too-new resourceVersion, the 413 of a
body over 3 MiB, kube's 4xx for malformed query parameters, and the `timeout` parameter everywhere."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from tests.gateway import kube
from tests.gateway.conftest import TIMEOUT, Server

Obj = dict[str, Any]
CM = "/api/v1/namespaces/default/configmaps"
MAX_BODY = 3 * 1024 * 1024
TOO_LARGE = kube.status(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")

# Requests that must fail, each in its own way: the answer is a Status with the HTTP code inside.
FAILING: list[tuple[str, str, bytes | None, dict[str, str]]] = [
    ("GET", "/api/v1/namespaces/default/configmaps/missing", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps/%00", None, {}),
    ("GET", "/api/v1/nothing", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps?limit=1&continue=garbage", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps?fieldSelector=spec.x%3D1", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps?resourceVersion=abc", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps?limit=abc", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps", None, {"Accept": "image/png"}),
    ("POST", CM, b"\xff\xfe{}", {"Content-Type": "application/json"}),
    ("POST", CM, b"[" * 100_000 + b"]" * 100_000, {"Content-Type": "application/json"}),
    ("POST", CM, b"- " * 50_000 + b"a", {"Content-Type": "application/yaml"}),
    ("POST", CM, b"a: &a [*a]", {"Content-Type": "application/yaml"}),
    ("POST", CM, b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x03\xff\xff\xff",
     {"Content-Type": "application/vnd.kubernetes.protobuf"}),
    ("POST", CM, b'{"metadata":{"name":"Bad_Name"}}', {"Content-Type": "application/json"}),
    ("POST", "/api/v1/namespaces/nowhere/configmaps", b'{"metadata":{"name":"a"}}', {}),
    ("POST", CM, b"{}", {"Content-Type": "application/pdf"}),
    ("PUT", f"{CM}/missing", b'{"metadata":{"name":"missing"}}', {}),
    ("DELETE", f"{CM}/missing", None, {}),
    ("DELETE", "/api/v1/namespaces/kube-system", None, {}),
    ("POST", "/api/v1/namespaces/default/configmaps/x", b"{}", {}),
    ("GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersionMatch=Exact", None, {}),
    ("GET", "/api/v1/namespaces/default/configmaps?timeout=forever", None, {}),
]


@pytest.mark.parametrize(("method", "path", "body", "headers"), FAILING,
                         ids=[f"{m} {p[:60]}" for m, p, _, _ in FAILING])
async def test_every_failure_is_a_status(
    server: Server, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> None:
    resp = await server.request(method, path, body=body, headers=headers)
    assert 400 <= resp.status < 500, resp.body
    assert resp.content_type == "application/json"
    status = resp.json()
    assert list(status)[:5] == ["kind", "apiVersion", "metadata", "status", "message"]
    assert (status["kind"], status["apiVersion"], status["metadata"], status["status"], status["code"]) == (
        "Status", "v1", {}, "Failure", resp.status)
    assert status["message"] and "Traceback" not in status["message"]
    assert set(status) <= {"kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"}


@pytest.mark.parametrize("path", [f"{CM}/a?resourceVersion={{rv}}", f"{CM}?resourceVersion={{rv}}",
                                  f"{CM}?resourceVersion={{rv}}&resourceVersionMatch=NotOlderThan"])
async def test_too_large_resource_version_is_504_with_retry_after(server: Server, path: str) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    future = server.revision() + 10
    resp = await server.request("GET", path.format(rv=future))
    assert (resp.status, resp.headers.get("Retry-After"), resp.json()) == (504, "1", kube.status(
        504, "Timeout", f"Timeout: Too large resource version: {future}, current: {server.revision()}",
        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
         "retryAfterSeconds": 1}))


def padded(size: int) -> bytes:
    """A valid ConfigMap body exactly size bytes long (JSON whitespace pads it)."""
    doc = b'{"metadata":{"name":"padded"}}'
    return doc + b" " * (size - len(doc))


@pytest.mark.parametrize(("method", "path"), [("POST", CM), ("PUT", f"{CM}/padded"), ("DELETE", f"{CM}/padded")])
async def test_bodies_over_3_mib_are_413(server: Server, method: str, path: str) -> None:
    await server.create(CM, {"metadata": {"name": "padded"}})
    revision = server.revision()
    resp = await server.request(method, path, body=padded(MAX_BODY + 1), headers={"Content-Type": "application/json"})
    assert (resp.status, resp.json()) == (413, TOO_LARGE)

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit holds while reading
        data = padded(MAX_BODY + 1)
        for at in range(0, len(data), 256 * 1024):
            yield data[at:at + 256 * 1024]

    async def chunked() -> tuple[int, bytes]:
        async with server.session.request(method, server.url + path, data=chunks(),
                                          headers={"Content-Type": "application/json"}) as r:
            assert r.headers.get("Content-Length") is not None  # the answer itself is not chunked
            return r.status, await r.read()

    status, body = await asyncio.wait_for(chunked(), TIMEOUT)
    assert (status, orjson.loads(body)) == (413, TOO_LARGE)
    assert server.revision() == revision


@pytest.mark.parametrize("limit", ["-1", "0", "-5000"])
async def test_a_limit_below_one_lists_everything(server: Server, limit: str) -> None:
    """kube-apiserver 1.28 validates no limit: one below 1 is no limit (beside it, `?limit=-1` answered the list)."""
    for name in ("a", "b"):
        await server.create(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    resp = await server.request("GET", f"{CM}?limit={limit}")
    listed = resp.json()
    assert resp.status == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert "continue" not in listed["metadata"]


async def test_a_body_of_exactly_3_mib_is_read(server: Server) -> None:
    resp = await server.request("POST", CM, body=padded(MAX_BODY), headers={"Content-Type": "application/json"})
    assert (resp.status, resp.json()["metadata"]["name"]) == (201, "padded")


@pytest.mark.parametrize(("query", "code", "expected"), [
    ("limit=abc", 400, kube.bad_request('strconv.ParseInt: parsing "abc": invalid syntax')),
    ("limit=", 400, kube.bad_request('strconv.ParseInt: parsing "": invalid syntax')),
    ("limit=1.5", 400, kube.bad_request('strconv.ParseInt: parsing "1.5": invalid syntax')),
    ("limit=99999999999999999999", 400, kube.bad_request(
        'strconv.ParseInt: parsing "99999999999999999999": value out of range')),
    ("timeoutSeconds=x", 400, kube.bad_request('strconv.ParseInt: parsing "x": invalid syntax')),
    ("resourceVersionMatch=NotOlderThan", 422, kube.invalid_option(
        "ListOptions", "resourceVersionMatch", "FieldValueForbidden",
        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")),
    ("resourceVersionMatch=Newest&resourceVersion=1", 422, kube.invalid_option(
        "ListOptions", "resourceVersionMatch", "FieldValueNotSupported",
        'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""')),
    ("sendInitialEvents=true", 422, kube.invalid_option(
        "ListOptions", "sendInitialEvents", "FieldValueForbidden",
        "Forbidden: sendInitialEvents is forbidden for list")),
    ("resourceVersion=abc", 400, kube.bad_request(
        'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax')),
    ("labelSelector=a%3D%3D%3D", 400, kube.bad_request("unable to parse requirement: found '=', expected: identifier")),
    ("fieldSelector=spec.x%3D1", 400, kube.bad_request(
        '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"')),
], ids=lambda v: v if isinstance(v, str) else "")
async def test_bad_list_parameters(server: Server, query: str, code: int, expected: Obj) -> None:
    resp = await server.request("GET", f"{CM}?{query}")
    assert (resp.status, resp.json()) == (code, expected)


@pytest.mark.parametrize("query", ["watch=false", "watch=0", "watch=FALSE", "allowWatchBookmarks=yes", "pretty=no",
                                   "unknownParameter=1"])
async def test_lenient_parameters(server: Server, query: str) -> None:
    """apimachinery reads a bool parameter as false only for "0" and "false" (any case), never failing;
    unknown parameters are ignored."""
    resp = await server.request("GET", f"{CM}?{query}")
    assert (resp.status, resp.json()["kind"]) == (200, "ConfigMapList")


@pytest.mark.parametrize("timeout", ["30s", "1m30s", "500ms", "1.5h", "0", "-1s", "2h"])
async def test_timeout_is_accepted_everywhere(server: Server, timeout: str) -> None:
    q = f"timeout={timeout}"
    steps: list[tuple[str, str, Obj | None, int]] = [
        ("POST", f"{CM}?{q}", {"metadata": {"name": "a"}}, 201),
        ("GET", f"{CM}/a?{q}", None, 200),
        ("GET", f"{CM}?{q}", None, 200),
        ("PUT", f"{CM}/a?{q}", {"metadata": {"name": "a"}, "data": {"k": "v"}}, 200),
        ("DELETE", f"{CM}/a?{q}", None, 200),
        ("DELETE", f"{CM}?{q}", None, 200),
        ("GET", f"/api?{q}", None, 200),
        ("GET", f"/api/v1?{q}", None, 200),
        ("GET", f"/apis?{q}", None, 200),
        ("GET", f"/version?{q}", None, 200),
        ("GET", f"/healthz?{q}", None, 200),
    ]
    for method, path, body, code in steps:
        resp = await server.request(method, path, json=body)
        assert resp.status == code, (method, path, resp.body)
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=1&{q}") as stream:
        assert stream.status == 200


@pytest.mark.parametrize(("timeout", "message"), [
    ("forever", 'time: invalid duration "forever"'),
    ("10", 'time: missing unit in duration "10"'),
    ("10x", 'time: unknown unit "x" in duration "10x"'),
    (".s", 'time: invalid duration ".s"'),
    ("-", 'time: invalid duration "-"'),
])
@pytest.mark.parametrize(("method", "path"), [("GET", CM), ("GET", f"{CM}/a"), ("POST", CM), ("PUT", f"{CM}/a"),
                                              ("DELETE", f"{CM}/a"), ("GET", "/api"), ("GET", "/api/v1"),
                                              ("GET", "/version")])
async def test_malformed_timeout_is_400(server: Server, timeout: str, message: str, method: str, path: str) -> None:
    """WithRequestDeadline refuses a malformed ?timeout on every request but watches, before any handler."""
    resp = await server.request(method, f"{path}?timeout={timeout}", json={"metadata": {"name": "a"}}
                                if method in ("POST", "PUT") else None)
    assert (resp.status, resp.json()) == (400, kube.bad_request(
        f"invalid timeout specified in the request URL - {message}"))


async def test_timeout_cuts_a_slow_request_with_504(server: Server) -> None:
    """A request that outlives ?timeout answers the finisher's 504 (here a list that waits for a
    resourceVersion the store has not reached; the store would wait 0.5 s)."""
    future = server.revision() + 10
    resp = await server.request("GET", f"{CM}?resourceVersion={future}&timeout=100ms")
    assert (resp.status, resp.headers.get("Retry-After"), resp.json()) == (
        504, None, kube.status(504, "Timeout", kube.DEADLINE_EXCEEDED, {}))
