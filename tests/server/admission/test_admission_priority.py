"""Priority admission: a new Pod's priority and preemption policy come from its PriorityClass, as kube's plugin
sets them (the scheduler's preemption reads them), with kube's 403s."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.client import Client, Obj, path, refused

NS = "default"
CLASSES = path("priorityclasses", group="scheduling.k8s.io")


def priority_class(name: str, value: int, **more: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **more}


def pod(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


@pytest.mark.parametrize(("classes", "spec", "expected"), [
    ([], {}, ("", 0, "PreemptLowerPriority")),
    ([priority_class("high", 1000)], {"priorityClassName": "high"}, ("high", 1000, "PreemptLowerPriority")),
    ([priority_class("calm", 50, preemptionPolicy="Never")], {"priorityClassName": "calm"}, ("calm", 50, "Never")),
    ([priority_class("high", 1000)], {"priorityClassName": "high", "priority": 1000},  # the same value is allowed
     ("high", 1000, "PreemptLowerPriority")),
    # a Pod naming no class gets the global default's, its name too
    ([priority_class("usual", 7, globalDefault=True)], {}, ("usual", 7, "PreemptLowerPriority")),
    ([], {"priorityClassName": "system-node-critical"}, ("system-node-critical", 2000001000, "PreemptLowerPriority")),
])
async def test_a_new_pods_priority_is_its_classs(client: Client, classes: list[Obj], spec: Obj,
                                                 expected: tuple[str, int, str]) -> None:
    for obj in classes:
        await client.create(CLASSES, obj)
    created = await client.create(path("pods", NS), pod("p", **spec))
    got = created["spec"]
    assert (got.get("priorityClassName", ""), got["priority"], got["preemptionPolicy"]) == expected


@pytest.mark.parametrize(("classes", "spec", "message"), [
    ([], {"priorityClassName": "missing"}, 'pods "p" is forbidden: no PriorityClass with name missing was found'),
    ([priority_class("high", 1000)], {"priorityClassName": "high", "priority": 5},
     'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission '
     "controller computed 1000 from the given PriorityClass name"),
    ([], {"priority": 5},
     'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission '
     "controller computed 0 from the given PriorityClass name"),
    ([], {"preemptionPolicy": "Never"},
     'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
     "priority admission controller computed PreemptLowerPriority from the given PriorityClass name"),
])
async def test_what_the_class_does_not_give_is_refused(client: Client, classes: list[Obj], spec: Obj,
                                                       message: str) -> None:
    for obj in classes:
        await client.create(CLASSES, obj)
    failed = await refused(client.create(path("pods", NS), pod("p", **spec)))
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (403, "Forbidden", message)


@pytest.mark.parametrize(("classes", "write", "message"), [
    # a second global default, created or marked so, is refused
    ([priority_class("usual", 7, globalDefault=True)], ("create", priority_class("other", 9, globalDefault=True)),
     'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass usual is already marked as default. '
     "Only one default can exist"),
    ([priority_class("usual", 7, globalDefault=True), priority_class("other", 9)],
     ("update", priority_class("other", 9, globalDefault=True)),
     'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass usual is already marked as default. '
     "Only one default can exist"),
    # the default itself may be written again; a class that is no default may be written beside it
    ([priority_class("usual", 7, globalDefault=True)], ("update", priority_class("usual", 7, globalDefault=True,
                                                                                 description="the usual")), None),
    ([priority_class("usual", 7, globalDefault=True)], ("create", priority_class("other", 9)), None),
    ([], ("create", priority_class("first", 9, globalDefault=True)), None),
])
async def test_one_priority_class_at_most_is_the_global_default(client: Client, classes: list[Obj],
                                                               write: tuple[str, Obj], message: str | None) -> None:
    for obj in classes:
        await client.create(CLASSES, obj)
    verb, obj = write
    name = obj["metadata"]["name"]
    if verb == "update":
        current = await client.get(path("priorityclasses", name=name, group="scheduling.k8s.io"))
        obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    call = (client.create(CLASSES, obj) if verb == "create"
            else client.update(path("priorityclasses", name=name, group="scheduling.k8s.io"), obj))
    if message is None:
        await call
        return
    failed = await refused(call)
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (403, "Forbidden", message)
