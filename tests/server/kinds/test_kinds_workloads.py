"""The apps, batch, coordination, events and rbac kinds through the CoreService: per kind CRUD and watch,
kube-apiserver's defaults and validation (exact Status), /scale with its preconditions and every patch type,
generation tracking and field selectors.

Expected answers are kube-apiserver 1.32's, from pkg/apis/{apps,batch,coordination,rbac}/v1/defaults.go,
pkg/apis/*/validation and pkg/registry/* (the strategies and the ScaleREST of deployments, replicasets and
statefulsets).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from capstan.api.apps.v1 import apps_pb2
from capstan.api.autoscaling.v1 import autoscaling_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.validation import names
from tests.server import kube
from tests.server.client import PROTOBUF, Client, Obj, path, raw, refused

NS = "default"
APPS, BATCH, COORDINATION, EVENTS, RBAC = (
    "apps", "batch", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io")
JSON_PATCH, MERGE, STRATEGIC, APPLY = (core_pb2.PATCH_TYPE_JSON, core_pb2.PATCH_TYPE_MERGE,
                                       core_pb2.PATCH_TYPE_STRATEGIC_MERGE, core_pb2.PATCH_TYPE_APPLY)
CONTROLLER_UID, JOB_NAME = "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"
MODIFIED = kube.MODIFIED

SELECTOR = {"matchLabels": {"app": "web"}}
CONTAINERS = [{"name": "web", "image": "nginx:1.27"}]
TEMPLATE: Obj = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": CONTAINERS}}
JOB_TEMPLATE: Obj = {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}

# The group, kind and a minimal valid body (without metadata) of every kind.
KINDS: dict[str, tuple[str, str, Obj]] = {
    "deployments": (APPS, "Deployment", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    "replicasets": (APPS, "ReplicaSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    "statefulsets": (APPS, "StatefulSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    "daemonsets": (APPS, "DaemonSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    "controllerrevisions": (APPS, "ControllerRevision", {"data": {"spec": {"x": 1}}, "revision": 1}),
    "jobs": (BATCH, "Job", {"spec": {"template": JOB_TEMPLATE}}),
    "cronjobs": (BATCH, "CronJob", {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": JOB_TEMPLATE}}}}),
    "leases": (COORDINATION, "Lease", {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
    "events": (EVENTS, "Event", {
        "eventTime": "2024-05-01T12:00:00.123456Z", "reportingController": "example.com/controller",
        "reportingInstance": "controller-1", "action": "Scale", "reason": "Started", "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": NS, "name": "web-1"}, "note": "started"}),
    "roles": (RBAC, "Role", {"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]}),
    "clusterroles": (RBAC, "ClusterRole", {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
    "rolebindings": (RBAC, "RoleBinding", {"roleRef": {"kind": "Role", "name": "reader"},
                                           "subjects": [{"kind": "User", "name": "alice"}]}),
    "clusterrolebindings": (RBAC, "ClusterRoleBinding", {"roleRef": {"kind": "ClusterRole", "name": "reader"},
                                                         "subjects": [{"kind": "Group", "name": "devs"}]}),
}
CLUSTER_SCOPED = {"clusterroles", "clusterrolebindings"}


def at(resource: str, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    group = KINDS[resource][0]
    namespace = "" if resource in CLUSTER_SCOPED else NS
    return path(resource, namespace, name, group=group, subresource=subresource)


def body(resource: str, name: str = "web", **top: Any) -> Obj:
    """The kind's minimal body named `name`, with top-level fields replaced by `top` and `spec` merged."""
    group, kind, base = KINDS[resource]
    obj: Obj = {"apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": name}, **copy.deepcopy(base)}
    spec = top.pop("spec", None)
    obj.update(top)
    if spec is not None:
        obj["spec"] = {**obj.get("spec", {}), **spec}
    return obj


async def create(client: Client, resource: str, name: str = "web", **top: Any) -> Obj:
    return await client.create(at(resource), body(resource, name, **top))


async def patch(client: Client, p: core_pb2.ResourcePath, kind: core_pb2.PatchType, document: Any, *,
                accept: int = core_pb2.ENCODING_JSON, **options: Any) -> Obj:
    data = document if isinstance(document, bytes) else orjson.dumps(document)
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=p, type=kind, patch=data, options=options, accept=accept))  # type: ignore[arg-type]
    return orjson.loads(response.object.data)  # type: ignore[no-any-return]


def not_found(resource: str, group: str, name: str) -> Obj:
    """errors.NewNotFound for a resource of a named group: `deployments.apps "web" not found`."""
    return kube.failure(404, "NotFound", f'{resource}.{group} "{name}" not found',
                        kube.details(name=name, group=group, kind=resource))


def conflict(resource: str, group: str, name: str, detail: str) -> Obj:
    return kube.failure(409, "Conflict", f'Operation cannot be fulfilled on {resource}.{group} "{name}": {detail}',
                        kube.details(name=name, group=group, kind=resource))


def without_template(spec: Obj) -> Obj:
    return {k: v for k, v in spec.items() if k not in ("selector", "template", "jobTemplate")}


# ---------------------------------------------------------------- CRUD and watch, every kind


@pytest.mark.parametrize("resource", list(KINDS))
async def test_create_get_list_update_delete_and_watch(client: Client, resource: str) -> None:
    group, kind, _ = KINDS[resource]
    collection = at(resource)
    created = await create(client, resource)
    m = created["metadata"]
    assert (created["kind"], created["apiVersion"], m["name"]) == (kind, f"{group}/v1", "web")
    assert ("namespace" in m) == (resource not in CLUSTER_SCOPED)
    assert await client.get(at(resource, "web")) == created
    _, items = await client.list(collection)
    assert [i["metadata"]["name"] for i in items] == ["web"]

    labeled = copy.deepcopy(created)
    labeled["metadata"]["labels"] = {"tier": "front"}
    updated, _ = await client.update(at(resource, "web"), labeled)
    assert updated["metadata"]["labels"] == {"tier": "front"}
    assert int(updated["metadata"]["resourceVersion"]) > int(m["resourceVersion"])
    await client.delete(at(resource, "web"), propagationPolicy="Background")  # as kubectl deletes
    events = await client.events(collection, lambda e: e[0] == "DELETED", resourceVersion=m["resourceVersion"])
    assert [(t, o["metadata"]["resourceVersion"]) for t, o in events] == [
        ("MODIFIED", updated["metadata"]["resourceVersion"]), ("DELETED", str(client.revision()))]
    failed = await refused(client.get(at(resource, "web")))
    assert failed.status == not_found(resource, group, "web")


