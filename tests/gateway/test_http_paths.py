"""Kubernetes REST paths onto the core: which URL reaches which object, and the 404s and 405s of
paths and methods kube-apiserver has no route for (installer.go registers the routes; go-restful
answers 404 for an unknown path and a generic 405 for a known path with another method)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server.machinery.schema import JsonSchema
from server.registry.resources import Resource
from server.registry.strategy import Strategy
from tests.gateway import kube
from tests.gateway.conftest import Server

Obj = dict[str, Any]
CM = "/api/v1/namespaces/default/configmaps"
WIDGETS_GROUP = "example.capstan.dev"


@pytest.mark.parametrize(("method", "path"), [  # paths outside the API: test_http_health.py
    ("GET", "/api/v1/foos"),
    ("GET", "/api/v1/namespaces/default/foos"),
    ("GET", "/api/v1/namespaces/default/foos/x"),
    ("GET", "/api/v2/namespaces"),
    ("GET", "/api/v2"),
    ("GET", "/apis/nothing.example.com"),
    ("GET", "/apis/nothing.example.com/v1"),
    ("GET", "/apis/nothing.example.com/v1/things"),
    ("GET", "/apis/nothing.example.com/v1/namespaces/default/things/x"),
    ("POST", "/apis/nothing.example.com/v1/namespaces/default/things"),
    ("GET", "/api/v1/configmaps/a"),  # a namespaced object needs its namespace
    ("DELETE", "/api/v1/configmaps/a"),
    ("PUT", "/api/v1/configmaps/a"),
    ("GET", "/api/v1/namespaces/default/namespaces"),  # a cluster-scoped resource under a namespace
    ("GET", "/api/v1/namespaces/default/configmaps/a/status"),  # configmaps have no subresources
    ("GET", "/api/v1/namespaces/default/configmaps/a/b/c"),
    ("GET", "/api/v1/namespaces/default/bogus"),  # a namespace's only subresources are status and finalize
])
async def test_unknown_paths_are_404(server: Server, method: str, path: str) -> None:
    """Under go-restful's web services (/api, a built-in group's /apis/{group}) its 404 Status, with empty
    details; a group nobody serves has no web service: Go's text 404 (kube-apiserver 1.28.7 answers so)."""
    resp = await server.request(method, path, json={} if method in ("POST", "PUT") else None)
    if path.startswith("/apis/nothing.example.com"):
        assert (resp.status, resp.headers["Content-Type"], resp.body) == (
            404, "text/plain; charset=utf-8", b"404 page not found\n")
        return
    assert (resp.status, resp.content_type, resp.json()) == (404, "application/json", kube.status(
        404, "NotFound", "the server could not find the requested resource", {}))


@pytest.mark.parametrize(("method", "path"), [
    ("POST", f"{CM}/a"),  # POST creates in a collection only
    ("PUT", CM),  # PUT replaces one object only
    ("PUT", "/api/v1/namespaces"),
    ("POST", "/api/v1/configmaps"),  # across namespaces kube-apiserver only lists and watches
    ("PUT", "/api/v1/configmaps"),
    ("DELETE", "/api/v1/configmaps"),
    ("DELETE", "/api/v1/namespaces"),  # namespaces have no deletecollection
    ("GET", "/api/v1/namespaces/default/finalize"),  # finalize takes only PUT
    ("POST", "/api/v1/namespaces/default/finalize"),
    ("DELETE", "/api/v1/namespaces/default/finalize"),
    ("DELETE", "/api/v1/namespaces/default/status"),  # status takes get, patch and update
    ("POST", "/api/v1/namespaces/default/status"),
])
async def test_verbs_a_path_lacks_are_405(server: Server, method: str, path: str) -> None:
    revision = server.revision()
    resp = await server.request(method, path, json={"metadata": {"name": "default"}} if method != "GET" else None)
    assert (resp.status, resp.content_type, resp.json()) == (405, "application/json", kube.method_not_allowed())
    assert server.revision() == revision


