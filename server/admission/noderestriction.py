"""NodeRestriction admission (kube 1.28's plugin/pkg/admission/noderestriction): what a kubelet,
`system:node:<name>` in group `system:nodes`, may write, beyond what the Node authorizer lets it ask.

Contract (writes by anyone but a node identity pass untouched; kube's messages, as 403s on the object):
- Pods: a node creates only mirror pods (`kubernetes.io/config.mirror`) bound to itself, owned by its own Node
  (one controller reference, blockOwnerDeletion unset, the Node's uid), naming no ServiceAccount, Secret,
  ConfigMap or PersistentVolumeClaim; it deletes, updates the status of, and evicts only pods bound to itself,
  and never changes labels through the status. Other pod subresources are refused.
- Nodes: a node writes only its own Node; it registers without labels in the kubernetes.io and k8s.io
  namespaces other than kube's kubelet labels (and `kubelet.kubernetes.io`, `node.kubernetes.io`), never with
  `node-restriction.kubernetes.io/` ones, never changes those labels or its taints afterwards, and never sets a
  configSource.
- PersistentVolumeClaims: only their status, and in it only capacity and conditions.
- ServiceAccount tokens: only bound to a Pod (with its uid) scheduled on the node.
- Leases: only in kube-node-lease, named as the node. CSINodes: only the node's own.
"""

from __future__ import annotations

from typing import Any

from server.auth import caller
from server.auth.node import NODE_LEASE_NAMESPACE, node_name, pod_refs
from server.machinery import errors
from server.machinery.values import Obj
from server.objects import render
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.storeerrors import store_call

NAME = "NodeRestriction"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# kube's kubeletapis.KubeletLabels() and KubeletLabelNamespaces().
KUBELET_LABELS = frozenset((
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os", "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
))
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
RESTRICTED_NAMESPACE = "node-restriction.kubernetes.io"


def _forbidden(attrs: Attributes, reason: str) -> errors.ApiError:
    """admission.NewForbidden: the object's group resource and name."""
    name = attrs.name or str(((attrs.obj or {}).get("metadata") or {}).get("name") or "")
    resource = attrs.resource
    return errors.forbidden(resource.resource, resource.group, name, reason)


async def _pod(ctx: Context, namespace: str, name: str) -> Obj:
    got = await store_call(ctx.store.get(f"/core/pods/{namespace}/{name}".encode()))
    if got.kv is None:
        raise errors.not_found("pods", "", name)
    pod: Obj = render.load(got.kv.value)
    return pod


async def _node_uid(ctx: Context, name: str) -> str:
    got = await store_call(ctx.store.get(f"/core/nodes/{name}".encode()))
    if got.kv is None:
        raise errors.not_found("nodes", "", name)
    return str((render.load(got.kv.value).get("metadata") or {}).get("uid") or "")


