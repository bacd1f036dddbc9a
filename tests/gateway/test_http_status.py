"""Writes through /status over HTTP: each patch content type and PUT keep the metadata the kind's status
strategy keeps (a Service's keeps all of it, a Deployment's resets labels), and never change the spec, as
kube-apiserver 1.28 answers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
SERVICE = "/api/v1/namespaces/default/services"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LOAD_BALANCER = {"ingress": [{"ip": "127.0.0.1"}]}
ADDED = {"added": "yes"}


@pytest.mark.parametrize(("content_type", "patch"), [
    pytest.param("application/merge-patch+json", {
        "metadata": {"labels": ADDED, "annotations": ADDED}, "spec": {"sessionAffinity": "ClientIP"},
        "status": {"loadBalancer": LOAD_BALANCER}}, id="merge"),
    pytest.param("application/strategic-merge-patch+json", {
        "metadata": {"labels": ADDED, "annotations": ADDED}, "spec": {"sessionAffinity": "ClientIP"},
        "status": {"loadBalancer": LOAD_BALANCER}}, id="strategic"),
    pytest.param("application/json-patch+json", [
        {"op": "add", "path": "/metadata/labels", "value": ADDED},
        {"op": "add", "path": "/metadata/annotations", "value": ADDED},
        {"op": "replace", "path": "/spec/sessionAffinity", "value": "ClientIP"},
        {"op": "replace", "path": "/status/loadBalancer", "value": LOAD_BALANCER}], id="json"),
    pytest.param("application/apply-patch+yaml", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": ADDED, "annotations": ADDED},
        "spec": {"sessionAffinity": "ClientIP"}, "status": {"loadBalancer": LOAD_BALANCER}}, id="apply"),
])
async def test_a_service_status_patch_keeps_labels_and_annotations(server: Server, content_type: str,
                                                                   patch: Any) -> None:
    created = await server.create(SERVICE, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    resp = await server.request("PATCH", f"{SERVICE}/web/status?fieldManager=lb", body=orjson.dumps(patch),
                                headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    written = resp.json()
    assert (written["metadata"]["labels"], written["metadata"]["annotations"]) == (ADDED, ADDED)
    assert written["spec"] == created["spec"]
    assert written["status"]["loadBalancer"] == LOAD_BALANCER
    (entry,) = [e for e in written["metadata"]["managedFields"] if e["manager"] == "lb"]
    assert entry["subresource"] == "status"
    owned = entry["fieldsV1"]["f:metadata"]
    assert "f:added" in owned["f:labels"] and "f:added" in owned["f:annotations"]
    got = await server.request("GET", f"{SERVICE}/web")
    assert got.json() == written


async def test_a_deployment_status_put_keeps_annotations_but_not_labels(server: Server) -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    created = await server.create(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}})
    body = {**created, "metadata": {**created["metadata"], "labels": {"app": "web", **ADDED}, "annotations": ADDED},
            "spec": {**created["spec"], "replicas": 5}, "status": {"observedGeneration": 1}}
    resp = await server.request("PUT", f"{DEPLOYMENTS}/web/status", json=body)
    assert resp.status == 200, resp.body
    written = resp.json()
    assert written["metadata"]["labels"] == {"app": "web"}  # deploymentStatusStrategy resets labels
    assert written["metadata"]["annotations"] == ADDED
    assert written["spec"] == created["spec"]
    assert written["status"]["observedGeneration"] == 1
