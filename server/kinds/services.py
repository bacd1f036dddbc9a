"""core/v1 Service and Endpoints: defaults, validation, and clusterIP and nodePort allocation.

A Service gets a cluster IP from the service range (`--service-cluster-ip-range`, 10.96.0.0/12 by default)
and, for NodePort and LoadBalancer types, node ports from 30000-32767, as kube-apiserver's service REST storage
allocates them (pkg/registry/core/service/storage/alloc.go, ipallocator and portallocator).

What is allocated is derived from the stored Services, never kept beside them, so it is right after a restart
and after any delete (the namespace controller's and the garbage collector's included): an allocation lists the
Services in the store and takes the first free address from a random start. Two creates running at once, in
one core or in several over one store, must not take the same address, so each allocation is also reserved in
a record of the store, written by compare-and-swap, until its Service is stored (reservations.py): this is
cluster-wide, never process-local. Example: two concurrent creates list the same Services and both pick
10.96.14.2; the first to write the record reserves it, the other's write fails, and it reads the record again
and takes another address.
"""

from __future__ import annotations

import copy
import ipaddress
import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from capstan.api.core.v1 import core_pb2 as core_v1
from server.kinds import podspec, proxy
from server.kinds.reservations import ATTEMPTS, Conflict, Reservations, exhausted
from server.kinds.shaped import retype
from server.machinery import errors, meta
from server.machinery.crdschema.formats import is_cidr
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Handlers, Resource, Subresource
from server.registry.strategy import Declared

DEFAULT_SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
NODE_PORTS = range(30000, 32768)
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
CLIENT_IP_TIMEOUT = 10800  # DefaultClientIPServiceAffinitySeconds
SCHEMA = ProtoSchema(core_v1.Service)
IP_EXAMPLE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


# --- defaults ----------------------------------------------------------------------------------------------------