def _spec(obj: Obj | None) -> dict[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _metadata(obj: Obj | None) -> dict[str, Any]:
    metadata = (obj or {}).get("metadata")
    return metadata if isinstance(metadata, dict) else {}


async def admit(ctx: Context, attrs: Attributes) -> None:
    user = caller.current().user
    node = node_name(user)
    if node is None:
        return
    if not node:
        raise _forbidden(attrs, f'could not determine node from user "{user.name}"')
    group, resource = attrs.resource.group, attrs.resource.resource
    if group == "" and resource == "pods":
        await _admit_pod(ctx, node, attrs)
    elif group == "" and resource == "nodes":
        _admit_node(node, attrs)
    elif group == "" and resource == "persistentvolumeclaims":
        _admit_pvc(node, attrs)
    elif group == "" and resource == "serviceaccounts":
        if attrs.operation == "CREATE" and attrs.subresource == "token":
            await _admit_token(ctx, node, attrs)
    elif group == "coordination.k8s.io" and resource == "leases":
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            raise _forbidden(attrs, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        name = str(_metadata(attrs.obj).get("name") or "") if attrs.operation == "CREATE" else attrs.name
        if name != node:
            raise _forbidden(attrs, "can only access node lease with the same name as the requesting node")
    elif group == "storage.k8s.io" and resource == "csinodes":
        name = str(_metadata(attrs.obj).get("name") or "") if attrs.operation == "CREATE" else attrs.name
        if name != node:
            raise _forbidden(attrs, f'node "{node}" is not allowed to modify object "{name}"')


async def _admit_pod(ctx: Context, node: str, attrs: Attributes) -> None:
    sub, operation = attrs.subresource, attrs.operation
    if sub == "":
        if operation == "CREATE":
            await _admit_pod_create(ctx, node, attrs)
        elif operation == "DELETE":
            existing = attrs.old if attrs.old is not None else await _pod(ctx, attrs.namespace, attrs.name)
            if _spec(existing).get("nodeName") != node:
                raise _forbidden(attrs, f'node "{node}" can only delete pods with spec.nodeName set to itself')
        else:
            raise _forbidden(attrs, f'unexpected operation "{operation}", node "{node}" can only create and delete '
                                    "mirror pods")
    elif sub == "status":
        if operation != "UPDATE":
            raise _forbidden(attrs, f'unexpected operation "{operation}"')
        if _spec(attrs.old).get("nodeName") != node:
            raise _forbidden(attrs, f'node "{node}" can only update pod status for pods with spec.nodeName set to '
                                    "itself")
        if (_metadata(attrs.old).get("labels") or {}) != (_metadata(attrs.obj).get("labels") or {}):
            raise _forbidden(attrs, f'node "{node}" cannot update labels through pod status')
    elif sub == "eviction":
        if operation != "CREATE":
            raise _forbidden(attrs, f"unexpected operation {operation}")
        name = attrs.name or str(_metadata(attrs.obj).get("name") or "")
        if not name:
            raise errors.bad_request("could not determine pod from request data")
        if _spec(await _pod(ctx, attrs.namespace, name)).get("nodeName") != node:
            raise _forbidden(attrs, f"node {node} can only evict pods with spec.nodeName set to itself")
    else:
        raise _forbidden(attrs, f"unexpected pod subresource \"{sub}\", only 'status' and 'eviction' are allowed")


async def _admit_pod_create(ctx: Context, node: str, attrs: Attributes) -> None:
    pod = attrs.obj or {}
    metadata, spec = _metadata(pod), _spec(pod)
    if MIRROR_ANNOTATION not in (metadata.get("annotations") or {}):
        raise _forbidden(attrs, f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can only '
                                "create mirror pods")
    if spec.get("nodeName") != node:
        raise _forbidden(attrs, f'node "{node}" can only create pods with spec.nodeName set to itself')
    owners = [o for o in metadata.get("ownerReferences") or () if isinstance(o, dict)]
    if len(owners) > 1:
        raise _forbidden(attrs, f'node "{node}" can only create pods with a single owner reference set to itself')
    if not owners:
        raise _forbidden(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
    owner = owners[0]
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        raise _forbidden(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
    if not owner.get("controller"):
        raise _forbidden(attrs, f'node "{node}" can only create pods with a controller owner reference set to '
                                "itself")
    if owner.get("blockOwnerDeletion"):
        raise _forbidden(attrs, f'node "{node}" must not set blockOwnerDeletion on an owner reference')
    uid = await _node_uid(ctx, node)
    if owner.get("uid") != uid:
        raise _forbidden(attrs, f"node {node} UID mismatch: expected {uid} got {owner.get('uid', '')}")
    if spec.get("serviceAccountName"):
        raise _forbidden(attrs, f'node "{node}" can not create pods that reference a service account')
    kinds = {ref[0] for ref in pod_refs({"spec": spec, "metadata": metadata}).refs}
    if "secret" in kinds:
        raise _forbidden(attrs, f'node "{node}" can not create pods that reference secrets')
    if "configmap" in kinds:
        raise _forbidden(attrs, f'node "{node}" can not create pods that reference configmaps')
    if any(isinstance(v, dict) and v.get("persistentVolumeClaim") for v in spec.get("volumes") or ()):
        raise _forbidden(attrs, f'node "{node}" can not create pods that reference persistentvolumeclaims')


async def _admit_token(ctx: Context, node: str, attrs: Attributes) -> None:
    """A node's TokenRequest must be bound to a Pod scheduled on it, named with its uid."""
    ref = _spec(attrs.obj).get("boundObjectRef")
    if not isinstance(ref, dict) or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
        raise _forbidden(attrs, "node requested token not bound to a pod")
    if not ref.get("uid"):
        raise _forbidden(attrs, "node requested token with a pod binding without a uid")
    pod = await _pod(ctx, attrs.namespace, str(ref["name"]))
    if ref["uid"] != _metadata(pod).get("uid"):
        raise _forbidden(attrs, f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                                "record. The object might have been deleted and then recreated")
    if _spec(pod).get("nodeName") != node:
        raise _forbidden(attrs, "node requested token bound to a pod scheduled on a different node")


def _label_namespace(key: str) -> str:
    return key.partition("/")[0] if "/" in key else ""


def _forbidden_labels(keys: set[str]) -> list[str]:
    """kube's getForbiddenLabels: keys in the kubernetes.io or k8s.io namespaces outside the kubelet's set, and
    every key in node-restriction.kubernetes.io."""
    forbidden = []
    for key in keys:
        namespace = _label_namespace(key)
        if namespace == RESTRICTED_NAMESPACE or namespace.endswith("." + RESTRICTED_NAMESPACE):
            forbidden.append(key)
            continue
        if not any(namespace == d or namespace.endswith("." + d) for d in ("kubernetes.io", "k8s.io")):
            continue
        if key in KUBELET_LABELS or any(namespace == d or namespace.endswith("." + d)
                                        for d in KUBELET_LABEL_NAMESPACES):
            continue
        forbidden.append(key)
    return sorted(forbidden)


def _modified_labels(new: dict[str, Any], old: dict[str, Any]) -> set[str]:
    return {k for k in set(new) | set(old) if new.get(k) != old.get(k) or (k in new) != (k in old)}


def _admit_node(node: str, attrs: Attributes) -> None:
    if attrs.operation == "CREATE":
        obj = attrs.obj or {}
        if _spec(obj).get("configSource") is not None:
            raise _forbidden(attrs, f'node "{node}" is not allowed to create pods with a non-nil configSource')
        forbidden = _forbidden_labels(set(_metadata(obj).get("labels") or {}))
        if forbidden:
            raise _forbidden(attrs, f'node "{node}" is not allowed to set the following labels: '
                                    f'{", ".join(forbidden)}')
    requested = attrs.name or str(_metadata(attrs.obj).get("name") or "")
    if requested != node:
        raise _forbidden(attrs, f'node "{node}" is not allowed to modify node "{requested}"')
    if attrs.operation == "UPDATE":
        new, old = _spec(attrs.obj), _spec(attrs.old)
        if new.get("configSource") is not None and new.get("configSource") != old.get("configSource"):
            raise _forbidden(attrs, f'node "{node}" is not allowed to update configSource to a new non-nil '
                                    "configSource")
        if (new.get("taints") or []) != (old.get("taints") or []):
            raise _forbidden(attrs, f'node "{node}" is not allowed to modify taints')
        forbidden = _forbidden_labels(_modified_labels(_metadata(attrs.obj).get("labels") or {},
                                                       _metadata(attrs.old).get("labels") or {}))
        if forbidden:
            raise _forbidden(attrs, f'is not allowed to modify labels: {", ".join(forbidden)}')


def _admit_pvc(node: str, attrs: Attributes) -> None:
    if attrs.subresource != "status":
        raise _forbidden(attrs, "may only update PVC status")
    if attrs.operation != "UPDATE":
        raise _forbidden(attrs, f'unexpected operation "{attrs.operation}"')
    new, old = dict(attrs.obj or {}), dict(attrs.old or {})
    new_status, old_status = dict(new.get("status") or {}), dict(old.get("status") or {})
    for key in ("capacity", "conditions"):
        new_status.pop(key, None)
        old_status.pop(key, None)
    new["status"], old["status"] = new_status, old_status
    for obj in (new, old):
        metadata = dict(obj.get("metadata") or {})
        for key in ("resourceVersion", "managedFields", "generation"):
            metadata.pop(key, None)
        obj["metadata"] = metadata
    if new != old:
        raise _forbidden(attrs, f'node "{node}" is not allowed to update fields other than status.capacity and '
                                "status.conditions")
