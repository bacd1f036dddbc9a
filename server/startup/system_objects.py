"""What kube-apiserver's post-start hooks write besides namespaces and the `kubernetes` Service: the two built-in
PriorityClasses (scheduling/bootstrap-system-priority-classes), the `kubernetes` Service's Endpoints and
EndpointSlice, as kube's endpoint reconciler keeps them (pkg/controlplane/reconcilers), and kube-system's
`extension-apiserver-authentication` ConfigMap (start-cluster-authentication-info-controller), from which an
extension API server learns the client CA and the front-proxy request-header settings it must trust:

    client-ca-file: <PEM>                       requestheader-client-ca-file: <PEM>
    requestheader-username-headers: '["X-Remote-User"]'    requestheader-group-headers: '["X-Remote-Group"]'
    requestheader-extra-headers-prefix: '["X-Remote-Extra-"]'
    requestheader-allowed-names: '["front-proxy-client"]'

The Endpoints and the EndpointSlice name one address, the apiserver's advertise address, and the Service's
target port (6443, kube-apiserver's secure port):

    Endpoints  kubernetes: subsets [{addresses [{ip: 10.0.0.5}], ports [{name: https, port: 6443, protocol: TCP}]}]
    EndpointSlice kubernetes: addressType IPv4, endpoints [{addresses [10.0.0.5], conditions {ready: true}}]

The advertise address is kube's default: the bind address when it is a specific, non-loopback address, else the
address of the host's default-route interface (utilnet.ResolveBindAddress). Endpoints may not name a loopback
address, so a host without any other address gets neither object (logged), as kube-apiserver would refuse to
start there. At each start the two are written again when the address changed.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.endpointslicemirroring import SKIP_MIRROR_LABEL
from server.kinds.discovery import SERVICE_NAME_LABEL
from server.kinds.scheduling import SYSTEM_PRIORITY_CLASSES, system_priority_class
from server.machinery import errors
from server.machinery.concurrently import each
from server.objects.core import Core
from server.startup.bootstrap import KUBERNETES_TARGET_PORT, exists

log = logging.getLogger(__name__)

Obj = dict[str, object]

NAME, NAMESPACE = "kubernetes", "default"
# Addresses never routed, used only to ask the kernel which local address a default route leaves from.
PROBE_ADDRESSES = (("192.0.2.1", socket.AF_INET), ("2001:db8::1", socket.AF_INET6))


def advertise_address(bind_address: str) -> str:
    """The bind address if it is specific and not loopback, else the default-route interface's; "" if none."""
    try:
        ip = ipaddress.ip_address(bind_address)
    except ValueError:
        ip = None
    if ip is not None and not ip.is_unspecified and not ip.is_loopback:
        return str(ip)
    for probe, family in PROBE_ADDRESSES:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect((probe, 9))  # UDP: nothing is sent
                address = str(sock.getsockname()[0])
        except OSError:
            continue
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return ""


def kubernetes_endpoints(address: str, port: int = KUBERNETES_TARGET_PORT) -> dict[str, object]:
    return {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SKIP_MIRROR_LABEL: "true"}},
        "subsets": [{"addresses": [{"ip": address}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }


def kubernetes_endpoint_slice(address: str, port: int = KUBERNETES_TARGET_PORT) -> dict[str, object]:
    """endpointSliceFromEndpoints of the Endpoints above."""
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SERVICE_NAME_LABEL: NAME}},
        "addressType": "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "protocol": "TCP", "port": port}],
    }


def _raw(obj: dict[str, object]) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


async def _created(core: Core, path: core_pb2.ResourcePath, name: str, obj: Any) -> bool:
    """Create obj unless one of its name is stored (looked up first, so that a restart writes nothing); whether
    this call created it."""
    if await exists(core, path, name):
        return False
    try:
        await core.create(core_pb2.CreateRequest(path=path, object=_raw(obj)))
        return True
    except errors.ApiError as err:
        if err.code != 409:
            raise
        return False


