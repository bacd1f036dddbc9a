"""Table columns of the core/v1 kinds beyond config (pods, services, nodes, ...), as kube-apiserver's
printers (pkg/printers/internalversion/printers.go) print them.

The server always generates the wide columns (priority 1); kubectl shows them with `-o wide`. Descriptions are
the SwaggerDoc text of the field each column shows, or the printer's own sentence. LimitRanges have no printer:
the default table convertor's Name and Created At. Cells keep Go's types (the
RC counts and an event's count are int64; a service account's secrets count is int64 though its column says
"string").
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _str
from server.registry.printing.columns import AGE, NAME
from server.registry.printing.duration import Since, since
from server.registry.strategy import Column

# --- descriptions (k8s.io/api core/v1 SwaggerDoc, and the printers' own) -------------------------------------------

POD_READY = "The aggregate readiness state of this pod for accepting traffic."
POD_STATUS = "The aggregate status of the containers in this pod."
POD_RESTARTS = ("The number of times the containers in this pod have been restarted and when the last container in "
                "this pod has restarted.")
POD_IP = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
POD_NODE = (
    "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply "
    "schedules this pod onto that node, assuming that it fits resource requirements."
)
POD_NOMINATED_NODE = (
    "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right "
    "away as preemption victims receive their graceful termination periods. This field does not guarantee that the "
    "pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become "
    "available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that "
    "is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is "
    "scheduled."
)
POD_READINESS_GATES = (
    "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers "
    "are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: "
    "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
)
SERVICE_TYPE = (
    "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, "
    "NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to "
    "endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an "
    "Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the "
    "endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and "
    "allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on "
    "NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same "
    "endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other "
    "fields do not apply to ExternalName services. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"
)
SERVICE_CLUSTER_IP = (
    "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified "
    "manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; "
    "otherwise creation of the service will fail. This field may not be changed through updates unless the type "
    "field is also being changed to ExternalName (which requires this field to be blank) or the type field is being "
    "changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid "
    "values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless "
    "service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not "
    "required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when "
    "creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service "
    "to type ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
)
SERVICE_EXTERNAL_IPS = (
    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this "
    "service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives "
    "at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes "
    "system."
)
SERVICE_PORTS = (
    "The list of ports that are exposed by this service. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
)
SERVICE_SELECTOR = (
    "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the "
    "service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only "
    "applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/"
)
ENDPOINTS_SUBSETS = (
    "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs "
    "they share. A single address with multiple ports, some of which are ready and some of which are not (because "
    "they come from different containers) will result in the address being displayed in different subsets for the "
    "different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of "
    "addresses and ports that comprise a service."
)
NODE_STATUS = "The status of the node"
NODE_ROLES = "The roles of the node"
NODE_VERSION = "Kubelet Version reported by the node."
NODE_ADDRESSES = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: "
    "https://kubernetes.io/docs/concepts/nodes/node/#addresses Note: This field is declared as mergeable, but the "
    "merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should "
    "instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that "
    "addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be "
    "possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API "
    "(status.hostIP)."
)
NODE_OS_IMAGE = "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
NODE_KERNEL = "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
NODE_RUNTIME = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."
EVENT_LAST_SEEN = "The time at which the most recent occurrence of this event was recorded."
EVENT_TYPE = "Type of this event (Normal, Warning), new types could be added in the future"
EVENT_REASON = (
    "This should be a short, machine understandable string that gives the reason for the transition into the "
    "object's current status."
)
EVENT_OBJECT = "The object that this event is about."
EVENT_SUBOBJECT = (
    "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go "
    "field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is "
    "to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers "
    "to the name of the container that triggered the event) or if no container name is specified "
    "\"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some "
    "well-defined way of referencing a part of an object."
)
EVENT_SOURCE = "The component reporting this event. Should be a short machine understandable string."
EVENT_MESSAGE = "A human-readable description of the status of this operation."
EVENT_FIRST_SEEN = "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
EVENT_COUNT = "The number of times this event has occurred."
PV_CAPACITY = (
    "capacity is the description of the persistent volume's resources and capacity. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"
)
PV_ACCESS_MODES = (
    "accessModes contains all ways the volume can be mounted. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"
)
PV_RECLAIM = (
    "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid "
    "options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically "
    "provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin "
    "underlying this PersistentVolume. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"
)
PV_PHASE = (
    "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"
)
PV_CLAIM = (
    "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be "
    "non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"
)
PV_REASON = ("reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy "
             "display in the CLI.")
PV_VOLUME_MODE = ("volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in "
                  "raw block state. Value of Filesystem is implied when not included in spec.")
PVC_PHASE = "phase represents the current phase of PersistentVolumeClaim."
PVC_VOLUME = "volumeName is the binding reference to the PersistentVolume backing this claim."
PVC_CAPACITY = "capacity represents the actual resources of the underlying volume."
PVC_ACCESS_MODES = (
    "accessModes contains the actual access modes the volume backing the PVC has. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"
)
PVC_VOLUME_MODE = ("volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied "
                   "when not included in claim spec.")
QUOTA_REQUEST = "Request represents a minimum amount of cpu/memory that a container may consume."
QUOTA_LIMIT = ("Limits control the maximum amount of cpu/memory that a container may use independent of contention "
               "on the node.")
SERVICE_ACCOUNT_SECRETS = (
    "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed "
    "to use. Pods are only limited to this list if this service account has a "
    "\"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". This field should not be used to find "
    "auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested "
    "directly using the TokenRequest API, or service account token secrets can be manually created. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret"
)
RC_DESIRED = (
    "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and "
    "unspecified. Defaults to 1. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)
RC_CURRENT = (
    "Replicas is the most recently observed number of replicas. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)
RC_READY = "The number of ready replicas for this replication controller."
RC_CONTAINERS = "Names of each container in the template."
RC_IMAGES = "Images referenced by each container in the template."
POD_TEMPLATE_LABELS = "The labels for the pod template."
RC_SELECTOR = (
    "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted "
    "to the labels present on the Pod template. Label keys and values that must match in order to be controlled by "
    "this replication controller, if empty defaulted to labels on Pod template. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)

NONE = "<none>"
UNSET = "<unset>"
STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


# --- helpers -----------------------------------------------------------------------------------------------------


def _meta(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("metadata"))


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def _status(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("status"))


def format_labels(labels: object) -> str:
    """labels.FormatLabels: sorted k=v pairs, "<none>" when empty."""
    pairs = _dict(labels)
    return ",".join(f"{k}={pairs[k]}" for k in sorted(pairs)) or NONE


def access_modes(modes: object) -> str:
    """helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order."""
    given = set(_list(modes))
    short = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
    return ",".join(abbreviation for mode, abbreviation in short if mode in given)


def _is_zero_time(value: object) -> bool:
    return not isinstance(value, str) or not value


# --- pods --------------------------------------------------------------------------------------------------------


def _restartable_init(container: object) -> bool:
    return _dict(container).get("restartPolicy") == "Always"


def pod_summary(obj: Obj) -> tuple[str, str, str]:
    """printPod's Ready ("1/2"), Status (phase, reason, container states, "Terminating") and Restarts cells."""
    spec, status = _spec(obj), _status(obj)
    containers = _list(spec.get("containers"))
    init_specs = {_dict(c).get("name"): c for c in _list(spec.get("initContainers"))}
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable_init(c))
    ready = 0
    restarts = 0
    last_restart = ""
    sidecar_restarts = 0
    last_sidecar_restart = ""
    phase = _str(status.get("phase"))
    reason = _str(status.get("reason")) or phase
    for condition in _list(status.get("conditions")):
        c = _dict(condition)
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    initializing = False
    init_statuses = _list(status.get("initContainerStatuses"))
    for index, item in enumerate(init_statuses):
        container = _dict(item)
        state, last = _dict(container.get("state")), _dict(container.get("lastState"))
        count = int(container.get("restartCount") or 0)
        restarts += count
        finished = _str(_dict(last.get("terminated")).get("finishedAt"))
        last_restart = max(last_restart, finished)
        sidecar = _restartable_init(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += count
            last_sidecar_restart = max(last_sidecar_restart, finished)
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, dict) and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            if container.get("ready"):
                ready += 1
            continue
        if isinstance(terminated, dict):
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode', 0)}"
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(_dict(c).get("type") == "Initialized" and _dict(c).get("status") == "True"
                      for c in _list(status.get("conditions")))
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        running = False
        for item in reversed(_list(status.get("containerStatuses"))):
            container = _dict(item)
            state, last = _dict(container.get("state")), _dict(container.get("lastState"))
            restarts += int(container.get("restartCount") or 0)
            last_restart = max(last_restart, _str(_dict(last.get("terminated")).get("finishedAt")))
            waiting, terminated = _dict(state.get("waiting")), state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif isinstance(terminated, dict) and terminated.get("reason"):
                reason = terminated["reason"]
            elif isinstance(terminated, dict):
                signal = terminated.get("signal")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
            elif container.get("ready") and isinstance(state.get("running"), dict):
                running = True
                ready += 1
        if reason == "Completed" and running:
            has_ready = any(_dict(c).get("type") == "Ready" and _dict(c).get("status") == "True"
                            for c in _list(status.get("conditions")))
            reason = "Running" if has_ready else "NotReady"
    deleting = bool(_meta(obj).get("deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"
    shown = str(restarts)
    if restarts and last_restart:  # the one cell that reads the clock: "3 (5m ago)" is no lone Since
        shown = f"{restarts} ({since(last_restart, time.time_ns())} ago)"
    return f"{ready}/{total}", reason, shown


def pod_ready(obj: Obj) -> str:
    return pod_summary(obj)[0]


def pod_status(obj: Obj) -> str:
    return pod_summary(obj)[1]


def pod_restarts(obj: Obj) -> str:
    return pod_summary(obj)[2]


def pod_ip(obj: Obj) -> str:
    ips = _list(_status(obj).get("podIPs"))
    return _str(_dict(ips[0]).get("ip")) if ips else NONE


def pod_node(obj: Obj) -> str:
    return _str(_spec(obj).get("nodeName")) or NONE


def pod_nominated_node(obj: Obj) -> str:
    return _str(_status(obj).get("nominatedNodeName")) or NONE


def pod_readiness_gates(obj: Obj) -> str:
    gates = _list(_spec(obj).get("readinessGates"))
    if not gates:
        return NONE
    conditions = {_dict(c).get("type"): _dict(c).get("status") for c in _list(_status(obj).get("conditions"))}
    true = sum(1 for g in gates if conditions.get(_dict(g).get("conditionType")) == "True")
    return f"{true}/{len(gates)}"


# --- services and endpoints --------------------------------------------------------------------------------------


def service_type(obj: Obj) -> str:
    return _str(_spec(obj).get("type"))


def service_cluster_ip(obj: Obj) -> str:
    ips = _list(_spec(obj).get("clusterIPs"))
    return _str(ips[0]) if ips else NONE


def _load_balancer(obj: Obj) -> str:
    ingress = _list(_dict(_status(obj).get("loadBalancer")).get("ingress"))
    return ",".join(_str(_dict(i).get("ip")) or _str(_dict(i).get("hostname")) for i in ingress
                    if _dict(i).get("ip") or _dict(i).get("hostname"))


def service_external_ip(obj: Obj) -> str:
    """getServiceExternalIP (wide: load-balancer addresses are never shortened server-side)."""
    spec = _spec(obj)
    external = [_str(ip) for ip in _list(spec.get("externalIPs"))]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or NONE
    if kind == "LoadBalancer":
        balanced = _load_balancer(obj)
        if external:
            return ",".join([*(balanced.split(",") if balanced else []), *external])
        return balanced or "<pending>"
    if kind == "ExternalName":
        return _str(spec.get("externalName"))
    return "<unknown>"


def service_ports(obj: Obj) -> str:
    """makePortString: port/protocol, or port:nodePort/protocol."""
    pieces = []
    for item in _list(_spec(obj).get("ports")):
        port = _dict(item)
        node = port.get("nodePort") or 0
        pieces.append(f"{port.get('port', 0)}:{node}/{port.get('protocol', '')}" if node
                      else f"{port.get('port', 0)}/{port.get('protocol', '')}")
    return ",".join(pieces) or NONE


def service_selector(obj: Obj) -> str:
    return format_labels(_spec(obj).get("selector"))


def endpoints(obj: Obj) -> str:
    """formatEndpoints: up to three ip:port pairs, then "+ N more..."."""
    subsets = _list(obj.get("subsets"))
    if not subsets:
        return NONE
    shown: list[str] = []
    count = 0
    more = False
    for item in subsets:
        subset = _dict(item)
        addresses = [_str(_dict(a).get("ip")) for a in _list(subset.get("addresses"))]
        ports = _list(subset.get("ports"))
        for port in ports or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == 3:
                    more = True
                    break
                if port is None:
                    shown.append(ip)
                else:
                    number = _dict(port).get("port", 0)
                    shown.append(f"[{ip}]:{number}" if ":" in ip else f"{ip}:{number}")
    text = ",".join(shown)
    return f"{text} + {count - 3} more..." if more else text


# --- nodes -------------------------------------------------------------------------------------------------------


def node_status(obj: Obj) -> str:
    states = []
    for condition in _list(_status(obj).get("conditions")):
        c = _dict(condition)
        if c.get("type") == "Ready":
            states = ["Ready" if c.get("status") == "True" else "NotReady"]
    states = states or ["Unknown"]
    if _spec(obj).get("unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def node_roles(obj: Obj) -> str:
    """findNodeRoles: node-role.kubernetes.io/<role> labels and kubernetes.io/role=<role>."""
    roles = set()
    for key, value in _dict(_meta(obj).get("labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or NONE


def _node_info(obj: Obj, field: str, unknown: str = "<unknown>") -> str:
    return _str(_dict(_status(obj).get("nodeInfo")).get(field)) or unknown


def _node_address(obj: Obj, kind: str) -> str:
    for address in _list(_status(obj).get("addresses")):
        if _dict(address).get("type") == kind:
            return _str(_dict(address).get("address"))
    return NONE


# --- events ------------------------------------------------------------------------------------------------------


def _event_first(obj: Obj) -> object:
    return obj.get("firstTimestamp") if not _is_zero_time(obj.get("firstTimestamp")) else obj.get("eventTime")


def event_last_seen(obj: Obj) -> object:
    series = obj.get("series")
    if isinstance(series, dict):
        return Since(series.get("lastObservedTime"))
    last = obj.get("lastTimestamp")
    return Since(last if not _is_zero_time(last) else _event_first(obj))


def event_first_seen(obj: Obj) -> object:
    return Since(_event_first(obj))


def event_object(obj: Obj) -> str:
    involved = _dict(obj.get("involvedObject"))
    kind = _str(involved.get("kind")).lower()
    name = _str(involved.get("name"))
    return f"{kind}/{name}" if name else kind


def event_source(obj: Obj) -> str:
    source = _dict(obj.get("source"))
    component = _str(source.get("component")) or _str(obj.get("reportingComponent"))
    host = _str(source.get("host")) or _str(obj.get("reportingInstance"))
    return f"{component}, {host}" if host else component


def event_count(obj: Obj) -> int:
    series = obj.get("series")
    if isinstance(series, dict):
        return int(series.get("count") or 0)
    return int(obj.get("count") or 0) or 1


# --- persistent volumes and claims -------------------------------------------------------------------------------


def _phase_or_terminating(obj: Obj) -> str:
    return "Terminating" if _meta(obj).get("deletionTimestamp") else _str(_status(obj).get("phase"))


def _storage_class(obj: Obj) -> str:
    annotation = _dict(_meta(obj).get("annotations")).get(STORAGE_CLASS_ANNOTATION)
    return _str(annotation) if annotation is not None else _str(_spec(obj).get("storageClassName"))


def pv_claim(obj: Obj) -> str:
    ref = _spec(obj).get("claimRef")
    return f"{_str(_dict(ref).get('namespace'))}/{_str(_dict(ref).get('name'))}" if isinstance(ref, dict) else ""


def pvc_capacity(obj: Obj) -> str:
    if not _spec(obj).get("volumeName"):
        return ""
    return _str(_dict(_status(obj).get("capacity")).get("storage")) or "0"


def pvc_access_modes(obj: Obj) -> str:
    return access_modes(_status(obj).get("accessModes")) if _spec(obj).get("volumeName") else ""


# --- quotas, replication controllers -----------------------------------------------------------------------------


def _quota_cells(obj: Obj, limits: bool) -> str:
    """printResourceQuota: "<resource>: <used>/<hard>" for each resource of status.hard (what a quota controller
    would have written), limits.* in the Limit column."""
    status = _status(obj)
    used, hard = _dict(status.get("used")), _dict(status.get("hard"))
    pieces = []
    for name in sorted(hard):
        parts = name.split(".")
        if (len(parts) > 1 and parts[0] == "limits") == limits:
            pieces.append(f"{name}: {used.get(name) or '0'}/{hard.get(name) or '0'}")
    return ", ".join(pieces)


def _template_containers(obj: Obj) -> Sequence[Any]:
    return _list(_dict(_dict(_spec(obj).get("template")).get("spec")).get("containers"))


def _pod_template_containers(obj: Obj) -> Sequence[Any]:
    """A PodTemplate's containers: its template sits at the top, not under spec."""
    return _list(_dict(_dict(obj.get("template")).get("spec")).get("containers"))


def _column(name: str, description: str, cell: Any, *, kind: str = "string", priority: int = 0) -> Column:
    return Column(name, kind, description, cell, priority=priority)


POD_COLUMNS = (
    NAME,
    _column("Ready", POD_READY, pod_ready),
    _column("Status", POD_STATUS, pod_status),
    _column("Restarts", POD_RESTARTS, pod_restarts),
    AGE,
    _column("IP", POD_IP, pod_ip, priority=1),
    _column("Node", POD_NODE, pod_node, priority=1),
    _column("Nominated Node", POD_NOMINATED_NODE, pod_nominated_node, priority=1),
    _column("Readiness Gates", POD_READINESS_GATES, pod_readiness_gates, priority=1),
)
SERVICE_COLUMNS = (
    NAME,
    _column("Type", SERVICE_TYPE, service_type),
    _column("Cluster-IP", SERVICE_CLUSTER_IP, service_cluster_ip),
    _column("External-IP", SERVICE_EXTERNAL_IPS, service_external_ip),
    _column("Port(s)", SERVICE_PORTS, service_ports),
    AGE,
    _column("Selector", SERVICE_SELECTOR, service_selector, priority=1),
)
ENDPOINTS_COLUMNS = (NAME, _column("Endpoints", ENDPOINTS_SUBSETS, endpoints), AGE)
NODE_COLUMNS = (
    NAME,
    _column("Status", NODE_STATUS, node_status),
    _column("Roles", NODE_ROLES, node_roles),
    AGE,
    _column("Version", NODE_VERSION, lambda o: _node_info(o, "kubeletVersion", "")),
    _column("Internal-IP", NODE_ADDRESSES, lambda o: _node_address(o, "InternalIP"), priority=1),
    _column("External-IP", NODE_ADDRESSES, lambda o: _node_address(o, "ExternalIP"), priority=1),
    _column("OS-Image", NODE_OS_IMAGE, lambda o: _node_info(o, "osImage"), priority=1),
    _column("Kernel-Version", NODE_KERNEL, lambda o: _node_info(o, "kernelVersion"), priority=1),
    _column("Container-Runtime", NODE_RUNTIME, lambda o: _node_info(o, "containerRuntimeVersion"), priority=1),
)
EVENT_COLUMNS = (
    _column("Last Seen", EVENT_LAST_SEEN, event_last_seen),
    _column("Type", EVENT_TYPE, lambda o: _str(o.get("type"))),
    _column("Reason", EVENT_REASON, lambda o: _str(o.get("reason"))),
    _column("Object", EVENT_OBJECT, event_object),
    _column("Subobject", EVENT_SUBOBJECT, lambda o: _str(_dict(o.get("involvedObject")).get("fieldPath")), priority=1),
    _column("Source", EVENT_SOURCE, event_source, priority=1),
    _column("Message", EVENT_MESSAGE, lambda o: _str(o.get("message")).strip()),
    _column("First Seen", EVENT_FIRST_SEEN, event_first_seen, priority=1),
    _column("Count", EVENT_COUNT, event_count, priority=1),
    Column("Name", "string", NAME.description, NAME.cell, format="name", priority=1),
)
PV_COLUMNS = (
    NAME,
    _column("Capacity", PV_CAPACITY, lambda o: _str(_dict(_spec(o).get("capacity")).get("storage")) or "0"),
    _column("Access Modes", PV_ACCESS_MODES, lambda o: access_modes(_spec(o).get("accessModes"))),
    _column("Reclaim Policy", PV_RECLAIM, lambda o: _str(_spec(o).get("persistentVolumeReclaimPolicy"))),
    _column("Status", PV_PHASE, _phase_or_terminating),
    _column("Claim", PV_CLAIM, pv_claim),
    _column("StorageClass", "StorageClass of the pv", _storage_class),
    _column("Reason", PV_REASON, lambda o: _str(_status(o).get("reason"))),
    AGE,
    _column("VolumeMode", PV_VOLUME_MODE, lambda o: _str(_spec(o).get("volumeMode")) or UNSET, priority=1),
)
PVC_COLUMNS = (
    NAME,
    _column("Status", PVC_PHASE, _phase_or_terminating),
    _column("Volume", PVC_VOLUME, lambda o: _str(_spec(o).get("volumeName"))),
    _column("Capacity", PVC_CAPACITY, pvc_capacity),
    _column("Access Modes", PVC_ACCESS_MODES, pvc_access_modes),
    _column("StorageClass", "StorageClass of the pvc", _storage_class),
    AGE,
    _column("VolumeMode", PVC_VOLUME_MODE, lambda o: _str(_spec(o).get("volumeMode")) or UNSET, priority=1),
)
QUOTA_COLUMNS = (
    NAME,
    AGE,
    _column("Request", QUOTA_REQUEST, lambda o: _quota_cells(o, limits=False)),
    _column("Limit", QUOTA_LIMIT, lambda o: _quota_cells(o, limits=True)),
)
SERVICE_ACCOUNT_COLUMNS = (
    NAME,
    _column("Secrets", SERVICE_ACCOUNT_SECRETS, lambda o: len(_list(o.get("secrets")))),
    AGE,
)
RC_COLUMNS = (
    NAME,
    _column("Desired", RC_DESIRED, lambda o: int(_spec(o).get("replicas") or 0), kind="integer"),
    _column("Current", RC_CURRENT, lambda o: int(_status(o).get("replicas") or 0), kind="integer"),
    _column("Ready", RC_READY, lambda o: int(_status(o).get("readyReplicas") or 0), kind="integer"),
    AGE,
    _column("Containers", RC_CONTAINERS,
            lambda o: ",".join(_str(_dict(c).get("name")) for c in _template_containers(o)), priority=1),
    _column("Images", RC_IMAGES,
            lambda o: ",".join(_str(_dict(c).get("image")) for c in _template_containers(o)), priority=1),
    _column("Selector", RC_SELECTOR, lambda o: format_labels(_spec(o).get("selector")), priority=1),
)
# printPodTemplate: no Age column; the labels are the template's, not the PodTemplate's own.
POD_TEMPLATE_COLUMNS = (
    NAME,
    _column("Containers", RC_CONTAINERS,
            lambda o: ",".join(_str(_dict(c).get("name")) for c in _pod_template_containers(o))),
    _column("Images", RC_IMAGES,
            lambda o: ",".join(_str(_dict(c).get("image")) for c in _pod_template_containers(o))),
    _column("Pod Labels", POD_TEMPLATE_LABELS,
            lambda o: format_labels(_dict(_dict(o.get("template")).get("metadata")).get("labels"))),
)

def _component_healthy(obj: Obj) -> Obj:
    """The component's Healthy condition ({} without one)."""
    return next((c for c in obj.get("conditions") or [] if isinstance(c, dict) and c.get("type") == "Healthy"), {})


def _component_status(obj: Obj) -> str:
    condition = _component_healthy(obj)
    if not condition:
        return "Unknown"
    return "Healthy" if condition.get("status") == "True" else "Unhealthy"


# printComponentStatus: the Healthy condition's status, message and error.
COMPONENT_STATUS_COLUMNS = (
    NAME,
    Column("Status", "string", "Status of the component conditions", _component_status),
    Column("Message", "string", "Message of the component conditions",
           lambda obj: str(_component_healthy(obj).get("message") or "")),
    Column("Error", "string", "Error of the component conditions",
           lambda obj: str(_component_healthy(obj).get("error") or "")),
)


COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("", "componentstatuses"): COMPONENT_STATUS_COLUMNS,
    ("", "pods"): POD_COLUMNS,
    ("", "podtemplates"): POD_TEMPLATE_COLUMNS,
    ("", "services"): SERVICE_COLUMNS,
    ("", "endpoints"): ENDPOINTS_COLUMNS,
    ("", "nodes"): NODE_COLUMNS,
    ("", "events"): EVENT_COLUMNS,
    ("", "persistentvolumes"): PV_COLUMNS,
    ("", "persistentvolumeclaims"): PVC_COLUMNS,
    ("", "resourcequotas"): QUOTA_COLUMNS,
    ("", "serviceaccounts"): SERVICE_ACCOUNT_COLUMNS,
    ("", "replicationcontrollers"): RC_COLUMNS,
}


