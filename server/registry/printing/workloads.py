"""Table columns of the apps, batch, coordination, events and rbac kinds (and of /scale's Scale), as
kube-apiserver's printers (pkg/printers/internalversion/printers.go) print them.

kube-apiserver always prints the wide form (its TableConvertor asks for Wide), so every row has a cell
for every column, priority-1 columns included; kubectl shows those with -o wide. Cells keep Go's types:
counts are int64 (numbers) even where the column says "string". Descriptions are the SwaggerDoc text of
the field each column shows, from the API version the printer names (often an older one, such as
extensions/v1beta1), or the printer's own words. Roles and ClusterRoles have no printer: they get the
default Name / Created At table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from server.machinery.codec import gotime
from server.machinery.selectors import labels
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _str
from server.registry.printing.columns import AGE, CREATION_TIMESTAMP_DESCRIPTION, NAME, NAME_DESCRIPTION
from server.registry.printing.duration import SECOND, Since, human_duration
from server.registry.strategy import Column

# The printers' own descriptions.
READY_DESCRIPTION = "Number of the pod with ready state"
CONTAINERS_DESCRIPTION = "Names of each container in the template."
IMAGES_DESCRIPTION = "Images referenced by each container in the template."
# extensions/v1beta1 DeploymentStatus and DeploymentSpec.
DEPLOYMENT_UPDATED_DESCRIPTION = (
    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.")
DEPLOYMENT_AVAILABLE_DESCRIPTION = (
    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.")
DEPLOYMENT_SELECTOR_DESCRIPTION = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by "
    "this deployment.")
# extensions/v1beta1 ReplicaSetSpec and ReplicaSetStatus.
REPLICA_SET_DESIRED_DESCRIPTION = (
    "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and "
    "unspecified. Defaults to 1. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller")
REPLICA_SET_CURRENT_DESCRIPTION = (
    "Replicas is the most recently observed number of replicas. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller")
REPLICA_SET_READY_DESCRIPTION = "The number of ready replicas for this replica set."
REPLICA_SET_SELECTOR_DESCRIPTION = (
    "Selector is a label query over pods that should match the replica count. If the selector is empty, it is "
    "defaulted to the labels present on the pod template. Label keys and values that must match in order to be "
    "controlled by this replica set. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors")
# extensions/v1beta1 DaemonSetStatus and DaemonSetSpec; core/v1 PodSpec.
DAEMON_SET_DESIRED_DESCRIPTION = (
    "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon "
    "pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/")
DAEMON_SET_CURRENT_DESCRIPTION = (
    "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/")
DAEMON_SET_READY_DESCRIPTION = (
    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and "
    "ready.")
DAEMON_SET_UPDATED_DESCRIPTION = "The total number of nodes that are running updated daemon pod"
DAEMON_SET_AVAILABLE_DESCRIPTION = (
    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and "
    "available (ready for at least spec.minReadySeconds)")
NODE_SELECTOR_DESCRIPTION = (
    "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's "
    "labels for the pod to be scheduled on that node. More info: "
    "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/")
DAEMON_SET_SELECTOR_DESCRIPTION = (
    "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, "
    "defaulted to labels on Pod template. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors")
# batch/v1 JobStatus and JobSpec; batch/v1beta1 CronJobSpec and CronJobStatus.
JOB_COMPLETIONS_DESCRIPTION = "The number of pods which reached phase Succeeded."
JOB_DURATION_DESCRIPTION = "Time required to complete the job."
JOB_SELECTOR_DESCRIPTION = (
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. More "
    "info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors")
CRON_JOB_SCHEDULE_DESCRIPTION = "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."
CRON_JOB_SUSPEND_DESCRIPTION = (
    "This flag tells the controller to suspend subsequent executions, it does not apply to already started "
    "executions.  Defaults to false.")
CRON_JOB_ACTIVE_DESCRIPTION = "A list of pointers to currently running jobs."
CRON_JOB_LAST_SCHEDULE_DESCRIPTION = "Information when was the last time the job was successfully scheduled."
# coordination/v1 LeaseSpec; apps/v1beta1 ControllerRevision; rbac/v1beta1 RoleBinding and ClusterRoleBinding.
LEASE_HOLDER_DESCRIPTION = "holderIdentity contains the identity of the holder of a current lease."
CONTROLLER_DESCRIPTION = "Controller of the object"
REVISION_DESCRIPTION = "revision indicates the revision of the state represented by Data."
ROLE_BINDING_ROLE_DESCRIPTION = (
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef "
    "cannot be resolved, the Authorizer must return an error.")
CLUSTER_ROLE_BINDING_ROLE_DESCRIPTION = (
    "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the "
    "Authorizer must return an error.")
# core/v1 Event and ObjectReference: events.k8s.io Events are printed as core Events (one storage upstream).
# autoscaling/v1 ScaleSpec and ScaleStatus.
SCALE_DESIRED_DESCRIPTION = "replicas is the desired number of instances for the scaled object."
SCALE_AVAILABLE_DESCRIPTION = "replicas is the actual number of observed instances of the scaled object."


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def _status(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("status"))


def _template_containers(template: object) -> Sequence[Any]:
    return _list(_dict(_dict(template).get("spec")).get("containers"))


def _containers(obj: Obj) -> str:
    """layoutContainerCells: the names, comma-joined."""
    return ",".join(_str(_dict(c).get("name")) for c in _template_containers(_spec(obj).get("template")))


def _images(obj: Obj) -> str:
    return ",".join(_str(_dict(c).get("image")) for c in _template_containers(_spec(obj).get("template")))


def _selector_string(selector: object) -> str:
    """metav1.LabelSelectorAsSelector(s).String(); "" for a nil selector (labels.Nothing)."""
    return str(labels.from_label_selector(selector if isinstance(selector, dict) else None))


def format_label_selector(selector: object) -> str:
    """metav1.FormatLabelSelector: the selector as a query, "<none>" when empty, "<error>" when invalid."""
    try:
        text = _selector_string(selector)
    except (labels.SelectorError, TypeError):
        return "<error>"
    return text or "<none>"


def format_labels(label_map: object) -> str:
    """labels.FormatLabels: k=v pairs sorted by key, "<none>" when there are none."""
    pairs = _dict(label_map)
    return ",".join(f"{k}={pairs[k]}" for k in sorted(pairs)) or "<none>"


def _selector(obj: Obj) -> str:
    return format_label_selector(_spec(obj).get("selector"))


# -- Deployment, ReplicaSet, StatefulSet, DaemonSet --------------------------------------------------------------


def _ready_of_desired(obj: Obj) -> str:
    return f"{_int(_status(obj).get('readyReplicas'))}/{_int(_spec(obj).get('replicas'))}"


def _deployment_selector(obj: Obj) -> str:
    """printDeployment writes the selector itself: "<invalid>" when it does not parse, "" when there is none."""
    try:
        return _selector_string(_spec(obj).get("selector"))
    except (labels.SelectorError, TypeError):
        return "<invalid>"


def _status_count(field: str) -> Any:
    return lambda obj: _int(_status(obj).get(field))


def _spec_replicas(obj: Obj) -> int:
    return _int(_spec(obj).get("replicas"))


def _node_selector(obj: Obj) -> str:
    return format_labels(_dict(_dict(_spec(obj).get("template")).get("spec")).get("nodeSelector"))


CONTAINERS = Column("Containers", "string", CONTAINERS_DESCRIPTION, _containers, priority=1)
IMAGES = Column("Images", "string", IMAGES_DESCRIPTION, _images, priority=1)

DEPLOYMENT_COLUMNS = (
    NAME,
    Column("Ready", "string", READY_DESCRIPTION, _ready_of_desired),
    Column("Up-to-date", "string", DEPLOYMENT_UPDATED_DESCRIPTION, _status_count("updatedReplicas")),
    Column("Available", "string", DEPLOYMENT_AVAILABLE_DESCRIPTION, _status_count("availableReplicas")),
    AGE,
    CONTAINERS,
    IMAGES,
    Column("Selector", "string", DEPLOYMENT_SELECTOR_DESCRIPTION, _deployment_selector, priority=1),
)
REPLICA_SET_COLUMNS = (
    NAME,
    Column("Desired", "integer", REPLICA_SET_DESIRED_DESCRIPTION, _spec_replicas),
    Column("Current", "integer", REPLICA_SET_CURRENT_DESCRIPTION, _status_count("replicas")),
    Column("Ready", "integer", REPLICA_SET_READY_DESCRIPTION, _status_count("readyReplicas")),
    AGE,
    CONTAINERS,
    IMAGES,
    Column("Selector", "string", REPLICA_SET_SELECTOR_DESCRIPTION, _selector, priority=1),
)
STATEFUL_SET_COLUMNS = (
    NAME,
    Column("Ready", "string", READY_DESCRIPTION, _ready_of_desired),
    AGE,
    CONTAINERS,
    IMAGES,
)
DAEMON_SET_COLUMNS = (
    NAME,
    Column("Desired", "integer", DAEMON_SET_DESIRED_DESCRIPTION, _status_count("desiredNumberScheduled")),
    Column("Current", "integer", DAEMON_SET_CURRENT_DESCRIPTION, _status_count("currentNumberScheduled")),
    Column("Ready", "integer", DAEMON_SET_READY_DESCRIPTION, _status_count("numberReady")),
    Column("Up-to-date", "integer", DAEMON_SET_UPDATED_DESCRIPTION, _status_count("updatedNumberScheduled")),
    Column("Available", "integer", DAEMON_SET_AVAILABLE_DESCRIPTION, _status_count("numberAvailable")),
    Column("Node Selector", "string", NODE_SELECTOR_DESCRIPTION, _node_selector),
    AGE,
    CONTAINERS,
    IMAGES,
    Column("Selector", "string", DAEMON_SET_SELECTOR_DESCRIPTION, _selector, priority=1),
)


# -- ControllerRevision --------------------------------------------------------------------------------------------


def _controller(obj: Obj) -> str:
    """metav1.GetControllerOf, as formatResourceName writes it: "statefulset.apps/web", or "<none>"."""
    for ref in _list(_dict(obj.get("metadata")).get("ownerReferences")):
        ref = _dict(ref)
        if ref.get("controller") is True:
            api_version, kind = _str(ref.get("apiVersion")), _str(ref.get("kind"))
            group = api_version.rpartition("/")[0] if "/" in api_version else ""
            group_kind = f"{kind}.{group}" if group else kind
            name = _str(ref.get("name"))
            return f"{group_kind.lower()}/{name}" if group_kind else name
    return "<none>"


CONTROLLER_REVISION_COLUMNS = (
    NAME,
    Column("Controller", "string", CONTROLLER_DESCRIPTION, _controller),
    Column("Revision", "string", REVISION_DESCRIPTION, lambda obj: _int(obj.get("revision"))),
    AGE,
)


# -- Job, CronJob --------------------------------------------------------------------------------------------------


def _condition_true(obj: Obj, kind: str) -> bool:
    """hasJobCondition: the first condition of that type decides."""
    for condition in _list(_status(obj).get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _job_completions(obj: Obj) -> str:
    spec, succeeded = _spec(obj), _int(_status(obj).get("succeeded"))
    if isinstance(spec.get("completions"), int):
        return f"{succeeded}/{spec['completions']}"
    parallelism = _int(spec.get("parallelism"))
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _nanos(timestamp: object) -> int | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        seconds, nanos = gotime.parse(timestamp, gotime.RFC3339)
    except gotime.TimeError:
        return None
    return seconds * SECOND + nanos


def _job_duration(obj: Obj) -> object:
    """No start: ""; running: the time since the start (worded when the table is built); done: end - start."""
    status = _status(obj)
    start = _nanos(status.get("startTime"))
    if start is None:
        return ""
    end = _nanos(status.get("completionTime"))
    if end is None:
        return Since(status.get("startTime"))
    return human_duration(end - start)


def _job_template_containers(obj: Obj, key: str) -> str:
    job_spec = _dict(_dict(_spec(obj).get("jobTemplate")).get("spec"))
    return ",".join(_str(_dict(c).get(key)) for c in _template_containers(job_spec.get("template")))


def _print_bool_pointer(value: object) -> str:
    """printBoolPtr."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _last_schedule(obj: Obj) -> object:
    last = _status(obj).get("lastScheduleTime")
    return Since(last) if last else "<none>"