def default_service(obj: Obj) -> None:
    """SetDefaults_Service."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client = spec.setdefault("sessionAffinityConfig", {}).setdefault("clientIP", {})
        client.setdefault("timeoutSeconds", CLIENT_IP_TIMEOUT)
    spec.setdefault("type", "ClusterIP")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (0, "", None):
            port["targetPort"] = port.get("port", 0)
    kind = spec["type"]
    if _needs_external_traffic_policy(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if "internalTrafficPolicy" not in spec and kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    retype(SCHEMA, obj)


def prepare_service(obj: Obj, old: Obj | None) -> None:
    """The clusterIPs normalization and an empty status on create; on update, the allocated values carried
    over (patchAllocatedValues), clusterIP and clusterIPs normalized (normalizeClusterIPs) and the
    type-dependent fields dropped (dropTypeDependentFields)."""
    spec = obj.setdefault("spec", {})
    if old is None:
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        obj["status"] = {"loadBalancer": {}}
    else:
        _carry_allocations(spec, old.get("spec") or {})
    retype(SCHEMA, obj)


def _normalize_cluster_ips(spec: Obj, old: Obj) -> None:
    """normalizeClusterIPs on update: clusterIP and clusterIPs kept in step for a client that wrote only the
    singular field. clusterIPs left out with clusterIP unchanged are the stored ones; a clusterIP changed or
    cleared with clusterIPs as stored makes clusterIPs [clusterIP] or drops it (so validation reports the
    change of an allocated IP as `may not change once set`)."""
    ip, old_ip, old_ips = spec.get("clusterIP") or "", old.get("clusterIP") or "", old.get("clusterIPs") or []
    if old_ips and not spec.get("clusterIPs") and ip == old_ip:
        spec["clusterIPs"] = list(old_ips)
    if ip != old_ip and (spec.get("clusterIPs") or []) == old_ips:
        if ip:
            spec["clusterIPs"] = [ip]
        else:
            spec.pop("clusterIPs", None)


def _needs_external_traffic_policy(spec: Obj) -> bool:
    """needsExternalTrafficPolicy: a NodePort or LoadBalancer Service (in 1.28, not a ClusterIP one with
    externalIPs)."""
    return spec.get("type") in ("LoadBalancer", "NodePort")


def _needs_cluster_ip(spec: Obj) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _needs_node_ports(spec: Obj) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or (kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True))


def _needs_health_check_port(spec: Obj) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _carry_allocations(spec: Obj, old: Obj) -> None:
    if _needs_cluster_ip(old) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    _normalize_cluster_ips(spec, old)
    if not _needs_cluster_ip(spec) and _needs_cluster_ip(old):
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if spec.get(key) == old.get(key):
                spec.pop(key, None)
    if _needs_node_ports(old) and _needs_node_ports(spec):
        taken = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old.get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort") and taken.get((port.get("port"), port.get("protocol"))):
                port["nodePort"] = taken[(port.get("port"), port.get("protocol"))]
    elif _needs_node_ports(old) and not _needs_node_ports(spec):
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old.get("ports") or []}
        for port in spec.get("ports") or []:
            if port.get("nodePort") and port["nodePort"] == old_ports.get((port.get("port"), port.get("protocol"))):
                port.pop("nodePort")
    if _needs_health_check_port(old) and _needs_health_check_port(spec):
        if not spec.get("healthCheckNodePort") and old.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old["healthCheckNodePort"]
    elif not _needs_health_check_port(spec) and spec.get("healthCheckNodePort") == old.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if (_needs_external_traffic_policy(old) and not _needs_external_traffic_policy(spec)
            and spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")):
        spec.pop("externalTrafficPolicy", None)  # unchanged, for a type that takes none


# --- validation --------------------------------------------------------------------------------------------------


def validate_service(obj: Obj, old: Obj | None) -> list[FieldError]:
    """The ValidateService and ValidateServiceUpdate rules users hit most."""
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    kind = spec.get("type", "")
    if kind not in SERVICE_TYPES:
        errs.append(FieldError.not_supported("spec.type", kind, SERVICE_TYPES))
    headless = spec.get("clusterIP") == "None"
    ports = spec.get("ports") or []
    if not ports and not headless and kind != "ExternalName":
        errs.append(FieldError.required("spec.ports"))
    seen_names: set[str] = set()
    for index, port in enumerate(ports):
        here = f"spec.ports[{index}]"
        name = port.get("name", "")
        if len(ports) > 1 and not name:
            errs.append(FieldError.required(f"{here}.name"))
        elif name:
            errs.extend(podspec.unique_label(name, f"{here}.name", seen_names))
        errs.extend(_port_and_protocol(port, here))
        target = port.get("targetPort")
        if isinstance(target, int) and not 1 <= target <= 65535:
            errs.append(FieldError.invalid(f"{here}.targetPort", target, podspec.PORT_RANGE))
        elif isinstance(target, str):
            errs.extend(FieldError.invalid(f"{here}.targetPort", target, m) for m in podspec.port_name_problems(target))
        protocol = port.get("appProtocol")
        if isinstance(protocol, str):
            errs.extend(FieldError.invalid(f"{here}.appProtocol", protocol, m)
                        for m in names.is_qualified_name(protocol))
    affinity = spec.get("sessionAffinity", "")
    if affinity not in SESSION_AFFINITIES:
        errs.append(FieldError.not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES))
    timeout = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds")
    if affinity == "ClientIP" and isinstance(timeout, int) and not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT:
        errs.append(FieldError.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                                       f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}"))
    errs.extend(_port_conflicts(ports, kind))
    errs.extend(names.validate_labels(spec.get("selector") or {}, "spec.selector"))
    if kind == "ExternalName":
        external = spec.get("externalName", "")
        if not external:
            errs.append(FieldError.required("spec.externalName"))
        else:
            errs.extend(FieldError.invalid("spec.externalName", external, m)
                        for m in names.is_dns1123_subdomain(external.removesuffix(".")))
    for index, ip in enumerate(spec.get("clusterIPs") or []):
        if ip != "None" and not _is_ip(ip):
            errs.append(FieldError.invalid(f"spec.clusterIPs[{index}]", ip, IP_EXAMPLE))
    ips = spec.get("clusterIPs") or []
    if spec.get("clusterIP") and ips and ips[0] != spec["clusterIP"]:
        errs.append(FieldError.invalid("spec.clusterIPs", _go_strings(ips), "first value must match `clusterIP`"))
    for index, ip in enumerate(spec.get("externalIPs") or []):
        errs.extend(_external_ip_errors(str(ip), f"spec.externalIPs[{index}]"))
    ranges = spec.get("loadBalancerSourceRanges") or []
    if ranges:  # (kube's own path has a capital L)
        if kind != "LoadBalancer":
            errs.append(FieldError.forbidden("spec.LoadBalancerSourceRanges",
                                             "may only be used when `type` is 'LoadBalancer'"))
        if not all(is_cidr(str(r).strip()) for r in ranges):
            shown = "[" + " ".join(str(r) for r in ranges) + "]"  # fmt's %v of a []string
            errs.append(FieldError.invalid("spec.LoadBalancerSourceRanges", shown,
                                           "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "))
    policy = spec.get("externalTrafficPolicy") or ""
    if not _needs_external_traffic_policy(spec) and policy:
        errs.append(FieldError.invalid("spec.externalTrafficPolicy", policy,
                                       "may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
    if old is not None:
        errs.extend(_immutable_cluster_ips(spec, old.get("spec") or {}))
    return errs


MAX_CLIENT_IP_TIMEOUT = 86400  # core.MaxClientIPServiceAffinitySeconds
IP_FAMILIES = ("IPv4", "IPv6")


def _external_ip_errors(ip: str, path: str) -> list[FieldError]:
    """IsValidIP, else ValidateNonSpecialIP."""
    if not podspec.is_ip_sloppy(ip):
        return [FieldError.invalid(path, ip, IP_EXAMPLE)]
    return _non_special_ip_errors(ip, path)


def _non_special_ip_errors(ip: str, path: str) -> list[FieldError]:
    """ValidateNonSpecialIP: an address, and none a node-local or unspecified one."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        if podspec.is_ip_sloppy(ip):
            return []
        return [FieldError.invalid(path, ip, "must be a valid IP address")]
    errs: list[FieldError] = []
    if address.is_unspecified:
        errs.append(FieldError.invalid(path, ip, f"may not be unspecified ({ip})"))
    if address.is_loopback:
        errs.append(FieldError.invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if address.is_link_local and not address.is_multicast:
        errs.append(FieldError.invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if address in _LINK_LOCAL_MULTICAST_V4 or address in _LINK_LOCAL_MULTICAST_V6:
        errs.append(FieldError.invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, "
                                                 "ff02::/10)"))
    return errs


_LINK_LOCAL_MULTICAST_V4 = ipaddress.ip_network("224.0.0.0/24")
_LINK_LOCAL_MULTICAST_V6 = ipaddress.ip_network("ff02::/16")  # Go's IsLinkLocalMulticast: ff02::/16


def _port_conflicts(ports: list[Obj], kind: str) -> list[FieldError]:
    """ValidateService's checks across ports, in its order: node ports a ClusterIP Service may not have, a node port
    used twice for one protocol, then a port used twice for one protocol. kube allocates node ports before it
    validates, and one node port asked for two port numbers fails there ("provided port is already allocated",
    Allocator.admit here): validation only meets a node port that two entries of one port number and protocol
    share."""
    errs: list[FieldError] = []
    if kind == "ClusterIP":
        errs.extend(FieldError.forbidden(f"spec.ports[{index}].nodePort", "may not be used when `type` is 'ClusterIP'")
                    for index, port in enumerate(ports) if port.get("nodePort"))
    node_ports: dict[tuple[Any, Any], Any] = {}  # (protocol, node port) -> the port number that took it
    for index, port in enumerate(ports):
        if port.get("nodePort"):
            key = (port.get("protocol", ""), port["nodePort"])
            if node_ports.get(key, port.get("port")) == port.get("port") and key in node_ports:
                errs.append(FieldError.duplicate(f"spec.ports[{index}].nodePort", port["nodePort"]))
            node_ports.setdefault(key, port.get("port"))
    seen: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        number, protocol = port.get("port", 0), port.get("protocol", "")
        if (number, protocol) in seen:
            errs.append(FieldError.duplicate(f"spec.ports[{index}]", GoValue(
                f'core.ServicePort{{Name:"", Protocol:"{protocol}", AppProtocol:(*string)(nil), Port:{number}, '
                'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')))
        seen.add((number, protocol))
    return errs


def _immutable_cluster_ips(spec: Obj, old: Obj) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs: an allocated cluster IP may not change (but ExternalName moves)."""
    if not _needs_cluster_ip(spec) or not _needs_cluster_ip(old):
        return []
    new_ips, old_ips = spec.get("clusterIPs") or [], old.get("clusterIPs") or []
    errs = []
    for index, ip in enumerate(old_ips[: len(new_ips)] if len(new_ips) != len(old_ips) else old_ips):
        if ip != new_ips[index]:
            errs.append(FieldError.invalid(f"spec.clusterIPs[{index}]", _go_strings(new_ips),
                                           "may not change once set"))
    return errs


def _go_strings(values: Iterable[str]) -> GoValue:
    return names.go_string_slice(list(values))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


# --- allocation --------------------------------------------------------------------------------------------------


@dataclass
class Allocator:
    """Cluster IPs from one range and node ports from NODE_PORTS, derived from the stored Services and the
    store's reservation records (see the module docstring). One per core."""

    cidr: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE
    records: dict[str, Reservations] = field(default_factory=dict)  # by kind ("ip", "port"), made on first use

    def __post_init__(self) -> None:
        self.network = ipaddress.ip_network(self.cidr, strict=False)
        self.family = "IPv4" if self.network.version == 4 else "IPv6"
        # The bitmap allocator hands out base+1 .. broadcast-1; dynamic allocations prefer the upper band
        # (ServiceIPStaticSubrange), leaving the lowest addresses to requested ones such as the first.
        self.size = max(self.network.num_addresses - 2, 0)
        self.static_band = min(max(16, self.size // 16), 256)
        self.port_band = min(max(16, len(NODE_PORTS) // 32), 128)

    @property
    def first_ip(self) -> str:
        """The `kubernetes` Service's address: the range's first usable one."""
        return str(self.network.network_address + 1)

    async def admit(self, ctx: Context, obj: Obj, old: Obj | None, dry_run: bool) -> None:
        """Allocate what the Service needs and check what it requests (422 with kube's words when taken or out
        of range); the allocations are reserved in the store's records until the Service is stored (a dry run
        reserves nothing). A record that changed meanwhile means another allocation won: all over again."""
        name = meta.meta(obj).get("name", "")
        own = SERVICES.key(meta.meta(obj).get("namespace", ""), name).decode()
        old_spec = (old or {}).get("spec") or {}
        asked = copy.deepcopy(obj.get("spec") or {})
        for _ in range(ATTEMPTS):
            spec = obj["spec"] = copy.deepcopy(asked)
            records = {kind: await self._record(ctx, kind).read() for kind in ("ip", "port")}
            stored = await self._stored(ctx, own, updating=old is not None)
            kept = {kind: self.records[kind].blocking(records[kind], stored[kind]) for kind in records}
            ips = {str(ip) for values in stored["ip"].values() for ip in values} | {e.value for e in kept["ip"]}
            ports = {int(p) for values in stored["port"].values() for p in values} | {e.value for e in kept["port"]}
            taken: dict[str, list[Any]] = {"ip": [], "port": []}
            # a dry-run create allocates as kube's dry-run allocators do: nothing is looked for (below)
            trial = dry_run and old is None
            if _needs_cluster_ip(spec):
                self._cluster_ip(spec, old_spec, ips, name, taken["ip"], trial=trial)
            if (_needs_node_ports(spec) or _needs_health_check_port(spec)) and trial:
                _trial_node_ports(spec, ports, name)
            elif _needs_node_ports(spec) or _needs_health_check_port(spec):
                self._node_ports(spec, old_spec, ports, name, taken["port"])
            try:
                for kind in ("ip", "port"):
                    if taken[kind] and not dry_run:
                        await self.records[kind].write(records[kind], kept[kind], own, taken[kind])
            except Conflict:
                continue
            retype(SCHEMA, obj)
            return
        raise exhausted("serviceIP" if _needs_cluster_ip(asked) else "nodePort")

    def _record(self, ctx: Context, kind: str) -> Reservations:
        if kind not in self.records:
            self.records[kind] = Reservations(ctx.store, kind)
        return self.records[kind]

    async def _stored(self, ctx: Context, own: str, *, updating: bool) -> dict[str, dict[str, set[Any]]]:
        """Addresses ("ip") and ports ("port") of the stored Services by key, but the one being updated."""
        stored: dict[str, dict[str, set[Any]]] = {"ip": {}, "port": {}}
        start = b""
        prefix = SERVICES.key_prefix()
        while True:
            page = await store_call(ctx.store.list(prefix, start_after=start or None, limit=500))
            for kv in page.kvs:
                key = kv.key.decode()
                if updating and key == own:
                    continue
                spec = render.load(kv.value).get("spec") or {}
                stored["ip"][key] = {ip for ip in spec.get("clusterIPs") or [] if ip != "None"}
                stored["port"][key] = set(_node_ports_of(spec))
            if not page.kvs or not page.remaining:
                break
            start = page.kvs[-1].key
        return stored

    def _cluster_ip(self, spec: Obj, old: Obj, used: set[str], name: str, taken: list[Any], *, trial: bool) -> None:
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        requested = (spec.get("clusterIPs") or [spec.get("clusterIP") or ""])[0]
        if requested == "None":
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            families = spec.setdefault("ipFamilies", [self.family])
            if not spec.get("selector") and spec["ipFamilyPolicy"] != "SingleStack" and len(families) < 2:
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            return
        if spec["ipFamilyPolicy"] == "RequireDualStack":
            raise _invalid(name, [FieldError.invalid("spec.ipFamilyPolicy", "RequireDualStack",
                                                     "this cluster is not configured for dual-stack services")])
        for index, family in enumerate(spec.get("ipFamilies") or []):
            if family not in IP_FAMILIES:  # ValidateService's answer, which kube gives before allocating
                raise _invalid(name, [FieldError.not_supported(f"spec.ipFamilies[{index}]", family, IP_FAMILIES)])
            if family != self.family:
                raise _invalid(name, [FieldError.invalid(f"spec.ipFamilies[{index}]", family,
                                                         "not configured on this cluster")])
        spec["ipFamilies"] = [self.family]
        if requested and requested in (old.get("clusterIPs") or []):
            ip = requested  # kept from before: already this Service's
        elif requested:  # a trial checks the range only, as kube's dry-run allocator does
            ip = self._request_ip(requested, spec, set() if trial else used, name)
        elif trial:  # kube's dry-run allocator answers the range's own address rather than look for a free one
            ip = str(self.network.network_address)
        else:
            ip = self._next_ip(used)
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        taken.append(ip)

    def _request_ip(self, requested: str, spec: Obj, used: set[str], name: str) -> str:
        try:
            address = ipaddress.ip_address(requested)
        except ValueError:
            return requested  # validation reports it
        ips = _go_strings(spec.get("clusterIPs") or [requested])
        first, last = self.network.network_address + 1, self.network.network_address + self.size
        if address.version != self.network.version or not first <= address <= last:  # type: ignore[operator]
            detail = (f"failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. "
                      f"The range of valid IPs is {self.network}")
            raise _invalid(name, [FieldError.invalid("spec.clusterIPs", ips, detail)])
        if str(address) in used:
            detail = f"failed to allocate IP {requested}: provided IP is already allocated"
            raise _invalid(name, [FieldError.invalid("spec.clusterIPs", ips, detail)])
        return str(address)

    def _next_ip(self, used: set[str]) -> str:
        base = self.network.network_address + 1
        band = self.static_band if self.size > self.static_band else 0
        for low, high in ((band, self.size), (0, band)):
            offset = _free_offset(low, high, lambda i: str(base + i) not in used)
            if offset is not None:
                return str(base + offset)
        raise errors.internal("failed to allocate a serviceIP: range is full")

    def _node_ports(self, spec: Obj, old: Obj, used: set[int], name: str, reserved: list[Any]) -> None:
        mine = set(_node_ports_of(old))
        taken: dict[int, tuple[Any, Any]] = {}
        wanted = [p for p in spec.get("ports") or []] if _needs_node_ports(spec) else []
        for index, port in enumerate(wanted):
            number = port.get("nodePort")
            if not number:
                continue
            key = (port.get("port"), port.get("protocol"))
            path = f"spec.ports[{index}].nodePort"
            if number in taken:
                if taken[number][1] != key[1]:
                    continue  # one node port serves a port number over several protocols
                raise _port_taken(name, path, number)
            self._request_port(number, path, used, mine, name)
            taken[number] = key
            reserved.append(number)
        for port in wanted:
            if not port.get("nodePort"):
                same = next((n for n, k in taken.items() if k[0] == port.get("port")), None)
                port["nodePort"] = same if same is not None else self._next_port(used | set(taken))
                taken[port["nodePort"]] = (port.get("port"), port.get("protocol"))
                reserved.append(port["nodePort"])
        if _needs_health_check_port(spec):
            number = spec.get("healthCheckNodePort")
            if number:
                self._request_port(number, "spec.healthCheckNodePort", used | set(taken), mine, name)
            else:
                spec["healthCheckNodePort"] = number = self._next_port(used | set(taken))
            reserved.append(number)

    def _request_port(self, number: int, path: str, used: set[int], mine: set[int], name: str) -> None:
        if number not in NODE_PORTS:
            detail = (f"provided port is not in the valid range. The range of valid ports is "
                      f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}")
            raise _invalid(name, [FieldError.invalid(path, number, detail)])
        if number in used and number not in mine:
            raise _port_taken(name, path, number)

    def _next_port(self, used: set[int]) -> int:
        for low, high in ((self.port_band, len(NODE_PORTS)), (0, self.port_band)):
            offset = _free_offset(low, high, lambda i: NODE_PORTS.start + i not in used)
            if offset is not None:
                return NODE_PORTS.start + offset
        raise errors.internal("failed to allocate a nodePort: range is full")


TRIAL_FIRST_PORT = 32769  # what kube's dry-run port allocation answers first (PortAllocationOperation.AllocateNext)


def _trial_node_ports(spec: Obj, used: set[int], name: str) -> None:
    """A dry-run create's node ports, as kube's dry-run PortAllocationOperation gives them, port by port: a
    requested one is refused only when taken (its range is not checked), and each one asked for is the highest
    of this request's so far plus one, from 32769 (kube looks for no free one)."""
    allocated: list[int] = []

    def take(number: int, path: str) -> int:
        if number in used or number in allocated:
            raise _port_taken(name, path, number)
        allocated.append(number)
        return number

    def take_next() -> int:
        number = max(allocated) + 1 if allocated else TRIAL_FIRST_PORT
        allocated.append(number)
        return number

    wanted = [p for p in spec.get("ports") or []] if _needs_node_ports(spec) else []
    by_port: dict[Any, int] = {}
    for index, port in enumerate(wanted):
        given = by_port.get(port.get("port"))
        if given is None:  # initNodePorts: the first node port asked for this port number, else the next one
            asked = next((p["nodePort"] for p in wanted if p.get("port") == port.get("port") and p.get("nodePort")), 0)
            given = take(asked, f"spec.ports[{index}].nodePort") if asked else take_next()
            by_port[port.get("port")] = given
        port["nodePort"] = port.get("nodePort") or given
    if _needs_health_check_port(spec):
        number = spec.get("healthCheckNodePort")
        spec["healthCheckNodePort"] = take(number, "spec.healthCheckNodePort") if number else take_next()


def _free_offset(low: int, high: int, free: Any) -> int | None:
    """A free offset in [low, high): the first from a random start, wrapping around (the bitmap allocator's
    random scan)."""
    if high <= low:
        return None
    start = random.randrange(low, high)
    for offset in itertools.chain(range(start, high), range(low, start)):  # lazily: a /12 holds a million
        if free(offset):
            return offset
    return None


def _node_ports_of(spec: Obj) -> Iterable[int]:
    for port in spec.get("ports") or []:
        if port.get("nodePort"):
            yield int(port["nodePort"])
    if spec.get("healthCheckNodePort"):
        yield int(spec["healthCheckNodePort"])


def _port_taken(name: str, path: str, number: int) -> errors.ApiError:
    """The allocator's refusal of a node port that is already someone's (ErrAllocated)."""
    return _invalid(name, [FieldError.invalid(path, number, "provided port is already allocated")])


def _invalid(name: str, errs: list[FieldError]) -> errors.ApiError:
    causes = [errors.Cause(c["reason"], c.get("message", ""), c.get("field", "")) for c in (e.cause() for e in errs)]
    return errors.invalid("Service", "", name, names.join_errors(errs), causes)


# --- Endpoints ---------------------------------------------------------------------------------------------------

ENDPOINTS_SCHEMA = ProtoSchema(core_v1.Endpoints)


def default_endpoints(obj: Obj) -> None:
    """SetDefaults_Endpoints: every port's protocol is TCP unless given."""
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or []:
            port.setdefault("protocol", "TCP")
    retype(ENDPOINTS_SCHEMA, obj)


def validate_endpoints(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for s, subset in enumerate(obj.get("subsets") or []):
        for field_name in ("addresses", "notReadyAddresses"):
            for a, address in enumerate(subset.get(field_name) or []):
                errs.extend(_endpoint_address_errors(address, f"subsets[{s}].{field_name}[{a}]"))
        ports = subset.get("ports") or []
        for p, port in enumerate(ports):
            here = f"subsets[{s}].ports[{p}]"
            if len(ports) > 1 and not port.get("name"):
                errs.append(FieldError.required(f"{here}.name"))
            errs.extend(_port_and_protocol(port, here))
    return errs


def _endpoint_address_errors(address: Obj, path: str) -> list[FieldError]:
    """validateEndpointAddress: IsValidIP, the hostname a DNS label, the node name a node's, then
    ValidateNonSpecialIP (so an address that is no IP is told twice, as kube tells it)."""
    ip = str(address.get("ip", ""))
    errs = [] if podspec.is_ip_sloppy(ip) else [FieldError.invalid(f"{path}.ip", ip, IP_EXAMPLE)]
    hostname = address.get("hostname")
    if hostname:
        errs.extend(FieldError.invalid(f"{path}.hostname", hostname, problem)
                    for problem in names.is_dns1123_label(str(hostname)))
    node = address.get("nodeName")
    if node is not None:
        errs.extend(FieldError.invalid(f"{path}.nodeName", node, problem)
                    for problem in names.name_is_dns_subdomain(str(node), False))
    return errs + _non_special_ip_errors(ip, f"{path}.ip")


TOPOLOGY_HINTS, TOPOLOGY_MODE = "service.kubernetes.io/topology-aware-hints", "service.kubernetes.io/topology-mode"


def _ipv6_form(address: str) -> str | None:
    """An IPv6 address in RFC 5952 form (netip.Addr.String), None for anything else; addresses with an embedded
    IPv4 part or a zone are left alone."""
    if "." in address or "%" in address:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return ip.compressed if ip.version == 6 else None


def _ip_warnings(path: str, address: object) -> list[str]:
    canonical = _ipv6_form(address) if isinstance(address, str) else None
    if canonical is None or canonical == address:
        return []
    return [f"{path}: IPv6 address {names.go_quote(str(address))} is not in RFC 5952 canonical format "
            f"({names.go_quote(canonical)}), which may cause controller apply-loops"]


def _cidr_warnings(path: str, cidr: object) -> list[str]:
    if not isinstance(cidr, str) or cidr.count("/") != 1:
        return []
    address, bits = cidr.split("/")
    canonical = _ipv6_form(address)
    if canonical is None or not bits.isdigit() or f"{canonical}/{int(bits)}" == cidr:
        return []
    return [f"{path}: IPv6 prefix {names.go_quote(cidr)} is not in RFC 5952 canonical format "
            f"({names.go_quote(f'{canonical}/{int(bits)}')}), which may cause controller apply-loops"]


def service_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """svcStrategy.WarningsOnCreate/OnUpdate (GetWarningsForService), on every write: the deprecated topology
    hints annotation; IPv6 cluster, external and load balancer IPs and source ranges not in RFC 5952 form;
    externalIPs of an ExternalName Service and externalName of another, which are ignored. Addresses Go's
    netip cannot parse at all are not warned of."""
    out: list[str] = []
    if TOPOLOGY_HINTS in (meta.meta(obj).get("annotations") or {}):
        out.append(f"annotation {TOPOLOGY_HINTS} is deprecated, please use {TOPOLOGY_MODE} instead")
    spec = obj.get("spec") or {}
    if spec.get("clusterIP") not in (None, "", "None"):
        for i, ip in enumerate(spec.get("clusterIPs") or []):
            out += _ip_warnings(f"spec.clusterIPs[{i}]", ip)
    for i, ip in enumerate(spec.get("externalIPs") or []):
        out += _ip_warnings(f"spec.externalIPs[{i}]", ip)
    if spec.get("loadBalancerIP"):
        out += _ip_warnings("spec.loadBalancerIP", spec["loadBalancerIP"])
    for i, cidr in enumerate(spec.get("loadBalancerSourceRanges") or []):
        out += _cidr_warnings(f"spec.loadBalancerSourceRanges[{i}]", cidr)
    external_name = spec.get("type") == "ExternalName"
    if external_name and spec.get("externalIPs"):
        out.append('spec.externalIPs is ignored when spec.type is "ExternalName"')
    if not external_name and spec.get("externalName"):
        out.append('spec.externalName is ignored when spec.type is not "ExternalName"')
    return out


SERVICES = Resource(
    group="", version="v1", resource="services", kind="Service", singular="service", namespaced=True,
    schema=SCHEMA,
    short_names=("svc",),
    categories=("all",),
    subresources=(Subresource("status", "Service", ("get", "patch", "update"), ("status",), metadata_reset=()),
                  replace(proxy.SERVICE_PROXY, handlers=Handlers(connect=proxy.service))),
    strategy=(_SERVICE_STRATEGY := Declared(
        name_rule=names.name_is_dns1035_label, returns_deleted_object=True, defaults=default_service,
        prepare=prepare_service, validation=validate_service, warnings=service_warnings,
    )),
)

ENDPOINTS = Resource(
    group="", version="v1", resource="endpoints", kind="Endpoints", singular="endpoints", namespaced=True,
    schema=ENDPOINTS_SCHEMA,
    short_names=("ep",),
    strategy=Declared(defaults=default_endpoints, validation=validate_endpoints),
)


def services(service_cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE) -> tuple[Resource, Allocator]:
    """The services resource allocating from `service_cluster_ip_range` (ValueError for a bad range), and its
    allocator. Every core gets its own."""
    allocator = Allocator(service_cluster_ip_range)
    return replace(SERVICES, strategy=replace(_SERVICE_STRATEGY, own_admission=allocator.admit)), allocator


def _port_and_protocol(port: Obj, here: str) -> list[FieldError]:
    """A port number in range and a supported protocol (Service and Endpoints ports alike)."""
    errs: list[FieldError] = []
    number = port.get("port", 0)
    if not 1 <= number <= 65535:
        errs.append(FieldError.invalid(f"{here}.port", number, podspec.PORT_RANGE))
    protocol = port.get("protocol", "")
    if protocol not in podspec.PROTOCOLS:
        errs.append(FieldError.not_supported(f"{here}.protocol", protocol, podspec.PROTOCOLS))
    return errs