async def _ensure(core: Core, path: core_pb2.ResourcePath, obj: dict[str, object], compared: tuple[str, ...]) -> None:
    """Create obj, or update the stored one when its `compared` top-level fields differ (looked up first)."""
    if await _created(core, path, NAME, obj):
        return
    named = core_pb2.ResourcePath()
    named.CopyFrom(path)
    named.name = NAME
    stored = orjson.loads((await core.get(core_pb2.GetRequest(path=named))).object.data)
    if all(stored.get(field) == obj.get(field) for field in compared):
        return
    stored.update({field: obj[field] for field in compared})
    await core.update(core_pb2.UpdateRequest(path=named, object=_raw(stored)))


async def ensure_kubernetes_endpoints(core: Core, bind_address: str, advertise: str = "",
                                     port: int = KUBERNETES_TARGET_PORT) -> None:
    """The `kubernetes` Endpoints and EndpointSlice at the advertise address and the server's secure port:
    `advertise` as given (--advertise-address), else the one the bind address implies (see the module docstring)."""
    address = advertise or advertise_address(bind_address)
    if not address:
        log.warning("no non-loopback address to advertise: the kubernetes Endpoints and EndpointSlice are not written")
        return
    await _ensure(core, core_pb2.ResourcePath(version="v1", resource="endpoints", namespace=NAMESPACE),
                  kubernetes_endpoints(address, port), ("subsets",))
    await _ensure(core, core_pb2.ResourcePath(group="discovery.k8s.io", version="v1", resource="endpointslices",
                                              namespace=NAMESPACE),
                  kubernetes_endpoint_slice(address, port), ("addressType", "endpoints", "ports"))


AUTHENTICATION_CONFIGMAP = "extension-apiserver-authentication"


def authentication_config_map(client_ca: str, requestheader_ca: str, allowed_names: tuple[str, ...]) -> Obj:
    """kube's ClusterAuthenticationInfo as the ConfigMap's data: each part only when configured; the lists as
    Go's json.Marshal writes a []string."""
    data: dict[str, str] = {}
    if client_ca:
        data["client-ca-file"] = client_ca
    if requestheader_ca:
        data["requestheader-username-headers"] = '["X-Remote-User"]'
        data["requestheader-group-headers"] = '["X-Remote-Group"]'
        data["requestheader-extra-headers-prefix"] = '["X-Remote-Extra-"]'
        data["requestheader-client-ca-file"] = requestheader_ca
        data["requestheader-allowed-names"] = orjson.dumps(list(allowed_names)).decode()
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": AUTHENTICATION_CONFIGMAP, "namespace": "kube-system"}, "data": data}


async def ensure_authentication_config_map(core: Core, client_ca: str, requestheader_ca: str,
                                           allowed_names: tuple[str, ...]) -> None:
    """Write the ConfigMap, or its data when the stored one differs (the CAs changed); nothing configured, none."""
    if not client_ca and not requestheader_ca:
        return
    obj = authentication_config_map(client_ca, requestheader_ca, allowed_names)
    path = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="kube-system")
    if await _created(core, path, AUTHENTICATION_CONFIGMAP, obj):
        return
    path.name = AUTHENTICATION_CONFIGMAP
    stored = orjson.loads((await core.get(core_pb2.GetRequest(path=path))).object.data)
    if stored.get("data") != obj["data"]:
        stored["data"] = obj["data"]
        await core.update(core_pb2.UpdateRequest(path=path, object=_raw(stored)))


async def ensure_system_priority_classes(core: Core) -> None:
    """kube's two built-in PriorityClasses, created when missing (a stored one is left as it is)."""
    path = core_pb2.ResourcePath(group="scheduling.k8s.io", version="v1", resource="priorityclasses")

    await each(_created(core, path, name, system_priority_class(name)) for name in SYSTEM_PRIORITY_CLASSES)