JOB_COLUMNS = (
    NAME,
    Column("Completions", "string", JOB_COMPLETIONS_DESCRIPTION, _job_completions),
    Column("Duration", "string", JOB_DURATION_DESCRIPTION, _job_duration),
    AGE,
    CONTAINERS,
    IMAGES,
    Column("Selector", "string", JOB_SELECTOR_DESCRIPTION, _selector, priority=1),
)
CRON_JOB_COLUMNS = (
    NAME,
    Column("Schedule", "string", CRON_JOB_SCHEDULE_DESCRIPTION, lambda obj: _str(_spec(obj).get("schedule"))),
    Column("Suspend", "boolean", CRON_JOB_SUSPEND_DESCRIPTION,
           lambda obj: _print_bool_pointer(_spec(obj).get("suspend"))),
    Column("Active", "integer", CRON_JOB_ACTIVE_DESCRIPTION, lambda obj: len(_list(_status(obj).get("active")))),
    Column("Last Schedule", "string", CRON_JOB_LAST_SCHEDULE_DESCRIPTION, _last_schedule),
    AGE,
    Column("Containers", "string", CONTAINERS_DESCRIPTION, lambda obj: _job_template_containers(obj, "name"),
           priority=1),
    Column("Images", "string", IMAGES_DESCRIPTION, lambda obj: _job_template_containers(obj, "image"), priority=1),
    Column("Selector", "string", JOB_SELECTOR_DESCRIPTION,
           lambda obj: format_label_selector(_dict(_dict(_spec(obj).get("jobTemplate")).get("spec")).get("selector")),
           priority=1),
)


