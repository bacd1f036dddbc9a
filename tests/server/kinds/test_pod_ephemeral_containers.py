"""pods/ephemeralcontainers through a real core over gRPC, as kube-apiserver 1.28 serves it: GET answers the Pod,
an update or strategic merge patch adds containers (defaulted as any container) and changes nothing else of the
Pod, and ValidatePodEphemeralContainersUpdate's causes (exact Status) refuse the rest.

Expected answers are written from kube-apiserver's source: pkg/registry/core/pod/strategy.go
(podEphemeralContainersStrategy), pkg/apis/core/validation/validation.go (ValidatePodCreate,
validateEphemeralContainers, allowedEphemeralContainerFields, ValidatePodEphemeralContainersUpdate).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

NS = "default"
EPHEMERAL = path("pods", NS, "p", subresource="ephemeralcontainers")
FORBIDDEN = "cannot be set for an Ephemeral Container"


async def _pod(client: Client, node: str = "", **metadata: Any) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "nginx"}], "initContainers": [{"name": "init",
                                                                                      "image": "busybox"}],
                 "volumes": [{"name": "data"}]}
    if node:
        spec["nodeName"] = node
    return await client.create(path("pods", NS), {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **metadata}, "spec": spec})


async def _add(client: Client, pod: Obj, *containers: Obj) -> tuple[Obj, bool]:
    sent = copy.deepcopy(pod)
    sent["spec"].setdefault("ephemeralContainers", []).extend(containers)
    return await client.update(EPHEMERAL, sent)


async def _patch(client: Client, document: Obj) -> Obj:
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=EPHEMERAL, type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE, patch=orjson.dumps(document)))
    return orjson.loads(response.object.data)  # type: ignore[no-any-return]


async def test_discovery_names_the_subresource_as_kube_does(client: Client) -> None:
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    pods = next(r for r in discovered.resources if r.resource == "pods" and not r.group)
    sub = next(s for s in pods.subresources if s.name == "ephemeralcontainers")
    assert (sub.kind, sorted(sub.verbs)) == ("Pod", ["get", "patch", "update"])


async def test_get_answers_the_pod(client: Client) -> None:
    pod = await _pod(client)
    assert await client.get(EPHEMERAL) == pod


async def test_an_update_adds_a_defaulted_container_and_changes_nothing_else(client: Client) -> None:
    pod = await _pod(client, labels={"a": "b"})
    sent = copy.deepcopy(pod)
    sent["metadata"]["labels"] = {"changed": "yes"}
    sent["spec"]["containers"][0]["image"] = "nginx:1.27"
    sent["spec"]["activeDeadlineSeconds"] = 5
    sent["status"] = {"phase": "Running"}
    sent["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox:1.36", "targetContainerName": "app",
                                            "stdin": True, "tty": True}]
    updated, created = await client.update(EPHEMERAL, sent)
    assert created is False
    assert updated["spec"]["ephemeralContainers"] == [{
        "name": "dbg", "image": "busybox:1.36", "targetContainerName": "app", "stdin": True, "tty": True,
        "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"}]
    assert {k: v for k, v in updated["spec"].items() if k != "ephemeralContainers"} == pod["spec"]
    assert (updated["status"], updated["metadata"]["labels"]) == (pod["status"], {"a": "b"})
    assert updated["metadata"]["resourceVersion"] != pod["metadata"]["resourceVersion"]
    assert await client.get(path("pods", NS, "p")) == updated


async def test_a_strategic_merge_patch_adds_containers_as_kubectl_debug_sends_it(client: Client) -> None:
    await _pod(client)
    first = await _patch(client, {"spec": {"ephemeralContainers": [{"name": "one", "image": "busybox"}]}})
    second = await _patch(client, {"spec": {"ephemeralContainers": [{"name": "two", "image": "busybox"}]}})
    assert [c["name"] for c in first["spec"]["ephemeralContainers"]] == ["one"]
    # without $setElementOrder a strategic merge puts the patch's new items first: kube matches by name
    assert [(c["name"], c["imagePullPolicy"]) for c in second["spec"]["ephemeralContainers"]] == [
        ("two", "Always"), ("one", "Always")]
    unchanged = await _patch(client, {"spec": {"containers": [{"name": "app", "image": "other"}]}})
    assert unchanged["spec"] == second["spec"]


async def test_a_pod_is_not_created_with_ephemeral_containers(client: Client) -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "app", "image": "nginx"}],
                    "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}
    failed = await refused(client.create(path("pods", NS), obj))
    assert failed.status == kube.invalid("Pod", "p", [
        kube.field_forbidden("spec.ephemeralContainers", "cannot be set on create")])


def _duplicate(field: str, value: str) -> Obj:
    return kube.cause("FieldValueDuplicate", f"Duplicate value: {kube.go_quote(value)}", field)


def _not_found(field: str, value: str) -> Obj:
    return kube.cause("FieldValueNotFound", f"Not found: {kube.go_quote(value)}", field)


E0 = "spec.ephemeralContainers[0]"
# (id, the ephemeral containers added, the causes of the 422)
VALIDATION: list[tuple[str, list[Obj], list[Obj]]] = [
    ("ports", [{"name": "dbg", "image": "busybox", "ports": [{"containerPort": 80}]}],
     [kube.field_forbidden(f"{E0}.ports", FORBIDDEN)]),
    ("probes and lifecycle", [{"name": "dbg", "image": "busybox",
                               "livenessProbe": {"exec": {"command": ["true"]}},
                               "readinessProbe": {"exec": {"command": ["true"]}},
                               "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}}],
     [kube.field_forbidden(f"{E0}.livenessProbe", FORBIDDEN), kube.field_forbidden(f"{E0}.readinessProbe", FORBIDDEN),
      kube.field_forbidden(f"{E0}.lifecycle", FORBIDDEN)]),
    ("resources", [{"name": "dbg", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}],
     [kube.field_forbidden(f"{E0}.resources", FORBIDDEN)]),
    ("subPath", [{"name": "dbg", "image": "busybox",
                  "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "x"}]}],
     [kube.field_forbidden(f"{E0}.volumeMounts[0].subPath", FORBIDDEN)]),
    ("a regular container's name", [{"name": "app", "image": "busybox"}], [_duplicate(f"{E0}.name", "app")]),
    ("an init container's name", [{"name": "init", "image": "busybox"}], [_duplicate(f"{E0}.name", "init")]),
    ("two of one name", [{"name": "dbg", "image": "busybox"}, {"name": "dbg", "image": "busybox"}],
     [_duplicate("spec.ephemeralContainers[1].name", "dbg")]),
    ("a target that is not there", [{"name": "dbg", "image": "busybox", "targetContainerName": "nope"}],
     [_not_found(f"{E0}.targetContainerName", "nope")]),
    ("no image", [{"name": "dbg"}], [kube.cause("FieldValueRequired", "Required value", f"{E0}.image")]),
]  # fmt: skip


@pytest.mark.parametrize(("containers", "causes"), [v[1:] for v in VALIDATION], ids=[v[0] for v in VALIDATION])
async def test_validation(client: Client, containers: list[Obj], causes: list[Obj]) -> None:
    pod = await _pod(client)
    before = client.revision()
    failed = await refused(_add(client, pod, *containers))
    assert failed.status == kube.invalid("Pod", "p", causes)
    assert client.revision() == before


async def test_existing_containers_may_not_be_changed_or_removed(client: Client) -> None:
    pod = await _pod(client)
    added, _ = await _add(client, pod, {"name": "dbg", "image": "busybox"})
    changed = copy.deepcopy(added)
    changed["spec"]["ephemeralContainers"][0]["image"] = "alpine"
    failed = await refused(client.update(EPHEMERAL, changed))
    assert failed.status == kube.invalid("Pod", "p", [kube.field_forbidden(
        "spec.ephemeralContainers", 'existing ephemeral containers "dbg" may not be changed\n  image\n')])
    removed = copy.deepcopy(added)
    removed["spec"]["ephemeralContainers"] = []
    failed = await refused(client.update(EPHEMERAL, removed))
    assert failed.status == kube.invalid("Pod", "p", [kube.field_forbidden(
        "spec.ephemeralContainers", 'existing ephemeral containers "dbg" may not be removed\n')])


async def test_a_pod_update_may_not_add_them(client: Client) -> None:
    """Only the subresource adds them: a PUT of the Pod itself changing spec.ephemeralContainers is ValidatePodUpdate's
    Forbidden on spec."""
    pod = await _pod(client)
    sent = copy.deepcopy(pod)
    sent["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox"}]
    failed = await refused(client.update(path("pods", NS, "p"), sent))
    causes = failed.status["details"]["causes"]
    assert [(c["reason"], c["field"]) for c in causes] == [("FieldValueForbidden", "spec")]
    assert causes[0]["message"].startswith("Forbidden: pod updates may not change fields other than")


async def test_a_static_pod_takes_none(client: Client) -> None:
    pod = await _pod(client, "node-1", annotations={"kubernetes.io/config.mirror": "x"})
    failed = await refused(_add(client, pod, {"name": "dbg", "image": "busybox"}))
    # field.NewPath(""): the cause names no field, the message an empty one
    assert failed.status == kube.failure(422, "Invalid", 'Pod "p" is invalid: : Forbidden: static pods do not support '
                                         "ephemeral containers", kube.details(name="p", kind="Pod", causes=[
                                             kube.cause("FieldValueForbidden",
                                                        "Forbidden: static pods do not support ephemeral containers")]))
