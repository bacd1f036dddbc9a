"""pods/log, pods/exec, pods/attach and pods/portforward: what kube-apiserver 1.28 answers when no kubelet is there.

kube-apiserver serves these by reaching the kubelet of the Pod's node (pkg/registry/core/pod: LogLocation,
streamLocation, PortForwardLocation; pkg/kubelet/client: GetConnectionInfo). Capstan has no kubelets, so it
answers every check kube makes before it dials, word for word, and then what kube answers when the kubelet does
not answer; it never dials anything:
- the Pod missing: 404; a container not named and not the only one: 400 `a container name must be specified for
  pod P, choose one of: [a b] or one of the init containers: [i]`; a named one the Pod lacks: 400 `container C is
  not valid for pod P` (portforward names no container);
- a Pod on no node: pods/log answers 204 with no body (kube's empty location); the others 400 `pod P does not have
  a host assigned`;
- its Node missing: 404 `nodes "n" not found`; a Node with no address: kube's 500 `no preferred addresses found;
  known addresses: []`;
- else the kubelet at the node's preferred address (Hostname, InternalDNS, InternalIP, ExternalDNS, ExternalIP)
  and its daemonEndpoints port (10250 when unset) is unreachable, as kube answers it: a reasonless 500 whose
  message is the dial error (`Get "https://10.0.0.1:10250/containerLogs/ns/p/c": dial tcp 10.0.0.1:10250: connect:
  connection refused` for logs, `error dialing backend: dial tcp ...` for the streams).
"""

from __future__ import annotations

from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Handlers, Resource, Subresource

KUBELET_PORT = 10250
# kube-apiserver's default --kubelet-preferred-address-types.
PREFERRED_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")



async def log(ctx: Context, pods: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    """LogLocation, then the kubelet's containerLogs: 204 for a Pod on no node."""
    pod = await read_pod(ctx, pods, req.path)
    container = _container(pod, req.path.name, connect_query(req).get("container", [""])[0])
    node = _node_name(pod)
    if not node:
        return core_pb2.GetResponse()
    host, port = await kubelet(ctx, node)
    address = f"{host}:{port}"
    raise _unreachable(f'Get "https://{address}/containerLogs/{req.path.namespace}/{req.path.name}/{container}": '
                       f"dial tcp {address}: connect: connection refused")


async def stream(ctx: Context, pods: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    """streamLocation (exec, attach) and PortForwardLocation, then the upgrade to the kubelet."""
    pod = await read_pod(ctx, pods, req.path)
    if req.path.subresource != "portforward":
        _container(pod, req.path.name, connect_query(req).get("container", [""])[0])
    node = _node_name(pod)
    if not node:
        raise errors.bad_request(f"pod {req.path.name} does not have a host assigned")
    host, port = await kubelet(ctx, node)
    raise _unreachable(f"error dialing backend: dial tcp {host}:{port}: connect: connection refused")


def connect_query(req: core_pb2.GetRequest) -> dict[str, list[str]]:
    if not req.query:
        return {}
    try:
        parsed: Any = orjson.loads(req.query)
    except orjson.JSONDecodeError:
        raise errors.bad_request("the request's query is not a JSON object") from None
    if not isinstance(parsed, dict):
        raise errors.bad_request("the request's query is not a JSON object")
    return {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in parsed.items()}


async def read_pod(ctx: Context, pods: Resource, path: core_pb2.ResourcePath) -> Obj:
    got = await store_call(ctx.store.get(pods.key(path.namespace, path.name)))
    if got.kv is None:
        raise errors.not_found(pods.resource, pods.group, path.name)
    return render.load(got.kv.value)


def _names(containers: object) -> str:
    return " ".join(str(c.get("name", "")) for c in (containers or []) if isinstance(c, dict))  # type: ignore[attr-defined]


def _container(pod: Obj, name: str, container: str) -> str:
    """The container a request means: the named one, which the Pod must have (init and ephemeral ones count),
    or the Pod's only container."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not container:
        if len(containers) == 1:
            return str(containers[0].get("name", ""))
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        message = f"a container name must be specified for pod {name}, choose one of: [{_names(containers)}]"
        if spec.get("initContainers"):
            message += f" or one of the init containers: [{_names(spec['initContainers'])}]"
        raise errors.bad_request(message)
    every = (*(spec.get("initContainers") or []), *containers, *(spec.get("ephemeralContainers") or []))
    if not any(c.get("name") == container for c in every):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def _node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


async def kubelet(ctx: Context, node_name: str) -> tuple[str, int]:
    """GetConnectionInfo: the node's preferred address and its kubelet's port."""
    nodes = ctx.registry.get("", "v1", "nodes")
    assert nodes is not None
    got = await store_call(ctx.store.get(nodes.key("", node_name)))
    if got.kv is None:
        raise errors.not_found("nodes", "", node_name)
    status = render.load(got.kv.value).get("status") or {}
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, dict)]
    host = next((a.get("address", "") for kind in PREFERRED_ADDRESS_TYPES for a in addresses
                 if a.get("type") == kind), None)
    if host is None:
        known = " ".join("{" + f"{a.get('type', '')} {a.get('address', '')}" + "}" for a in addresses)
        raise _unreachable(f"no preferred addresses found; known addresses: [{known}]")
    port = int(((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or 0)
    return str(host), port or KUBELET_PORT


def _unreachable(message: str) -> errors.ApiError:
    """A plain error as kube-apiserver answers it (ErrorToAPIStatus): 500, no reason, no details."""
    return errors.ApiError(errors.status(500, "", message, with_details=False))


SUBRESOURCES = (
    Subresource("log", "Pod", ("get",), handlers=Handlers(connect=log)),
    Subresource("exec", "PodExecOptions", ("create", "get"), handlers=Handlers(connect=stream)),
    Subresource("attach", "PodAttachOptions", ("create", "get"), handlers=Handlers(connect=stream)),
    Subresource("portforward", "PodPortForwardOptions", ("create", "get"), handlers=Handlers(connect=stream)),
)