# -- Lease, RoleBinding, ClusterRoleBinding, Scale ------------------------------------------------

LEASE_COLUMNS = (
    NAME,
    Column("Holder", "string", LEASE_HOLDER_DESCRIPTION, lambda obj: _str(_spec(obj).get("holderIdentity"))),
    AGE,
)


def _role_ref(obj: Obj) -> str:
    ref = _dict(obj.get("roleRef"))
    return f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}"


def _subjects(kind: str) -> Any:
    """rbac.SubjectsStrings: users and groups by name, service accounts as namespace/name; ", "-joined."""

    def cell(obj: Obj) -> str:
        found = []
        for subject in _list(obj.get("subjects")):
            subject = _dict(subject)
            if subject.get("kind") == kind:
                name = _str(subject.get("name"))
                found.append(f"{_str(subject.get('namespace'))}/{name}" if kind == "ServiceAccount" else name)
        return ", ".join(found)

    return cell


def _binding_columns(role_description: str, holder: str) -> tuple[Column, ...]:
    return (
        NAME,
        Column("Role", "string", role_description, _role_ref),
        AGE,
        Column("Users", "string", f"Users in the {holder}", _subjects("User"), priority=1),
        Column("Groups", "string", f"Groups in the {holder}", _subjects("Group"), priority=1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {holder}", _subjects("ServiceAccount"),
               priority=1),
    )


