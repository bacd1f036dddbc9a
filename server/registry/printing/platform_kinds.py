"""Table columns of the networking, policy, scheduling, node and discovery kinds, as kube-apiserver's printers
(pkg/printers/internalversion/printers.go: printPodDisruptionBudget, printIngress, printIngressClass,
printNetworkPolicy, printEndpointSlice, printPriorityClass, printRuntimeClass) print them.

Descriptions are the printers' own words or the SwaggerDoc text of the field they name, from the API version
the printer names (extensions/v1beta1 for NetworkPolicy, discovery/v1beta1 for EndpointSlice). The
RuntimeClass printer names ObjectMeta's "handler", which has no doc: its description is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.registry.printing.columns import AGE, NAME
from server.registry.printing.workloads import format_label_selector
from server.registry.strategy import Column

PDB_MIN_AVAILABLE_DESCRIPTION = "The minimum number of pods that must be available."
PDB_MAX_UNAVAILABLE_DESCRIPTION = "The maximum number of pods that may be unavailable."
PDB_ALLOWED_DISRUPTIONS_DESCRIPTION = "Calculated number of pods that may be disrupted at this time."
INGRESS_CLASS_DESCRIPTION = "The name of the IngressClass resource that should be used for additional configuration"
INGRESS_HOSTS_DESCRIPTION = "Hosts that incoming requests are matched against before the ingress rule"
INGRESS_ADDRESS_DESCRIPTION = "Address is a list containing ingress points for the load-balancer"
INGRESS_PORTS_DESCRIPTION = "Ports of TLS configurations that open"
INGRESS_CLASS_CONTROLLER_DESCRIPTION = "Controller that is responsible for handling this class"
INGRESS_CLASS_PARAMETERS_DESCRIPTION = "A reference to a resource with additional parameters"
# extensions/v1beta1 NetworkPolicySpec.
NETWORK_POLICY_POD_SELECTOR_DESCRIPTION = (
    "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any "
    "pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the "
    "ingress rules for each are combined additively. This field is NOT optional and follows standard label "
    "selector semantics. An empty podSelector matches all pods in this namespace.")
# discovery/v1beta1 EndpointSlice.
ENDPOINT_SLICE_ADDRESS_TYPE_DESCRIPTION = (
    "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be "
    "the same type. This field is immutable after creation. The following address types are currently supported: "
    "* IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified "
    "Domain Name.")
ENDPOINT_SLICE_PORTS_DESCRIPTION = (
    "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique "
    "name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil "
    "port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.")
ENDPOINT_SLICE_ENDPOINTS_DESCRIPTION = (
    "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.")
# scheduling/v1 PriorityClass.
PRIORITY_CLASS_VALUE_DESCRIPTION = (
    "value represents the integer value of this priority class. This is the actual priority that pods receive "
    "when they have the name of this class in their pod spec.")
PRIORITY_CLASS_GLOBAL_DEFAULT_DESCRIPTION = (
    "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that "
    "do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than "
    "one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global "
    "default PriorityClasses will be used as the default priority.")

MORE_AFTER = 3  # the printers list three items, then "+ N more..."


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def _int_or_string(value: object) -> str:
    """intstr.IntOrString.String(), "N/A" when unset (printPodDisruptionBudget)."""
    if value is None:
        return "N/A"
    return str(value)


def _with_more(items: list[str], count: int) -> str:
    """listWithMoreString: the first three, then how many more; "<unset>" for none."""
    text = ",".join(items[:MORE_AFTER])
    if count > MORE_AFTER:
        return f"{text} + {count - MORE_AFTER} more..."
    return text or "<unset>"


def ingress_hosts(obj: Obj) -> str:
    """formatHosts: up to three rule hosts, "*" when no rule names one."""
    rules = _list(_spec(obj).get("rules"))
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == MORE_AFTER:
            more = True
        host = _dict(rule).get("host")
        if not more and isinstance(host, str) and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - MORE_AFTER} more..." if more else text


def ingress_address(obj: Obj) -> str:
    """ingressLoadBalancerStatusStringer (wide): each ingress point's IP, else hostname, sorted and distinct."""
    points = _list(_dict(_dict(obj.get("status")).get("loadBalancer")).get("ingress"))
    found = {p.get("ip") or p.get("hostname") for p in points if isinstance(p, dict)}
    return ",".join(sorted(a for a in found if isinstance(a, str) and a))


def ingress_class_parameters(obj: Obj) -> str:
    """printIngressClass: <kind>[.<apiGroup>]/<name>, or "<none>"."""
    parameters = _spec(obj).get("parameters")
    if not isinstance(parameters, dict):
        return "<none>"
    kind = parameters.get("kind", "")
    if parameters.get("apiGroup") is not None:
        kind = f"{kind}.{parameters['apiGroup']}"
    return f"{kind}/{parameters.get('name', '')}"


