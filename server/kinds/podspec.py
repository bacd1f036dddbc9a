"""PodSpec defaults and validation, shared by Pods and every kind with a pod template.

    default_pod_spec(spec)        kube-apiserver's SetDefaults_PodSpec and the defaults of everything inside
                                  (containers, ports, probes, volumes, resource lists), in place
    validate_pod_spec(spec, path) the ValidatePodSpec checks users hit most, with kube's messages, reported
                                  under `path` ("spec" for a Pod, "spec.template.spec" for a Deployment)

Both take the JSON form of a v1.PodSpec as the kind's schema types it (inline structs flattened, absent Go
pointers absent). Sources: kubernetes pkg/apis/core/v1/defaults.go and pkg/apis/core/validation/validation.go.
What only a Pod gets (SetDefaults_Pod, the Priority, ServiceAccount and DefaultTolerationSeconds admission
plugins) is in server/kinds/pods.py.

Example: {"containers": [{"name": "web", "image": "nginx"}]} becomes
    {"containers": [{"name": "web", "image": "nginx", "resources": {},
                     "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                     "imagePullPolicy": "Always"}],
     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
     "securityContext": {}, "schedulerName": "default-scheduler"}
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

from server.machinery.codec.quantity import QuantityError, canonical, parse_quantity
from server.machinery.selectors.labels import validate_label_selector
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
DEFAULT_MODE = 0o644  # 420: Secret, ConfigMap, DownwardAPI and Projected volumes
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_SCHEDULER = "default-scheduler"
GRACE_PERIOD_SECONDS = 30
MILLI = -3

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")  # kube's order, not sorted
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PROTOCOLS = ("SCTP", "TCP", "UDP")  # sets.List: sorted
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
VOLUME_SOURCES = (  # in the order kube's validateVolumeSource meets them: a second one is reported at its own path
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc",
    "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk",
    "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)  # fmt: skip


# --- defaults --------------------------------------------------------------------------------------------------------


def default_pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec and the defaults of its parts, in place (a pod template's spec, or a Pod's)."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", GRACE_PERIOD_SECONDS)
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    # v1 <-> internal conversion: serviceAccountName is read from the deprecated serviceAccount when unset,
    # and serviceAccount always prints serviceAccountName.
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or ""
    if account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account
    else:
        spec.pop("serviceAccount", None)
    for container in containers(spec):
        default_container(container)
    for volume in spec.get("volumes") or []:
        default_volume(volume)


def containers(spec: Obj) -> Iterator[Obj]:
    """Every container of a pod spec: init, regular and ephemeral ones."""
    for field in CONTAINER_LISTS:
        yield from spec.get(field) or []


def default_container(container: Obj) -> None:
    """SetDefaults_Container (pull policy by tag, termination message) and its ports, probes and resources."""
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = "Always" if image_tag(container.get("image", "")) == "latest" else "IfNotPresent"
    container.setdefault("terminationMessagePath", TERMINATION_MESSAGE_PATH)
    container.setdefault("terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for probe in PROBES:
        if isinstance(container.get(probe), dict):
            default_probe(container[probe])
    for hook in ("postStart", "preStop"):
        handler = (container.get("lifecycle") or {}).get(hook)
        if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
            _default_http_get(handler["httpGet"])
    resources = container.get("resources")
    if isinstance(resources, dict):
        for field in ("limits", "requests"):
            if isinstance(resources.get(field), dict):
                resources[field] = round_up_resource_list(resources[field])
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")  # SetDefaults_ObjectFieldSelector


def default_probe(probe: Obj) -> None:
    """SetDefaults_Probe: zero (unset) timings take kube's defaults; SetDefaults_HTTPGetAction."""
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                         ("failureThreshold", 3)):
        if not probe.get(field):
            probe[field] = value
    if isinstance(probe.get("httpGet"), dict):
        _default_http_get(probe["httpGet"])


def _default_http_get(action: Obj) -> None:
    if not action.get("path"):
        action["path"] = "/"
    if not action.get("scheme"):
        action["scheme"] = "HTTP"


def default_claim_spec(spec: Obj) -> None:
    """SetDefaults_PersistentVolumeClaimSpec (volumeMode Filesystem) and SetDefaults_ResourceList of its
    limits and requests: every PersistentVolumeClaimSpec, a claim's, a StatefulSet's claim templates' and an
    ephemeral volume's claim template's."""
    spec.setdefault("volumeMode", "Filesystem")
    resources = spec.get("resources")
    if isinstance(resources, dict):
        for field in ("limits", "requests"):
            if isinstance(resources.get(field), dict):
                resources[field] = round_up_resource_list(resources[field])


def default_volume(volume: Obj) -> None:
    """SetDefaults_Volume (no source: an emptyDir) and the defaults of each source."""
    if not any(source in volume for source in VOLUME_SOURCES):
        volume["emptyDir"] = {}
    claim = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
    if isinstance(claim, dict) and isinstance(claim.get("spec"), dict):
        default_claim_spec(claim["spec"])
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", DEFAULT_MODE)
    downward: list[Any] = [volume.get("downwardAPI")] + [
        p.get("downwardAPI") for p in (volume.get("projected") or {}).get("sources") or []]
    for files in downward:
        for item in (files or {}).get("items") or []:
            if isinstance(item.get("fieldRef"), dict):
                item["fieldRef"].setdefault("apiVersion", "v1")  # SetDefaults_ObjectFieldSelector
    for projection in (volume.get("projected") or {}).get("sources") or []:
        token = projection.get("serviceAccountToken")
        if isinstance(token, dict):
            token.setdefault("expirationSeconds", 3600)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")
    if isinstance(volume.get("iscsi"), dict):
        volume["iscsi"].setdefault("iscsiInterface", "default")
    if isinstance(volume.get("rbd"), dict):
        rbd = volume["rbd"]
        rbd.setdefault("pool", "rbd")
        rbd.setdefault("user", "admin")
        rbd.setdefault("keyring", "/etc/ceph/keyring")
    if isinstance(volume.get("azureDisk"), dict):
        disk = volume["azureDisk"]
        disk.setdefault("cachingMode", "ReadWrite")
        disk.setdefault("fsType", "ext4")
        disk.setdefault("readOnly", False)
        disk.setdefault("kind", "Shared")
    if isinstance(volume.get("scaleIO"), dict):
        volume["scaleIO"].setdefault("storageMode", "ThinProvisioned")
        volume["scaleIO"].setdefault("fsType", "xfs")


