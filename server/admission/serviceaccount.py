"""ServiceAccount admission (plugin/pkg/admission/serviceaccount) for new Pods: the named ServiceAccount
(`default` when none is named) must exist, else kube's 403 `error looking up service account ns/name:
serviceaccount "name" not found` (the `default` one is looked for ten times over a second or two, as kube does,
since the serviceaccounts controller may still be creating it); unless the Pod or the ServiceAccount says
`automountServiceAccountToken: false`, the projected `kube-api-access-<5 random>` volume (a bound token, the
kube-root-ca.crt CA and the namespace) is added and mounted read-only at /var/run/secrets/kubernetes.io/
serviceaccount in every init container and container that mounts nothing there; a Pod without
imagePullSecrets gets the ServiceAccount's. Mirror Pods (kubernetes.io/config.mirror) are left alone.

The lookup and the token volume run only where kube-controller-manager's part runs (start_core's
namespace_controllers): without the serviceaccount controller no namespace would have its `default`. Elsewhere
the plugin, when on, names the account alone (`name_default`). envtest and kube's test-cmd run kube-apiserver
with the plugin disabled (`--disable-admission-plugins=ServiceAccount`): their Pods name no account.
"""

from __future__ import annotations

import asyncio
import random

from server.machinery import errors, meta
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource

DEFAULT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TOKEN_EXPIRATION_SECONDS = 3607  # serviceaccount.WarnOnlyBoundTokenExpirationSeconds
DEFAULT_LOOKUPS = 10


def token_volume(name: str) -> Obj:
    """TokenVolumeSource, as the plugin writes it (defaultMode set explicitly)."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


async def _lookup(ctx: Context, namespace: str, name: str) -> Obj | None:
    key = f"/core/serviceaccounts/{namespace}/{name}".encode()
    attempts = DEFAULT_LOOKUPS if name == DEFAULT else 1
    interval = (100 + random.randrange(100)) / 1000
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(interval)
        got = await store_call(ctx.store.get(key))
        if got.kv is not None:
            return render.load(got.kv.value)
    return None


def name_default(pod: Obj) -> None:
    """A new Pod that names no ServiceAccount names `default` (v1's deprecated serviceAccount alike), mirror Pods
    aside."""
    if MIRROR_ANNOTATION in (meta.meta(pod).get("annotations") or {}):
        return
    spec = pod.setdefault("spec", {})
    spec["serviceAccountName"] = spec["serviceAccount"] = spec.get("serviceAccountName") or DEFAULT


async def admit(ctx: Context, resource: Resource, pod: Obj) -> None:
    """Mutate a new Pod in place: its account named, looked up, its token mounted."""
    m = meta.meta(pod)
    if MIRROR_ANNOTATION in (m.get("annotations") or {}):
        return
    name_default(pod)
    spec = pod["spec"]
    name = spec["serviceAccountName"]
    namespace = m.get("namespace") or ""
    account = await _lookup(ctx, namespace, name)
    if account is None:
        raise errors.forbidden(resource.resource, resource.group, m.get("name") or "",
                               f'error looking up service account {namespace}/{name}: serviceaccount "{name}" '
                               "not found")
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken")
    if automount is not False:
        _mount(spec)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in account["imagePullSecrets"]]


def _mount(spec: Obj) -> None:
    volumes = spec.get("volumes") or []
    existing = next((v.get("name") for v in volumes if str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = existing or meta.generate_name(VOLUME_PREFIX)
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            mounts = container.setdefault("volumeMounts", [])
            if any(mount.get("mountPath") == MOUNT_PATH for mount in mounts):
                continue
            mounts.append({"name": name, "readOnly": True, "mountPath": MOUNT_PATH})
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]
