"""The warnings kube-apiserver 1.28 sends about a pod spec that is valid but probably not what its writer meant.

Pods, pod templates and every kind that embeds a pod template (ReplicationController, Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob) warn, from their strategies' WarningsOnCreate and WarningsOnUpdate,
about the same things (kubernetes pkg/api/pod/warnings.go, pkg/api/node/util.go,
pkg/api/persistentvolumeclaim/util.go, pkg/api/job/warnings.go): deprecated node labels in the node selector,
node affinity and topology spread constraints; deprecated annotations, seccomp annotations without the field;
deprecated volume types; duplicate hostAliases IPs and imagePullSecrets, empty imagePullSecrets names;
fractional byte quantities; env vars hiding earlier ones; conflicting port definitions; a negative grace
period; null label selectors in pod (anti-)affinity terms and topology spread constraints. Each is worded
"<field path>: <problem>", the path as field.Path prints it, e.g.

    spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead

The node label table and its selector checks serve the storage and node kinds' warnings too. The functions
take the object as the strategy sees it (defaulted and validated) and return the texts in
kube's order; map keys are visited in the object's order (Go visits them at random).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from server.machinery.codec.quantity import QuantityError, parse_quantity
from server.machinery.validation import names
from server.machinery.values import Obj

DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone": 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type": 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
}

# (annotation key, message), in kube's order.
DEPRECATED_ANNOTATIONS = (
    ("scheduler.alpha.kubernetes.io/critical-pod",
     'non-functional in v1.16+; use the "priorityClassName" field instead'),
    ("security.alpha.kubernetes.io/sysctls", 'non-functional in v1.11+; use the "sysctls" field instead'),
    ("security.alpha.kubernetes.io/unsafe-sysctls", 'non-functional in v1.11+; use the "sysctls" field instead'),
)

# (volume source field, message), in kube's order; an ephemeral volume's claim template is checked between
# glusterfs and cephfs.
DEPRECATED_VOLUMES = (
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
)
LATE_DEPRECATED_VOLUMES = (
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)

SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_MESSAGE = 'non-functional in v1.27+; use the "seccompProfile" field instead'
NULL_SELECTOR = "a null labelSelector results in matching no pod"
BYTE_RESOURCES = ("memory", "ephemeral-storage")
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

# What a workload's name becomes (WarningsOnCreate of the kinds that name pods after themselves).
POD_HOSTNAME = "this is used in the Pod's hostname"
POD_NAMES = "this is used in Pod names and hostnames"

INDEXED_COMPLETIONS_SOFT_LIMIT = 100_000
INDEXED_PARALLELISM_SOFT_LIMIT = 10_000
INDEXED_TRACKING = ("In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than "
                    "10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail")


def child(path: str, *fields: str) -> str:
    """field.Path.Child: `fields` below `path` ("" is the root)."""
    return ".".join(p for p in (path, *fields) if p)


def key(path: str, name: str) -> str:
    """field.Path.Key."""
    return f"{path}[{name}]"


def index(path: str, i: int) -> str:
    """field.Path.Index."""
    return f"{path}[{i}]"


def _dict(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def name_warnings(name: object, used_in: str) -> list[str]:
    """The warning about a name that is not a DNS label, which pods' names or hostnames take: `used_in` is
    POD_HOSTNAME (a Pod) or POD_NAMES (a workload). The problems print as Go's %v of a []string."""
    problems = names.is_dns1123_label(name if isinstance(name, str) else "")
    if not problems:
        return []
    return [f"metadata.name: {used_in}, which can result in surprising behavior; a DNS label is recommended: "
            f"[{' '.join(problems)}]"]


def pod_warnings(pod: Obj) -> list[str]:
    """GetWarningsForPod: a Pod's spec and metadata, its paths from the root."""
    return _spec_and_meta_warnings("", _dict(pod.get("spec")), _dict(pod.get("metadata")))


def template_warnings(template: object, path: str) -> list[str]:
    """GetWarningsForPodTemplate: a pod template (at `path`, e.g. "spec.template"); none when it is absent."""
    if not isinstance(template, dict):
        return []
    return _spec_and_meta_warnings(path, _dict(template.get("spec")), _dict(template.get("metadata")))


