"""ResourceQuota admission and the quota controller through a real core over gRPC: kube 1.28's 403s (exceeded
quota, failed quota, scopes), the last slot under concurrent creates, dry runs, and status.hard/status.used
kept current by the controller.

Expected messages are kube's: k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go (checkRequest,
prettyPrint) and pkg/quota/v1/evaluator/core (pods: "must specify ..." over the sorted names).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.server import kube
from tests.server.client import Client, Failed, Obj, path, refused
from tests.server.managed import managed_client_fixture  # noqa: F401  (the managed_client fixture)

NS = "default"


def quota(name: str, hard: dict[str, str], **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard, **spec}}


def pod(name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
        **spec: Any) -> Obj:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}], **spec}}


def configmap(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def service(name: str, kind: str, ports: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": kind, "selector": {"app": "x"},
                     "ports": [{"name": f"p{i}", "port": 80 + i} for i in range(ports)]}}


def pvc(name: str, storage: str, storage_class: str = "", beta_class: str | None = None) -> Obj:
    """beta_class: the claim's beta storage-class annotation, which kube reads before storageClassName."""
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    metadata: Obj = {"name": name}
    if beta_class is not None:
        metadata["annotations"] = {"volume.beta.kubernetes.io/storage-class": beta_class}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


RESOURCE = {"Pod": "pods", "ConfigMap": "configmaps", "Service": "services",
            "PersistentVolumeClaim": "persistentvolumeclaims"}


async def create(managed_client: Client, obj: Obj, **options: Any) -> Obj:
    return await managed_client.create(path(RESOURCE[obj["kind"]], NS), obj, **options)


