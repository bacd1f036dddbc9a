"""The Node authorizer over a real core: the objects of Pods bound to a node (and the PersistentVolumes of their
claims, the node's VolumeAttachments) are readable by that node only, its Lease and CSINode by name, and the rest
by kube's system:node rules; anyone not a node gets no opinion."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes, Decision
from server.auth.node import NodeAuthorizer, start_node_authorizer
from server.machinery.user import UserInfo
from server.objects.core import Core
from tests.server.auth.conftest import eventually

Obj = dict[str, Any]
NS = "default"
A = UserInfo("system:node:node-a", groups=("system:nodes", "system:authenticated"))
B = UserInfo("system:node:node-b", groups=("system:nodes", "system:authenticated"))
NAMELESS = UserInfo("system:node:", groups=("system:nodes",))
IMPOSTOR = UserInfo("system:node:node-a")  # the name without the group is no node
BOB = UserInfo("bob", groups=("system:authenticated",))


async def create(core: Core, resource: str, obj: Obj, *, group: str = "", namespace: str = NS) -> None:
    await core.create(core_pb2.CreateRequest(
        path=core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace),
        object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))))


POD = {"metadata": {"name": "web", "namespace": NS}, "spec": {
    "nodeName": "node-a", "serviceAccountName": "runner", "imagePullSecrets": [{"name": "pull"}],
    "containers": [{"name": "c", "image": "nginx", "env": [
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
        {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "env-config", "key": "k"}}}],
        "envFrom": [{"configMapRef": {"name": "from-config"}}]}],
    "volumes": [{"name": "s", "secret": {"secretName": "vol-secret"}},
                {"name": "p", "projected": {"sources": [{"configMap": {"name": "projected-config"}}]}},
                {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}}
PV = {"metadata": {"name": "pv-data"}, "spec": {
    "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
    "claimRef": {"namespace": NS, "name": "data"},
    "csi": {"driver": "d.example.com", "volumeHandle": "h", "nodePublishSecretRef": {"name": "csi-secret",
                                                                                      "namespace": "storage"}}}}
ATTACHMENT = {"metadata": {"name": "va-1"}, "spec": {"attacher": "d.example.com", "nodeName": "node-a",
                                                     "source": {"persistentVolumeName": "pv-data"}}}


@pytest.fixture
async def nodes(core: Core) -> AsyncIterator[NodeAuthorizer]:
    await create(core, "pods", POD)
    await create(core, "persistentvolumes", PV, namespace="")
    await create(core, "volumeattachments", ATTACHMENT, group="storage.k8s.io", namespace="")
    authorizer = await start_node_authorizer(core)
    try:
        yield authorizer
    finally:
        await authorizer.stop()


def asks(user: UserInfo, verb: str, resource: str, name: str = "", *, namespace: str = NS, group: str = "",
         subresource: str = "") -> Attributes:
    return Attributes(user, verb, api_group=group, api_version="v1", resource=resource, subresource=subresource,
                      namespace=namespace, name=name)


NOT_RELATED = "no relationship found between node 'node-{}' and this object"
CASES = [
    ("a secret the pod mounts", asks(A, "get", "secrets", "vol-secret"), Decision.ALLOW, ""),
    ("an env secret, watched by name", asks(A, "watch", "secrets", "env-secret"), Decision.ALLOW, ""),
    ("an image pull secret", asks(A, "list", "secrets", "pull"), Decision.ALLOW, ""),
    ("another node's secret", asks(B, "get", "secrets", "vol-secret"), Decision.NO_OPINION, NOT_RELATED.format("b")),
    ("an unrelated secret", asks(A, "get", "secrets", "other"), Decision.NO_OPINION, NOT_RELATED.format("a")),
    ("secrets without a name", asks(A, "list", "secrets"), Decision.NO_OPINION, "No Object name found"),
    ("writing a secret", asks(A, "update", "secrets", "vol-secret"), Decision.NO_OPINION,
     "can only read resources of this type"),
    ("configmaps of env, envFrom, projected", asks(A, "get", "configmaps", "projected-config"), Decision.ALLOW, ""),
    ("envFrom configmap", asks(A, "get", "configmaps", "from-config"), Decision.ALLOW, ""),
    ("env configmap", asks(A, "get", "configmaps", "env-config"), Decision.ALLOW, ""),
    ("the pod's claim", asks(A, "get", "persistentvolumeclaims", "data"), Decision.ALLOW, ""),
    ("an ephemeral volume's claim", asks(A, "get", "persistentvolumeclaims", "web-e"), Decision.ALLOW, ""),
    ("listing claims", asks(A, "list", "persistentvolumeclaims", "data"), Decision.NO_OPINION,
     "can only get individual resources of this type"),
    ("the claim's status", asks(A, "patch", "persistentvolumeclaims", "data", subresource="status"),
     Decision.ALLOW, ""),
    ("the claim's volume", asks(A, "get", "persistentvolumes", "pv-data", namespace=""), Decision.ALLOW, ""),
    ("the volume's secret", asks(A, "get", "secrets", "csi-secret", namespace="storage"), Decision.ALLOW, ""),
    ("its volume attachment", asks(A, "get", "volumeattachments", "va-1", namespace="", group="storage.k8s.io"),
     Decision.ALLOW, ""),
    ("another's volume attachment", asks(B, "get", "volumeattachments", "va-1", namespace="",
                                         group="storage.k8s.io"), Decision.NO_OPINION, NOT_RELATED.format("b")),
    ("a token of its pod's account", asks(A, "create", "serviceaccounts", "runner", subresource="token"),
     Decision.ALLOW, ""),
    ("a token of another account", asks(A, "create", "serviceaccounts", "default", subresource="token"),
     Decision.NO_OPINION, NOT_RELATED.format("a")),
    ("reading an account", asks(A, "get", "serviceaccounts", "runner"), Decision.NO_OPINION,
     "can only create tokens for individual service accounts"),
    ("its own lease", asks(A, "update", "leases", "node-a", namespace="kube-node-lease",
                           group="coordination.k8s.io"), Decision.ALLOW, ""),
    ("another's lease", asks(A, "update", "leases", "node-b", namespace="kube-node-lease",
                             group="coordination.k8s.io"), Decision.NO_OPINION,
     "can only access node lease with the same name as the requesting node"),
    ("a lease elsewhere", asks(A, "get", "leases", "node-a", group="coordination.k8s.io"), Decision.NO_OPINION,
     'can only access leases in the "kube-node-lease" system namespace'),
    ("listing leases", asks(A, "list", "leases", namespace="kube-node-lease", group="coordination.k8s.io"),
     Decision.NO_OPINION, "can only get, create, update, patch, or delete a node lease"),
    ("its CSINode", asks(A, "patch", "csinodes", "node-a", namespace="", group="storage.k8s.io"),
     Decision.ALLOW, ""),
    ("another's CSINode", asks(A, "delete", "csinodes", "node-b", namespace="", group="storage.k8s.io"),
     Decision.NO_OPINION, "can only access CSINode with the same name as the requesting node"),
    ("nodes, by the system:node rules", asks(A, "create", "nodes", namespace=""), Decision.ALLOW, ""),
    ("pod status", asks(B, "patch", "pods", "web", subresource="status"), Decision.ALLOW, ""),
    ("events", asks(A, "create", "events"), Decision.ALLOW, ""),
    ("nothing beyond the rules", asks(A, "delete", "namespaces", "default", namespace=""), Decision.NO_OPINION, ""),
    ("a node without a name", asks(NAMELESS, "get", "nodes", namespace=""), Decision.NO_OPINION,
     'unknown node for user "system:node:"'),
    ("the name without the group", asks(IMPOSTOR, "get", "secrets", "vol-secret"), Decision.NO_OPINION, ""),
    ("anyone else", asks(BOB, "get", "secrets", "vol-secret"), Decision.NO_OPINION, ""),
]


@pytest.mark.parametrize(("attributes", "decision", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_what_a_node_may_do(nodes: NodeAuthorizer, attributes: Attributes, decision: Decision,
                                  reason: str) -> None:
    assert nodes.authorize(attributes) == (decision, reason)


async def test_the_graph_follows_pods(core: Core, nodes: NodeAuthorizer) -> None:
    """A pod bound later opens its objects to its node; deleting it closes them again."""
    wanted = asks(B, "get", "secrets", "late")
    assert nodes.authorize(wanted)[0] is Decision.NO_OPINION
    await create(core, "pods", {"metadata": {"name": "late", "namespace": NS}, "spec": {
        "nodeName": "node-b", "containers": [{"name": "c", "image": "nginx"}],
        "volumes": [{"name": "s", "secret": {"secretName": "late"}}]}})
    await eventually(lambda: nodes.authorize(wanted)[0] is Decision.ALLOW)
    await core.delete(core_pb2.DeleteRequest(path=core_pb2.ResourcePath(
        version="v1", resource="pods", namespace=NS, name="late"), options={"gracePeriodSeconds": 0}))
    await eventually(lambda: nodes.authorize(wanted)[0] is Decision.NO_OPINION)
