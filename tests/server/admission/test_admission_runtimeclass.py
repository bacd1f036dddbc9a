"""RuntimeClass admission: a new Pod takes its RuntimeClass's overhead and scheduling, and kube's 403s refuse a
class that does not exist, an overhead that is not the class's, and a nodeSelector that conflicts with it."""

from __future__ import annotations

from typing import Any

import pytest

from server.admission.runtimeclass import merge_tolerations
from tests.server.client import Client, Obj, path, refused

NS = "default"
CLASSES = path("runtimeclasses", group="node.k8s.io")
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def runtime_class(name: str, **more: Any) -> Obj:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": "runc",
            **more}


def pod(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


FIXED = {"overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}}}
SCHEDULED = {"scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                            "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


@pytest.mark.parametrize(("classes", "spec", "expected"), [
    # no class named: nothing of a class's, and no overhead
    ([runtime_class("kata", **FIXED)], {}, {"overhead": None, "nodeSelector": None}),
    # a class without overhead or scheduling changes nothing
    ([runtime_class("plain")], {"runtimeClassName": "plain"}, {"overhead": None, "nodeSelector": None}),
    ([runtime_class("kata", **FIXED)], {"runtimeClassName": "kata"},
     {"overhead": {"cpu": "250m", "memory": "120Mi"}, "nodeSelector": None}),
    # the Pod may give the class's overhead itself, spelled another way
    ([runtime_class("kata", **FIXED)], {"runtimeClassName": "kata", "overhead": {"cpu": "0.25", "memory": "120Mi"}},
     {"overhead": {"cpu": "250m", "memory": "120Mi"}}),
    ([runtime_class("gvisor", **SCHEDULED)], {"runtimeClassName": "gvisor"},
     {"nodeSelector": {"sandbox": "gvisor"},
      "tolerations": [*DEFAULT_TOLERATIONS, {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}),
    # the Pod's own selector keeps its keys and takes the class's; a toleration the Pod's covers is left out
    ([runtime_class("gvisor", **SCHEDULED)],
     {"runtimeClassName": "gvisor", "nodeSelector": {"disk": "ssd", "sandbox": "gvisor"},
      "tolerations": [{"operator": "Exists"}]},
     {"nodeSelector": {"disk": "ssd", "sandbox": "gvisor"}, "tolerations": [{"operator": "Exists"}]}),
])
async def test_a_new_pod_takes_its_runtime_classs_overhead_and_scheduling(
        client: Client, classes: list[Obj], spec: Obj, expected: Obj) -> None:
    for obj in classes:
        await client.create(CLASSES, obj)
    created = await client.create(path("pods", NS), pod("p", **spec))
    got = created["spec"]
    assert {key: got.get(key) for key in expected} == expected


@pytest.mark.parametrize(("classes", "spec", "message"), [
    ([], {"runtimeClassName": "missing"}, 'pods "p" is forbidden: pod rejected: RuntimeClass "missing" not found'),
    ([runtime_class("kata", **FIXED)], {"runtimeClassName": "kata", "overhead": {"cpu": "1"}},
     "pods \"p\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
    ([], {"overhead": {"cpu": "1"}},
     'pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead'),
    ([runtime_class("plain")], {"runtimeClassName": "plain", "overhead": {"cpu": "1"}},
     'pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead'),
    ([runtime_class("gvisor", **SCHEDULED)], {"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "runc"}},
     'pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; '
     "pod.spec.nodeSelector[sandbox] = runc"),
])
async def test_what_the_class_does_not_allow_is_refused(client: Client, classes: list[Obj], spec: Obj,
                                                        message: str) -> None:
    for obj in classes:
        await client.create(CLASSES, obj)
    failed = await refused(client.create(path("pods", NS), pod("p", **spec)))
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (403, "Forbidden", message)


async def test_a_pod_naming_a_deleted_class_is_refused(client: Client) -> None:
    await client.create(CLASSES, runtime_class("gone"))
    await client.delete(path("runtimeclasses", group="node.k8s.io", name="gone"))
    failed = await refused(client.create(path("pods", NS), pod("p", runtimeClassName="gone")))
    assert failed.status["message"] == 'pods "p" is forbidden: pod rejected: RuntimeClass "gone" not found'


NOT_READY = {"key": "not-ready", "operator": "Exists", "effect": "NoExecute"}


@pytest.mark.parametrize(("first", "second", "merged"), [
    ([], [], []),
    ([NOT_READY], [NOT_READY], [NOT_READY]),
    # an Exists without key covers every toleration
    ([{"key": "a", "operator": "Equal", "value": "1"}], [{"operator": "Exists"}], [{"operator": "Exists"}]),
    # a shorter tolerationSeconds is covered by a longer one of the same key, not the other way round
    ([{**NOT_READY, "tolerationSeconds": 10}], [{**NOT_READY, "tolerationSeconds": 300}],
     [{**NOT_READY, "tolerationSeconds": 300}]),
    ([{**NOT_READY, "tolerationSeconds": 300}], [NOT_READY], [NOT_READY]),
    # an empty effect covers every effect of the key; different values are both kept
    ([{"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}],
     [{"key": "a", "operator": "Equal", "value": "1"}], [{"key": "a", "operator": "Equal", "value": "1"}]),
    ([{"key": "a", "value": "1"}], [{"key": "a", "value": "2"}],
     [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]),
])
def test_tolerations_merge_as_kubes(first: list[Obj], second: list[Obj], merged: list[Obj]) -> None:
    assert merge_tolerations(first, second) == merged