def claim_spec_warnings(spec: object, path: str) -> list[str]:
    """GetWarningsForPersistentVolumeClaimSpec: fractional storage requests and limits of a claim spec at `path`."""
    resources = _dict(_dict(spec).get("resources"))
    out: list[str] = []
    for field in ("requests", "limits"):
        out += _fractional(_dict(resources.get(field)).get("storage"), key(child(path, "resources", field), "storage"))
    return out


def job_spec_warnings(spec: object, path: str) -> list[str]:
    """WarningsForJobSpec: an Indexed Job too large to track its failed indexes, then its pod template's."""
    job = _dict(spec)
    out: list[str] = []
    if job.get("completionMode") == "Indexed":
        completions, parallelism = job.get("completions") or 0, job.get("parallelism") or 0
        if isinstance(completions, int) and isinstance(parallelism, int) and \
                completions > INDEXED_COMPLETIONS_SOFT_LIMIT and parallelism > INDEXED_PARALLELISM_SOFT_LIMIT:
            out.append(f"{path}: {INDEXED_TRACKING}")
    return out + template_warnings(job.get("template"), child(path, "template"))


def _spec_and_meta_warnings(path: str, spec: Obj, metadata: Obj) -> list[str]:
    """warningsForPodSpecAndMeta, in kube's order."""
    annotations = _dict(metadata.get("annotations"))
    out = _node_label_warnings(path, spec)
    for name, message in DEPRECATED_ANNOTATIONS:
        if name in annotations:
            out.append(f"{key(child(path, 'metadata', 'annotations'), name)}: {message}")
    out += _volume_warnings(path, spec)
    out += _duplicates(spec.get("hostAliases"), "ip", child(path, "spec", "hostAliases"), "duplicate ip")
    secrets = child(path, "spec", "imagePullSecrets")
    out += _duplicates(spec.get("imagePullSecrets"), "name", secrets, "duplicate name")
    for i, secret in enumerate(_list(spec.get("imagePullSecrets"))):
        if not _dict(secret).get("name"):
            out.append(f'{child(index(secrets, i), "name")}: invalid empty name ""')
    overhead = _dict(spec.get("overhead"))
    for resource in BYTE_RESOURCES:
        out += _fractional(overhead.get(resource), key(child(path, "spec", "overhead"), resource))
    if not _dict(spec.get("securityContext")).get("seccompProfile") and SECCOMP_POD_ANNOTATION in annotations:
        out.append(f"{key(child(path, 'metadata', 'annotations'), SECCOMP_POD_ANNOTATION)}: {SECCOMP_MESSAGE}")
    for container, at in _containers(spec, child(path, "spec")):
        out += _container_warnings(container, at, annotations, path)
    out += _port_warnings(spec, child(path, "spec"))
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        out.append(f"{child(path, 'spec', 'terminationGracePeriodSeconds')}: must be >= 0; negative values are "
                   "invalid and will be treated as 1")
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind)
        if not isinstance(terms, dict):
            continue
        at = child(path, "spec", "affinity", kind)
        required = child(at, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(_list(terms.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            if _dict(term).get("labelSelector") is None:
                out.append(f"{child(index(required, i), 'labelSelector')}: {NULL_SELECTOR}")
        preferred = child(at, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(_list(terms.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            if _dict(_dict(term).get("podAffinityTerm")).get("labelSelector") is None:
                out.append(f"{child(index(preferred, i), 'podAffinityTerm', 'labelSelector')}: {NULL_SELECTOR}")
    return out


def _node_label_warnings(path: str, spec: Obj) -> list[str]:
    """Deprecated node labels in the node selector, the node affinity's terms and the topology spread
    constraints' topology keys; a topology spread constraint's null label selector."""
    out: list[str] = []
    for label in _dict(spec.get("nodeSelector")):
        if label in DEPRECATED_NODE_LABELS:
            out.append(f"{key(child(path, 'spec', 'nodeSelector'), label)}: {DEPRECATED_NODE_LABELS[label]}")
    node = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
    at = child(path, "spec", "affinity", "nodeAffinity")
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        terms = child(at, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        for i, term in enumerate(_list(required.get("nodeSelectorTerms"))):
            out += node_selector_term_warnings(term, index(terms, i))
    preferred = child(at, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(_list(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        out += node_selector_term_warnings(_dict(term).get("preference"), child(index(preferred, i), "preference"))
    spread = child(path, "spec", "topologySpreadConstraints")
    for i, constraint in enumerate(_list(spec.get("topologySpreadConstraints"))):
        constraint = _dict(constraint)
        topology = constraint.get("topologyKey")
        if isinstance(topology, str) and topology in DEPRECATED_NODE_LABELS:
            out.append(f"{child(index(spread, i), 'topologyKey')}: {topology} is {DEPRECATED_NODE_LABELS[topology]}")
        if constraint.get("labelSelector") is None:
            out.append(f"{child(index(spread, i), 'labelSelector')}: {NULL_SELECTOR}")
    return out


def node_selector_term_warnings(term: object, path: str) -> list[str]:
    """GetWarningsForNodeSelectorTerm: deprecated labels among the term's matchExpressions."""
    out: list[str] = []
    for i, expression in enumerate(_list(_dict(term).get("matchExpressions"))):
        label = _dict(expression).get("key")
        if isinstance(label, str) and label in DEPRECATED_NODE_LABELS:
            out.append(f"{child(index(child(path, 'matchExpressions'), i), 'key')}: {label} is "
                       f"{DEPRECATED_NODE_LABELS[label]}")
    return out


def label_selector_warnings(selector: object, path: str) -> list[str]:
    """GetWarningsForNodeSelector: deprecated node labels in a metav1.LabelSelector's matchExpressions and
    matchLabels (the latter's path with the label as a child: `nodeTopology.matchLabels.<label>`)."""
    if not isinstance(selector, dict):
        return []
    out: list[str] = []
    for i, expression in enumerate(_list(selector.get("matchExpressions"))):
        label = _dict(expression).get("key")
        if isinstance(label, str) and label in DEPRECATED_NODE_LABELS:
            out.append(f"{child(index(child(path, 'matchExpressions'), i), 'key')}: {label} is "
                       f"{DEPRECATED_NODE_LABELS[label]}")
    for label in _dict(selector.get("matchLabels")):
        if label in DEPRECATED_NODE_LABELS:
            out.append(f"{child(path, 'matchLabels', label)}: {DEPRECATED_NODE_LABELS[label]}")
    return out


def _volume_warnings(path: str, spec: Obj) -> list[str]:
    out: list[str] = []
    volumes = child(path, "spec", "volumes")
    for i, volume in enumerate(_list(spec.get("volumes"))):
        volume = _dict(volume)
        at = index(volumes, i)
        out += [f"{child(at, field)}: {message}" for field, message in DEPRECATED_VOLUMES if volume.get(field)
                is not None]
        claim = _dict(volume.get("ephemeral")).get("volumeClaimTemplate")
        if isinstance(claim, dict):
            out += claim_spec_warnings(claim.get("spec"), child(at, "ephemeral", "volumeClaimTemplate", "spec"))
        out += [f"{child(at, field)}: {message}" for field, message in LATE_DEPRECATED_VOLUMES if volume.get(field)
                is not None]
    return out


def _duplicates(items: object, field: str, path: str, problem: str) -> list[str]:
    """`problem` for each item whose `field` an earlier item has, as `<path>[i].<field>: <problem> "<value>"`."""
    seen: set[str] = set()
    out: list[str] = []
    listed = _list(items)
    if len(listed) < 2:
        return out
    for i, item in enumerate(listed):
        value = _dict(item).get(field) or ""
        if value in seen:
            out.append(f"{child(index(path, i), field)}: {problem} {names.go_quote(str(value))}")
        else:
            seen.add(value)
    return out


def _fractional(value: object, path: str) -> list[str]:
    """A byte quantity that is not a whole number of bytes (its MilliValue not a multiple of 1000)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return []
    try:
        quantity = parse_quantity(str(value))
    except QuantityError:
        return []
    milli = quantity.round_up(-3)  # as SetDefaults_ResourceList leaves it, and MilliValue reads it
    if (milli.coefficient * 10 ** (milli.exponent + 3)) % 1000 == 0:
        return []
    return [f"{path}: fractional byte value {names.go_quote(str(milli))} is invalid, must be an integer"]


def _containers(spec: Obj, path: str) -> Iterator[tuple[Obj, str]]:
    """VisitContainersWithPath: init, regular and ephemeral containers with their paths."""
    for field in CONTAINER_LISTS:
        for i, container in enumerate(_list(spec.get(field))):
            yield _dict(container), index(child(path, field), i)


def _container_warnings(container: Obj, at: str, annotations: Obj, path: str) -> list[str]:
    """A container's seccomp annotation without the field, fractional byte quantities, env vars hiding others."""
    out: list[str] = []
    seccomp = SECCOMP_CONTAINER_ANNOTATION_PREFIX + str(container.get("name") or "")
    if not _dict(container.get("securityContext")).get("seccompProfile") and seccomp in annotations:
        out.append(f"{key(child(path, 'metadata', 'annotations'), seccomp)}: {SECCOMP_MESSAGE}")
    resources = _dict(container.get("resources"))
    for resource in BYTE_RESOURCES:
        for field in ("limits", "requests"):
            out += _fractional(_dict(resources.get(field)).get(resource), key(child(at, "resources", field), resource))
    env = _list(container.get("env"))
    if len(env) > 1:
        seen: set[str] = set()
        for i, item in enumerate(env):
            item = _dict(item)
            name = str(item.get("name") or "")
            if name not in seen:
                seen.add(name)
                continue
            ref, value = f"$({name})", str(item.get("value") or "")
            if item.get("valueFrom") is not None or value == ref or ref not in value:
                out.append(f"{index(child(at, 'env'), i)}: hides previous definition of {names.go_quote(name)}")
    return out


def _port_warnings(spec: Obj, path: str) -> list[str]:
    """hostIP without hostPort; the same containerPort and protocol defined twice (duplicate), with and without
    a hostPort (overlapping), or on one hostPort with and without a hostIP (dangerously ambiguous)."""
    out: list[str] = []
    seen: dict[str, list[tuple[str, Obj]]] = {}
    for container, at in _containers(spec, path):
        for i, port in enumerate(_list(container.get("ports"))):
            port = _dict(port)
            here = index(child(at, "ports"), i)
            host_ip, host_port = str(port.get("hostIP") or ""), port.get("hostPort") or 0
            if host_ip and not host_port:
                out.append(f"{here}: hostIP set without hostPort: {_go_port(port)}")
            others = seen.setdefault(f"{port.get('containerPort') or 0}/{port.get('protocol') or ''}", [])
            for other_at, other in others:
                other_ip, other_port = str(other.get("hostIP") or ""), other.get("hostPort") or 0
                if host_ip == other_ip and host_port == other_port:
                    out.append(f"{here}: duplicate port definition with {other_at}")
                elif not host_port or not other_port:
                    out.append(f"{here}: overlapping port definition with {other_at}")
                elif host_port == other_port and bool(host_ip) != bool(other_ip):
                    out.append(f"{here}: dangerously ambiguous port definition with {other_at}")
            others.append((here, port))
    return out


def _go_port(port: Obj) -> str:
    """Go's %+v of the internal ContainerPort."""
    return (f"{{Name:{port.get('name') or ''} HostPort:{port.get('hostPort') or 0} "
            f"ContainerPort:{port.get('containerPort') or 0} Protocol:{port.get('protocol') or ''} "
            f"HostIP:{port.get('hostIP') or ''}}}")


def generation_changed(obj: Obj, old: Obj) -> bool:
    """Whether an update raised metadata.generation (changed the spec): when the workloads' WarningsOnUpdate
    look at their pod template again."""
    return _dict(obj.get("metadata")).get("generation") != _dict(old.get("metadata")).get("generation")


def workload_warnings(obj: Obj, old: Obj | None, *, names_pods: bool = True) -> list[str]:
    """WarningsOnCreate/OnUpdate of a workload whose pod template is spec.template (Deployment, ReplicaSet):
    on create a name its pods' names cannot take (when `names_pods`) and the template's warnings; on update the
    template's, only when the generation rose."""
    template = _dict(obj.get("spec")).get("template")
    if old is None:
        named = name_warnings(_dict(obj.get("metadata")).get("name"), POD_NAMES) if names_pods else []
        return named + template_warnings(template, "spec.template")
    return template_warnings(template, "spec.template") if generation_changed(obj, old) else []