async def test_jobs_orphan_their_pods_by_default_in_batch_v1(client: Client) -> None:
    await create(client, "jobs")
    deleting = await client.delete(at("jobs", "web"))
    assert deleting["metadata"]["finalizers"] == ["orphan"]


async def test_protobuf_answers_decode_with_the_kinds_messages(client: Client) -> None:
    await create(client, "deployments")
    raw = await client.get_raw(at("deployments", "web"), accept=PROTOBUF)
    decoded = apps_pb2.Deployment.FromString(raw.data)
    assert (raw.encoding, decoded.metadata.name, decoded.spec.replicas, decoded.spec.strategy.type) == (
        PROTOBUF, "web", 1, "RollingUpdate")


# ---------------------------------------------------------------- defaults


@pytest.mark.parametrize(("resource", "spec", "expected", "status"), [
    pytest.param("deployments", {}, {
        "replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                                "maxSurge": "25%"}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}, {}, id="deployment"),
    pytest.param("deployments", {"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0}, {
        "replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0, "progressDeadlineSeconds": 600},
        {}, id="deployment recreate, zeros kept"),
    pytest.param("deployments", {"strategy": {"rollingUpdate": {"maxSurge": 2}}}, {
        "replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                                "maxSurge": 2}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}, {}, id="deployment partial rolling update"),
    pytest.param("replicasets", {}, {"replicas": 1}, {"replicas": 0}, id="replicaset"),
    pytest.param("statefulsets", {}, {
        "replicas": 1, "serviceName": "", "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}},
        {"replicas": 0, "availableReplicas": 0}, id="statefulset"),
    pytest.param("statefulsets", {"updateStrategy": {"type": "OnDelete"}, "podManagementPolicy": "Parallel"}, {
        "replicas": 1, "serviceName": "", "podManagementPolicy": "Parallel", "updateStrategy": {"type": "OnDelete"},
        "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}},
        {"replicas": 0, "availableReplicas": 0}, id="statefulset on delete"),
    pytest.param("daemonsets", {}, {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        "revisionHistoryLimit": 10},
        {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0},
        id="daemonset"),
    pytest.param("jobs", {}, {
        "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
        "suspend": False}, {}, id="job"),
    pytest.param("jobs", {"parallelism": 3}, {
        "parallelism": 3, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False}, {},
        id="job with parallelism only"),
    pytest.param("jobs", {"completions": 5, "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
        {"type": "DisruptionTarget"}]}]}}, {
        "parallelism": 1, "completions": 5,
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
            {"type": "DisruptionTarget", "status": "True"}]}]},
        "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False}, {},
        id="job with a pod failure policy"),
    pytest.param("cronjobs", {}, {
        "schedule": "*/5 * * * *", "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1}, {}, id="cronjob"),
])
async def test_defaults(client: Client, resource: str, spec: Obj, expected: Obj, status: Obj) -> None:
    created = await create(client, resource, spec=spec)
    assert (without_template(created["spec"]), created["status"]) == (expected, status)
    assert created["metadata"]["generation"] == 1


CLAIM: Obj = {"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                      "resources": {"requests": {"storage": "1Gi"}}}}
EPHEMERAL: Obj = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": CONTAINERS, "volumes": [
    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": CLAIM["spec"]}}}]}}
CLAIM_SPEC: Obj = {**CLAIM["spec"], "volumeMode": "Filesystem"}


# The objects a kind embeds, as kube-apiserver 1.28.7 printed them for the same bodies: every embedded ObjectMeta
# with its zero creationTimestamp as null (a metav1.Time value), a claim template's spec defaulted, and a
# StatefulSet's claim templates printed as v1 PersistentVolumeClaims (apps/v1's conversion sets their TypeMeta,
# whatever was sent; strict field validation knows apiVersion and kind there).
@pytest.mark.parametrize(("resource", "spec", "part", "expected"), [
    pytest.param("deployments", {}, lambda out: out["spec"]["template"]["metadata"],
                 {"creationTimestamp": None, "labels": {"app": "web"}}, id="a pod template's metadata"),
    pytest.param("cronjobs", {}, lambda out: (out["spec"]["jobTemplate"]["metadata"],
                                              out["spec"]["jobTemplate"]["spec"]["template"]["metadata"]),
                 ({"creationTimestamp": None}, {"creationTimestamp": None}), id="a job template's, absent: printed"),
    pytest.param("statefulsets", {"volumeClaimTemplates": [CLAIM]}, lambda out: out["spec"]["volumeClaimTemplates"],
                 [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"creationTimestamp": None, "name": "www"}, "spec": CLAIM_SPEC,
                   "status": {"phase": "Pending"}}], id="claim templates"),
    pytest.param("statefulsets", {"volumeClaimTemplates": [{"apiVersion": "v9", "kind": "Claim", **CLAIM}]},
                 lambda out: [[*list(claim)[:2], claim["apiVersion"], claim["kind"]]
                              for claim in out["spec"]["volumeClaimTemplates"]],
                 [["apiVersion", "kind", "v1", "PersistentVolumeClaim"]], id="claim templates' TypeMeta, first"),
    pytest.param("statefulsets", {"template": EPHEMERAL},
                 lambda out: out["spec"]["template"]["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"],
                 {"metadata": {"creationTimestamp": None}, "spec": CLAIM_SPEC}, id="an ephemeral volume's claim"),
    pytest.param("statefulsets", {"template": EPHEMERAL},
                 lambda out: out["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
                     "f:volumes"]['k:{"name":"scratch"}']["f:ephemeral"]["f:volumeClaimTemplate"],
                 {".": {}, "f:metadata": {".": {}, "f:creationTimestamp": {}}, "f:spec": {
                     ".": {}, "f:accessModes": {}, "f:resources": {".": {}, "f:requests": {".": {}, "f:storage": {}}},
                     "f:volumeMode": {}}}, id="an ephemeral volume's claim: managed fields"),
])
async def test_embedded_objects_print_as_kube_prints_them(client: Client, resource: str, spec: Obj, part: Any,
                                                          expected: Any) -> None:
    created = await client.create(at(resource), body(resource, spec=spec), fieldValidation="Strict",
                                  fieldManager="kubectl-create")
    read = await client.get(at(resource, "web"))
    assert (part(created), part(read)) == (expected, expected)


async def test_defaulted_fields_are_in_go_struct_order(client: Client) -> None:
    created = await create(client, "deployments")
    assert list(created["spec"]) == [
        "replicas", "selector", "template", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds"]
    pod = created["spec"]["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["containers"][0]["imagePullPolicy"]) == (
        "Always", "ClusterFirst", "IfNotPresent")


async def test_job_selector_and_template_labels_are_generated_from_the_uid(client: Client) -> None:
    created = await create(client, "jobs", "pi")
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {CONTROLLER_UID: uid}}
    assert spec["template"]["metadata"]["labels"] == {
        CONTROLLER_UID: uid, JOB_NAME: "pi", "controller-uid": uid, "job-name": "pi"}
    # kube-apiserver 1.28.7 defaults the Job it reads back: without labels of its own it takes the template's.
    assert created["metadata"]["labels"] == spec["template"]["metadata"]["labels"]


async def test_job_without_labels_takes_its_templates_labels_with_the_generated_ones(client: Client) -> None:
    template = {**JOB_TEMPLATE, "metadata": {"labels": {"app": "pi"}}}
    created = await create(client, "jobs", "pi", spec={"template": template})
    uid = created["metadata"]["uid"]
    labels = {"app": "pi", CONTROLLER_UID: uid, JOB_NAME: "pi", "controller-uid": uid, "job-name": "pi"}
    assert created["metadata"]["labels"] == created["spec"]["template"]["metadata"]["labels"] == labels


async def test_job_with_a_manual_selector_keeps_it(client: Client) -> None:
    template = {**JOB_TEMPLATE, "metadata": {"labels": {"app": "pi"}}}
    created = await create(client, "jobs", spec={"manualSelector": True, "selector": {"matchLabels": {"app": "pi"}},
                                                  "template": template})
    assert (created["spec"]["selector"], created["spec"]["template"]["metadata"]["labels"]) == (
        {"matchLabels": {"app": "pi"}}, {"app": "pi"})


async def test_cron_job_template_gets_pod_defaults_but_not_job_defaults(client: Client) -> None:
    created = await create(client, "cronjobs")
    job_spec = created["spec"]["jobTemplate"]["spec"]
    assert list(job_spec) == ["template"]
    assert job_spec["template"]["spec"]["terminationGracePeriodSeconds"] == 30


async def test_a_cron_job_schedule_may_name_its_time_zone_with_a_warning(client: Client) -> None:
    # kube-apiserver 1.28's validateScheduleFormat admits TZ= in the schedule unless timeZone is set (1.29 refuses
    # it on create), and cronJobStrategy warns of it
    schedule = {"schedule": "TZ=UTC 0 * * * *"}
    response = await client.create_response(at("cronjobs"), raw(body("cronjobs", spec=schedule)))
    assert orjson.loads(response.object.data)["spec"]["schedule"] == "TZ=UTC 0 * * * *"
    assert list(response.warnings) == [
        "CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see "
        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"]


async def test_binding_defaults_name_the_rbac_group(client: Client) -> None:
    created = await create(client, "rolebindings", roleRef={"kind": "ClusterRole", "name": "view"}, subjects=[
        {"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": NS}])
    assert created["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
    assert [s.get("apiGroup") for s in created["subjects"]] == [RBAC, RBAC, None]


async def test_lease_drops_coordinated_leader_election_fields(client: Client) -> None:
    created = await create(client, "leases", spec={"strategy": "OldestEmulationVersion", "preferredHolder": "b",
                                                   "renewTime": "2024-05-01T12:00:00.123456Z", "leaseTransitions": 2})
    assert created["spec"] == {"holderIdentity": "a", "leaseDurationSeconds": 15,
                               "renewTime": "2024-05-01T12:00:00.123456Z", "leaseTransitions": 2}


async def test_daemon_set_template_generation_annotation(client: Client) -> None:
    annotation = "deprecated.daemonset.template.generation"
    created = await create(client, "daemonsets")
    assert created["metadata"]["annotations"] == {annotation: "1"}
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    updated, _ = await client.update(at("daemonsets", "web"), changed)
    assert (updated["metadata"]["annotations"], updated["metadata"]["generation"]) == ({annotation: "2"}, 2)
    changed = copy.deepcopy(updated)
    changed["spec"]["minReadySeconds"] = 5
    del changed["metadata"]["annotations"]
    updated, _ = await client.update(at("daemonsets", "web"), changed)
    assert (updated["metadata"]["annotations"], updated["metadata"]["generation"]) == ({annotation: "2"}, 3)


# ---------------------------------------------------------------- generation


async def test_generation_follows_spec_and_deployment_annotations_but_not_status(client: Client) -> None:
    created = await create(client, "deployments")
    assert created["metadata"]["generation"] == 1
    labeled = copy.deepcopy(created)
    labeled["metadata"]["labels"] = {"a": "b"}
    labeled, _ = await client.update(at("deployments", "web"), labeled)
    annotated = copy.deepcopy(labeled)
    annotated["metadata"]["annotations"] = {"note": "x"}
    annotated, _ = await client.update(at("deployments", "web"), annotated)
    status = copy.deepcopy(annotated)
    status["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
    status, _ = await client.update(at("deployments", "web", "status"), status)
    scaled = copy.deepcopy(status)
    scaled["spec"]["replicas"] = 4
    scaled, _ = await client.update(at("deployments", "web"), scaled)
    assert [o["metadata"]["generation"] for o in (labeled, annotated, status, scaled)] == [1, 2, 2, 3]
    assert scaled["status"]["readyReplicas"] == 1


async def test_replica_set_annotations_do_not_bump_the_generation(client: Client) -> None:
    created = await create(client, "replicasets")
    annotated = copy.deepcopy(created)
    annotated["metadata"]["annotations"] = {"note": "x"}
    annotated, _ = await client.update(at("replicasets", "web"), annotated)
    assert annotated["metadata"]["generation"] == 1


# ---------------------------------------------------------------- validation


def required(field: str, detail: str = "") -> Obj:
    return kube.cause("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", field)


# An Invalid Status names the group of the internal type: an events.k8s.io Event is a core Event inside.
INVALID_GROUP = {"events": ""}


def invalid(field: str, rendered: str | None, detail: str) -> Obj:
    """field.Invalid with the value already as ErrorBody prints it (JSON, a number, or a quoted string); None: a
    value it omits (field.OmitValueType)."""
    shown = "Invalid value" if rendered is None else f"Invalid value: {rendered}"
    return kube.cause("FieldValueInvalid", f"{shown}: {detail}", field)


def forbidden(field: str, detail: str) -> Obj:
    return kube.field_forbidden(field, detail)


MISMATCH = "`selector` does not match template `labels`"
EMPTY_SELECTOR = ("v1.LabelSelector{MatchLabels:map[string]string(nil), "
                  "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}")
NEGATIVE = "must be greater than or equal to 0"
PFP = "spec.podFailurePolicy.rules"
WEB_LABELS = 'map[string]string{"app":"web"}'
# a LabelSelector as field.ErrorBody prints it (%#v of the struct behind the pointer)
EXISTS_SELECTOR = ('v1.LabelSelector{MatchLabels:map[string]string(nil), '
                   'MatchExpressions:[]v1.LabelSelectorRequirement{'
                   'v1.LabelSelectorRequirement{Key:"app", Operator:"Exists", Values:[]string(nil)}}}')


@pytest.mark.parametrize(("resource", "top", "causes"), [
    pytest.param("deployments", {"spec": {"selector": None}}, [
        required("spec.selector"), invalid("spec.template.metadata.labels", WEB_LABELS, MISMATCH)],
        id="deployment without selector"),
    pytest.param("deployments", {"spec": {"selector": {"matchLabels": {"app": "api"}}}}, [
        invalid("spec.template.metadata.labels", WEB_LABELS, MISMATCH)], id="deployment selector mismatch"),
    pytest.param("deployments", {"spec": {"selector": {}}}, [
        invalid("spec.selector", EMPTY_SELECTOR, "empty selector is invalid for deployment")],
        id="deployment empty selector"),
    pytest.param("deployments", {"spec": {"replicas": -1}}, [invalid("spec.replicas", "-1", NEGATIVE)],
                 id="deployment negative replicas"),
    pytest.param("deployments", {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}}, [
        invalid("spec.strategy.rollingUpdate.maxUnavailable", 'intstr.IntOrString{Type:0, IntVal:0, StrVal:""}',
                "may not be 0 when `maxSurge` is 0")],
        id="deployment rolling update of nothing"),
    pytest.param("deployments", {"spec": {"strategy": {"rollingUpdate": {"maxSurge": "x%"}}}}, [
        invalid("spec.strategy.rollingUpdate.maxSurge", 'intstr.IntOrString{Type:1, IntVal:0, StrVal:"x%"}',
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
                "regex used for validation is '[0-9]+%')")], id="deployment bad percent"),
    pytest.param("deployments", {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": {}}}}, [
        forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")],
        id="deployment recreate with rolling update"),
    pytest.param("deployments", {"spec": {"progressDeadlineSeconds": 5, "minReadySeconds": 10}}, [
        invalid("spec.progressDeadlineSeconds", "5", "must be greater than minReadySeconds")],
        id="deployment deadline below min ready"),
    pytest.param("deployments", {"spec": {"template": {**TEMPLATE, "spec": {
        "restartPolicy": "OnFailure", "containers": CONTAINERS}}}}, [
        kube.field_not_supported("spec.template.spec.restartPolicy", '"OnFailure"', ["Always"])],
        id="deployment pods must restart"),
    pytest.param("replicasets", {"spec": {"selector": {}}}, [
        invalid("spec.selector", EMPTY_SELECTOR, "empty selector is invalid for deployment")],
        id="replicaset empty selector"),
    pytest.param("statefulsets", {"spec": {"podManagementPolicy": "Random"}}, [
        invalid("spec.podManagementPolicy", '"Random"', "must be 'OrderedReady' or 'Parallel'")],
        id="statefulset pod management policy"),
    pytest.param("statefulsets", {"metadata": {"name": "web.v1"}}, [
        invalid("metadata.name", '"web.v1"', "must not contain dots")], id="statefulset name is a dns label"),
    pytest.param("statefulsets", {"spec": {"selector": {"matchLabels": {"app": "api"}}}}, [
        invalid("spec.template.metadata.labels", WEB_LABELS, MISMATCH)], id="statefulset selector mismatch"),
    pytest.param("daemonsets", {"spec": {"updateStrategy": {"type": "Foo"}}}, [kube.cause(
        "FieldValueNotSupported", 'Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Foo", RollingUpdate:'
        '(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"', "spec.updateStrategy")],
        id="daemonset update strategy"),
    pytest.param("daemonsets", {"spec": {"selector": None}}, [
        invalid("spec.template.metadata.labels", WEB_LABELS, MISMATCH)], id="daemonset without selector"),
    pytest.param("daemonsets", {"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}}}, [
        invalid("spec.updateStrategy.rollingUpdate.maxSurge", "1", "may not be set when maxUnavailable is non-zero")],
        id="daemonset surge and unavailable"),
    pytest.param("controllerrevisions", {"data": None, "revision": -1}, [
        required("data", "data is mandatory"), invalid("revision", "-1", NEGATIVE)], id="controllerrevision"),
    pytest.param("jobs", {"spec": {"template": {"spec": {"containers": CONTAINERS}}}}, [
        required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')],
        id="job pods must stop"),
    pytest.param("jobs", {"spec": {"parallelism": -1, "backoffLimit": -2}}, [
        invalid("spec.parallelism", "-1", NEGATIVE), invalid("spec.backoffLimit", "-2", NEGATIVE)],
        id="job negative counts"),
    pytest.param("jobs", {"spec": {"manualSelector": True}}, [
        required("spec.selector"), invalid("spec.template.metadata.labels", "map[string]string(nil)", MISMATCH)],
        id="job manual selector missing"),
    pytest.param("jobs", {"spec": {"completionMode": "Sometimes"}}, [
        kube.field_not_supported("spec.completionMode", '"Sometimes"', ["NonIndexed", "Indexed"])],
        id="job completion mode"),
    # (kube 1.28.7 answered these side by side)
    pytest.param("jobs", {"spec": {"podFailurePolicy": {"rules": [
        {"action": "Ignore"},
        {"action": "", "onExitCodes": {}},
        {"action": "Explode", "onExitCodes": {"operator": "Between", "containerName": "x", "values": [0, 3, 3, 1]}},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0]},
         "onPodConditions": [{"type": "a/b/c"}]},  # (a pattern's status defaults to True)
        {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]}]}}}, [
        invalid(f"{PFP}[0]", None, "specifying one of OnExitCodes and OnPodConditions is required"),
        required("spec.podFailurePolicy.rules[1].action", 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'),
        required("spec.podFailurePolicy.rules[1].onExitCodes.operator", 'valid values: ["In" "NotIn"]'),
        invalid("spec.podFailurePolicy.rules[1].onExitCodes.values", "[]int32(nil)", "at least one value is required"),
        kube.cause("FieldValueNotSupported", 'Unsupported value: "Explode": supported values: "Count", "FailIndex", '
                   '"FailJob", "Ignore"', "spec.podFailurePolicy.rules[2].action"),
        kube.cause("FieldValueNotSupported", 'Unsupported value: "Between": supported values: "In", "NotIn"',
                   "spec.podFailurePolicy.rules[2].onExitCodes.operator"),
        invalid("spec.podFailurePolicy.rules[2].onExitCodes.containerName", '"x"',
                "must be one of the container or initContainer names in the pod template"),
        kube.cause("FieldValueDuplicate", "Duplicate value: 3", "spec.podFailurePolicy.rules[2].onExitCodes.values[2]"),
        invalid("spec.podFailurePolicy.rules[2].onExitCodes.values", "[]int32{0, 3, 3, 1}", "must be ordered"),
        invalid("spec.podFailurePolicy.rules[3].onExitCodes.values[0]", "0", "must not be 0 for the In operator"),
        invalid(f"{PFP}[3].onPodConditions[0].type", '"a/b/c"', names.is_qualified_name("a/b/c")[0]),
        invalid(f"{PFP}[3]", None, "specifying both OnExitCodes and OnPodConditions is not supported"),
        kube.cause("FieldValueNotSupported", 'Unsupported value: "Maybe": supported values: "False", "True", '
                   '"Unknown"', f"{PFP}[4].onPodConditions[0].status")], id="job pod failure policy"),
    pytest.param("cronjobs", {"spec": {"schedule": "61 * * * *"}}, [
        invalid("spec.schedule", '"61 * * * *"', "end of range (61) above maximum (59): 61")],
        id="cronjob minute out of range"),
    pytest.param("cronjobs", {"spec": {"schedule": "* * *"}}, [
        invalid("spec.schedule", '"* * *"', "expected exactly 5 fields, found 3: [* * *]")], id="cronjob fields"),
    pytest.param("cronjobs", {"spec": {"schedule": ""}}, [required("spec.schedule")], id="cronjob no schedule"),
    pytest.param("cronjobs", {"spec": {"schedule": "TZ=UTC 0 * * * *", "timeZone": "UTC"}}, [
        invalid("spec.schedule", '"TZ=UTC 0 * * * *"',
                "cannot use both timeZone field and TZ or CRON_TZ in schedule")],
        id="cronjob tz in schedule and field"),
    pytest.param("cronjobs", {"spec": {"timeZone": "Mars/Olympus"}}, [
        invalid("spec.timeZone", '"Mars/Olympus"', "unknown time zone Mars/Olympus")], id="cronjob time zone"),
    pytest.param("cronjobs", {"spec": {"concurrencyPolicy": "Sometimes"}}, [
        kube.field_not_supported("spec.concurrencyPolicy", '"Sometimes"', ["Allow", "Forbid", "Replace"])],
        id="cronjob concurrency policy"),
    pytest.param("cronjobs", {"spec": {"jobTemplate": {"spec": {"template": JOB_TEMPLATE, "selector": SELECTOR}}}}, [
        invalid("spec.jobTemplate.spec.selector", 'v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, '
                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}", "`selector` will be auto-generated")],
        id="cronjob job template selector"),
    pytest.param("cronjobs", {"metadata": {"name": "a" * 53}}, [
        invalid("metadata.name", f'"{"a" * 53}"', "must be no more than 52 characters")], id="cronjob name length"),
    pytest.param("leases", {"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}, [
        invalid("spec.leaseDurationSeconds", "0", "must be greater than 0"),
        invalid("spec.leaseTransitions", "-1", NEGATIVE)], id="lease"),
    pytest.param("events", {"eventTime": None, "type": "Bad", "reportingController": ""}, [
        required("eventTime"), invalid("type", '""', "has invalid value: Bad")], id="event"),
    pytest.param("events", {"reportingController": "", "deprecatedCount": 3}, [
        required("reportingController"),
        *[invalid("reportingController", '""', m) for m in names.is_qualified_name("")],
        invalid("deprecatedCount", '""', "needs to be unset")], id="event deprecated fields"),
    pytest.param("roles", {"rules": [{"apiGroups": [""], "resources": ["pods"]}, {"verbs": ["get"]}]}, [
        required("rules[0].verbs", "verbs must contain at least one value"),
        required("rules[1].apiGroups", "resource rules must supply at least one api group"),
        required("rules[1].resources", "resource rules must supply at least one resource")], id="role rules"),
    pytest.param("roles", {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}, [
        invalid("rules[0].nonResourceURLs", '[]string{"/healthz"}',
                "namespaced rules cannot apply to non-resource URLs")],
        id="role non-resource urls"),
    pytest.param("rolebindings", {"roleRef": {"kind": "Pod", "name": ""}, "subjects": [{"kind": "Robot", "name": "r"}]},
                 [kube.field_not_supported("roleRef.kind", '"Pod"', ["Role", "ClusterRole"]), required("roleRef.name"),
                  kube.field_not_supported("subjects[0].kind", '"Robot"', ["ServiceAccount", "User", "Group"])],
                 id="rolebinding role ref"),
    pytest.param("clusterrolebindings", {"subjects": [{"kind": "ServiceAccount", "name": "builder"}]}, [
        required("subjects[0].namespace")], id="clusterrolebinding service account namespace"),
])
async def test_create_is_refused_with_kubes_status(client: Client, resource: str, top: Obj, causes: list[Obj]) -> None:
    group, kind, _ = KINDS[resource]
    obj = body(resource, **{k: v for k, v in top.items() if k != "metadata"})
    obj["metadata"].update(top.get("metadata", {}))
    before = client.revision()
    failed = await refused(client.create(at(resource), obj))
    assert failed.status == kube.invalid(kind, obj["metadata"]["name"], causes,
                                         group=INVALID_GROUP.get(resource, group))
    assert client.revision() == before


def _change(obj: Obj, dotted: str, value: Any) -> Obj:
    out = copy.deepcopy(obj)
    target = out
    *parents, last = dotted.split(".")
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return out


@pytest.mark.parametrize(("resource", "field", "value", "causes"), [
    pytest.param("deployments", "spec.selector", {"matchLabels": {"app": "web", "tier": "x"}}, [
        invalid("spec.template.metadata.labels", WEB_LABELS, MISMATCH),
        invalid("spec.selector", 'v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"x"}, '
                                 'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}', "field is immutable")],
        id="deployment selector"),
    pytest.param("replicasets", "spec.selector", {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, [
        invalid("spec.selector", EXISTS_SELECTOR, "field is immutable")], id="replicaset selector"),
    pytest.param("daemonsets", "spec.selector", {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, [
        invalid("spec.selector", EXISTS_SELECTOR, "field is immutable")], id="daemonset selector"),
    pytest.param("statefulsets", "spec.serviceName", "web", [
        forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                          "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                          "forbidden")], id="statefulset service name"),
    pytest.param("rolebindings", "roleRef", {"kind": "Role", "name": "writer"}, [
        invalid("roleRef", 'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"writer"}',
                "cannot change roleRef")], id="rolebinding role ref"),
    pytest.param("controllerrevisions", "data", {"spec": {"x": 2}}, [
        invalid("data", '{"spec":{"x":2}}', "field is immutable")], id="controllerrevision data"),
    pytest.param("events", "note", "changed", [invalid("message", '"changed"', "field is immutable")],
                 id="event note"),
])
async def test_update_is_refused_with_kubes_status(client: Client, resource: str, field: str, value: Any,
                                                   causes: list[Obj]) -> None:
    group, kind, _ = KINDS[resource]
    created = await create(client, resource)
    failed = await refused(client.update(at(resource, "web"), _change(created, field, value)))
    assert failed.status == kube.invalid(kind, "web", causes, group=INVALID_GROUP.get(resource, group))


async def test_statefulset_allows_the_fields_kube_allows(client: Client) -> None:
    created = await create(client, "statefulsets")
    changed = _change(created, "spec.replicas", 3)
    changed["spec"]["minReadySeconds"] = 4
    changed["spec"]["updateStrategy"] = {"type": "OnDelete"}
    changed["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete", "whenScaled": "Retain"}
    updated, _ = await client.update(at("statefulsets", "web"), changed)
    assert (updated["spec"]["replicas"], updated["metadata"]["generation"]) == (3, 2)


async def test_job_template_and_selector_are_immutable(client: Client) -> None:
    created = await create(client, "jobs")
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox"
    failed = await refused(client.update(at("jobs", "web"), changed))
    (cause,) = failed.status["details"]["causes"]
    # kube prints its internal PodTemplateSpec as the value; the field, reason and detail are the same.
    assert (cause["reason"], cause["field"], failed.status["code"]) == ("FieldValueInvalid", "spec.template", 422)
    assert cause["message"].endswith(": field is immutable")
    changed = copy.deepcopy(created)
    changed["spec"]["selector"]["matchLabels"]["extra"] = "x"
    failed = await refused(client.update(at("jobs", "web"), changed))
    fields = [c["field"] for c in failed.status["details"]["causes"]]
    assert fields == ["spec.selector", "spec.template.metadata.labels", "spec.template.metadata.labels",
                      "spec.selector"]  # not auto-generated, mismatch (twice: kube validates the spec twice), immutable


async def test_suspended_job_may_change_its_scheduling_directives(client: Client) -> None:
    created = await create(client, "jobs", spec={"suspend": True})
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    changed["spec"]["suspend"] = False
    updated, _ = await client.update(at("jobs", "web"), changed)
    assert updated["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd"}


# ---------------------------------------------------------------- /scale


def scale_of(obj: Obj, replicas: int, selector: str, status_replicas: int = 0) -> Obj:
    m = obj["metadata"]
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {
        "name": m["name"], "namespace": m["namespace"], "uid": m["uid"], "resourceVersion": m["resourceVersion"],
        "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": replicas}, "status": {"replicas": status_replicas, "selector": selector}}


@pytest.mark.parametrize(("resource", "selector", "expected"), [
    ("deployments", SELECTOR, "app=web"),
    ("replicasets", {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["db", "cache"]}]}, "app=web,tier notin (cache,db)"),
    ("statefulsets", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, "app in (web)"),
])
async def test_scale_is_read_from_the_object(client: Client, resource: str, selector: Obj, expected: str) -> None:
    created = await create(client, resource, spec={"selector": selector, "replicas": 2})
    assert await client.get(at(resource, "web", "scale")) == scale_of(created, 2, expected)
    raw = await client.get_raw(at(resource, "web", "scale"), accept=PROTOBUF)
    decoded = autoscaling_pb2.Scale.FromString(raw.data)
    assert (decoded.metadata.name, decoded.spec.replicas, decoded.status.selector) == ("web", 2, expected)


@pytest.mark.parametrize(("group", "resource", "message", "details"), [
    # kube's ScaleREST.Get answers its own NotFound for these (group "apps", resource "deployments/scale")
    ("apps", "deployments", 'deployments/scale.apps "gone" not found', {"group": "apps", "kind": "deployments/scale"}),
    ("apps", "replicasets", 'replicasets/scale.apps "gone" not found', {"group": "apps", "kind": "replicasets/scale"}),
    # ... the RC's names the autoscaling group (autoscaling.Resource in pkg/registry/core/replicationcontroller)
    ("", "replicationcontrollers", 'replicationcontrollers/scale.autoscaling "gone" not found',
     {"group": "autoscaling", "kind": "replicationcontrollers/scale"}),
    # ... and the StatefulSet's passes the store's own on
    ("apps", "statefulsets", 'statefulsets.apps "gone" not found', {"group": "apps", "kind": "statefulsets"}),
])
async def test_the_scale_of_a_missing_object_is_not_found_as_kube_words_it(
        client: Client, group: str, resource: str, message: str, details: Obj) -> None:
    failed = await refused(client.get(path(resource, NS, "gone", group=group, subresource="scale")))
    assert failed.status == kube.failure(404, "NotFound", message, {"name": "gone", **details})


async def test_scale_status_replicas_come_from_the_objects_status(client: Client) -> None:
    created = await create(client, "deployments")
    with_status = copy.deepcopy(created)
    with_status["status"] = {"replicas": 1}
    updated, _ = await client.update(at("deployments", "web", "status"), with_status)
    assert await client.get(at("deployments", "web", "scale")) == scale_of(updated, 1, "app=web", 1)


async def test_scale_update_sets_replicas_and_bumps_the_generation(client: Client) -> None:
    created = await create(client, "deployments")
    scale = await client.get(at("deployments", "web", "scale"))
    scale["spec"]["replicas"] = 5
    updated, _ = await client.update(at("deployments", "web", "scale"), scale, fieldManager="autoscaler")
    stored = await client.get(at("deployments", "web"))
    assert updated == scale_of(stored, 5, "app=web")
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (5, 2)
    assert stored["spec"]["template"] == created["spec"]["template"]
    (entry,) = [e for e in stored["metadata"]["managedFields"] if e.get("subresource")]
    assert (entry["manager"], entry["operation"], entry["apiVersion"], entry["subresource"], entry["fieldsV1"]) == (
        "autoscaler", "Update", "apps/v1", "scale", {"f:spec": {"f:replicas": {}}})
    # kube's scale handler keeps only the parent's own entries' times: a /scale writer's has none, so sorts first
    assert "time" not in entry and stored["metadata"]["managedFields"][0]["manager"] == "autoscaler"


async def test_scale_update_with_a_stale_resource_version_is_a_conflict(client: Client) -> None:
    await create(client, "deployments")
    scale = await client.get(at("deployments", "web", "scale"))
    scale["spec"]["replicas"] = 2
    await client.update(at("deployments", "web", "scale"), scale)
    before = client.revision()
    scale["spec"]["replicas"] = 3  # still the first resourceVersion
    failed = await refused(client.update(at("deployments", "web", "scale"), scale))
    assert failed.status == conflict("deployments", "apps", "web", MODIFIED)
    assert client.revision() == before
    del scale["metadata"]["resourceVersion"]  # unconditional
    updated, _ = await client.update(at("deployments", "web", "scale"), scale)
    assert updated["spec"]["replicas"] == 3


async def test_scale_refuses_negative_replicas_a_wrong_uid_and_a_wrong_kind(client: Client) -> None:
    created = await create(client, "deployments")
    scale = await client.get(at("deployments", "web", "scale"))
    failed = await refused(client.update(at("deployments", "web", "scale"), _change(scale, "spec.replicas", -1)))
    assert failed.status == kube.invalid("Scale", "web", [invalid("spec.replicas", "-1", NEGATIVE)],
                                         group="autoscaling")
    other = "00000000-0000-4000-8000-000000000000"
    failed = await refused(client.update(at("deployments", "web", "scale"), _change(scale, "metadata.uid", other)))
    assert failed.status == conflict("deployments/scale", "apps", "web", (
        f"Precondition failed: UID in precondition: {other}, UID in object meta: {created['metadata']['uid']}"))
    failed = await refused(client.update(at("deployments", "web", "scale"), {**scale, "kind": "Deployment"}))
    assert failed.status["code"] == 400


@pytest.mark.parametrize(("kind", "document"), [
    pytest.param(MERGE, {"spec": {"replicas": 4}}, id="merge"),
    pytest.param(STRATEGIC, {"spec": {"replicas": 4}}, id="strategic"),
    pytest.param(JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 4}], id="json"),
    pytest.param(APPLY, {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
                         "spec": {"replicas": 4}}, id="apply"),
])
async def test_scale_patch_every_type(client: Client, kind: core_pb2.PatchType, document: Any) -> None:
    await create(client, "statefulsets")
    options: dict[str, Any] = {"fieldManager": "hpa", "force": True} if kind == APPLY else {}
    patched = await patch(client, at("statefulsets", "web", "scale"), kind, document, **options)
    stored = await client.get(at("statefulsets", "web"))
    assert patched == scale_of(stored, 4, "app=web")
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (4, 2)
    (entry,) = [e for e in stored["metadata"]["managedFields"] if e.get("subresource") == "scale"]
    assert "time" not in entry  # as kube's scale handler writes it


async def test_scale_apply_conflicts_with_the_owner_of_replicas_unless_forced(client: Client) -> None:
    await client.create(at("deployments"), body("deployments", spec={"replicas": 2}), fieldManager="creator")
    config = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 6}}
    failed = await refused(patch(client, at("deployments", "web", "scale"), APPLY, config, fieldManager="hpa"))
    assert failed.status == kube.failure(
        409, "Conflict", 'Apply failed with 1 conflict: conflict with "creator" using apps/v1: .spec.replicas',
        {"causes": [kube.cause("FieldManagerConflict", 'conflict with "creator" using apps/v1', ".spec.replicas")]})
    applied = await patch(client, at("deployments", "web", "scale"), APPLY, config, fieldManager="hpa", force=True)
    assert applied["spec"]["replicas"] == 6
    managers = {(e["manager"], e.get("subresource", "")): e["fieldsV1"]
                for e in (await client.get(at("deployments", "web")))["metadata"]["managedFields"]}
    assert managers[("hpa", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managers[("creator", "")]["f:spec"]


async def test_scale_apply_refuses_another_kind(client: Client) -> None:
    await create(client, "deployments")
    config = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 6}}
    failed = await refused(patch(client, at("deployments", "web", "scale"), APPLY, config, fieldManager="hpa"))
    assert failed.status == kube.bad_request(
        "Incorrect version specified in apply patch. Specified patch version: apps/v1, expected: autoscaling/v1")


