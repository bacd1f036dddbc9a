"""networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy: registry entries, defaults and validation, as
kube-apiserver's (pkg/apis/networking/v1/defaults.go, pkg/apis/networking/validation, pkg/registry/networking).

An Ingress needs a default backend or rules; every path names its pathType, and a backend is a Service port
(by name or number) or another resource, never both:

    spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified

A new Ingress starts with an empty status (printed {"loadBalancer": {}}), which its controller writes through
/status. A NetworkPolicy without policyTypes gets ["Ingress"], plus "Egress" when it has egress rules.
"""

from __future__ import annotations

import ipaddress
import re

from capstan.api.networking.v1 import networking_pb2
from server.kinds.podspec import port_name_problems
from server.kinds.templates import get
from server.machinery.crdschema.formats import is_cidr
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "networking.k8s.io"
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
PROTOCOLS = ("TCP", "UDP", "SCTP")
POLICY_TYPES = ("Ingress", "Egress")
SCOPES = ("Cluster", "Namespace")
MAX_CONTROLLER_LENGTH = 250
HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
HTTP_PATH = re.compile(HTTP_PATH_FMT)
WILDCARD_DNS1123_SUBDOMAIN = re.compile(r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
WILDCARD_MESSAGE = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which "
                    "must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric "
                    "character")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _host_problems(host: str) -> list[str]:
    """IsWildcardDNS1123Subdomain for hosts with a '*', else IsDNS1123Subdomain."""
    if "*" not in host:
        return names.is_dns1123_subdomain(host)
    problems = []
    if len(host) > names.DNS1123_SUBDOMAIN_MAX_LENGTH:
        problems.append(f"must be no more than {names.DNS1123_SUBDOMAIN_MAX_LENGTH} characters")
    if not WILDCARD_DNS1123_SUBDOMAIN.fullmatch(host):
        problems.append(names.regex_error(WILDCARD_MESSAGE, WILDCARD_DNS1123_SUBDOMAIN.pattern, "*.example.com"))
    return problems


# -- Ingress -------------------------------------------------------------------------------------------------------


def prepare_ingress(obj: Obj, old: Obj | None) -> None:
    """ingressStrategy.PrepareForCreate: a new Ingress has no status (Go prints its empty loadBalancer)."""
    if old is None:
        obj["status"] = {"loadBalancer": {}}