async def status_of(managed_client: Client, name: str, want: dict[str, Any] | None = None, timeout: float = 3.0) -> Obj:
    """The quota's status once it has one (and equals `want`, when given), within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got: Obj = (await managed_client.get(path("resourcequotas", NS, name))).get("status") or {}
        if got.get("hard") and (want is None or got == want):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"quota {name} status is {got}, wanted {want}")
        await asyncio.sleep(0.05)


def exceeded(kind: str, name: str, detail: str) -> Obj:
    return kube.forbidden(kind, name, detail)


REFUSALS = [
    pytest.param({"pods": "1"}, {}, [pod("a")], pod("b"),
                 "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1", id="pods"),
    pytest.param({"count/pods": "1"}, {}, [pod("a")], pod("b"),
                 "exceeded quota: q, requested: count/pods=1, used: count/pods=1, limited: count/pods=1",
                 id="count-pods"),
    pytest.param({"requests.cpu": "1"}, {}, [], pod("b"), "failed quota: q: must specify requests.cpu",
                 id="must-specify-one"),
    pytest.param({"limits.cpu": "1", "limits.memory": "1Gi", "pods": "5"}, {}, [], pod("b", requests={"cpu": "1"}),
                 "failed quota: q: must specify limits.cpu,limits.memory", id="must-specify-two"),
    pytest.param({"requests.memory": "1Gi"}, {}, [pod("a", requests={"memory": "512Mi"})],
                 pod("b", requests={"memory": "768Mi"}),
                 "exceeded quota: q, requested: requests.memory=768Mi, used: requests.memory=512Mi, "
                 "limited: requests.memory=1Gi", id="requests-memory"),
    pytest.param({"cpu": "1", "limits.cpu": "4"}, {}, [], pod("b", requests={"cpu": "1500m"}, limits={"cpu": "2"}),
                 "exceeded quota: q, requested: cpu=1500m, used: cpu=0, limited: cpu=1", id="cpu"),
    pytest.param({"count/configmaps": "1"}, {}, [configmap("a")], configmap("b"),
                 "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, "
                 "limited: count/configmaps=1", id="count-configmaps"),
    pytest.param({"configmaps": "0"}, {}, [], configmap("b"),
                 "exceeded quota: q, requested: configmaps=1, used: configmaps=0, limited: configmaps=0",
                 id="legacy-configmaps"),
    pytest.param({"services.nodeports": "1"}, {}, [], service("b", "NodePort", 2),
                 "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, "
                 "limited: services.nodeports=1", id="nodeports"),
    pytest.param({"services.loadbalancers": "0"}, {}, [], service("b", "LoadBalancer", 1),
                 "exceeded quota: q, requested: services.loadbalancers=1, used: services.loadbalancers=0, "
                 "limited: services.loadbalancers=0", id="loadbalancers"),
    pytest.param({"requests.storage": "1Gi"}, {}, [], pvc("b", "2Gi"),
                 "exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=0, "
                 "limited: requests.storage=1Gi", id="storage"),
    pytest.param({"gold.storageclass.storage.k8s.io/requests.storage": "1Gi"}, {}, [pvc("a", "5Gi")],
                 pvc("b", "2Gi", "gold"),
                 "exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, "
                 "used: gold.storageclass.storage.k8s.io/requests.storage=0, "
                 "limited: gold.storageclass.storage.k8s.io/requests.storage=1Gi", id="storage-class"),
    pytest.param({"gold.storageclass.storage.k8s.io/requests.storage": "1Gi"}, {}, [],
                 pvc("b", "2Gi", "silver", beta_class="gold"),
                 "exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, "
                 "used: gold.storageclass.storage.k8s.io/requests.storage=0, "
                 "limited: gold.storageclass.storage.k8s.io/requests.storage=1Gi", id="beta-storage-class-first"),
    pytest.param({"pods": "0"}, {"scopes": ["BestEffort"]}, [], pod("b"),
                 "exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0", id="best-effort"),
    pytest.param({"pods": "0"}, {"scopes": ["Terminating"]}, [], pod("b", activeDeadlineSeconds=60),
                 "exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0", id="terminating"),
    pytest.param({"pods": "0"}, {"scopeSelector": {"matchExpressions": [
                     {"scopeName": "PriorityClass", "operator": "In", "values": ["system-cluster-critical"]}]}},
                 [], pod("b", priorityClassName="system-cluster-critical"),
                 "exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0", id="priority-class"),
]


@pytest.mark.parametrize(("hard", "spec", "existing", "new", "message"), REFUSALS)
async def test_refused(managed_client: Client, hard: dict[str, str], spec: Obj, existing: list[Obj], new: Obj,
                       message: str) -> None:
    await managed_client.create(path("resourcequotas", NS), quota("q", hard, **spec))
    await status_of(managed_client, "q")
    for obj in existing:
        await create(managed_client, obj)
    failed = await refused(create(managed_client, new))
    assert failed.status == kube.forbidden(RESOURCE[new["kind"]], new["metadata"]["name"], message)


ADMITTED = [
    pytest.param({"pods": "0"}, {"scopes": ["BestEffort"]}, pod("b", requests={"cpu": "100m"}), id="not-best-effort"),
    pytest.param({"pods": "0"}, {"scopes": ["NotTerminating"]}, pod("b", activeDeadlineSeconds=60),
                 id="not-not-terminating"),
    pytest.param({"pods": "0"}, {"scopeSelector": {"matchExpressions": [
                     {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}, pod("b"),
                 id="other-priority-class"),
    pytest.param({"pods": "0"}, {"scopes": ["CrossNamespacePodAffinity"]}, pod("b"), id="no-cross-namespace"),
    pytest.param({"requests.storage": "1Gi"}, {}, configmap("b"), id="untracked-kind"),
    pytest.param({"gold.storageclass.storage.k8s.io/requests.storage": "1Gi"}, {},
                 pvc("b", "2Gi", "gold", beta_class="silver"), id="beta-storage-class-names-another"),
    pytest.param({"count/secrets": "0"}, {}, pod("b"), id="other-count"),
]


@pytest.mark.parametrize(("hard", "spec", "new"), ADMITTED)
async def test_admitted(managed_client: Client, hard: dict[str, str], spec: Obj, new: Obj) -> None:
    await managed_client.create(path("resourcequotas", NS), quota("q", hard, **spec))
    await status_of(managed_client, "q")
    await create(managed_client, new)


async def test_last_slot_goes_to_one_of_concurrent_creates(managed_client: Client) -> None:
    await managed_client.create(path("resourcequotas", NS), quota("q", {"pods": "2"}))
    await status_of(managed_client, "q")
    await create(managed_client, pod("first"))
    results = await asyncio.gather(*(create(managed_client, pod(f"p{i}")) for i in range(6)), return_exceptions=True)
    created = [r for r in results if isinstance(r, dict)]
    refusals = [r for r in results if isinstance(r, Failed)]
    assert len(created) == 1 and len(refusals) == 5
    for failure in refusals:
        assert failure.status["code"] == 403, failure
        assert failure.status["message"].endswith(
            "is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2")
    assert (await managed_client.get(path("resourcequotas", NS, "q")))["status"]["used"] == {"pods": "2"}


async def test_dry_run_is_checked_but_not_charged(managed_client: Client) -> None:
    await managed_client.create(path("resourcequotas", NS), quota("q", {"pods": "1"}))
    await status_of(managed_client, "q")
    for _ in range(2):
        await create(managed_client, pod("a"), dryRun=["All"])
    assert (await managed_client.get(path("resourcequotas", NS, "q")))["status"]["used"] == {"pods": "0"}


async def test_controller_keeps_status_current(managed_client: Client) -> None:
    hard = {"pods": "5", "count/pods": "5", "requests.cpu": "2", "configmaps": "3"}
    await managed_client.create(path("resourcequotas", NS), quota("q", hard))
    zero = {"pods": "0", "count/pods": "0", "requests.cpu": "0", "configmaps": "0"}
    await status_of(managed_client, "q", {"hard": hard, "used": zero})
    await create(managed_client, pod("a", requests={"cpu": "500m"}))
    await create(managed_client, pod("b", requests={"cpu": "250m"}))
    await create(managed_client, configmap("c"))
    await status_of(managed_client, "q", {"hard": hard, "used": {"pods": "2", "count/pods": "2", "requests.cpu": "750m",
                                                          "configmaps": "1"}})
    await managed_client.delete(path("pods", NS, "a"))
    await managed_client.delete(path("configmaps", NS, "c"))
    await status_of(managed_client, "q", {"hard": hard, "used": {"pods": "1", "count/pods": "1", "requests.cpu": "250m",
                                                          "configmaps": "0"}})
    done = await managed_client.get(path("pods", NS, "b"))
    done["status"]["phase"] = "Succeeded"
    await managed_client.update(path("pods", NS, "b", subresource="status"), done)
    # A terminal pod no longer counts as a pod, but still as an object.
    await status_of(managed_client, "q", {"hard": hard, "used": {"pods": "0", "count/pods": "1", "requests.cpu": "0",
                                                          "configmaps": "0"}})
    changed = await managed_client.get(path("resourcequotas", NS, "q"))
    changed["spec"]["hard"] = {"pods": "1", "secrets": "2"}
    await managed_client.update(path("resourcequotas", NS, "q"), changed)
    await status_of(managed_client, "q", {"hard": {"pods": "1", "secrets": "2"}, "used": {"pods": "0", "secrets": "0"}})


@pytest.mark.parametrize("before", [[], [configmap("early")]])  # a namespace written to before its first quota
async def test_a_quota_limits_from_when_it_has_status_until_it_is_deleted(managed_client: Client,
                                                                          before: list[Obj]) -> None:
    for obj in before:
        await create(managed_client, obj)
    used = {"count/configmaps": str(len(before))}
    await managed_client.create(path("resourcequotas", NS), quota("q", {"count/configmaps": str(len(before))}))
    await status_of(managed_client, "q", {"hard": used, "used": used})
    failed = await refused(create(managed_client, configmap("over")))
    assert failed.status["code"] == 403, failed.status
    await managed_client.delete(path("resourcequotas", NS, "q"))
    await create(managed_client, configmap("after"))  # nothing charged to the deleted quota