async def test_scale_dry_run_and_no_op_store_nothing(client: Client) -> None:
    created = await create(client, "deployments")
    before = client.revision()
    dry = await patch(client, at("deployments", "web", "scale"), MERGE, {"spec": {"replicas": 9}}, dryRun=["All"])
    same = await patch(client, at("deployments", "web", "scale"), MERGE, {"spec": {"replicas": 1}})
    assert (dry["spec"]["replicas"], same["spec"]["replicas"]) == (9, 1)
    assert dry["metadata"]["resourceVersion"] == same["metadata"]["resourceVersion"] == (
        created["metadata"]["resourceVersion"])
    assert client.revision() == before


async def test_scale_protobuf_body_and_answer(client: Client) -> None:
    await create(client, "replicasets")
    scale = autoscaling_pb2.Scale()
    scale.metadata.name = "web"
    scale.spec.replicas = 7
    response = await client.update_response(at("replicasets", "web", "scale"), core_pb2.RawObject(
        encoding=PROTOBUF, data=scale.SerializeToString()), accept=PROTOBUF)
    answered = autoscaling_pb2.Scale.FromString(response.object.data)
    assert (response.object.encoding, answered.spec.replicas, answered.status.selector) == (PROTOBUF, 7, "app=web")


async def test_scale_table(client: Client) -> None:
    await create(client, "deployments")
    request = core_pb2.GetRequest(path=at("deployments", "web", "scale"), view=core_pb2.ViewOptions(
        view=core_pb2.VIEW_TABLE, api_version="meta.k8s.io/v1"))
    response = await client.call(client.stub.Get, request)
    table = orjson.loads(response.object.data)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Desired", "Available", "Age"]
    assert table["columnDefinitions"][0]["format"] == ""
    assert table["rows"][0]["cells"][:3] == ["web", 1, 0]