def round_up_resource_list(resources: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_ResourceList: every quantity rounded up to milli units ("100u" -> "1m")."""
    out = {}
    for name, value in resources.items():
        try:
            out[name] = str(parse_quantity(value).round_up(MILLI)) if isinstance(value, str) else value
        except QuantityError:
            out[name] = value
    return out


# The docker reference grammar (github.com/distribution/reference), enough to find an image's tag.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_DOMAIN_LABEL}(?:\.{_DOMAIN_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_REFERENCE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)


def image_tag(image: str) -> str:
    """parsers.ParseImageName's tag: "latest" when neither tag nor digest is given, "" when the reference does
    not parse (kube then defaults the pull policy to IfNotPresent). "nginx" -> "latest"; "nginx:1.27" -> "1.27"."""
    match = _REFERENCE.fullmatch(image)
    if match is None:
        return ""
    domain = match["domain"]
    if domain is not None and not ("." in domain or ":" in domain or domain == "localhost" or domain != domain.lower()):
        path = f"{domain}/{match['path']}"  # the first component is a path, not a registry: it must be lowercase
        if not re.fullmatch(rf"{_COMPONENT}(?:/{_COMPONENT})*", path):
            return ""
    if match["tag"]:
        return match["tag"]
    return "" if match["digest"] else "latest"


# --- validation ------------------------------------------------------------------------------------------------------

ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
ENV_VAR_NAME_ERROR = names.regex_error(
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must "
    "not start with a digit", "[-._a-zA-Z][-._a-zA-Z0-9]*", "my.env-name", "MY_ENV.NAME", "MyEnvName1",
)
PORT_RANGE = "must be between 1 and 65535, inclusive"
# allowedEphemeralContainerFields leaves these out: set on an ephemeral container they are Forbidden, reported in
# the Go struct's field order.
EPHEMERAL_FORBIDDEN = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe", "readinessProbe",
                       "startupProbe", "lifecycle")
EPHEMERAL_FORBIDDEN_DETAIL = "cannot be set for an Ephemeral Container"


def validate_pod_spec(spec: Obj, path: str, *, is_pod: bool = False) -> list[FieldError]:
    """ValidatePodSpec's rules, in its order: volumes, containers (regular, init, ephemeral), host network ports,
    restart and DNS policies, node selector, security context, affinity, DNS config, readiness and scheduling
    gates, topology spread, service account, active deadline, host and subdomain names, tolerations, host aliases.
    `is_pod`: a Pod's own spec (a template's unset host port is left for the Pod's defaulting)."""
    errs: list[FieldError] = []
    volumes = _validate_volumes(spec.get("volumes") or [], f"{path}.volumes", errs)
    seen: set[str] = set()
    if not spec.get("containers"):
        errs.append(FieldError.required(f"{path}.containers"))
    for field in ("containers", "initContainers", "ephemeralContainers"):  # ValidatePodSpec's order
        containers = spec.get(field) or []
        for index, container in enumerate(containers):
            _validate_container(container, f"{path}.{field}[{index}]", volumes, seen, errs)
            if field == "initContainers":  # they run one at a time: each alone (kube's path names it [0])
                errs.extend(_host_port_conflicts([container], f"{path}.initContainers"))
            if field == "ephemeralContainers":
                _validate_ephemeral(container, f"{path}.{field}[{index}]", spec, errs)
        if field == "containers":
            errs.extend(_host_port_conflicts(containers, f"{path}.containers"))
    if spec.get("hostNetwork") is True:  # validatePodHostNetworkDeps, over the containers only
        for index, container in enumerate(spec.get("containers") or []):
            for at, port in enumerate(container.get("ports") or []):
                host = port.get("hostPort", 0)
                # a template's unset hostPort is left alone (a Pod's was defaulted to its containerPort)
                if (is_pod or host) and host != port.get("containerPort", 0):
                    errs.append(FieldError.invalid(f"{path}.containers[{index}].ports[{at}].hostPort", host,
                                                   "must match `containerPort` when `hostNetwork` is true"))
    _one_of(spec.get("restartPolicy", ""), RESTART_POLICIES, f"{path}.restartPolicy", errs)
    _one_of(spec.get("dnsPolicy", ""), DNS_POLICIES, f"{path}.dnsPolicy", errs)
    errs.extend(names.validate_labels(spec.get("nodeSelector") or {}, f"{path}.nodeSelector"))
    if isinstance(spec.get("securityContext"), dict):
        _validate_pod_security_context(spec["securityContext"], f"{path}.securityContext", errs)
    if isinstance(spec.get("affinity"), dict):
        _validate_affinity(spec["affinity"], f"{path}.affinity", errs)
    _validate_dns_config(spec.get("dnsConfig"), spec.get("dnsPolicy", ""), f"{path}.dnsConfig", errs)
    for index, gate in enumerate(spec.get("readinessGates") or []):
        condition = str(gate.get("conditionType") or "")
        errs.extend(FieldError.invalid(f"{path}.readinessGates[{index}].conditionType", condition, m)
                    for m in names.is_qualified_name(condition))
    gates: set[str] = set()
    for index, gate in enumerate(spec.get("schedulingGates") or []):
        name = str(gate.get("name") or "")
        errs.extend(FieldError.invalid(f"{path}.schedulingGates[{index}]", name, m)
                    for m in names.is_qualified_name(name))
        if name in gates:
            errs.append(FieldError.duplicate(f"{path}.schedulingGates[{index}]", name))
        gates.add(name)
    _validate_spread(spec.get("topologySpreadConstraints") or [], f"{path}.topologySpreadConstraints", errs)
    account = spec.get("serviceAccountName") or ""
    if account:
        errs.extend(FieldError.invalid(f"{path}.serviceAccountName", account, m)
                    for m in names.is_dns1123_subdomain(account))
    # A negative terminationGracePeriodSeconds is no error: kube 1.28 warns (podwarnings.py) and deletes with 1.
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        errs.append(FieldError.invalid(f"{path}.activeDeadlineSeconds", deadline,
                                       "must be between 1 and 2147483647, inclusive"))
    for field in ("hostname", "subdomain"):
        value = spec.get(field) or ""
        if value:
            errs.extend(FieldError.invalid(f"{path}.{field}", value, m) for m in names.is_dns1123_label(value))
    errs.extend(validate_tolerations(spec.get("tolerations") or [], f"{path}.tolerations"))
    for alias in spec.get("hostAliases") or []:  # ValidateHostAliases: its paths carry no index
        if not is_ip_sloppy(str(alias.get("ip") or "")):
            errs.append(FieldError.invalid(f"{path}.hostAliases.ip", str(alias.get("ip") or ""),
                                           "must be valid IP address"))
        for hostname in alias.get("hostnames") or []:
            errs.extend(FieldError.invalid(f"{path}.hostAliases.hostnames", hostname, m)
                        for m in names.is_dns1123_subdomain(str(hostname)))
    return errs


def is_ip_sloppy(text: str) -> bool:
    """netutils.ParseIPSloppy: an IP address, IPv4 parts with leading zeros allowed (read as decimal)."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        parts = text.split(".")
        return len(parts) == 4 and all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts)


MAX_DNS_NAMESERVERS, MAX_DNS_SEARCH_PATHS, MAX_DNS_SEARCH_LIST_CHARS = 3, 32, 2048


def _validate_dns_config(config: object, policy: object, path: str, errs: list[FieldError]) -> None:
    """validatePodDNSConfig: policy None needs a config with a nameserver; nameservers are IPs, at most 3; at most
    32 search paths of at most 2048 characters together, each a DNS subdomain; every option named."""
    if policy == "None":
        if not isinstance(config, dict):
            errs.append(FieldError.required(path, "must provide `dnsConfig` when `dnsPolicy` is None"))
            return
        if not config.get("nameservers"):
            errs.append(FieldError.required(f"{path}.nameservers",
                                            "must provide at least one DNS nameserver when `dnsPolicy` is None"))
            return
    if not isinstance(config, dict):
        return
    servers = [str(n) for n in config.get("nameservers") or []]
    if len(servers) > MAX_DNS_NAMESERVERS:
        errs.append(FieldError.invalid(f"{path}.nameservers", _go_strings(servers),
                                       f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    errs.extend(FieldError.invalid(f"{path}.nameservers[{i}]", n, "must be valid IP address")
                for i, n in enumerate(servers) if not is_ip_sloppy(n))
    searches = [str(x) for x in config.get("searches") or []]
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        errs.append(FieldError.invalid(f"{path}.searches", _go_strings(searches),
                                       f"must not have more than {MAX_DNS_SEARCH_PATHS} search paths"))
    if len(" ".join(searches)) > MAX_DNS_SEARCH_LIST_CHARS:
        errs.append(FieldError.invalid(f"{path}.searches", _go_strings(searches), "must not have more than "
                                       f"{MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        trimmed = search.removesuffix(".")
        errs.extend(FieldError.invalid(f"{path}.searches[{i}]", trimmed, m)
                    for m in names.is_dns1123_subdomain(trimmed))
    errs.extend(FieldError.required(f"{path}.options[{i}]", "must not be empty")
                for i, option in enumerate(config.get("options") or []) if not option.get("name"))


def _go_strings(values: list[str]) -> names.GoValue:
    return names.go_string_slice(values)


def _validate_affinity(affinity: Obj, path: str, errs: list[FieldError]) -> None:
    """validateAffinity: node affinity's selector terms and weights, pod (anti-)affinity's terms and weights."""
    node = affinity.get("nodeAffinity")
    if isinstance(node, dict):
        here = f"{path}.nodeAffinity"
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, dict):
            terms_path = f"{here}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            terms = required.get("nodeSelectorTerms") or []
            if not terms:
                errs.append(FieldError.required(terms_path, "must have at least one node selector term"))
            for i, term in enumerate(terms):
                _validate_node_selector_term(term, f"{terms_path}[{i}]", errs)
        for i, preferred in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            at = f"{here}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            _check_weight(preferred.get("weight", 0), f"{at}.weight", errs)
            _validate_node_selector_term(preferred.get("preference") or {}, f"{at}.preference", errs)
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(kind)
        if not isinstance(pods, dict):
            continue
        here = f"{path}.{kind}"
        for i, term in enumerate(pods.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            _validate_pod_affinity_term(term, f"{here}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", errs)
        for i, weighted in enumerate(pods.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            at = f"{here}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            _check_weight(weighted.get("weight", 0), f"{at}.weight", errs)
            _validate_pod_affinity_term(weighted.get("podAffinityTerm") or {}, f"{at}.podAffinityTerm", errs)


def _check_weight(weight: object, path: str, errs: list[FieldError]) -> None:
    if isinstance(weight, int) and not 0 < weight <= 100:
        errs.append(FieldError.invalid(path, weight, "must be in the range 1-100"))


def _validate_node_selector_term(term: Obj, path: str, errs: list[FieldError]) -> None:
    """ValidateNodeSelectorTerm: each expression's operator and values, then its key; each field expression's."""
    for j, requirement in enumerate(term.get("matchExpressions") or []):
        at = f"{path}.matchExpressions[{j}]"
        operator, values = str(requirement.get("operator") or ""), requirement.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(FieldError.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(FieldError.forbidden(f"{at}.values",
                                                 "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                errs.append(FieldError.required(f"{at}.values",
                                                "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        else:
            errs.append(FieldError.invalid(f"{at}.operator", operator, "not a valid selector operator"))
        errs.extend(names.validate_label_name(str(requirement.get("key") or ""), f"{at}.key"))
    for j, requirement in enumerate(term.get("matchFields") or []):
        at = f"{path}.matchFields[{j}]"
        operator, values = str(requirement.get("operator") or ""), requirement.get("values") or []
        if operator in ("In", "NotIn"):
            if len(values) != 1:
                errs.append(FieldError.required(f"{at}.values", "must be only one value when `operator` is 'In' or "
                                                                "'NotIn' for node field selector"))
        else:
            errs.append(FieldError.invalid(f"{at}.operator", operator, "not a valid selector operator"))
        key = str(requirement.get("key") or "")
        if key != "metadata.name":  # nodeFieldSelectorValidators: a Node's name only
            errs.append(FieldError.invalid(f"{at}.key", key, "not a valid field selector key"))
        else:
            for i, value in enumerate(values):
                errs.extend(FieldError.invalid(f"{at}.values[{i}]", value, m)
                            for m in names.is_dns1123_subdomain(str(value)))


def _validate_pod_affinity_term(term: Obj, path: str, errs: list[FieldError]) -> None:
    """validatePodAffinityTerm: the label and namespace selectors, the namespaces, the topology key."""
    errs.extend(validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector"))
    errs.extend(validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector"))
    for namespace in term.get("namespaces") or []:
        errs.extend(FieldError.invalid(f"{path}.namespace", namespace, m)
                    for m in names.validate_namespace_name(str(namespace), False))
    key = str(term.get("topologyKey") or "")
    if not key:
        errs.append(FieldError.required(f"{path}.topologyKey", "can not be empty"))
    errs.extend(names.validate_label_name(key, f"{path}.topologyKey"))


_SCHEDULE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")  # supportedPodTopologySpreadNodePolicies.List(): sorted


def _validate_spread(constraints: list[Obj], path: str, errs: list[FieldError]) -> None:
    """validateTopologySpreadConstraints, in its order per constraint."""
    for i, constraint in enumerate(constraints):
        at = f"{path}[{i}]"
        skew = constraint.get("maxSkew", 0)
        if isinstance(skew, int) and skew <= 0:
            errs.append(FieldError.invalid(f"{at}.maxSkew", skew, "must be greater than zero"))
        key, action = str(constraint.get("topologyKey") or ""), str(constraint.get("whenUnsatisfiable") or "")
        if not key:
            errs.append(FieldError.required(f"{at}.topologyKey", "can not be empty"))
        if action not in _SCHEDULE_ACTIONS:
            errs.append(FieldError.not_supported(f"{at}.whenUnsatisfiable", action, _SCHEDULE_ACTIONS))
        if any(str(other.get("topologyKey") or "") == key and str(other.get("whenUnsatisfiable") or "") == action
               for other in constraints[i + 1:]):
            errs.append(FieldError.duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}"))
        domains = constraint.get("minDomains")
        if isinstance(domains, int):
            if domains <= 0:
                errs.append(FieldError.invalid(f"{at}.minDomains", domains, "must be greater than zero"))
            if action != "DoNotSchedule":
                errs.append(FieldError.invalid(f"{at}.minDomains", domains, "can only use minDomains if "
                                               f"whenUnsatisfiable=DoNotSchedule, not {action}"))
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(field)
            if policy is not None and policy not in _INCLUSION_POLICIES:
                errs.append(FieldError.not_supported(f"{at}.{field}", policy, _INCLUSION_POLICIES))
        errs.extend(validate_label_selector(constraint.get("labelSelector"), f"{at}.labelSelector"))


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_tolerations(tolerations: list[Obj], path: str) -> list[FieldError]:
    """ValidateTolerations, in its order: the key a label name, an empty key only with Exists, tolerationSeconds
    only with NoExecute, the value by the operator, the effect."""
    errs: list[FieldError] = []
    for index, toleration in enumerate(tolerations):
        here = f"{path}[{index}]"
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        if key:
            errs.extend(names.validate_label_name(key, f"{here}.key"))
        if not key and operator != "Exists":
            errs.append(FieldError.invalid(f"{here}.operator", operator, "operator must be Exists when `key` is "
                                           'empty, which means "match all values and all keys"'))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(FieldError.invalid(f"{here}.effect", effect,
                                           "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            problems = names.is_label_value(value)
            if problems:
                errs.append(FieldError.invalid(f"{here}.operator", value, ";".join(problems)))
        elif operator == "Exists":
            if value:
                seconds = toleration.get("tolerationSeconds")
                shown = "(*int64)(nil)" if seconds is None else f"(*int64)({names.GO_POINTER})"
                errs.append(FieldError.invalid(f"{here}.operator", names.GoValue(
                    f"core.Toleration{{Key:{names.go_quote(key)}, Operator:{names.go_quote(operator)}, "
                    f"Value:{names.go_quote(value)}, Effect:{names.go_quote(effect)}, TolerationSeconds:{shown}}}"),
                    "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(FieldError.not_supported(f"{here}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(FieldError.not_supported(f"{here}.effect", effect, TAINT_EFFECTS))
    return errs


# Unix user and group IDs (validation.IsValidUserID, IsValidGroupID) and sysctl names (IsValidSysctlName).
ID_RANGE = "must be between 0 and 2147483647, inclusive"
SYSCTL_MAX_LENGTH = 253
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_PATTERN = f"^({_SYSCTL_SEGMENT}[\\./])*{_SYSCTL_SEGMENT}$"
_SYSCTL = re.compile(SYSCTL_PATTERN)


def _validate_pod_security_context(context: Obj, path: str, errs: list[FieldError]) -> None:
    """validatePodSpecSecurityContext: IDs in range, process namespaces, sysctl names well formed and unique."""
    for field in ("fsGroup", "runAsUser", "runAsGroup"):
        value = context.get(field)
        if isinstance(value, int) and not 0 <= value <= 2147483647:
            errs.append(FieldError.invalid(f"{path}.{field}", value, ID_RANGE))
    for index, gid in enumerate(context.get("supplementalGroups") or []):
        if isinstance(gid, int) and not 0 <= gid <= 2147483647:
            errs.append(FieldError.invalid(f"{path}.supplementalGroups[{index}]", gid, ID_RANGE))
    seen: set[str] = set()
    for index, sysctl in enumerate(context.get("sysctls") or []):
        name = str(sysctl.get("name") or "")
        here = f"{path}.sysctls[{index}].name"
        if not name:
            errs.append(FieldError.required(here))
        elif len(name) > SYSCTL_MAX_LENGTH or not _SYSCTL.match(name):
            errs.append(FieldError.invalid(here, name, f"must have at most {SYSCTL_MAX_LENGTH} characters and match "
                                                       f"regex {SYSCTL_PATTERN}"))
        elif name in seen:
            errs.append(FieldError.duplicate(here, name))
        seen.add(name)


_PROC_MOUNTS = ("Default", "Unmasked")
# core.SecurityContext's fields in declaration order, each a pointer (%#v prints a set one as its address)
_SECURITY_CONTEXT_FIELDS = (("Capabilities", "capabilities", "core.Capabilities"), ("Privileged", "privileged", "bool"),
                            ("SELinuxOptions", "seLinuxOptions", "core.SELinuxOptions"),
                            ("WindowsOptions", "windowsOptions", "core.WindowsSecurityContextOptions"),
                            ("RunAsUser", "runAsUser", "int64"), ("RunAsGroup", "runAsGroup", "int64"),
                            ("RunAsNonRoot", "runAsNonRoot", "bool"),
                            ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "bool"),
                            ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "bool"),
                            ("ProcMount", "procMount", "core.ProcMountType"),
                            ("SeccompProfile", "seccompProfile", "core.SeccompProfile"))


def _validate_security_context(context: Obj, path: str, errs: list[FieldError]) -> None:
    """ValidateSecurityContext, in its order: user and group IDs in range, procMount, privilege escalation
    turned off beside privileged or CAP_SYS_ADMIN."""
    for field in ("runAsUser", "runAsGroup"):
        value = context.get(field)
        if isinstance(value, int) and not 0 <= value <= 2147483647:
            errs.append(FieldError.invalid(f"{path}.{field}", value, ID_RANGE))
    proc_mount = context.get("procMount")
    if proc_mount is not None and proc_mount not in _PROC_MOUNTS:
        errs.append(FieldError.not_supported(f"{path}.procMount", proc_mount, _PROC_MOUNTS))
    if context.get("allowPrivilegeEscalation") is False:
        shown = names.GoValue("core.SecurityContext{" + ", ".join(  # ErrorBody prints what a pointer points to
            f"{go_name}:(*{go_type})({'nil' if context.get(json_name) is None else names.GO_POINTER})"
            for go_name, json_name, go_type in _SECURITY_CONTEXT_FIELDS) + "}")
        if context.get("privileged") is True:
            errs.append(FieldError.invalid(path, shown,
                                           "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        for capability in (context.get("capabilities") or {}).get("add") or []:
            if capability == "CAP_SYS_ADMIN":
                errs.append(FieldError.invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and "
                                               "`capabilities.Add` CAP_SYS_ADMIN"))


def _one_of(value: str, supported: tuple[str, ...], path: str, errs: list[FieldError]) -> None:
    if not value:
        errs.append(FieldError.required(path))
    elif value not in supported:
        errs.append(FieldError.not_supported(path, value, supported))


def _validate_volumes(volumes: list[Obj], path: str, errs: list[FieldError]) -> set[str]:
    """ValidateVolumes: names are DNS labels and unique; exactly one source each."""
    found: set[str] = set()
    for index, volume in enumerate(volumes):
        here = f"{path}[{index}]"
        name = volume.get("name") or ""
        if not name:
            errs.append(FieldError.required(f"{here}.name"))
        else:
            errs.extend(unique_label(name, f"{here}.name", found))
        sources = [source for source in VOLUME_SOURCES if source in volume]
        if sources and isinstance(volume.get(sources[0]), dict):
            check = _VOLUME_SOURCE_CHECKS.get(sources[0])
            if check is not None:
                errs.extend(check(volume[sources[0]], f"{here}.{sources[0]}"))
        if len(sources) > 1:
            errs.append(FieldError.forbidden(f"{here}.{sources[1]}", "may not specify more than 1 volume type"))
    return found


FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket")
# validVolumeDownwardAPIFieldPathExpressions, sorted as sets list them.
VOLUME_FIELD_PATHS = ("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid")


def _mode_errors(source: Obj, field: str, path: str) -> list[FieldError]:
    mode = source.get(field)
    if isinstance(mode, int) and not 0 <= mode <= 0o777:
        return [FieldError.invalid(f"{path}.{field}", mode, FILE_MODE_ERROR)]
    return []


def _no_backsteps(target: str, path: str) -> list[FieldError]:
    """validatePathNoBacksteps: no ".." element."""
    return [FieldError.invalid(path, target, "must not contain '..'")] if ".." in target.split("/") else []


def _local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    """validateLocalNonReservedPath: relative, no ".." element, not starting with "..". """
    errs = [FieldError.invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    errs += _no_backsteps(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(FieldError.invalid(path, target, "must not start with '..'"))
    return errs


def _key_to_path(item: Obj, path: str) -> list[FieldError]:
    """validateKeyToPath."""
    errs: list[FieldError] = []
    if not item.get("key"):
        errs.append(FieldError.required(f"{path}.key"))
    target = str(item.get("path") or "")
    if not target:
        errs.append(FieldError.required(f"{path}.path"))
    return errs + _local_non_reserved_path(target, f"{path}.path") + _mode_errors(item, "mode", path)


def _items_errors(source: Obj, path: str) -> list[FieldError]:
    return [e for i, item in enumerate(source.get("items") or []) for e in _key_to_path(item, f"{path}.items[{i}]")]


def _empty_dir_errors(source: Obj, path: str) -> list[FieldError]:
    limit = source.get("sizeLimit")
    if limit is not None:
        try:
            negative = parse_quantity(str(limit)).sign() < 0
        except QuantityError:
            negative = False
        if negative:
            return [FieldError.forbidden(f"{path}.sizeLimit", "SizeLimit field must be a valid resource quantity")]
    return []


def _host_path_errors(source: Obj, path: str) -> list[FieldError]:
    target = str(source.get("path") or "")
    if not target:
        return [FieldError.required(f"{path}.path")]
    errs = _no_backsteps(target, f"{path}.path")
    kind = source.get("type")
    if kind is not None and kind not in HOST_PATH_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, HOST_PATH_TYPES))
    return errs


def _secret_volume_errors(source: Obj, path: str) -> list[FieldError]:
    errs = [] if source.get("secretName") else [FieldError.required(f"{path}.secretName")]
    return errs + _mode_errors(source, "defaultMode", path) + _items_errors(source, path)


def _config_map_volume_errors(source: Obj, path: str) -> list[FieldError]:
    errs = [] if source.get("name") else [FieldError.required(f"{path}.name")]
    return errs + _mode_errors(source, "defaultMode", path) + _items_errors(source, path)


def _claim_volume_errors(source: Obj, path: str) -> list[FieldError]:
    return [] if source.get("claimName") else [FieldError.required(f"{path}.claimName")]


def _downward_file_errors(item: Obj, path: str) -> list[FieldError]:
    """validateDownwardAPIVolumeFile (its errors at the volume's path, as kube reports them)."""
    target = str(item.get("path") or "")
    errs = [] if target else [FieldError.required(f"{path}.path")]
    errs += _local_non_reserved_path(target, f"{path}.path")
    field_ref, resource_ref = item.get("fieldRef"), item.get("resourceFieldRef")
    if isinstance(field_ref, dict):
        errs += _object_field_selector_errors(field_ref, VOLUME_FIELD_PATHS, f"{path}.fieldRef")
        if resource_ref is not None:
            errs.append(FieldError.invalid(path, "resource",
                                           "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif isinstance(resource_ref, dict):
        errs += _resource_field_selector_errors(resource_ref, f"{path}.resourceFieldRef", volume=True)
    else:
        errs.append(FieldError.required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _mode_errors(item, "mode", path)


def _downward_volume_errors(source: Obj, path: str) -> list[FieldError]:
    errs = _mode_errors(source, "defaultMode", path)
    return errs + [e for item in source.get("items") or [] for e in _downward_file_errors(item, path)]


def _projected_volume_errors(source: Obj, path: str) -> list[FieldError]:
    """validateProjectedVolumeSource: each source's own rules, no path written twice, one kind per source."""
    errs = _mode_errors(source, "defaultMode", path)
    paths: set[str] = set()

    def claim(target: str, shown: str) -> None:
        """A file's path, which no earlier file of the volume may have written (`shown`: kube's bad value)."""
        if target and target in paths:
            errs.append(FieldError.invalid(path, shown, "conflicting duplicate paths"))
        paths.add(target)

    for index, projection in enumerate(source.get("sources") or []):
        here, kinds = f"{path}.sources[{index}]", 0
        for kind in ("secret", "configMap"):
            selected = projection.get(kind)
            if not isinstance(selected, dict):
                continue
            kinds += 1
            if not selected.get("name"):
                errs.append(FieldError.required(f"{here}.{kind}.name"))
            for at, item in enumerate(selected.get("items") or []):
                errs += _key_to_path(item, f"{here}.{kind}.items[{at}]")
                claim(str(item.get("path") or ""), str(selected.get("name") or ""))
        downward = projection.get("downwardAPI")
        if isinstance(downward, dict):
            kinds += 1
            for item in downward.get("items") or []:
                errs += _downward_file_errors(item, f"{here}.downwardAPI")
                target = str(item.get("path") or "")
                claim(target, target)
        token = projection.get("serviceAccountToken")
        if isinstance(token, dict):
            kinds += 1
            seconds = token.get("expirationSeconds", 0)
            if isinstance(seconds, int) and seconds < 600:
                errs.append(FieldError.invalid(f"{here}.serviceAccountToken.expirationSeconds", seconds,
                                               "may not specify a duration less than 10 minutes"))
            if isinstance(seconds, int) and seconds > 1 << 32:
                errs.append(FieldError.invalid(f"{here}.serviceAccountToken.expirationSeconds", seconds,
                                               "may not specify a duration larger than 2^32 seconds"))
            if not token.get("path"):
                errs.append(FieldError.required(f"{path}.path"))
        if kinds > 1:
            errs.append(FieldError.forbidden(here, "may not specify more than 1 volume type"))
    return errs


_VOLUME_SOURCE_CHECKS = {
    "emptyDir": _empty_dir_errors, "hostPath": _host_path_errors, "secret": _secret_volume_errors,
    "persistentVolumeClaim": _claim_volume_errors, "downwardAPI": _downward_volume_errors,
    "configMap": _config_map_volume_errors, "projected": _projected_volume_errors,
}


def unique_label(name: str, path: str, seen: set[str]) -> list[FieldError]:
    """A name that must be a DNS label and unique among `seen`, which it joins (volume, container and
    Service port names)."""
    errs = [FieldError.invalid(path, name, m) for m in names.is_dns1123_label(name)]
    if name in seen:
        errs.append(FieldError.duplicate(path, name))
    seen.add(name)
    return errs


def _host_port_conflicts(containers: list[Obj], path: str) -> list[FieldError]:
    """checkHostPortConflicts: no two ports of `containers` on one protocol, host IP and host port."""
    errs: list[FieldError] = []
    taken: set[str] = set()
    for index, container in enumerate(containers):
        for at, port in enumerate(container.get("ports") or []):
            host = port.get("hostPort", 0)
            if not host:
                continue
            key = f"{port.get('protocol', 'TCP')}/{port.get('hostIP', '')}/{host}"
            if key in taken:
                errs.append(FieldError.duplicate(f"{path}[{index}].ports[{at}].hostPort", key))
            taken.add(key)
    return errs


def _validate_container(container: Obj, path: str, volumes: set[str], seen: set[str],
                        errs: list[FieldError]) -> None:
    """In kube's order: validateContainerCommon (name, image, terminationMessagePolicy, ports, env, volume
    mounts, pull policy, resources), then the name's uniqueness, then the probes."""
    name = container.get("name") or ""
    if not name:
        errs.append(FieldError.required(f"{path}.name"))
    else:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in names.is_dns1123_label(name))
    if not container.get("image"):
        errs.append(FieldError.required(f"{path}.image"))
    _one_of(container.get("terminationMessagePolicy", ""), TERMINATION_MESSAGE_POLICIES,
            f"{path}.terminationMessagePolicy", errs)
    _validate_ports(container.get("ports") or [], f"{path}.ports", errs)
    _validate_env(container.get("env") or [], f"{path}.env", errs)
    for index, mount in enumerate(container.get("volumeMounts") or []):
        here = f"{path}.volumeMounts[{index}]"
        mount_name = mount.get("name") or ""
        if not mount_name:
            errs.append(FieldError.required(f"{here}.name"))
        elif mount_name not in volumes:
            errs.append(FieldError.not_found(f"{here}.name", mount_name))
        if not mount.get("mountPath"):
            errs.append(FieldError.required(f"{here}.mountPath"))
    _one_of(container.get("imagePullPolicy", ""), PULL_POLICIES, f"{path}.imagePullPolicy", errs)
    _validate_resources(container.get("resources") or {}, f"{path}.resources", errs)
    if isinstance(container.get("securityContext"), dict):
        _validate_security_context(container["securityContext"], f"{path}.securityContext", errs)
    if name:
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        seen.add(name)
    for probe in PROBES:
        if isinstance(container.get(probe), dict):
            _validate_probe(container[probe], f"{path}.{probe}", errs)


def _validate_ephemeral(container: Obj, path: str, spec: Obj, errs: list[FieldError]) -> None:
    """validateEphemeralContainers beyond the common container rules: the target is a regular or init
    container, the fields kube's allow list leaves out stay unset, and no volume mount has a subPath."""
    target = container.get("targetContainerName") or ""
    if target and not any(c.get("name") == target
                          for field in ("containers", "initContainers") for c in spec.get(field) or []):
        errs.append(FieldError.not_found(f"{path}.targetContainerName", target))
    for field in EPHEMERAL_FORBIDDEN:
        value = container.get(field)
        if _is_set(value) if field == "resources" else value not in (None, []):
            errs.append(FieldError.forbidden(f"{path}.{field}", EPHEMERAL_FORBIDDEN_DETAIL))
    for index, mount in enumerate(container.get("volumeMounts") or []):
        for field in ("subPath", "subPathExpr"):
            if mount.get(field):
                errs.append(FieldError.forbidden(f"{path}.volumeMounts[{index}].{field}", EPHEMERAL_FORBIDDEN_DETAIL))


def _is_set(value: object) -> bool:
    """Go's non-zero for a struct the allow list checks (resources): with only empty lists and maps inside it is
    zero; the other fields are pointers and lists, set when present and non-empty."""
    if isinstance(value, dict):
        return any(_is_set(v) for v in value.values())
    return value not in (None, "", 0, False, [])


def _validate_probe(probe: Obj, path: str, errs: list[FieldError]) -> None:
    handlers = [h for h in PROBE_HANDLERS if h in probe]
    if not handlers:
        errs.append(FieldError.required(path, "must specify a handler type"))
    elif len(handlers) > 1:
        errs.append(FieldError.forbidden(f"{path}.{handlers[1]}", "may not specify more than 1 handler type"))
    for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        value = probe.get(field)
        if isinstance(value, int) and value < 0:
            errs.append(FieldError.invalid(f"{path}.{field}", value, "must be greater than or equal to 0"))


def _validate_ports(ports: list[Obj], path: str, errs: list[FieldError]) -> None:
    """validateContainerPorts."""
    for index, port in enumerate(ports):
        here = f"{path}[{index}]"
        name = port.get("name") or ""
        if name:
            errs.extend(FieldError.invalid(f"{here}.name", name, m) for m in port_name_problems(name))
        number = port.get("containerPort", 0)
        if not number:
            errs.append(FieldError.required(f"{here}.containerPort"))
        elif not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{here}.containerPort", number, PORT_RANGE))
        host = port.get("hostPort", 0)
        if host and not 1 <= host <= 65535:
            errs.append(FieldError.invalid(f"{here}.hostPort", host, PORT_RANGE))
        protocol = port.get("protocol", "")
        if not protocol:
            errs.append(FieldError.required(f"{here}.protocol"))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(f"{here}.protocol", protocol, PROTOCOLS))


def port_name_problems(name: str) -> list[str]:
    """validation.IsValidPortName (an IANA_SVC_NAME)."""
    problems = []
    if len(name) > 15:
        problems.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]+", name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def _validate_env(env: list[Obj], path: str, errs: list[FieldError]) -> None:
    """ValidateEnv: each variable's name, then where its value comes from."""
    for index, var in enumerate(env):
        name = var.get("name") or ""
        if not name:
            errs.append(FieldError.required(f"{path}[{index}].name"))
        elif not ENV_VAR_NAME.fullmatch(name):
            errs.append(FieldError.invalid(f"{path}[{index}].name", name, ENV_VAR_NAME_ERROR))
        source = var.get("valueFrom")
        if isinstance(source, dict):
            errs.extend(_env_source_errors(source, bool(var.get("value")), f"{path}[{index}].valueFrom"))


# validEnvDownwardAPIFieldPathExpressions and validContainerResourceFieldPathExpressions, sorted as sets list them.
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                   "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
RESOURCE_FIELD_PATHS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                        "requests.ephemeral-storage", "requests.memory")
# podshelper.ConvertDownwardAPIFieldLabel's labels (spec.host is spec.nodeName for old clients).
_DOWNWARD_LABELS = ("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
                    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
                    "status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", "spec.host")
_SUBSCRIPTED = re.compile(r"([^\[]+)\['(.*)'\]")


def _env_source_errors(source: Obj, has_value: bool, path: str) -> list[FieldError]:
    """validateEnvVarValueFrom: one source, each valid, and no value beside it."""
    errs: list[FieldError] = []
    sources = 0
    field_ref = source.get("fieldRef")
    if isinstance(field_ref, dict):
        sources += 1
        errs.extend(_object_field_selector_errors(field_ref, ENV_FIELD_PATHS, f"{path}.fieldRef"))
        if field_ref.get("fieldPath") == "status.hostIPs":  # the PodHostIPs gate, alpha in 1.28
            errs.append(FieldError.forbidden(f"{path}.fieldRef",
                                             "may not be set when feature gate 'PodHostIPs' is not enabled"))
    resource_ref = source.get("resourceFieldRef")
    if isinstance(resource_ref, dict):
        sources += 1
        errs.extend(_resource_field_selector_errors(resource_ref, f"{path}.resourceFieldRef", volume=False))
    for kind in ("configMapKeyRef", "secretKeyRef"):
        selector = source.get(kind)
        if isinstance(selector, dict):
            sources += 1
            errs.extend(_key_selector_errors(selector, f"{path}.{kind}"))
    if not sources:
        errs.append(FieldError.invalid(
            path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
    elif has_value:
        errs.append(FieldError.invalid(path, "", "may not be specified when `value` is not empty"))
    elif sources > 1:
        errs.append(FieldError.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _object_field_selector_errors(selector: Obj, expressions: tuple[str, ...], path: str) -> list[FieldError]:
    """validateObjectFieldSelector: a v1 field label the downward API converts, subscripted only for labels and
    annotations, else one of `expressions`."""
    version, field_path = str(selector.get("apiVersion") or ""), str(selector.get("fieldPath") or "")
    if not version:
        return [FieldError.required(f"{path}.apiVersion")]
    if not field_path:
        return [FieldError.required(f"{path}.fieldPath")]
    subscripted = _SUBSCRIPTED.fullmatch(field_path)
    problem = ""
    if version != "v1":
        problem = f"unsupported pod version: {version}"
    elif subscripted is not None and subscripted.group(1) not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif subscripted is None and field_path not in _DOWNWARD_LABELS:
        problem = f"field label not supported: {field_path}"
    if problem:
        return [FieldError.invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: {problem}")]
    if subscripted is not None:
        key = subscripted.group(2)
        if subscripted.group(1) == "metadata.annotations":
            key = key.lower()
        return [FieldError.invalid(path, key, problem) for problem in names.is_qualified_name(key)]
    internal = "spec.nodeName" if field_path == "spec.host" else field_path
    if internal not in expressions:
        return [FieldError.not_supported(f"{path}.fieldPath", internal, expressions)]
    return []


def _resource_field_selector_errors(selector: Obj, path: str, *, volume: bool) -> list[FieldError]:
    """validateContainerResourceFieldSelector (its divisor unchecked): a volume file's names its container, and the
    resource is one of RESOURCE_FIELD_PATHS or a huge page size."""
    if volume and not selector.get("containerName"):
        return [FieldError.required(f"{path}.containerName")]
    resource = str(selector.get("resource") or "")
    if not resource:
        return [FieldError.required(f"{path}.resource")]
    if resource not in RESOURCE_FIELD_PATHS and not resource.startswith(("requests.hugepages-", "limits.hugepages-")):
        return [FieldError.not_supported(f"{path}.resource", resource, RESOURCE_FIELD_PATHS)]
    return []


def _key_selector_errors(selector: Obj, path: str) -> list[FieldError]:
    """validateConfigMapKeySelector / validateSecretKeySelector: the object's name, and its key a config key."""
    name, key = str(selector.get("name") or ""), str(selector.get("key") or "")
    errs = [FieldError.invalid(f"{path}.name", name, problem) for problem in names.name_is_dns_subdomain(name, False)]
    if not key:
        errs.append(FieldError.required(f"{path}.key"))
    else:
        errs.extend(FieldError.invalid(f"{path}.key", key, problem) for problem in names.is_config_map_key(key))
    return errs


def _validate_resources(resources: Obj, path: str, errs: list[FieldError]) -> None:
    """ValidateResourceRequirements: quantities are non-negative, and a request never exceeds its limit."""
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    for field, values in (("limits", limits), ("requests", requests)):
        for name, value in values.items():
            if parse_quantity(value).sign() < 0:
                errs.append(FieldError.invalid(f"{path}.{field}[{name}]", value, "must be greater than or equal to 0"))
    for name, value in requests.items():
        limit = limits.get(name)
        if limit is not None and parse_quantity(value).compare(parse_quantity(limit)) > 0:
            # at requests itself, not the resource's key, with both quantities canonical, as kube 1.28 reports it
            errs.append(FieldError.invalid(f"{path}.requests", canonical(str(value)),
                                           f"must be less than or equal to {name} limit of {canonical(str(limit))}"))