@pytest.mark.parametrize("namespace", ["default", "kube-system"])
async def test_namespaced_object_paths(server: Server, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await server.create(base, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    stamps = kube.stamped(created)
    expected = kube.config_map("a", server.revision(), stamps, namespace=namespace, data={"k": "v"})
    assert created == expected
    got = await server.request("GET", f"{base}/a")
    assert (got.status, got.content_type, got.json()) == (200, "application/json", expected)
    listed = await server.request("GET", base)
    assert (listed.status, listed.json()) == (200, {
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": str(server.revision())},
        "items": [kube.config_map("a", server.revision(), stamps, namespace=namespace, typed=False, data={"k": "v"})],
    })
    other = "kube-public"
    elsewhere = await server.request("GET", f"/api/v1/namespaces/{other}/configmaps/a")
    assert (elsewhere.status, elsewhere.json()) == (404, kube.not_found("configmaps", "a"))


async def test_all_namespaces_list(server: Server) -> None:
    """GET /api/v1/configmaps lists every namespace's objects, ordered by namespace then name."""
    made = [
        await server.create("/api/v1/namespaces/kube-system/configmaps", {"metadata": {"name": "b"}}),
        await server.create(f"{CM}", {"metadata": {"name": "z"}}),
        await server.create(f"{CM}", {"metadata": {"name": "a"}}),
    ]
    revision = server.revision()
    resp = await server.request("GET", "/api/v1/configmaps")
    items = sorted(
        (kube.config_map(m["metadata"]["name"], m["metadata"]["resourceVersion"], kube.stamped(m),
                         namespace=m["metadata"]["namespace"], typed=False) for m in made),
        key=lambda item: (item["metadata"]["namespace"], item["metadata"]["name"]),
    )
    assert (resp.status, resp.json()) == (200, {
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": str(revision)}, "items": items,
    })


def namespace_doc(name: str, rv: int | str, stamps: Obj, *, phase: str = "Active", **meta: Any) -> Obj:
    return {
        "kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": name, "uid": stamps["uid"], "resourceVersion": str(rv),
                     "creationTimestamp": stamps["creationTimestamp"], **kube.managed(stamps), **meta,
                     "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": phase},
    }


async def test_cluster_scoped_object_and_subresource_paths(server: Server) -> None:
    created = await server.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
    stamps = kube.stamped(created)
    assert created == namespace_doc("team", server.revision(), stamps)
    for path in ("/api/v1/namespaces/team", "/api/v1/namespaces/team/status"):
        got = await server.request("GET", path)
        assert (got.status, got.json()) == (200, namespace_doc("team", server.revision(), stamps)), path
    listed = await server.request("GET", "/api/v1/namespaces")
    names = [item["metadata"]["name"] for item in listed.json()["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system", "team"]
    assert {"kind", "apiVersion"}.isdisjoint(listed.json()["items"][0])

    # PUT /status leaves spec alone (metadata changes are kept: test_http_status.py); PUT /finalize changes
    # spec.finalizers only.
    body = {**namespace_doc("team", server.revision(), stamps), "spec": {}}
    status_put = await server.request("PUT", "/api/v1/namespaces/team/status", json=body)
    stamps = kube.stamped(status_put.json())
    assert (status_put.status, status_put.json()) == (200, namespace_doc("team", server.revision(), stamps))
    finalize = await server.request("PUT", "/api/v1/namespaces/team/finalize", json={
        "metadata": {"name": "team"}, "spec": {"finalizers": []}})
    stamps = kube.stamped(finalize.json())
    expected = {**namespace_doc("team", server.revision(), stamps), "spec": {}}
    assert (finalize.status, finalize.json()) == (200, expected)


async def test_head_of_a_built_in_object_is_go_restfuls_405(server: Server) -> None:
    """kube-apiserver registers no HEAD routes (test_http_restful.py)."""
    head = await server.request("HEAD", "/api/v1/namespaces/default")
    assert (head.status, head.content_type, head.body) == (405, "application/json", b"")


@pytest.mark.parametrize("query", ["watch=true", "watch=1", "watch"])
async def test_watch_query_on_one_object_is_a_get(server: Server, query: str) -> None:
    """kube-apiserver's RequestInfoFactory turns ?watch into a watch for collections only: a GET of
    one object with ?watch=true is a plain get (one object watches by fieldSelector or /watch/)."""
    created = await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request("GET", f"{CM}/a?{query}&timeoutSeconds=1")
    assert (resp.status, resp.headers.get("Transfer-Encoding"), resp.json()) == (200, None, created)


class CreatesOnUpdate(Strategy):
    """kube's default strategy, except that a PUT to a missing object creates it (AllowCreateOnUpdate)."""

    def allow_create_on_update(self) -> bool:
        return True


@pytest.fixture
async def widgets(server: Server) -> Resource:
    """A kind in a named API group with no protobuf schema (as custom resources are) that creates on
    update and answers DELETE with the deleted object, registered before the gateway's first request; returned
    once its group version's APIService is Available (the APIService controller writes it as the registry
    changes), so no controller writes while the test counts revisions."""
    widget = Resource(group=WIDGETS_GROUP, version="v1", resource="widgets", kind="Widget", singular="widget",
                      namespaced=True, schema=JsonSchema(), strategy=CreatesOnUpdate(returns_deleted_object=True))
    server.core.core.registry.add(widget)
    for _ in range(500):
        found = await server.request("GET", f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{WIDGETS_GROUP}")
        conditions = found.json().get("status", {}).get("conditions") or [] if found.status == 200 else []
        if any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
            return widget
        await asyncio.sleep(0.01)
    raise AssertionError(f"no Available APIService v1.{WIDGETS_GROUP}")


def widget_doc(name: str, rv: int | str, stamps: Obj, **fields: Any) -> Obj:
    return {"apiVersion": f"{WIDGETS_GROUP}/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "uid": stamps["uid"], "resourceVersion": str(rv),
                         "creationTimestamp": stamps["creationTimestamp"], **kube.managed(stamps)}, **fields}


async def test_named_group_paths(server: Server, widgets: Resource) -> None:
    base = f"/apis/{WIDGETS_GROUP}/v1/namespaces/default/widgets"
    created = await server.create(base, {"apiVersion": f"{WIDGETS_GROUP}/v1", "kind": "Widget",
                                         "metadata": {"name": "w"}, "spec": {"size": 1}})
    stamps = kube.stamped(created)
    assert created == widget_doc("w", server.revision(), stamps, spec={"size": 1})
    got = await server.request("GET", f"{base}/w")
    assert (got.status, got.json()) == (200, created)
    across = await server.request("GET", f"/apis/{WIDGETS_GROUP}/v1/widgets")
    # Items of a kind without a schema keep their kind and apiVersion, as custom resources' do.
    assert (across.status, across.json()) == (200, {
        "kind": "WidgetList", "apiVersion": f"{WIDGETS_GROUP}/v1",
        "metadata": {"resourceVersion": str(server.revision())}, "items": [created]})

    # PUT to a missing object of a kind that creates on update: 201; then 200 for a real update.
    put_new = await server.request("PUT", f"{base}/n", json={
        "apiVersion": f"{WIDGETS_GROUP}/v1", "kind": "Widget", "metadata": {"name": "n"}})
    new_stamps = kube.stamped(put_new.json())
    assert (put_new.status, put_new.json()) == (201, widget_doc("n", server.revision(), new_stamps))
    put_again = await server.request("PUT", f"{base}/n", json={
        "apiVersion": f"{WIDGETS_GROUP}/v1", "kind": "Widget", "metadata": {"name": "n"}, "spec": {"size": 2}})
    new_stamps = kube.stamped(put_again.json())
    assert (put_again.status, put_again.json()) == (
        200, widget_doc("n", server.revision(), new_stamps, spec={"size": 2}))

    # DELETE of a kind that returns the deleted object: 200 with the object, at its deletion's revision.
    deleted = await server.request("DELETE", f"{base}/w")
    at_deletion = {**created, "metadata": {**created["metadata"], "resourceVersion": str(server.revision())}}
    assert (deleted.status, deleted.json()) == (200, at_deletion)
    gone = await server.request("GET", f"{base}/w")
    assert (gone.status, gone.json()) == (404, kube.not_found("widgets", "w", WIDGETS_GROUP))


async def test_named_group_kind_falls_back_to_json_for_protobuf_clients(server: Server, widgets: Resource) -> None:
    """client-go asks for protobuf then JSON; a kind without a protobuf schema answers JSON (as for
    custom resources), and a protobuf body for it is 415 listing JSON and YAML only."""
    base = f"/apis/{WIDGETS_GROUP}/v1/namespaces/default/widgets"
    await server.create(base, {"apiVersion": f"{WIDGETS_GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}})
    resp = await server.request("GET", f"{base}/w", headers={
        "Accept": "application/vnd.kubernetes.protobuf, application/json"})
    assert (resp.status, resp.content_type, resp.json()["kind"]) == (200, "application/json", "Widget")
    only = await server.request("GET", f"{base}/w", headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert (only.status, only.json()) == (406, kube.status(406, "NotAcceptable", kube.NOT_ACCEPTABLE))
    body = await server.request("POST", base, body=b"k8s\x00", headers={
        "Content-Type": "application/vnd.kubernetes.protobuf"})
    assert (body.status, body.json()) == (415, kube.status(415, "UnsupportedMediaType", (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml")))