@pytest.mark.parametrize("resource", ["daemonsets", "jobs", "controllerrevisions", "leases"])
async def test_scale_only_where_kube_serves_it(client: Client, resource: str) -> None:
    await create(client, resource)
    failed = await refused(client.get(at(resource, "web", "scale")))
    assert failed.status == kube.failure(404, "NotFound", "the server could not find the requested resource")


async def test_a_patch_of_the_scale_of_a_missing_object_is_the_objects_not_found(client: Client) -> None:
    """A patch goes straight to ScaleREST.Update, whose store answers the object's own NotFound (the GET's is the
    Scale's: above)."""
    failed = await refused(patch(client, at("deployments", "gone", "scale"), MERGE, {"spec": {"replicas": 1}}))
    assert failed.status == not_found("deployments", "apps", "gone")


# ---------------------------------------------------------------- field selectors


async def test_job_status_successful_field_selector(client: Client) -> None:
    created = await create(client, "jobs", "a")
    await create(client, "jobs", "b")
    done = copy.deepcopy(created)
    done["status"] = {"succeeded": 1}
    await client.update(at("jobs", "a", "status"), done)
    assert await client.names(at("jobs"), fieldSelector="status.successful=1") == ["a"]
    assert await client.names(at("jobs"), fieldSelector="status.successful=0") == ["b"]