def endpoint_slice_ports(obj: Obj) -> str:
    """formatDiscoveryPorts: each port's number, else its name, else "*"."""
    ports = [_dict(p) for p in _list(obj.get("ports"))]
    shown = [str(p["port"]) if p.get("port") is not None else (p["name"] if p.get("name") is not None else "*")
             for p in ports]
    return _with_more(shown, len(shown))


def endpoint_slice_endpoints(obj: Obj) -> str:
    """formatDiscoveryEndpoints: the addresses of every endpoint."""
    addresses = [a for e in _list(obj.get("endpoints")) for a in _list(_dict(e).get("addresses"))]
    return _with_more([str(a) for a in addresses], len(addresses))


PDB_COLUMNS = (
    NAME,
    Column("Min Available", "string", PDB_MIN_AVAILABLE_DESCRIPTION,
           lambda obj: _int_or_string(_spec(obj).get("minAvailable"))),
    Column("Max Unavailable", "string", PDB_MAX_UNAVAILABLE_DESCRIPTION,
           lambda obj: _int_or_string(_spec(obj).get("maxUnavailable"))),
    Column("Allowed Disruptions", "integer", PDB_ALLOWED_DISRUPTIONS_DESCRIPTION,
           lambda obj: int(_dict(obj.get("status")).get("disruptionsAllowed") or 0)),
    AGE,
)
INGRESS_COLUMNS = (
    NAME,
    Column("Class", "string", INGRESS_CLASS_DESCRIPTION,
           lambda obj: str(_spec(obj).get("ingressClassName", "<none>"))),
    Column("Hosts", "string", INGRESS_HOSTS_DESCRIPTION, ingress_hosts),
    Column("Address", "string", INGRESS_ADDRESS_DESCRIPTION, ingress_address),
    Column("Ports", "string", INGRESS_PORTS_DESCRIPTION,
           lambda obj: "80, 443" if _list(_spec(obj).get("tls")) else "80"),
    AGE,
)
INGRESS_CLASS_COLUMNS = (
    NAME,
    Column("Controller", "string", INGRESS_CLASS_CONTROLLER_DESCRIPTION,
           lambda obj: str(_spec(obj).get("controller", ""))),
    Column("Parameters", "string", INGRESS_CLASS_PARAMETERS_DESCRIPTION, ingress_class_parameters),
    AGE,
)
NETWORK_POLICY_COLUMNS = (
    NAME,
    Column("Pod-Selector", "string", NETWORK_POLICY_POD_SELECTOR_DESCRIPTION,
           lambda obj: format_label_selector(_spec(obj).get("podSelector") or {})),
    AGE,
)
ENDPOINT_SLICE_COLUMNS = (
    NAME,
    Column("AddressType", "string", ENDPOINT_SLICE_ADDRESS_TYPE_DESCRIPTION,
           lambda obj: str(obj.get("addressType", ""))),
    Column("Ports", "string", ENDPOINT_SLICE_PORTS_DESCRIPTION, endpoint_slice_ports),
    Column("Endpoints", "string", ENDPOINT_SLICE_ENDPOINTS_DESCRIPTION, endpoint_slice_endpoints),
    AGE,
)
PRIORITY_CLASS_COLUMNS = (
    NAME,
    Column("Value", "integer", PRIORITY_CLASS_VALUE_DESCRIPTION, lambda obj: int(obj.get("value") or 0)),
    Column("Global-Default", "boolean", PRIORITY_CLASS_GLOBAL_DEFAULT_DESCRIPTION,
           lambda obj: bool(obj.get("globalDefault"))),
    AGE,
)
RUNTIME_CLASS_COLUMNS = (NAME, Column("Handler", "string", "", lambda obj: str(obj.get("handler", ""))), AGE)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("policy", "poddisruptionbudgets"): PDB_COLUMNS,
    ("networking.k8s.io", "ingresses"): INGRESS_COLUMNS,
    ("networking.k8s.io", "ingressclasses"): INGRESS_CLASS_COLUMNS,
    ("networking.k8s.io", "networkpolicies"): NETWORK_POLICY_COLUMNS,
    ("discovery.k8s.io", "endpointslices"): ENDPOINT_SLICE_COLUMNS,
    ("scheduling.k8s.io", "priorityclasses"): PRIORITY_CLASS_COLUMNS,
    ("node.k8s.io", "runtimeclasses"): RUNTIME_CLASS_COLUMNS,
}
