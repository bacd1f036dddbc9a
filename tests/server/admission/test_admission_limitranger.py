"""LimitRanger admission through a real core over gRPC: default requests and limits applied to new Pods with
kube's annotation, and kube 1.28's 403s for what breaks a LimitRange's min, max and maxLimitRequestRatio
(Container, Pod and PersistentVolumeClaim items). Expected words: plugin/pkg/admission/limitranger/admission.go
(minConstraint, maxConstraint, maxRequestConstraint, limitRequestRatioConstraint, mergeContainerResources)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server import kube
from tests.server.client import Client, Obj, path, refused

NS = "default"


def limit_range(*items: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"}, "spec": {"limits": list(items)}}


def container(name: str = "app", **resources: dict[str, str]) -> Obj:
    return {"name": name, "image": "nginx", "resources": resources}


def pod(*containers: Obj, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": list(containers) or [container()], **spec}}


def pvc(storage: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}


DEFAULTS = [
    pytest.param({"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                  "defaultRequest": {"cpu": "100m"}},
                 pod(), {"app": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                 "limits": {"cpu": "500m", "memory": "256Mi"}}},
                 "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app",
                 id="both"),
    pytest.param({"type": "Container", "defaultRequest": {"cpu": "100m"}},
                 pod(container(requests={"memory": "64Mi"}), initContainers=[container("init")]),
                 {"app": {"requests": {"cpu": "100m", "memory": "64Mi"}}, "init": {"requests": {"cpu": "100m"}}},
                 "LimitRanger plugin set: cpu request for container app; cpu request for init container init",
                 id="request-only-with-init"),
    pytest.param({"type": "Container", "default": {"cpu": "1"}},
                 pod(container(limits={"cpu": "2"})), {"app": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}},
                 None, id="nothing-set"),
]


@pytest.mark.parametrize(("item", "new", "resources", "annotation"), DEFAULTS)
async def test_defaults(client: Client, item: Obj, new: Obj, resources: dict[str, Obj], annotation: str | None) -> None:
    await client.create(path("limitranges", NS), limit_range(item))
    created = await client.create(path("pods", NS), new)
    spec = created["spec"]
    got = {c["name"]: c["resources"] for c in (*spec.get("initContainers", []), *spec["containers"])}
    assert got == resources
    assert (created["metadata"].get("annotations") or {}).get("kubernetes.io/limit-ranger") == annotation


REFUSALS = [
    pytest.param([{"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}}],
                 pod(container(requests={"cpu": "50m"}, limits={"memory": "2Gi"})),
                 "[minimum cpu usage per Container is 100m, but request is 50m, "
                 "maximum memory usage per Container is 1Gi, but limit is 2Gi]", id="min-and-max"),
    pytest.param([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}],
                 pod(container(requests={"cpu": "100m"}, limits={"cpu": "300m"})),
                 "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000", id="ratio"),
    pytest.param([{"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}], pod(),
                 "memory max limit to request ratio per Container is 2, but no request is specified or request is 0",
                 id="ratio-without-request"),
    pytest.param([{"type": "Pod", "max": {"cpu": "1"}}],
                 pod(container("a", limits={"cpu": "600m"}), container("b", limits={"cpu": "600m"})),
                 "maximum cpu usage per Pod is 1, but limit is 1200m", id="pod-max"),
    pytest.param([{"type": "Pod", "min": {"memory": "1Gi"}}], pod(),
                 "minimum memory usage per Pod is 1Gi.  No request is specified", id="pod-min-unset"),
    pytest.param([{"type": "Container", "max": {"cpu": "1"}}],
                 pod(container(), initContainers=[container("init", limits={"cpu": "2"})]),
                 "maximum cpu usage per Container is 1, but limit is 2", id="init-container"),
]


@pytest.mark.parametrize(("items", "new", "message"), REFUSALS)
async def test_pod_refused(client: Client, items: list[Obj], new: Obj, message: str) -> None:
    await client.create(path("limitranges", NS), limit_range(*items))
    failed = await refused(client.create(path("pods", NS), new))
    assert failed.status == kube.forbidden("pods", "p", message)


CLAIMS = [
    pytest.param({"max": {"storage": "1Gi"}}, "2Gi",
                 "maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi", id="max"),
    pytest.param({"min": {"storage": "1Gi"}}, "500Mi",
                 "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi", id="min"),
    pytest.param({"min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}}, "2Gi", None, id="within"),
]


@pytest.mark.parametrize(("bounds", "storage", "message"), CLAIMS)
async def test_claims(client: Client, bounds: Obj, storage: str, message: str | None) -> None:
    await client.create(path("limitranges", NS), limit_range({"type": "PersistentVolumeClaim", **bounds}))
    if message is None:
        await client.create(path("persistentvolumeclaims", NS), pvc(storage))
        return
    failed = await refused(client.create(path("persistentvolumeclaims", NS), pvc(storage)))
    assert failed.status == kube.forbidden("persistentvolumeclaims", "p", message)


async def test_defaults_set_the_qos_class(client: Client) -> None:
    """Mutating admission runs before the strategy: the QoS class is the defaulted Pod's."""
    await client.create(path("limitranges", NS), limit_range(
        {"type": "Container", "default": {"cpu": "1", "memory": "1Gi"}}))
    created = await client.create(path("pods", NS), pod())
    assert created["status"]["qosClass"] == "Guaranteed"