def _backend_errors(backend: object, path: str) -> list[FieldError]:
    """validateIngressBackend: a service (a DNS-1035 name and one port) or a resource, exactly one."""
    backend = backend if isinstance(backend, dict) else {}
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [FieldError.invalid(path, "", "cannot set both resource and service backends")]
    if isinstance(resource, dict):
        errs: list[FieldError] = []
        for field in ("kind", "name"):
            if not resource.get(field):
                errs.append(FieldError.required(f"{path}.resource.{field}"))
        return errs
    if not isinstance(service, dict):
        return [FieldError.invalid(path, "", "resource or service backend is required")]
    name = service.get("name", "")
    errs = [FieldError.invalid(f"{path}.service.name", name, m) for m in names.is_dns1035_label(name)]
    port = service.get("port") or {}
    port_name, number = port.get("name", ""), port.get("number", 0)
    port_path = f"{path}.service.port"
    if port_name and number:  # at the backend itself, as kube reports both
        errs.append(FieldError.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [FieldError.invalid(f"{port_path}.name", port_name, m) for m in port_name_problems(port_name)]
    elif number:
        if not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{port_path}.number", number, "must be between 1 and 65535, inclusive"))
    else:
        errs.append(FieldError.required(path, "port name or number is required"))
    return errs


def _http_path_errors(http_path: Obj, path: str) -> list[FieldError]:
    """validateHTTPIngressPath."""
    path_type = http_path.get("pathType")
    if path_type is None:
        return [FieldError.required(f"{path}.pathType", "pathType must be specified")]
    value = http_path.get("path", "")
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", value, "must be an absolute path"))
        if value:
            errs += [FieldError.invalid(f"{path}.path", value, f"must not contain '{seq}'")
                     for seq in INVALID_PATH_SEQUENCES if seq in value]
            errs += [FieldError.invalid(f"{path}.path", value, f"cannot end with '{suffix}'")
                     for suffix in INVALID_PATH_SUFFIXES if value.endswith(suffix)]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(FieldError.not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    return errs + _backend_errors(http_path.get("backend"), f"{path}.backend")


def _rule_errors(rules: list[object]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        at = f"spec.rules[{i}]"
        host = rule.get("host", "")
        if host:
            if _is_ip(host):
                errs.append(FieldError.invalid(f"{at}.host", host, "must be a DNS name, not an IP address"))
            errs += [FieldError.invalid(f"{at}.host", host, m) for m in _host_problems(host)]
        http = rule.get("http")
        if isinstance(http, dict):
            paths = http.get("paths") or []
            if not paths:
                errs.append(FieldError.required(f"{at}.http.paths"))
            for j, http_path in enumerate(paths):
                if isinstance(http_path, dict):
                    errs += _http_path_errors(http_path, f"{at}.http.paths[{j}]")
    return errs


def _tls_errors(tls: list[object]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(tls):
        if not isinstance(entry, dict):
            continue
        for j, host in enumerate(entry.get("hosts") or []):
            errs += [FieldError.invalid(f"spec.tls[{i}].hosts[{j}]", host, m) for m in _host_problems(host)]
        secret = entry.get("secretName", "")
        if secret:
            errs += [FieldError.invalid(f"spec.tls[{i}].secretName", secret, m)
                     for m in names.is_dns1123_subdomain(secret)]
    return errs


def validate_ingress(obj: Obj, old: Obj | None) -> list[FieldError]:
    """validateIngressSpec (create and update alike)."""
    spec: Obj = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    rules = spec.get("rules") or []
    errs: list[FieldError] = []
    if spec.get("defaultBackend") is not None:
        errs += _backend_errors(spec["defaultBackend"], "spec.defaultBackend")
    elif not rules:
        errs.append(FieldError.invalid("spec", names.GoValue("[]networking.IngressRule(nil)"),
                                       "either `defaultBackend` or `rules` must be specified"))
    errs += _rule_errors(rules) + _tls_errors(spec.get("tls") or [])
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += [FieldError.invalid("spec.ingressClassName", class_name, m)
                 for m in names.is_dns1123_subdomain(class_name)]
    return errs


# -- IngressClass --------------------------------------------------------------------------------------------------


def default_ingress_class(obj: Obj) -> None:
    """SetDefaults_IngressClass: parameters are cluster-scoped unless they say otherwise."""
    parameters = get(obj, "spec", "parameters")
    if isinstance(parameters, dict):
        parameters.setdefault("scope", "Cluster")


def _domain_prefixed_path_errors(value: str, path: str) -> list[FieldError]:
    """IsDomainPrefixedPath."""
    host, _, rest = value.partition("/")
    if not host or not rest:
        return [FieldError.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [FieldError.invalid(path, host, m) for m in names.is_dns1123_subdomain(host)]
    if not HTTP_PATH.fullmatch(rest):
        errs.append(FieldError.invalid(path, rest, names.regex_error("Invalid path", HTTP_PATH_FMT)))
    return errs


def _parameters_errors(parameters: Obj) -> list[FieldError]:
    """validateIngressClassParametersReference."""
    at = "spec.parameters"
    errs: list[FieldError] = []
    for field in ("kind", "name"):
        if not parameters.get(field):
            errs.append(FieldError.required(f"{at}.{field}"))
    scope, namespace = parameters.get("scope"), parameters.get("namespace")
    if scope is None:
        errs.append(FieldError.required(f"{at}.scope"))
    elif scope not in SCOPES:
        errs.append(FieldError.not_supported(f"{at}.scope", scope, SCOPES))
    elif scope == "Namespace":
        if not namespace:
            errs.append(FieldError.required(f"{at}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            errs += [FieldError.invalid(f"{at}.namespace", namespace, m) for m in names.is_dns1123_label(namespace)]
    elif namespace is not None:
        errs.append(FieldError.forbidden(f"{at}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


def validate_ingress_class(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateIngressClass(Update): a domain-prefixed controller that never changes, and its parameters."""
    controller = get(obj, "spec", "controller") or ""
    errs: list[FieldError] = []
    if len(controller) > MAX_CONTROLLER_LENGTH:
        errs.append(FieldError.too_long("spec.controller", MAX_CONTROLLER_LENGTH))
    errs += _domain_prefixed_path_errors(controller, "spec.controller")
    parameters = get(obj, "spec", "parameters")
    if isinstance(parameters, dict):
        errs += _parameters_errors(parameters)
    if old is not None and controller != (get(old, "spec", "controller") or ""):
        errs.append(FieldError.invalid("spec.controller", controller, "field is immutable"))
    return errs


# -- NetworkPolicy -------------------------------------------------------------------------------------------------


def default_network_policy(obj: Obj) -> None:
    """SetDefaults_NetworkPolicy and SetDefaults_NetworkPolicyPort."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule.get("ports") or []) if isinstance(rule, dict) else []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def _policy_port_errors(port: Obj, path: str) -> list[FieldError]:
    """ValidateNetworkPolicyPort."""
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errs.append(FieldError.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    value, end = port.get("port"), port.get("endPort")
    if isinstance(value, int):
        if not 1 <= value <= 65535:
            errs.append(FieldError.invalid(f"{path}.port", value, "must be between 1 and 65535, inclusive"))
        if isinstance(end, int):
            if end < value:
                errs.append(FieldError.invalid(f"{path}.endPort", value, "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                errs.append(FieldError.invalid(f"{path}.endPort", end, "must be between 1 and 65535, inclusive"))
    elif isinstance(value, str):
        if end is not None:
            errs.append(FieldError.invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs += [FieldError.invalid(f"{path}.port", value, m) for m in port_name_problems(value)]
    elif end is not None:
        errs.append(FieldError.invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    return errs


def _ip_block_errors(block: Obj, path: str) -> list[FieldError]:
    """ValidateIPBlock (1.28): a CIDR, and exceptions strictly inside it; the first exception that is no CIDR
    ends the check."""
    cidr = block.get("cidr", "")
    if not cidr:
        return [FieldError.required(f"{path}.cidr")]
    if not is_cidr(str(cidr)):
        return [FieldError.invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    network = ipaddress.ip_network(cidr, strict=False)
    errs: list[FieldError] = []
    for i, text in enumerate(block.get("except") or []):
        at = f"{path}.except[{i}]"
        if not is_cidr(str(text)):
            errs.append(FieldError.invalid(at, text, "not a valid CIDR"))
            return errs
        excepted = ipaddress.ip_network(text, strict=False)
        if (excepted.version != network.version or not excepted.subnet_of(network)  # type: ignore[arg-type]
                or excepted.prefixlen <= network.prefixlen):
            errs.append(FieldError.invalid(at, text, "must be a strict subset of `cidr`"))
    return errs


def _peer_errors(peer: Obj, path: str) -> list[FieldError]:
    """ValidateNetworkPolicyPeer."""
    errs: list[FieldError] = []
    count = 0
    for field in ("podSelector", "namespaceSelector"):
        selector = peer.get(field)
        if isinstance(selector, dict):
            count += 1
            errs += labels.validate_label_selector(selector, f"{path}.{field}")
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        count += 1
        errs += _ip_block_errors(block, f"{path}.ipBlock")
    if count == 0:
        errs.append(FieldError.required(path, "must specify a peer"))
    elif isinstance(block, dict) and count > 1:
        errs.append(FieldError.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def validate_network_policy(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateNetworkPolicySpec."""
    spec: Obj = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    selector = spec.get("podSelector")
    errs = labels.validate_label_selector(selector if isinstance(selector, dict) else {}, "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            if not isinstance(rule, dict):
                continue
            at = f"spec.{direction}[{i}]"
            for j, port in enumerate(rule.get("ports") or []):
                if isinstance(port, dict):
                    errs += _policy_port_errors(port, f"{at}.ports[{j}]")
            for j, peer in enumerate(rule.get(peers) or []):
                if isinstance(peer, dict):
                    errs += _peer_errors(peer, f"{at}.{peers}[{j}]")
    policy_types = spec.get("policyTypes") or []
    for i, policy_type in enumerate(policy_types):
        if policy_type not in POLICY_TYPES:
            errs.append(FieldError.not_supported(f"spec.policyTypes[{i}]", policy_type, POLICY_TYPES))
    if len(policy_types) > len(POLICY_TYPES):
        errs.append(FieldError.invalid("spec.policyTypes", policy_types, "may not specify more than two policyTypes"))
    return errs


INGRESSES = Resource(
    group=GROUP, version="v1", resource="ingresses", kind="Ingress", singular="ingress", namespaced=True,
    schema=ProtoSchema(networking_pb2.Ingress), short_names=("ing",),
    # ingressStatusStrategy keeps the request's metadata and the stored spec.
    subresources=(Subresource("status", "Ingress", ("get", "patch", "update"), ("status",), metadata_reset=()),),
    strategy=Declared(tracks_generation=True, prepare=prepare_ingress, validation=validate_ingress),
)
INGRESS_CLASSES = Resource(
    group=GROUP, version="v1", resource="ingressclasses", kind="IngressClass", singular="ingressclass",
    namespaced=False, schema=ProtoSchema(networking_pb2.IngressClass),
    strategy=Declared(tracks_generation=True, defaults=default_ingress_class, validation=validate_ingress_class),
)
NETWORK_POLICIES = Resource(
    group=GROUP, version="v1", resource="networkpolicies", kind="NetworkPolicy", singular="networkpolicy",
    namespaced=True, schema=ProtoSchema(networking_pb2.NetworkPolicy), short_names=("netpol",),
    strategy=Declared(tracks_generation=True, defaults=default_network_policy, validation=validate_network_policy),
)

KINDS = (INGRESSES, INGRESS_CLASSES, NETWORK_POLICIES)
