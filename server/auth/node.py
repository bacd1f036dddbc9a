"""The Node authorizer (--authorization-mode=Node): what a kubelet, `system:node:<name>` in group
`system:nodes`, may do, as kube 1.28's plugin/pkg/auth/authorizer/node decides it.

Contract:
- A user that is not a node identity gets NO_OPINION (the next mode decides); a node identity without a name
  too, with kube's reason.
- Secrets and ConfigMaps: get, list and watch of one named object (a list or watch names it with
  `metadata.name=`), allowed when a Pod bound to the node references it (volumes, projected sources,
  env/envFrom, imagePullSecrets, the secret refs of CSI, Ceph, iSCSI ... volumes), or when it is a secret a
  PersistentVolume bound to such a Pod's claim references. PersistentVolumeClaims: get when such a Pod uses
  it (its volumes, and `<pod>-<volume>` for generic ephemeral volumes), update/patch of their status likewise;
  PersistentVolumes: get when bound to such a claim; VolumeAttachments: get when attached to the node;
  ServiceAccounts: create of the `token` subresource of a Pod's account.
- Leases: get, create, update, patch, delete in kube-node-lease, by the node's own name (create any: the
  NodeRestriction admission plugin checks the name). CSINodes: the same verbs on the node's own name.
- Everything else: kube's bootstrap `system:node` ClusterRole's rules (NodeRules), ALLOW when one allows it,
  else NO_OPINION; the reasons are kube's.

The graph kube keeps of these edges is, here, what informers over Pods, PersistentVolumes and
VolumeAttachments hold: each Pod reduced once, when it changes, to its node and the names it references
(indexed by each name it references), each PV to its claim and secrets (indexed by secret). A
decision looks up the Pods that reference the object (and, for a secret, the bound PVs that reference it and
the Pods that use their claims), so its cost does not grow with the Pods of the node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import ResourceRule, Rules
from server.auth.rbac.policy import CLUSTER_ROLES
from server.auth.rbac.rules import PolicyRule, allows_any, rules_of
from server.machinery.user import UserInfo
from server.objects.core import Core
from server.runtime.informer import Informer

NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
NODE_LEASE_NAMESPACE = "kube-node-lease"

Ref = tuple[str, str, str]  # (kind, namespace, name): kind is secret, configmap, pvc or serviceaccount


def node_name(user: UserInfo) -> str | None:
    """kube's NodeIdentifier: the node a user is, "" for a node user without a name, None for anyone else."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return None
    return user.name[len(NODE_USER_PREFIX):]


@dataclass(frozen=True, slots=True)
class PodRefs:
    node: str
    refs: frozenset[Ref]


@dataclass(frozen=True, slots=True)
class VolumeRefs:
    claim: str  # "namespace/name" of the bound claim, "" when unbound
    secrets: frozenset[tuple[str, str]]


