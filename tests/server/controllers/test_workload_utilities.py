"""The workload controllers' shared utilities (server/controllers/workload/) against a real core: events as
client-go's recorder writes and aggregates them, Pods from a template with their controller reference, the
controller-ref manager's adoption and release, expectations, availability and the template hash."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from server.controllers.workload import hashing
from server.controllers.workload.events import NORMAL, EventRecorder
from server.controllers.workload.expectations import EXPECTATIONS_TIMEOUT, Expectations
from server.controllers.workload.keyed import path
from server.controllers.workload.pods import PodControl, controller_ref, is_pod_available, pod_from_template
from server.controllers.workload.refs import ControllerRefManager
from server.machinery import errors
from server.machinery.selectors.labels import from_label_selector
from server.objects.core import Core
from tests.server.client import Client

NS = "default"
RS = path("replicasets", NS, group="apps")
TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}


def replicaset(name: str = "web") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}}


async def events_about(client: Client, name: str) -> list[dict[str, Any]]:
    _, items = await client.list(path("events", NS), fieldSelector=f"involvedObject.name={name}")
    return items


async def test_events_are_written_and_repeats_counted(client: Client) -> None:
    owner = await client.create(path("replicasets", NS, group="apps"), replicaset())
    recorder = EventRecorder(client.running.core, "replicaset-controller")
    for _ in range(3):
        recorder.event(owner, NORMAL, "SuccessfulCreate", "Created pod: web-x")
    recorder.event(owner, NORMAL, "SuccessfulDelete", "Deleted pod: web-x")
    await recorder.flush()
    await recorder.stop()
    by_reason = {e["reason"]: e for e in await events_about(client, "web")}
    created = by_reason["SuccessfulCreate"]
    assert created["count"] == 3 and by_reason["SuccessfulDelete"]["count"] == 1
    assert created["source"] == {"component": "replicaset-controller"}
    assert created["involvedObject"]["kind"] == "ReplicaSet" and created["involvedObject"]["apiVersion"] == "apps/v1"
    assert created["involvedObject"]["uid"] == owner["metadata"]["uid"]
    assert created["type"] == "Normal" and created["firstTimestamp"] <= created["lastTimestamp"]
    assert created["metadata"]["name"].startswith("web.")


@pytest.mark.parametrize(("labels", "refused"), [({"app": "web"}, False), ({}, True)])
async def test_pod_control_creates_from_the_template(client: Client, labels: dict[str, str], refused: bool) -> None:
    owner = await client.create(RS, replicaset())
    recorder = EventRecorder(client.running.core, "replicaset-controller")
    control = PodControl(client.running.core, recorder)
    template = {**TEMPLATE, "metadata": {**TEMPLATE["metadata"], "labels": labels}}
    ref = controller_ref(owner, "apps/v1", "ReplicaSet")
    if refused:
        with pytest.raises(errors.ApiError):
            await control.create(NS, template, owner, ref)
        return
    pod = await control.create(NS, template, owner, ref)
    assert pod["metadata"]["name"].startswith("web-") and pod["metadata"]["annotations"] == {"a": "b"}
    assert pod["metadata"]["ownerReferences"] == [{**ref, "controller": True, "blockOwnerDeletion": True}]
    await control.delete(NS, pod["metadata"]["name"], owner)
    await recorder.flush()
    assert {e["reason"] for e in await events_about(client, "web")} == {"SuccessfulCreate", "SuccessfulDelete"}
    await recorder.stop()


@pytest.mark.parametrize(("pod_labels", "owned_by", "claimed", "owner_after"), [
    ({"app": "web"}, None, True, "web"),         # an orphan that matches is adopted
    ({"app": "other"}, None, False, None),       # an orphan that does not match is left alone
    ({"app": "web"}, "self", True, "web"),       # owned and matching: kept
    ({"app": "other"}, "self", False, None),     # owned, no longer matching: released
    ({"app": "web"}, "another", False, "another"),  # another controller's: ignored
])
async def test_claim(client: Client, pod_labels: dict[str, str], owned_by: str | None, claimed: bool,
                     owner_after: str | None) -> None:
    owner = await client.create(RS, replicaset())
    other = await client.create(RS, replicaset("another"))
    refs = {"self": owner, "another": other}
    meta: dict[str, Any] = {"name": "p", "labels": pod_labels}
    if owned_by:
        meta["ownerReferences"] = [controller_ref(refs[owned_by], "apps/v1", "ReplicaSet")]
    pod = await client.create(path("pods", NS), {"metadata": meta, **{"spec": TEMPLATE["spec"]}})
    manager = ControllerRefManager(client.running.core, owner, RS, "apps/v1", "ReplicaSet",
                                   from_label_selector({"matchLabels": {"app": "web"}}))
    got = await manager.claim([pod], lambda ns: path("pods", ns))
    assert bool(got) == claimed
    after = await client.get(path("pods", NS, "p"))
    names = [r["name"] for r in after["metadata"].get("ownerReferences") or []]
    assert names == ([owner_after] if owner_after else [])


async def test_no_adoption_by_an_owner_being_deleted(core: Core) -> None:
    stale = {"metadata": {"name": "gone", "namespace": NS, "uid": "not-there"}}
    manager = ControllerRefManager(core, stale, RS, "apps/v1", "ReplicaSet",
                                   from_label_selector({"matchLabels": {"app": "web"}}))
    pod = {"metadata": {"name": "p", "namespace": NS, "uid": "u", "labels": {"app": "web"}}}
    with pytest.raises(errors.ApiError):
        await manager.claim([pod], lambda ns: path("pods", ns))


@pytest.mark.parametrize(("steps", "satisfied"), [
    ([], True),
    ([("expect_creations", 2)], False),
    ([("expect_creations", 2), ("creation_observed",), ("creation_observed",)], True),
    ([("expect_deletions", ["a", "b"]), ("deletion_observed", "a"), ("deletion_observed", "a")], False),
    ([("expect_deletions", ["a", "b"]), ("deletion_observed", "a"), ("deletion_observed", "b")], True),
    ([("expect_deletions", ["a"]), ("deletion_observed", "c")], False),
    ([("expect_creations", 1), ("expire",)], True),
])
def test_expectations(steps: list[tuple[Any, ...]], satisfied: bool) -> None:
    clock = [0.0]
    expectations: Expectations[str] = Expectations(lambda: clock[0])
    for step in steps:
        if step[0] == "expire":
            clock[0] += EXPECTATIONS_TIMEOUT + 1
        else:
            getattr(expectations, step[0])("k", *step[1:])
    assert expectations.satisfied("k") == satisfied


def _pod(ready: str, since: float) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
    return {"status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp}]}}


@pytest.mark.parametrize(("ready", "ago", "min_ready", "available"), [
    ("True", 0, 0, True), ("False", 100, 0, False), ("True", 5, 10, False), ("True", 20, 10, True),
])
def test_availability(ready: str, ago: int, min_ready: int, available: bool) -> None:
    now = 1_700_000_000.0
    assert is_pod_available(_pod(ready, now - ago), min_ready, now) == available


def test_template_hash_is_stable_and_kube_shaped() -> None:
    one = hashing.compute_hash(TEMPLATE)
    assert one == hashing.compute_hash(dict(reversed(list(TEMPLATE.items()))))
    assert one != hashing.compute_hash(TEMPLATE, 1)
    assert set(one) <= set(hashing.ALPHANUMS) and 1 <= len(one) <= 10
    assert hashing.fnv32a(b"hello") == 0x4F9F2CAB


def test_pod_from_template_names_after_the_owner(tmp_path: Path) -> None:
    pod = pod_from_template(TEMPLATE, {"metadata": {"name": "web-5d4f"}}, None)
    assert pod["metadata"]["generateName"] == "web-5d4f-"