ROLE_BINDING_COLUMNS = _binding_columns(ROLE_BINDING_ROLE_DESCRIPTION, "roleBinding")
CLUSTER_ROLE_BINDING_COLUMNS = _binding_columns(CLUSTER_ROLE_BINDING_ROLE_DESCRIPTION, "clusterRoleBinding")

# printScale: its Name column has no "name" format.
SCALE_COLUMNS = (
    Column("Name", "string", NAME_DESCRIPTION, lambda obj: _str(_dict(obj.get("metadata")).get("name"))),
    Column("Desired", "integer", SCALE_DESIRED_DESCRIPTION, lambda obj: _int(_spec(obj).get("replicas"))),
    Column("Available", "integer", SCALE_AVAILABLE_DESCRIPTION, lambda obj: _int(_status(obj).get("replicas"))),
    Column("Age", "string", CREATION_TIMESTAMP_DESCRIPTION, AGE.cell),
)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("apps", "deployments"): DEPLOYMENT_COLUMNS,
    ("apps", "replicasets"): REPLICA_SET_COLUMNS,
    ("apps", "statefulsets"): STATEFUL_SET_COLUMNS,
    ("apps", "daemonsets"): DAEMON_SET_COLUMNS,
    ("apps", "controllerrevisions"): CONTROLLER_REVISION_COLUMNS,
    ("batch", "jobs"): JOB_COLUMNS,
    ("batch", "cronjobs"): CRON_JOB_COLUMNS,
    ("coordination.k8s.io", "leases"): LEASE_COLUMNS,
    ("rbac.authorization.k8s.io", "rolebindings"): ROLE_BINDING_COLUMNS,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): CLUSTER_ROLE_BINDING_COLUMNS,
    ("autoscaling", "scale"): SCALE_COLUMNS,  # /scale's Scale (server/objects/scale.py)
}