def _secret_refs(value: Any, namespace: str, into: set[Ref]) -> None:
    """Every `secretRef`/`*SecretRef` object and `secretName` under a volume source (VisitPodSecretNames'
    reach): {"name": n} in the Pod's namespace, or a PV's {"name", "namespace"}."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict) and (key == "secretRef" or key.endswith("SecretRef")) and item.get("name"):
                into.add(("secret", str(item.get("namespace") or namespace), str(item["name"])))
            elif key == "secretName" and isinstance(item, str) and item:
                into.add(("secret", namespace, item))
            else:
                _secret_refs(item, namespace, into)
    elif isinstance(value, list):
        for item in value:
            _secret_refs(item, namespace, into)


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            if isinstance(container, dict):
                yield container


def pod_refs(pod: dict[str, Any]) -> PodRefs:
    """What the node authorizer keeps of a Pod: its node and the objects it references."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
    refs: set[Ref] = set()
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:
        refs.add(("serviceaccount", namespace, str(account)))
    for pull in spec.get("imagePullSecrets") or ():
        if isinstance(pull, dict) and pull.get("name"):
            refs.add(("secret", namespace, str(pull["name"])))
    for container in _containers(spec):
        for source in container.get("envFrom") or ():
            for key, kind in (("secretRef", "secret"), ("configMapRef", "configmap")):
                ref = (source or {}).get(key)
                if isinstance(ref, dict) and ref.get("name"):
                    refs.add((kind, namespace, str(ref["name"])))
        for env in container.get("env") or ():
            value_from = (env or {}).get("valueFrom") or {}
            for key, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configmap")):
                ref = value_from.get(key)
                if isinstance(ref, dict) and ref.get("name"):
                    refs.add((kind, namespace, str(ref["name"])))
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, dict):
            continue
        sources: list[dict[str, Any]] = [volume]
        projected = volume.get("projected")
        if isinstance(projected, dict):
            sources += [s for s in projected.get("sources") or () if isinstance(s, dict)]
        for source in sources:
            config_map = source.get("configMap")
            if isinstance(config_map, dict) and config_map.get("name"):
                refs.add(("configmap", namespace, str(config_map["name"])))
            secret = source.get("secret")
            if isinstance(secret, dict) and (secret.get("secretName") or secret.get("name")):
                refs.add(("secret", namespace, str(secret.get("secretName") or secret.get("name"))))
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict) and claim.get("claimName"):
            refs.add(("pvc", namespace, str(claim["claimName"])))
        if isinstance(volume.get("ephemeral"), dict):
            refs.add(("pvc", namespace, f"{name}-{volume.get('name', '')}"))
        _secret_refs({k: v for k, v in volume.items() if k not in ("secret", "projected")}, namespace, refs)
    return PodRefs(str(spec.get("nodeName") or ""), frozenset(refs))


def volume_refs(pv: dict[str, Any]) -> VolumeRefs:
    spec = pv.get("spec") or {}
    claim = spec.get("claimRef") or {}
    bound = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim.get("name") else ""
    found: set[Ref] = set()
    _secret_refs({k: v for k, v in spec.items() if k != "claimRef"}, "", found)
    return VolumeRefs(bound, frozenset((namespace, name) for _, namespace, name in found))


def _node_rules() -> tuple[PolicyRule, ...]:
    role = next(r for r in CLUSTER_ROLES if r["metadata"]["name"] == "system:node")
    return rules_of(role)


def _path(resource: str, group: str = "", version: str = "v1") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version=version, resource=resource)


