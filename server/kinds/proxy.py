"""pods/proxy, services/proxy and nodes/proxy: what kube-apiserver 1.28 answers when the backend does not answer.

kube-apiserver proxies every method (GET, POST, PUT, PATCH, DELETE) of these connecters to a location it works
out from the object (pkg/registry/core/pod, service/storage and node: ResourceLocation), the rest of the URL
being the proxied path. Capstan answers every check kube makes on the way, word for word, then what kube's
proxy transport answers when the dial fails (apimachinery's proxy.Transport: 503 ServiceUnavailable `error
trying to reach service: dial tcp HOST:PORT: connect: connection refused`); it never dials anything. The name
may be `name`, `name:port` or `scheme:name:port` (utilnet.SplitSchemeNamePort; scheme http or https), else
kube's 400 `invalid pod request "x"` (service, node).
- pods: the Pod's first IP (status.podIPs, else status.podIP) must be a global unicast address, else 400
  `address not allowed` (a Pod not running yet has none); the port is the one named, else the first container
  port declared, else the scheme's (80, 443);
- services: a numeric port must be one the Service declares (503 `no service port 81 found for service "x"`),
  and is looked up by its name in the Service's Endpoints (404 when there are none); no subsets is 503 `no
  endpoints available for service "x"`; a ready address counts when it targets a Pod of the namespace that
  still has that IP (isValidAddress), else 503 `no endpoints available for service "<name as asked>"`;
- nodes: the kubelet's address and port as pods/log finds them (server/kinds/podconnect.py); an IP that is not
  global unicast is 400 `address not allowed`; a port other than the kubelet's is dialed with the scheme asked.
  A hostname is taken as resolving (kube resolves it first; Capstan resolves nothing).
"""

from __future__ import annotations

import ipaddress

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds import podconnect
from server.machinery import errors
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource, Subresource

PROXY_VERBS = ("create", "delete", "get", "patch", "update")
POD_PROXY = Subresource("proxy", "PodProxyOptions", PROXY_VERBS)
SERVICE_PROXY = Subresource("proxy", "ServiceProxyOptions", PROXY_VERBS)
NODE_PROXY = Subresource("proxy", "NodeProxyOptions", PROXY_VERBS)
DEFAULT_PORTS = {"http": "80", "https": "443"}


def split_scheme_name_port(id_: str) -> tuple[str, str, str] | None:
    """utilnet.SplitSchemeNamePort: (scheme, name, port), None when it is not one of the three forms."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    return (scheme, name, port) if name and scheme in ("", "http", "https") else None


def global_unicast(address: str) -> bool:
    """Go's IP.IsGlobalUnicast: neither unspecified, loopback, multicast, link-local nor the v4 broadcast."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    broadcast = isinstance(ip, ipaddress.IPv4Address) and int(ip) == 0xFFFFFFFF
    return not (ip.is_unspecified or ip.is_loopback or ip.is_multicast or ip.is_link_local or broadcast)


def _host_port(host: str, port: str, scheme: str) -> str:
    """The address Go dials for a URL of this host and port (the scheme's port when none is given)."""
    port = port or DEFAULT_PORTS.get(scheme or "http", "80")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _unreachable(address: str) -> errors.ApiError:
    return errors.ApiError(errors.status(
        503, "ServiceUnavailable", f"error trying to reach service: dial tcp {address}: connect: connection refused",
        with_details=False))


def _unavailable(message: str) -> errors.ApiError:
    return errors.ApiError(errors.status(503, "ServiceUnavailable", message, with_details=False))


def _split(req: core_pb2.GetRequest, what: str) -> tuple[str, str, str]:
    split = split_scheme_name_port(req.path.name)
    if split is None:
        raise errors.bad_request(f'invalid {what} request "{req.path.name}"')
    return split


async def pod(ctx: Context, pods: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    scheme, name, port = _split(req, "pod")
    path = core_pb2.ResourcePath()
    path.CopyFrom(req.path)
    path.name = name
    obj = await podconnect.read_pod(ctx, pods, path)
    if not port:
        containers = (obj.get("spec") or {}).get("containers") or []
        port = next((str(c["ports"][0].get("containerPort", "")) for c in containers
                     if isinstance(c, dict) and c.get("ports")), "")
    status = obj.get("status") or {}
    ips = [p.get("ip", "") for p in status.get("podIPs") or [] if isinstance(p, dict)]
    ip = str(ips[0] if ips else status.get("podIP") or "")
    if not global_unicast(ip):
        raise errors.bad_request("address not allowed")
    raise _unreachable(_host_port(ip, port, scheme))


async def _get(ctx: Context, group: str, resource: str, namespace: str, name: str) -> Obj:
    served = ctx.registry.get(group, "v1", resource)
    assert served is not None
    got = await store_call(ctx.store.get(served.key(namespace, name)))
    if got.kv is None:
        raise errors.not_found(resource, group, name)
    return render.load(got.kv.value)


async def _valid(ctx: Context, namespace: str, address: Obj) -> bool:
    """isValidAddress: the address targets a Pod of the namespace that has its IP."""
    target = address.get("targetRef") or {}
    if not target or target.get("namespace", "") != namespace:
        return False
    try:
        obj = await _get(ctx, "", "pods", namespace, str(target.get("name", "")))
    except errors.ApiError:
        return False
    ips = [p.get("ip") for p in (obj.get("status") or {}).get("podIPs") or [] if isinstance(p, dict)]
    return address.get("ip") in ips


async def service(ctx: Context, services: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    scheme, name, port = _split(req, "service")
    namespace = req.path.namespace
    if port.isdigit():
        svc = await _get(ctx, "", "services", namespace, name)
        named = next((p.get("name", "") for p in (svc.get("spec") or {}).get("ports") or []
                      if isinstance(p, dict) and str(p.get("port")) == str(int(port))), None)
        if named is None:
            raise _unavailable(f'no service port {int(port)} found for service "{name}"')
        port = str(named)
    endpoints = await _get(ctx, "", "endpoints", namespace, name)
    subsets = [s for s in endpoints.get("subsets") or [] if isinstance(s, dict)]
    if not subsets:
        raise _unavailable(f'no endpoints available for service "{name}"')
    for subset in subsets:
        for endpoint_port in subset.get("ports") or []:
            if endpoint_port.get("name", "") != port:
                continue
            for address in subset.get("addresses") or []:
                if await _valid(ctx, namespace, address):
                    raise _unreachable(_host_port(str(address.get("ip", "")), str(endpoint_port.get("port", "")),
                                                  scheme))
    raise _unavailable(f'no endpoints available for service "{req.path.name}"')


async def node(ctx: Context, nodes: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    scheme, name, port = _split(req, "node")
    host, kubelet_port = await podconnect.kubelet(ctx, name)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass  # a hostname: kube resolves it and checks every address; Capstan takes it as resolving
    else:
        if not global_unicast(host):
            raise errors.bad_request("address not allowed")
    if not port or port == str(kubelet_port):
        raise _unreachable(_host_port(host, str(kubelet_port), "https"))
    raise _unreachable(_host_port(host, port, scheme))
