"""NodeRestriction admission over a real core (LMDB, the admission chain with the plugin on): a node identity's
writes refused with kube's words, the same writes by anyone else untouched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from capstan.core.v1 import core_service_pb2 as core_pb2
from server import admission
from server.auth import caller
from server.auth.authorizer import AlwaysAllow
from server.auth.config import INSECURE
from server.machinery import errors
from server.machinery.user import UserInfo
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

Obj = dict[str, Any]
NODE_A = UserInfo("system:node:node-a", groups=("system:nodes", "system:authenticated"))
ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))


pytestmark = pytest.mark.asyncio(loop_scope="module")  # one core for the module's tests


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningCore]:
    path: Path = tmp_path_factory.mktemp("noderestriction")
    store = await LmdbStore.open(path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    key = path / "sa.key"  # tokens are issued (serviceaccounts/token is served) only with a signing key
    key.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    security = replace(INSECURE, service_account_signing_key_file=key, service_account_key_files=(key,))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=security, namespace_controllers=False,
                            admission_plugins=admission.KUBE_DEFAULT | {"NodeRestriction"},
                            controller_names=frozenset())
    try:
        for node in ("node-a", "node-b"):
            await call(core, ADMIN, "create", "nodes", {"metadata": {"name": node}}, namespace="")
        for name, node in (("on-a", "node-a"), ("on-b", "node-b")):
            await call(core, ADMIN, "create", "pods", pod(name, node))
        await call(core, ADMIN, "create", "serviceaccounts", {"metadata": {"name": "default"}})
        await call(core, ADMIN, "create", "persistentvolumeclaims", {"metadata": {"name": "claim"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        yield core
    finally:
        await core.stop()
        await store.close()


def pod(name: str, node: str, **spec: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}], **spec}}


async def call(running: RunningCore, user: UserInfo, verb: str, resource: str, obj: Obj, *, group: str = "",
               namespace: str = "default", subresource: str = "", name: str = "") -> Obj:
    if not name and verb != "create":
        name = str((obj.get("metadata") or {}).get("name", ""))
    path = core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace, name=name,
                                 subresource=subresource)
    raw = core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))
    token = caller.bind(caller.Caller(user, AlwaysAllow()))
    try:
        if verb == "create":
            data = (await running.core.create(core_pb2.CreateRequest(path=path, object=raw))).object.data
        elif verb == "update":
            data = (await running.core.update(core_pb2.UpdateRequest(path=path, object=raw))).object.data
        else:
            await running.core.delete(core_pb2.DeleteRequest(path=path))
            return {}
    finally:
        caller.unbind(token)
    result: Obj = orjson.loads(data) if data else {}
    return result


async def current(running: RunningCore, resource: str, name: str, namespace: str = "default") -> Obj:
    got = await running.core.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(
        version="v1", resource=resource, namespace=namespace, name=name)))
    result: Obj = orjson.loads(got.object.data)
    return result


def mirror(name: str, uid: str, **spec: Any) -> Obj:
    obj = pod(name, "node-a", **spec)
    obj["metadata"] |= {"annotations": {"kubernetes.io/config.mirror": "x"}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": uid, "controller": True}]}
    return obj


CREATES: list[tuple[str, str, Any, str]] = [
    ("a mirror pod of its own", "pods", lambda uid: mirror("m1", uid), ""),
    ("a pod that is no mirror", "pods", lambda uid: pod("plain", "node-a"),
     'pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can only '
     "create mirror pods"),
    ("a mirror pod for another node", "pods", lambda uid: {**mirror("m2", uid), "spec": pod("x", "node-b")["spec"]},
     'node "node-a" can only create pods with spec.nodeName set to itself'),
    ("a mirror pod without an owner", "pods",
     lambda uid: {**mirror("m3", uid), "metadata": {**mirror("m3", uid)["metadata"], "ownerReferences": []}},
     'node "node-a" can only create pods with an owner reference set to itself'),
    ("a mirror pod owned by another uid", "pods", lambda uid: mirror("m4", "not-the-uid"),
     "node node-a UID mismatch: expected {uid} got not-the-uid"),
    ("a mirror pod with a secret", "pods",
     lambda uid: mirror("m5", uid, volumes=[{"name": "s", "secret": {"secretName": "x"}}]),
     'node "node-a" can not create pods that reference secrets'),
    ("a mirror pod with a claim", "pods",
     lambda uid: mirror("m6", uid, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "claim"}}]),
     'node "node-a" can not create pods that reference persistentvolumeclaims'),
    ("its lease", "leases", lambda uid: {"metadata": {"name": "node-a", "namespace": "kube-node-lease"}}, ""),
    ("another's lease", "leases", lambda uid: {"metadata": {"name": "node-b", "namespace": "kube-node-lease"}},
     "can only access node lease with the same name as the requesting node"),
    ("a lease elsewhere", "leases", lambda uid: {"metadata": {"name": "node-a", "namespace": "default"}},
     'can only access leases in the "kube-node-lease" system namespace'),
    ("a node with a restricted label", "nodes",
     lambda uid: {"metadata": {"name": "node-a", "labels": {"node-restriction.kubernetes.io/pool": "x",
                                                            "example.com/team": "y"}}},
     'node "node-a" is not allowed to set the following labels: node-restriction.kubernetes.io/pool'),
    ("a node with a kube label outside the kubelet's", "nodes",
     lambda uid: {"metadata": {"name": "node-a", "labels": {"node-role.kubernetes.io/master": ""}}},
     "is not allowed to set the following labels: node-role.kubernetes.io/master"),
    ("another node", "nodes", lambda uid: {"metadata": {"name": "node-c"}},
     'node "node-a" is not allowed to modify node "node-c"'),
]


@pytest.mark.parametrize(("resource", "build", "refusal"), [c[1:] for c in CREATES], ids=[c[0] for c in CREATES])
async def test_what_a_node_may_create(running: RunningCore, resource: str, build: Any, refusal: str) -> None:
    uid = (await current(running, "nodes", "node-a", ""))["metadata"]["uid"]
    obj = build(uid)
    group = "coordination.k8s.io" if resource == "leases" else ""
    namespace = "" if resource == "nodes" else obj["metadata"].get("namespace", "default")
    if not refusal:
        await call(running, NODE_A, "create", resource, obj, group=group, namespace=namespace)
        return
    with pytest.raises(errors.ApiError) as refused:
        await call(running, NODE_A, "create", resource, obj, group=group, namespace=namespace)
    assert refused.value.code in (403, 409) and refusal.format(uid=uid) in refused.value.status.message


async def test_what_a_node_may_change(running: RunningCore) -> None:
    def changed(obj: Obj, **metadata: Any) -> Obj:
        return {**obj, "metadata": {**obj["metadata"], **metadata}}

    on_a, on_b = await current(running, "pods", "on-a"), await current(running, "pods", "on-b")
    on_a["status"] = {"phase": "Running"}
    await call(running, NODE_A, "update", "pods", on_a, subresource="status")
    refusals = [
        ("update", "pods", changed(on_b, labels={"x": "y"}), "status",
         'node "node-a" can only update pod status for pods with spec.nodeName set to itself'),
        ("update", "pods", changed(await current(running, "pods", "on-a"), labels={"x": "y"}), "status",
         'node "node-a" cannot update labels through pod status'),
        ("update", "pods", changed(await current(running, "pods", "on-a"), labels={"x": "y"}), "",
         'unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods'),
        ("create", "pods", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "on-b"}},
         "eviction", "node node-a can only evict pods with spec.nodeName set to itself"),
        ("delete", "pods", on_b, "", 'node "node-a" can only delete pods with spec.nodeName set to itself'),
        ("update", "persistentvolumeclaims", await current(running, "persistentvolumeclaims", "claim"), "",
         "may only update PVC status"),
    ]
    for verb, resource, obj, subresource, refusal in refusals:
        with pytest.raises(errors.ApiError) as refused:
            await call(running, NODE_A, verb, resource, obj, subresource=subresource,
                       name=obj["metadata"]["name"])
        assert refusal in refused.value.status.message, (verb, resource, subresource)
    node = await current(running, "nodes", "node-a", "")
    tainted = {**node, "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    with pytest.raises(errors.ApiError, match="is not allowed to modify taints"):
        await call(running, NODE_A, "update", "nodes", tainted, namespace="")
    await call(running, ADMIN, "update", "nodes", tainted, namespace="")  # anyone else is not restricted
    await call(running, NODE_A, "delete", "pods", on_a, name="on-a")


TOKENS = [
    ("bound to its pod", lambda a, b: {"apiVersion": "v1", "kind": "Pod", "name": "on-a", "uid": a}, ""),
    ("unbound", lambda a, b: None, "node requested token not bound to a pod"),
    ("bound to a secret", lambda a, b: {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"},
     "node requested token not bound to a pod"),
    ("without the pod's uid", lambda a, b: {"apiVersion": "v1", "kind": "Pod", "name": "on-a"},
     "node requested token with a pod binding without a uid"),
    ("with another uid", lambda a, b: {"apiVersion": "v1", "kind": "Pod", "name": "on-a", "uid": "x"},
     "the UID in the bound object reference (x) does not match the UID in record"),
    ("bound to another node's pod", lambda a, b: {"apiVersion": "v1", "kind": "Pod", "name": "on-b", "uid": b},
     "node requested token bound to a pod scheduled on a different node"),
]


@pytest.mark.parametrize(("ref", "refusal"), [t[1:] for t in TOKENS], ids=[t[0] for t in TOKENS])
async def test_tokens_a_node_may_request(running: RunningCore, ref: Any, refusal: str) -> None:
    uids = [(await current(running, "pods", name))["metadata"]["uid"] for name in ("on-a", "on-b")]
    bound = ref(*uids)
    request: Obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"boundObjectRef": bound} if bound else {}}
    if not refusal:
        answer = await call(running, NODE_A, "create", "serviceaccounts", request, subresource="token",
                            name="default")
        assert answer["status"]["token"]
        return
    with pytest.raises(errors.ApiError) as refused:
        await call(running, NODE_A, "create", "serviceaccounts", request, subresource="token", name="default")
    assert refused.value.code == 403 and refusal in refused.value.status.message

