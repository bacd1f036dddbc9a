"""What answers before a handler runs, as kube-apiserver 1.28 routes a request: go-restful's web services for the
built-in APIs (gateway/restful.py), the handlers of their own for /, /apis, /apis/{group} and custom resources,
and Go's text 404 for everything else. Every expectation was checked beside kube-apiserver 1.28.7."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.gateway.conftest import Server
from tests.gateway.test_http_paths import WIDGETS_GROUP, widgets  # noqa: F401  (a fixture)

CM = "/api/v1/namespaces/default/configmaps"
WIDGETS = f"/apis/{WIDGETS_GROUP}/v1/namespaces/default/widgets"
TEXT_404 = (404, "text/plain; charset=utf-8", b"404 page not found\n")
SERIALIZER = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
STREAMS = "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
Answer = tuple[int, str, str, dict[str, Any]]
NOT_FOUND: Answer = (404, "NotFound", "the server could not find the requested resource", {})
NOT_ALLOWED: Answer = (405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def not_acceptable(available: str) -> tuple[int, str, str, dict[str, Any]]:
    return 406, "NotAcceptable", f"406: Not Acceptable\n\nAvailable representations: {available}", {}


@pytest.mark.parametrize(("method", "path", "headers", "body", "answer"), [
    # go-restful's 404 under its web services: /api, and a built-in group's /apis/{group}
    ("GET", "/api/v1/namespaces/default/bogus", {}, None, NOT_FOUND),
    ("GET", "/api/v2/namespaces", {}, None, NOT_FOUND),
    ("GET", "/apis/apps/v1/namespaces/default/bogus", {}, None, NOT_FOUND),
    ("GET", "/apis/apps/v9/deployments", {}, None, NOT_FOUND),
    ("GET", "/apis/apps/v9", {}, None, NOT_FOUND),
    ("GET", f"{CM}/a/status", {}, None, NOT_FOUND),  # no such subresource
    ("GET", f"{CM}/a/b/c", {}, None, NOT_FOUND),
    ("GET", "/version/x", {}, None, NOT_FOUND),
    # a method no route takes on a path that names a resource: 405; on one that names none: 404
    ("OPTIONS", CM, {}, None, NOT_ALLOWED),
    ("TRACE", f"{CM}/a", {}, None, NOT_ALLOWED),
    ("OPTIONS", "/api/v1/namespaces/default/bogus", {}, None, NOT_FOUND),
    ("OPTIONS", f"{CM}/a/status", {}, None, NOT_FOUND),
    ("OPTIONS", "/api/v1", {}, None, NOT_ALLOWED),
    ("PUT", "/apis/apps/v1", {}, None, NOT_ALLOWED),
    # routes produce the serializer's types (a list's route the watch streams too); Accept is read as go-restful
    # reads it: types without parameters, compared exactly, only */* a wildcard
    ("GET", f"{CM}/a", {"Accept": "application/xml"}, None, not_acceptable(SERIALIZER)),
    ("GET", f"{CM}/a", {"Accept": "application/*"}, None, not_acceptable(SERIALIZER)),
    ("GET", f"{CM}/a", {"Accept": "Application/JSON"}, None, not_acceptable(SERIALIZER)),
    ("GET", f"{CM}/a", {"Accept": "APPLICATION/YAML"}, None, not_acceptable(SERIALIZER)),
    ("GET", f"{CM}/a", {"Accept": "*"}, None, not_acceptable(SERIALIZER)),
    ("GET", CM, {"Accept": "text/html"}, None, not_acceptable(f"{SERIALIZER}, {STREAMS}")),
    ("DELETE", f"{CM}/a", {"Accept": "text/plain"}, None, not_acceptable(SERIALIZER)),
    ("GET", "/api", {"Accept": "application/xml"}, None, not_acceptable(SERIALIZER)),
    ("GET", "/apis/apps/v1", {"Accept": "text/html"}, None, not_acceptable(SERIALIZER)),
    # a PATCH route consumes the patch types; any other type with a body is go-restful's bare 415
    ("PATCH", f"{CM}/a", {"Content-Type": "text/plain"}, b"{}",
     (415, "UnsupportedMediaType", "415: Unsupported Media Type", {})),
    ("PATCH", f"{CM}/a", {"Content-Type": "application/json"}, b"{}",
     (415, "UnsupportedMediaType", "415: Unsupported Media Type", {})),
])
async def test_go_restful_refuses_before_the_handler(
    server: Server, method: str, path: str, headers: dict[str, str], body: bytes | None,
    answer: tuple[int, str, str, dict[str, Any]],
) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    before = server.revision()
    resp = await server.request(method, path, headers=headers, body=body)
    doc = resp.json()
    assert (resp.status, doc["reason"], doc["message"], doc["details"]) == answer
    assert server.revision() == before


async def test_a_status_no_handler_wrote_is_in_what_the_accept_negotiates(server: Server) -> None:
    """ErrorNegotiated: the Accept's type where kube's negotiation takes it (compact JSON for application/*),
    indented JSON where it takes nothing."""
    await server.create(CM, {"metadata": {"name": "a"}})
    wildcard = await server.request("GET", f"{CM}/a", headers={"Accept": "application/*"})
    assert (wildcard.status, wildcard.body[:1], wildcard.body.count(b"\n")) == (406, b"{", 1)
    other = await server.request("GET", f"{CM}/a", headers={"Accept": "application/xml"})
    assert (other.status, other.body[:3]) == (406, b'{\n ')


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/apis/nope.io/v1/things"),
    ("GET", "/apis/nope.io/v1"),
    ("GET", "/apis/nope.io"),
    ("OPTIONS", "/apis/nope.io/v1/things"),
    ("GET", "/nope"),
])
async def test_outside_go_restful_nothing_is_gos_text_404(server: Server, method: str, path: str) -> None:
    resp = await server.request(method, path)
    assert (resp.status, resp.headers["Content-Type"], resp.body) == TEXT_404


@pytest.mark.parametrize(("method", "path", "code"), [
    ("HEAD", CM, 405),  # kube registers no HEAD routes
    ("HEAD", f"{CM}/a", 405),
    ("HEAD", "/api", 405),
    ("HEAD", "/api/v1", 405),
    ("HEAD", "/apis/apps/v1", 405),
    ("HEAD", "/apis", 200),  # /apis and /apis/{group} are handlers of their own, for every method
    ("HEAD", "/apis/apps", 200),
    ("HEAD", "/healthz", 200),
])
async def test_head(server: Server, method: str, path: str, code: int) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request(method, path)
    assert (resp.status, resp.body) == (code, b"")


@pytest.mark.parametrize(("method", "path", "kind"), [
    ("OPTIONS", "/apis", "APIGroupList"),
    ("POST", "/apis", "APIGroupList"),
    ("PUT", "/apis/apps", "APIGroup"),
])
async def test_group_discovery_answers_every_method(server: Server, method: str, path: str, kind: str) -> None:
    resp = await server.request(method, path)
    assert (resp.status, resp.json()["kind"]) == (200, kind)


@pytest.mark.parametrize("method", ["GET", "OPTIONS", "POST"])
async def test_openapi_answers_every_method_and_an_unknown_document_is_a_bare_404(
    server: Server, method: str,
) -> None:
    swagger = await server.request(method, "/openapi/v2")
    assert (swagger.status, swagger.json()["swagger"]) == (200, "2.0")
    missing = await server.request(method, "/openapi/v3/apis/nope/v1")
    assert (missing.status, missing.body) == (404, b"")


@pytest.mark.parametrize("path", ["/", "/index.html"])
async def test_the_index_lists_every_path(server: Server, path: str) -> None:
    """kube's index: {"paths": [...]} sorted, indented, no newline at the end; discovery, health checks and
    the other fixed paths."""
    resp = await server.request("GET", path)
    assert (resp.status, resp.content_type) == (200, "application/json")
    assert resp.body.startswith(b'{\n  "paths": [\n    "/') and resp.body.endswith(b"\n  ]\n}")
    paths = orjson.loads(resp.body)["paths"]
    assert paths == sorted(paths)
    assert {"/api", "/api/v1", "/apis", "/apis/", "/apis/apps", "/apis/apps/v1", "/healthz", "/healthz/etcd",
            "/livez/ping", "/readyz/shutdown", "/metrics", "/openapi/v2", "/openapi/v3", "/version"} <= set(paths)
    assert "/" not in paths and "/index.html" not in paths


@pytest.mark.usefixtures("widgets")
@pytest.mark.parametrize(("method", "path", "headers", "answer"), [
    # the custom resource handler: an unknown subresource is the object's 404, a method it has no verb for its
    # MethodNotSupported (of the verb "" RequestInfo gives such a method), Accept and patch types its own
    ("GET", f"{WIDGETS}/w/status", {}, (404, "NotFound", f'widgets.{WIDGETS_GROUP} "w" not found',
                                        {"name": "w", "group": WIDGETS_GROUP, "kind": "widgets"})),
    ("OPTIONS", WIDGETS, {}, (405, "MethodNotAllowed",
                              f' is not supported on resources of kind "widgets.{WIDGETS_GROUP}"',
                              {"group": WIDGETS_GROUP, "kind": "widgets"})),
    ("GET", WIDGETS, {"Accept": "application/xml"}, (406, "NotAcceptable",
                                                      "only the following media types are accepted: application/json, "
                                                      "application/yaml, application/vnd.kubernetes.protobuf", None)),
])
async def test_custom_resources_are_not_go_restfuls(
    server: Server, method: str, path: str, headers: dict[str, str], answer: tuple[int, str, str, Any],
) -> None:
    resp = await server.request(method, path, headers=headers)
    doc = resp.json()
    assert (resp.status, doc["reason"], doc["message"], doc.get("details")) == answer


@pytest.mark.usefixtures("widgets")
@pytest.mark.parametrize("path", [f"/apis/{WIDGETS_GROUP}/v1/namespaces/default/gadgets",
                                  f"/apis/{WIDGETS_GROUP}/v2/namespaces/default/widgets", f"/apis/{WIDGETS_GROUP}/v2"])
async def test_a_custom_groups_unknown_paths_are_gos_text_404(server: Server, path: str) -> None:
    resp = await server.request("GET", path)
    assert (resp.status, resp.headers["Content-Type"], resp.body) == TEXT_404


@pytest.mark.usefixtures("widgets")
async def test_head_of_a_custom_resource_is_a_get(server: Server) -> None:
    resp = await server.request("HEAD", WIDGETS)
    assert (resp.status, resp.body) == (200, b"")
