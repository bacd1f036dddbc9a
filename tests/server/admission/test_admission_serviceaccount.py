"""ServiceAccount admission through a real core over gRPC, started with kube-controller-manager's
per-namespace part (the default ServiceAccount), as a cluster runs it: the `default` ServiceAccount named on
new Pods, the projected kube-api-access-<5> volume and its read-only mounts exactly as
plugin/pkg/admission/serviceaccount/admission.go writes them, automountServiceAccountToken on the Pod and
on the ServiceAccount, and kube 1.28's 403 for a ServiceAccount that does not exist."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.server import kube
from tests.server.client import Client, Obj, path, refused
from tests.server.managed import managed_client_fixture  # noqa: F401  (the managed_client fixture)

NS = "default"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME = re.compile(r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def pod(name: str = "p", *, mounts: list[Obj] | None = None, **spec: Any) -> Obj:
    app: Obj = {"name": "app", "image": "nginx"}
    if mounts:
        app["volumeMounts"] = mounts
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [app], **spec}}


def token_volume(name: str) -> Obj:
    return {"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": 420}}


async def test_default_account_and_token_volume(managed_client: Client) -> None:
    created = await managed_client.create(path("pods", NS), pod(initContainers=[{"name": "init", "image": "busybox"}]))
    spec = created["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert VOLUME.match(volume["name"]), volume["name"]
    assert volume == token_volume(volume["name"])
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT}
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["initContainers"][0]["volumeMounts"] == [mount]


async def test_container_mounting_the_path_keeps_its_own(managed_client: Client) -> None:
    own = {"name": "mine", "mountPath": MOUNT}
    created = await managed_client.create(path("pods", NS), pod(
        mounts=[own], volumes=[{"name": "mine", "emptyDir": {}}]))
    assert created["spec"]["containers"][0]["volumeMounts"] == [own]
    assert [v["name"] for v in created["spec"]["volumes"]] == ["mine"]


AUTOMOUNT = [
    pytest.param(False, None, False, id="pod-false"),
    pytest.param(None, False, False, id="account-false"),
    pytest.param(True, False, True, id="pod-wins"),
    pytest.param(None, None, True, id="default"),
]


@pytest.mark.parametrize(("on_pod", "on_account", "mounted"), AUTOMOUNT)
async def test_automount(managed_client: Client, on_pod: bool | None, on_account: bool | None, mounted: bool) -> None:
    account: Obj = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"},
                    "imagePullSecrets": [{"name": "pull"}]}
    if on_account is not None:
        account["automountServiceAccountToken"] = on_account
    await managed_client.create(path("serviceaccounts", NS), account)
    spec: Obj = {"serviceAccountName": "robot"}
    if on_pod is not None:
        spec["automountServiceAccountToken"] = on_pod
    created = await managed_client.create(path("pods", NS), pod(**spec))
    assert bool(created["spec"].get("volumes")) is mounted
    assert created["spec"]["imagePullSecrets"] == [{"name": "pull"}]


async def test_missing_account_is_forbidden(managed_client: Client) -> None:
    failed = await refused(managed_client.create(path("pods", NS), pod(serviceAccountName="ghost")))
    assert failed.status == kube.forbidden(
        "pods", "p", 'error looking up service account default/ghost: serviceaccount "ghost" not found')


async def test_mirror_pods_are_left_alone(managed_client: Client) -> None:
    mirror = pod()
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    created = await managed_client.create(path("pods", NS), mirror)
    assert "volumes" not in created["spec"]
