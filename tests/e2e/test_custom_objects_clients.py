"""Custom resources through the Python clients operators use, against a real `capstan serve`: the official
client's ApiextensionsV1Api and CustomObjectsApi, its dynamic client, and lightkube's generic resources.

Each test installs its own CRD (in its own group) through the client under test and does CRUD and a watch
on one of its objects.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from lightkube import Client as LightClient
from lightkube import KubeConfig
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.types import PatchType

from tests.e2e.conftest import Capstan, Obj

TIMEOUT = 10.0


def crd(group: str, plural: str = "gizmos", kind: str = "Gizmo") -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "size": {"type": "integer", "default": 1},
                                       "color": {"type": "string"}}},
                                   "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                               }}}}]},
    }


@pytest.fixture
def group(api: client.ApiClient) -> Iterator[str]:
    """A fresh API group; the test's CRD in it is deleted afterwards (the session's server is shared)."""
    name = f"g{uuid.uuid4().hex[:8]}.example.com"
    yield name
    try:
        client.ApiextensionsV1Api(api).delete_custom_resource_definition(f"gizmos.{name}", _request_timeout=TIMEOUT)
    except ApiException as err:
        if err.status != 404:
            raise


def wait_established(ext: Any, name: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        got = ext.read_custom_resource_definition(name, _request_timeout=TIMEOUT)
        if any(c.type == "Established" and c.status == "True" for c in got.status.conditions or []):
            return
        assert time.monotonic() < deadline, got.status
        time.sleep(0.05)


def collect(stream: Iterator[Any], count: int) -> list[Any]:
    """The first `count` events of a watch stream read on a thread (so a hung stream fails, not hangs)."""
    seen: list[Any] = []
    done = threading.Event()

    def read() -> None:
        for event in stream:
            seen.append(event)
            if len(seen) >= count:
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(TIMEOUT), f"only {seen}"
    return seen


def test_custom_objects_api(api: client.ApiClient, namespace: str, group: str) -> None:
    ext: Any = client.ApiextensionsV1Api(api)  # it takes a dict body; the stubs want a model
    created_crd = ext.create_custom_resource_definition(crd(group), _request_timeout=TIMEOUT)
    assert created_crd.spec.names.list_kind == "GizmoList"
    wait_established(ext, f"gizmos.{group}")
    custom: Any = client.CustomObjectsApi(api)  # its answers are plain dicts, typed as object
    args = (group, "v1", namespace, "gizmos")

    start = custom.list_namespaced_custom_object(*args, _request_timeout=TIMEOUT)["metadata"]["resourceVersion"]
    w = watch.Watch()  # type: ignore[no-untyped-call]
    stream = w.stream(  # type: ignore[no-untyped-call]
        custom.list_namespaced_custom_object, *args, resource_version=start, timeout_seconds=5)
    body = {"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"color": "red"}}
    created = custom.create_namespaced_custom_object(*args, body, _request_timeout=TIMEOUT)
    assert created["spec"] == {"color": "red", "size": 1}
    got = custom.get_namespaced_custom_object(*args, "g1", _request_timeout=TIMEOUT)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    patched = custom.patch_namespaced_custom_object(*args, "g1", {"spec": {"size": 3}}, _request_timeout=TIMEOUT)
    assert patched["spec"] == {"color": "red", "size": 3}
    patched["spec"]["color"] = "blue"
    replaced = custom.replace_namespaced_custom_object(*args, "g1", patched, _request_timeout=TIMEOUT)
    assert replaced["spec"]["color"] == "blue"
    status = custom.patch_namespaced_custom_object_status(*args, "g1", {"status": {"phase": "Ready"}},
                                                           _request_timeout=TIMEOUT)
    assert status["status"] == {"phase": "Ready"}
    listed = custom.list_namespaced_custom_object(*args, _request_timeout=TIMEOUT)
    assert (listed["kind"], [i["metadata"]["name"] for i in listed["items"]]) == ("GizmoList", ["g1"])
    custom.delete_namespaced_custom_object(*args, "g1", _request_timeout=TIMEOUT)
    events = collect(stream, 5)
    w.stop()  # type: ignore[no-untyped-call]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    assert events[0]["object"]["kind"] == "Gizmo"
    with pytest.raises(ApiException) as missing:
        custom.get_namespaced_custom_object(*args, "g1", _request_timeout=TIMEOUT)
    assert missing.value.status == 404


def test_dynamic_client(api: client.ApiClient, namespace: str, group: str, tmp_path: Any) -> None:
    dynamic = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))  # type: ignore[no-untyped-call]
    crds = dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body=crd(group))
    wait_established(client.ApiextensionsV1Api(api), f"gizmos.{group}")
    gizmos = dynamic.resources.get(api_version=f"{group}/v1", kind="Gizmo")
    assert (gizmos.name, gizmos.namespaced) == ("gizmos", True)
    body = {"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "d1"}, "spec": {"size": 2}}
    created = gizmos.create(body=body, namespace=namespace)
    assert created.spec.size == 2
    listed = gizmos.get(namespace=namespace)
    assert (listed.kind, [i.metadata.name for i in listed.items]) == ("GizmoList", ["d1"])
    gizmos.patch(name="d1", namespace=namespace, body={"spec": {"color": "green"}},
                 content_type="application/merge-patch+json")
    events = collect(gizmos.watch(namespace=namespace, timeout=5), 1)
    assert (events[0]["type"], events[0]["object"].spec.color) == ("ADDED", "green")
    gizmos.delete(name="d1", namespace=namespace)
    assert gizmos.get(namespace=namespace).items == []


def test_lightkube_generic_resources(capstan: Capstan, namespace: str, group: str) -> None:
    light: Any = LightClient(config=KubeConfig.from_file(str(capstan.kubeconfig)), timeout=httpx2.Timeout(TIMEOUT))
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    light.create(CustomResourceDefinition.from_dict(crd(group)))
    deadline = time.monotonic() + TIMEOUT
    while not any(c.type == "Established" and c.status == "True"
                  for c in light.get(CustomResourceDefinition, f"gizmos.{group}").status.conditions or []):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    gizmo = create_namespaced_resource(group, "v1", "Gizmo", "gizmos")
    created = light.create(gizmo(metadata=ObjectMeta(name="l1"), spec={"color": "red"}), namespace=namespace)
    assert created.spec == {"color": "red", "size": 1}
    got = light.get(gizmo, "l1", namespace=namespace)
    assert got.metadata.uid == created.metadata.uid
    patched = light.patch(gizmo, "l1", {"spec": {"size": 4}}, namespace=namespace, patch_type=PatchType.MERGE)
    assert patched.spec["size"] == 4
    applied = light.apply(gizmo(metadata=ObjectMeta(name="l1"), spec={"size": 5}), namespace=namespace,
                          field_manager="lightkube", force=True)
    assert applied.spec["size"] == 5
    status = light.patch(gizmo.Status, "l1", {"status": {"phase": "Ready"}}, namespace=namespace,
                         patch_type=PatchType.MERGE)
    assert status.status == {"phase": "Ready"}
    assert [g.metadata.name for g in light.list(gizmo, namespace=namespace)] == ["l1"]
    events = collect(iter(light.watch(gizmo, namespace=namespace, server_timeout=5)), 1)
    assert events[0][0] == "ADDED" and events[0][1].metadata.name == "l1"
    light.delete(gizmo, "l1", namespace=namespace)
    assert list(light.list(gizmo, namespace=namespace)) == []