class NodeAuthorizer:
    def __init__(self, core: Core) -> None:
        self._rules = _node_rules()
        self.pods: Informer[PodRefs] = Informer(core, _path("pods"), transform=pod_refs, indexers={
            "ref": lambda p: ("/".join(ref) for ref in p.refs) if p.node else ()})
        self.volumes: Informer[VolumeRefs] = Informer(
            core, _path("persistentvolumes"), transform=volume_refs,
            indexers={"secret": lambda v: (f"{ns}/{name}" for ns, name in v.secrets) if v.claim else ()})
        self.attachments: Informer[str] = Informer(
            core, _path("volumeattachments", "storage.k8s.io"),
            transform=lambda va: str((va.get("spec") or {}).get("nodeName") or ""))

    async def start(self) -> None:
        await self.pods.start()
        await self.volumes.start()
        await self.attachments.start()

    async def stop(self) -> None:
        await self.attachments.stop()
        await self.volumes.stop()
        await self.pods.stop()

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        node = node_name(attributes.user)
        if node is None:
            return Decision.NO_OPINION, ""
        if not node:
            return Decision.NO_OPINION, f'unknown node for user "{attributes.user.name}"'
        if attributes.resource_request:
            group, resource, verb = attributes.api_group, attributes.resource, attributes.verb
            sub = attributes.subresource
            if group == "" and resource in ("secrets", "configmaps"):
                if verb not in ("get", "list", "watch"):
                    return Decision.NO_OPINION, "can only read resources of this type"
                if sub:
                    return Decision.NO_OPINION, "cannot read subresource"
                if not attributes.namespace:
                    return Decision.NO_OPINION, "can only read namespaced object of this type"
                return self._related(node, resource[:-1], attributes)
            if group == "" and resource == "persistentvolumeclaims":
                if sub == "status":
                    if verb not in ("update", "patch"):
                        return Decision.NO_OPINION, "can only get/update/patch this type"
                    return self._related(node, "pvc", attributes)
                return self._get(node, "pvc", attributes)
            if group == "" and resource == "persistentvolumes":
                return self._get(node, "pv", attributes)
            if group == "storage.k8s.io" and resource == "volumeattachments":
                return self._get(node, "va", attributes)
            if group == "" and resource == "serviceaccounts":
                if verb != "create" or not attributes.name:
                    return Decision.NO_OPINION, "can only create tokens for individual service accounts"
                if sub != "token":
                    return Decision.NO_OPINION, "can only create token subresource of serviceaccount"
                return self._related(node, "serviceaccount", attributes)
            if group == "coordination.k8s.io" and resource == "leases":
                return _lease(node, attributes)
            if group == "storage.k8s.io" and resource == "csinodes":
                return _csinode(node, attributes)
        if allows_any(attributes, self._rules):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    def _get(self, node: str, kind: str, attributes: Attributes) -> tuple[Decision, str]:
        if attributes.verb != "get":
            return Decision.NO_OPINION, "can only get individual resources of this type"
        if attributes.subresource:
            return Decision.NO_OPINION, "cannot get subresource"
        return self._related(node, kind, attributes)

    def _related(self, node: str, kind: str, attributes: Attributes) -> tuple[Decision, str]:
        if not attributes.name:
            return Decision.NO_OPINION, "No Object name found"
        if self._has_path(node, kind, attributes.namespace, attributes.name):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, f"no relationship found between node '{node}' and this object"

    def _has_path(self, node: str, kind: str, namespace: str, name: str) -> bool:
        if kind == "va":
            return self.attachments.cache.get(("", name)) == node
        if kind == "pv":
            volume = self.volumes.cache.get(("", name))
            return volume is not None and bool(volume.claim) and self._used(node, f"pvc/{volume.claim}")
        if self._used(node, f"{kind}/{namespace}/{name}"):
            return True
        if kind != "secret":
            return False
        # a secret of a PersistentVolume bound to a claim a Pod of the node uses
        return any(self._used(node, f"pvc/{volume.claim}")
                   for volume in self.volumes.cache.by_index("secret", f"{namespace}/{name}"))

    def _used(self, node: str, ref: str) -> bool:
        """Whether a Pod bound to the node references `kind/namespace/name`."""
        return any(pod.node == node for pod in self.pods.cache.by_index("ref", ref))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if node_name(user) is None:
            return Rules()
        return Rules(tuple(ResourceRule(r.verbs, r.api_groups, r.resources, r.resource_names)
                           for r in self._rules if r.resources), incomplete=True,
                     evaluation_error="node authorizer does not support user rule resolution")


def _lease(node: str, attributes: Attributes) -> tuple[Decision, str]:
    verb = attributes.verb
    if verb not in ("get", "create", "update", "patch", "delete"):
        return Decision.NO_OPINION, "can only get, create, update, patch, or delete a node lease"
    if attributes.namespace != NODE_LEASE_NAMESPACE:
        return Decision.NO_OPINION, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
    if verb != "create" and attributes.name != node:
        return Decision.NO_OPINION, "can only access node lease with the same name as the requesting node"
    return Decision.ALLOW, ""


def _csinode(node: str, attributes: Attributes) -> tuple[Decision, str]:
    verb = attributes.verb
    if verb not in ("get", "create", "update", "patch", "delete"):
        return Decision.NO_OPINION, "can only get, create, update, patch, or delete a CSINode"
    if attributes.subresource:
        return Decision.NO_OPINION, "cannot authorize CSINode subresources"
    if verb != "create" and attributes.name != node:
        return Decision.NO_OPINION, "can only access CSINode with the same name as the requesting node"
    return Decision.ALLOW, ""


async def start_node_authorizer(core: Core) -> NodeAuthorizer:
    authorizer = NodeAuthorizer(core)
    await authorizer.start()
    return authorizer
