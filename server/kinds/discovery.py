"""discovery.k8s.io/v1 EndpointSlice: registry entry, defaults and validation, as kube-apiserver's
(pkg/apis/discovery/v1/defaults.go, pkg/apis/discovery/validation, pkg/registry/discovery/endpointslice).

A slice holds endpoints of one address type (IPv4, IPv6 or FQDN, immutable) and the ports they all serve.
IP endpoints may not be unspecified, loopback or link-local addresses (ValidateEndpointIP): a slice can only
name addresses other hosts reach, so the `kubernetes` slice the server writes at start names the host's
address, never 127.0.0.1 (server/endpoints.py).
"""

from __future__ import annotations

import ipaddress

from capstan.api.discovery.v1 import discovery_pb2
from server.kinds.templates import immutable
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource
from server.registry.strategy import Declared

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 100
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"


def default_endpoint_slice(obj: Obj) -> None:
    """SetDefaults_EndpointPort: an unnamed port is named "", an unset protocol is TCP."""
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("name", "")
            port.setdefault("protocol", "TCP")


def prepare_endpoint_slice(obj: Obj, old: Obj | None) -> None:
    """endpointSliceStrategy: v1 never writes deprecatedTopology (an update keeps what was stored)."""
    stored = [e.get("deprecatedTopology") for e in (old or {}).get("endpoints") or [] if isinstance(e, dict)]
    for i, endpoint in enumerate(obj.get("endpoints") or []):
        if isinstance(endpoint, dict):
            endpoint.pop("deprecatedTopology", None)
            if i < len(stored) and stored[i]:
                endpoint["deprecatedTopology"] = stored[i]


def _endpoint_ip_problems(address: str) -> list[str]:
    """ValidateEndpointIP."""
    ip = ipaddress.ip_address(address)
    if ip.is_unspecified:
        return [f"may not be unspecified ({address})"]
    if ip.is_loopback:
        return ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
    if ip.is_link_local:
        return ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    if ip.is_multicast and (ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16")):
        return ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    return []


def _address_errors(address: object, address_type: object, path: str) -> list[FieldError]:
    text = address if isinstance(address, str) else ""
    if address_type in ("IPv4", "IPv6"):
        version = 4 if address_type == "IPv4" else 6
        try:
            valid = ipaddress.ip_address(text).version == version
        except ValueError:
            valid = False
        if not valid:
            return [FieldError.invalid(path, text, f"must be a valid {address_type} address")]
        return [FieldError.invalid(path, text, m) for m in _endpoint_ip_problems(text)]
    if address_type == "FQDN":
        return [FieldError.invalid(path, text, m) for m in names.is_dns1123_subdomain(text)]
    return []


def _endpoint_errors(endpoints: list[object], address_type: object) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(FieldError.invalid("endpoints", len(endpoints), f"must have at most {MAX_ENDPOINTS} items"))
    for i, endpoint in enumerate(endpoints):
        if not isinstance(endpoint, dict):
            continue
        at = f"endpoints[{i}]"
        addresses = endpoint.get("addresses") or []
        if not addresses:
            errs.append(FieldError.required(f"{at}.addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errs.append(FieldError.invalid(f"{at}.addresses", len(addresses),
                                           f"must have at most {MAX_ADDRESSES} items"))
        for j, address in enumerate(addresses):
            errs += _address_errors(address, address_type, f"{at}.addresses[{j}]")
        hostname = endpoint.get("hostname")
        if hostname is not None:
            errs += [FieldError.invalid(f"{at}.hostname", hostname, m) for m in names.is_dns1123_label(hostname)]
        node_name = endpoint.get("nodeName")
        if node_name is not None:
            errs += [FieldError.invalid(f"{at}.nodeName", node_name, m) for m in names.is_dns1123_subdomain(node_name)]
    return errs


def _port_errors(ports: list[object]) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ports) > MAX_PORTS:
        errs.append(FieldError.invalid("ports", len(ports), f"must have at most {MAX_PORTS} items"))
    seen: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        at = f"ports[{i}]"
        name = port.get("name", "")
        if name:
            errs += [FieldError.invalid(f"{at}.name", name, m) for m in names.is_dns1123_label(name)]
        if name in seen:
            errs.append(FieldError.duplicate(f"{at}.name", name))
        seen.add(name)
        protocol = port.get("protocol")
        if not protocol:
            errs.append(FieldError.required(f"{at}.protocol"))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(f"{at}.protocol", protocol, PROTOCOLS))
        app_protocol = port.get("appProtocol")
        if app_protocol is not None:
            errs += [FieldError.invalid(f"{at}.appProtocol", app_protocol, m)
                     for m in names.is_qualified_name(app_protocol)]
    return errs


def validate_endpoint_slice(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateEndpointSlice(Create/Update): the address type, endpoints and ports; the address type stays."""
    address_type = obj.get("addressType", "")
    errs: list[FieldError] = []
    if not address_type:
        errs.append(FieldError.required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        errs.append(FieldError.not_supported("addressType", address_type, ADDRESS_TYPES))
    errs += _endpoint_errors(obj.get("endpoints") or [], address_type)
    errs += _port_errors(obj.get("ports") or [])
    if old is not None:
        errs += immutable(address_type, old.get("addressType", ""), "addressType")
    return errs


ENDPOINT_SLICES = Resource(
    group="discovery.k8s.io", version="v1", resource="endpointslices", kind="EndpointSlice",
    singular="endpointslice", namespaced=True, schema=ProtoSchema(discovery_pb2.EndpointSlice),
    storage_group_version="discovery.k8s.io/v1beta1",  # as kube 1.28's discovery names the storage version
    strategy=Declared(
        tracks_generation=True, defaults=default_endpoint_slice, prepare=prepare_endpoint_slice,
        validation=validate_endpoint_slice,
    ),
)

KINDS = (ENDPOINT_SLICES,)