async def test_events_k8s_io_field_selectors_are_kubes(client: Client) -> None:
    await create(client, "events", "a")
    await create(client, "events", "b", type="Warning", reason="BackOff", regarding={"kind": "Pod", "namespace": NS,
                                                                                     "name": "web-2"})
    assert await client.names(at("events"), fieldSelector="regarding.name=web-2") == ["b"]
    assert await client.names(at("events"), fieldSelector="type=Normal,reason=Started") == ["a"]
    assert await client.names(
        at("events"), fieldSelector="reportingController=example.com/controller,regarding.kind=Pod") == ["a", "b"]
    failed = await refused(client.list(at("events"), fieldSelector="involvedObject.name=web-2"))
    assert failed.status == kube.bad_request("field label not supported: involvedObject.name")


async def test_kinds_without_field_labels_answer_the_default_conversion(client: Client) -> None:
    failed = await refused(client.list(at("deployments"), fieldSelector="spec.replicas=1"))
    assert failed.status == kube.bad_request(
        '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"')


# kube 1.28's alpha gates JobBackoffLimitPerIndex and JobPodReplacementPolicy are off: jobStrategy drops their
# fields from a new Job (FailIndex rules with them), and from an update only while the old Job has none.
@pytest.mark.parametrize(("spec", "kept"), [
    pytest.param({"podReplacementPolicy": "Failed"}, {}, id="podReplacementPolicy"),
    pytest.param({"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1, "maxFailedIndexes": 1},
                 {"completionMode": "Indexed", "completions": 2}, id="backoffLimitPerIndex, maxFailedIndexes"),
    pytest.param({"podFailurePolicy": {"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}},
                 {"podFailurePolicy": {"rules": [
                     {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}},
                 id="FailIndex rules"),
])
async def test_a_jobs_alpha_fields_are_dropped(client: Client, spec: Obj, kept: Obj) -> None:
    created = await create(client, "jobs", spec=spec)
    given = {k for k in spec if k not in kept}
    assert not given & set(created["spec"]), created["spec"]
    assert {k: created["spec"][k] for k in kept} == kept
    changed = copy.deepcopy(created)
    changed["spec"].update({k: v for k, v in spec.items() if k not in kept})
    updated, _ = await client.update(at("jobs", "web"), changed)
    assert not given & set(updated["spec"])


async def test_a_new_autoscaler_prints_the_zero_status(client: Client) -> None:
    """horizontalPodAutoscalerStrategy.PrepareForCreate: the zero status, printed by kube-apiserver 1.28.7 as
    {"currentMetrics": null, "desiredReplicas": 0} through autoscaling/v2."""
    hpas = path("horizontalpodautoscalers", NS, group="autoscaling", version="v2")
    created = await client.create(hpas, {"metadata": {"name": "hpa"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5}})
    read = await client.get(path("horizontalpodautoscalers", NS, "hpa", group="autoscaling", version="v2"))
    assert created["status"] == read["status"] == {"desiredReplicas": 0, "currentMetrics": None}
    assert "generation" not in created["metadata"]
