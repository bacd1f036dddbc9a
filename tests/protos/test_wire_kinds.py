"""Golden bytes for the built-in kinds of core, apps, batch, coordination, events, rbac and autoscaling.

As in test_wire.py, every expectation is written by hand from upstream's numbers (the protobuf tags of
k8s.io/api <group>/v1 types.go), as tag = number << 3 | wire type, never derived from our descriptors:
a renumbered or renamed field fails here. Objects are built the way client-go builds them: Go writes
every non-pointer field, so an IntOrString carries type, intVal and strVal, and a non-pointer struct
(spec, status, resources) is written even when empty.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from capstan.api.apps.v1 import apps_pb2 as apps
from capstan.api.autoscaling.v1 import autoscaling_pb2 as autoscaling
from capstan.api.batch.v1 import batch_pb2 as batch
from capstan.api.coordination.v1 import coordination_pb2 as coordination
from capstan.api.core.v1 import core_pb2 as core
from capstan.api.events.v1 import events_pb2 as events
from capstan.api.intstr import intstr_pb2 as intstr
from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.rbac.v1 import rbac_pb2 as rbac
from capstan.api.resource import resource_pb2 as resource
from capstan.api.runtime import runtime_pb2 as runtime
from tests.protos.test_wire import MAGIC, entry, int_field, label, len_field

T0 = 1_700_000_000


def serialize(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def int_or_string(value: int | str) -> intstr.IntOrString:
    """An IntOrString as Go marshals it: all three fields, whichever holds the value."""
    if isinstance(value, str):
        return intstr.IntOrString(type=1, intVal=0, strVal=value)
    return intstr.IntOrString(type=0, intVal=value, strVal="")


def int_or_string_bytes(value: int | str) -> bytes:
    if isinstance(value, str):
        return int_field(1, 1) + int_field(2, 0) + len_field(3, value)
    return int_field(1, 0) + int_field(2, value) + len_field(3, "")


def quantity(text: str) -> bytes:
    """A Quantity message: its canonical string as field 1."""
    return len_field(1, text)


LABELS = {"app": "web"}
LABELS_BYTES = entry(11, "app", "web")  # ObjectMeta.labels


# --- Deployment (apps/v1) ---------------------------------------------------------------------------------


def deployment() -> apps.Deployment:
    container = core.Container(name="nginx", image="nginx:1.27", resources=core.ResourceRequirements())
    return apps.Deployment(
        metadata=meta.ObjectMeta(name="web", namespace="default", labels=LABELS),
        spec=apps.DeploymentSpec(
            replicas=3,
            selector=meta.LabelSelector(matchLabels=LABELS),
            template=core.PodTemplateSpec(
                metadata=meta.ObjectMeta(labels=LABELS),
                spec=core.PodSpec(containers=[container], restartPolicy="Always"),
            ),
            strategy=apps.DeploymentStrategy(
                type="RollingUpdate",
                rollingUpdate=apps.RollingUpdateDeployment(
                    maxUnavailable=int_or_string("25%"), maxSurge=int_or_string("25%")
                ),
            ),
            revisionHistoryLimit=10,
            progressDeadlineSeconds=600,
        ),
        status=apps.DeploymentStatus(
            observedGeneration=1,
            replicas=3,
            updatedReplicas=3,
            readyReplicas=3,
            availableReplicas=3,
            conditions=[
                apps.DeploymentCondition(
                    type="Available",
                    status="True",
                    lastUpdateTime=meta.Time(seconds=T0),
                    lastTransitionTime=meta.Time(seconds=T0),
                    reason="MinimumReplicasAvailable",
                    message="Deployment has minimum availability.",
                )
            ],
        ),
    )


DEPLOYMENT_BYTES = (
    len_field(1, len_field(1, "web") + len_field(3, "default") + LABELS_BYTES)  # metadata
    + len_field(  # spec
        2,
        int_field(1, 3)  # replicas
        + len_field(2, entry(1, "app", "web"))  # selector.matchLabels
        + len_field(  # template
            3,
            len_field(1, LABELS_BYTES)  # template.metadata
            + len_field(  # template.spec
                2,
                len_field(2, len_field(1, "nginx") + len_field(2, "nginx:1.27") + len_field(8, b""))  # containers
                + len_field(3, "Always"),  # restartPolicy
            ),
        )
        + len_field(  # strategy
            4,
            len_field(1, "RollingUpdate")
            + len_field(2, len_field(1, int_or_string_bytes("25%")) + len_field(2, int_or_string_bytes("25%"))),
        )
        + int_field(6, 10)  # revisionHistoryLimit
        + int_field(9, 600),  # progressDeadlineSeconds
    )
    + len_field(  # status
        3,
        int_field(1, 1)  # observedGeneration
        + int_field(2, 3)  # replicas
        + int_field(3, 3)  # updatedReplicas
        + int_field(4, 3)  # availableReplicas
        + len_field(  # conditions: type, status, reason = 4, message = 5, lastUpdateTime = 6, lastTransitionTime = 7
            6,
            len_field(1, "Available")
            + len_field(2, "True")
            + len_field(4, "MinimumReplicasAvailable")
            + len_field(5, "Deployment has minimum availability.")
            + len_field(6, int_field(1, T0))
            + len_field(7, int_field(1, T0)),
        )
        + int_field(7, 3),  # readyReplicas
    )
)


# --- Pod (core/v1) ----------------------------------------------------------------------------------------


def pod() -> core.Pod:
    container = core.Container(
        name="app",
        image="nginx:1.27",
        ports=[core.ContainerPort(containerPort=8080, protocol="TCP")],
        env=[core.EnvVar(name="MODE", value="prod")],
        resources=core.ResourceRequirements(
            limits={"cpu": resource.Quantity(string="500m"), "memory": resource.Quantity(string="1Gi")},
            requests={"cpu": resource.Quantity(string="250m")},
        ),
        volumeMounts=[core.VolumeMount(name="data", mountPath="/data")],
        livenessProbe=core.Probe(
            handler=core.ProbeHandler(httpGet=core.HTTPGetAction(path="/healthz", port=int_or_string(8080))),
            periodSeconds=10,
        ),
    )
    return core.Pod(
        metadata=meta.ObjectMeta(name="web-0", namespace="default"),
        spec=core.PodSpec(
            volumes=[core.Volume(name="data", volumeSource=core.VolumeSource(emptyDir=core.EmptyDirVolumeSource()))],
            containers=[container],
            restartPolicy="Always",
            terminationGracePeriodSeconds=30,
            dnsPolicy="ClusterFirst",
            nodeName="node-1",
            schedulerName="default-scheduler",
            tolerations=[core.Toleration(key="k", operator="Exists", effect="NoSchedule")],
        ),
        status=core.PodStatus(
            phase="Running",
            conditions=[core.PodCondition(type="Ready", status="True")],
            podIP="10.0.0.5",
            startTime=meta.Time(seconds=T0),
            containerStatuses=[
                core.ContainerStatus(
                    name="app",
                    state=core.ContainerState(running=core.ContainerStateRunning(startedAt=meta.Time(seconds=T0))),
                    ready=True,
                    restartCount=0,
                    image="nginx:1.27",
                    imageID="sha256:abc",
                    started=True,
                )
            ],
            qosClass="Burstable",
            podIPs=[core.PodIP(ip="10.0.0.5")],
        ),
    )


POD_CONTAINER_BYTES = (
    len_field(1, "app")
    + len_field(2, "nginx:1.27")
    + len_field(6, int_field(3, 8080) + len_field(4, "TCP"))  # ports: containerPort = 3, protocol = 4
    + len_field(7, len_field(1, "MODE") + len_field(2, "prod"))  # env
    + len_field(  # resources: limits = 1, requests = 2, map entries sorted by key
        8,
        entry(1, "cpu", quantity("500m")) + entry(1, "memory", quantity("1Gi")) + entry(2, "cpu", quantity("250m")),
    )
    + len_field(9, len_field(1, "data") + len_field(3, "/data"))  # volumeMounts: name = 1, mountPath = 3
    + len_field(  # livenessProbe: handler = 1 (httpGet = 2: path = 1, port = 2), periodSeconds = 4
        10,
        len_field(1, len_field(2, len_field(1, "/healthz") + len_field(2, int_or_string_bytes(8080))))
        + int_field(4, 10),
    )
)
POD_BYTES = (
    len_field(1, len_field(1, "web-0") + len_field(3, "default"))
    + len_field(
        2,
        len_field(1, len_field(1, "data") + len_field(2, len_field(2, b"")))  # volumes: volumeSource.emptyDir
        + len_field(2, POD_CONTAINER_BYTES)
        + len_field(3, "Always")
        + int_field(4, 30)  # terminationGracePeriodSeconds
        + len_field(6, "ClusterFirst")  # dnsPolicy
        + len_field(10, "node-1")  # nodeName
        + len_field(19, "default-scheduler")  # schedulerName
        + len_field(22, len_field(1, "k") + len_field(2, "Exists") + len_field(4, "NoSchedule")),  # tolerations
    )
    + len_field(
        3,
        len_field(1, "Running")
        + len_field(2, len_field(1, "Ready") + len_field(2, "True"))
        + len_field(6, "10.0.0.5")  # podIP
        + len_field(7, int_field(1, T0))  # startTime
        + len_field(  # containerStatuses
            8,
            len_field(1, "app")
            + len_field(2, len_field(2, len_field(1, int_field(1, T0))))  # state.running.startedAt
            + int_field(4, 1)  # ready
            + int_field(5, 0)  # restartCount
            + len_field(6, "nginx:1.27")
            + len_field(7, "sha256:abc")
            + int_field(9, 1),  # started
        )
        + len_field(9, "Burstable")  # qosClass
        + len_field(12, len_field(1, "10.0.0.5")),  # podIPs
    )
)


# --- Service (core/v1) ------------------------------------------------------------------------------------


def service() -> core.Service:
    return core.Service(
        metadata=meta.ObjectMeta(name="web", namespace="default"),
        spec=core.ServiceSpec(
            ports=[
                core.ServicePort(name="http", protocol="TCP", port=80, targetPort=int_or_string("http")),
                core.ServicePort(name="metrics", protocol="TCP", port=9090, targetPort=int_or_string(9090)),
            ],
            selector=LABELS,
            clusterIP="10.96.0.10",
            type="ClusterIP",
            sessionAffinity="None",
            ipFamilyPolicy="SingleStack",
            clusterIPs=["10.96.0.10"],
            ipFamilies=["IPv4"],
            internalTrafficPolicy="Cluster",
        ),
        status=core.ServiceStatus(loadBalancer=core.LoadBalancerStatus()),
    )


INTSTR_HTTP, INTSTR_9090 = int_or_string_bytes("http"), int_or_string_bytes(9090)
SERVICE_BYTES = (
    len_field(1, len_field(1, "web") + len_field(3, "default"))
    + len_field(
        2,
        # ports: name = 1, protocol = 2, port = 3, targetPort = 4
        len_field(1, len_field(1, "http") + len_field(2, "TCP") + int_field(3, 80) + len_field(4, INTSTR_HTTP))
        + len_field(1, len_field(1, "metrics") + len_field(2, "TCP") + int_field(3, 9090) + len_field(4, INTSTR_9090))
        + entry(2, "app", "web")  # selector
        + len_field(3, "10.96.0.10")  # clusterIP
        + len_field(4, "ClusterIP")  # type
        + len_field(7, "None")  # sessionAffinity
        + len_field(17, "SingleStack")  # ipFamilyPolicy
        + len_field(18, "10.96.0.10")  # clusterIPs
        + len_field(19, "IPv4")  # ipFamilies
        + len_field(22, "Cluster"),  # internalTrafficPolicy
    )
    + len_field(3, len_field(1, b""))  # status.loadBalancer
)  # fmt: skip


# --- Job (batch/v1) ---------------------------------------------------------------------------------------


def job() -> batch.Job:
    container = core.Container(name="pi", image="perl:5.34", command=["perl", "-e", "print 1"])
    return batch.Job(
        metadata=meta.ObjectMeta(name="pi", namespace="default"),
        spec=batch.JobSpec(
            parallelism=1,
            completions=1,
            backoffLimit=6,
            template=core.PodTemplateSpec(spec=core.PodSpec(containers=[container], restartPolicy="Never")),
            completionMode="NonIndexed",
            suspend=False,
            podReplacementPolicy="TerminatingOrFailed",
        ),
        status=batch.JobStatus(
            conditions=[batch.JobCondition(type="Complete", status="True", lastTransitionTime=meta.Time(seconds=T0))],
            startTime=meta.Time(seconds=T0 - 10),
            completionTime=meta.Time(seconds=T0),
            succeeded=1,
            uncountedTerminatedPods=batch.UncountedTerminatedPods(),
            ready=0,
            terminating=0,
        ),
    )


JOB_BYTES = (
    len_field(1, len_field(1, "pi") + len_field(3, "default"))
    + len_field(
        2,
        int_field(1, 1)  # parallelism
        + int_field(2, 1)  # completions
        + len_field(  # template.spec
            6,
            len_field(
                2,
                len_field(
                    2, len_field(1, "pi") + len_field(2, "perl:5.34")
                    + len_field(3, "perl") + len_field(3, "-e") + len_field(3, "print 1"),  # command = 3
                )
                + len_field(3, "Never"),
            ),
        )
        + int_field(7, 6)  # backoffLimit
        + len_field(9, "NonIndexed")  # completionMode
        + int_field(10, 0)  # suspend
        + len_field(14, "TerminatingOrFailed"),  # podReplacementPolicy
    )
    + len_field(
        3,
        len_field(1, len_field(1, "Complete") + len_field(2, "True") + len_field(4, int_field(1, T0)))
        + len_field(2, int_field(1, T0 - 10))  # startTime
        + len_field(3, int_field(1, T0))  # completionTime
        + int_field(5, 1)  # succeeded
        + len_field(8, b"")  # uncountedTerminatedPods
        + int_field(9, 0)  # ready
        + int_field(11, 0),  # terminating
    )
)  # fmt: skip


# --- Lease (coordination.k8s.io/v1) -------------------------------------------------------------------------


def lease() -> coordination.Lease:
    return coordination.Lease(
        metadata=meta.ObjectMeta(name="controller", namespace="kube-system"),
        spec=coordination.LeaseSpec(
            holderIdentity="node-1_5f2c",
            leaseDurationSeconds=15,
            acquireTime=meta.MicroTime(seconds=T0, nanos=0),
            renewTime=meta.MicroTime(seconds=T0 + 7, nanos=123456000),
            leaseTransitions=0,
        ),
    )


LEASE_BYTES = len_field(1, len_field(1, "controller") + len_field(3, "kube-system")) + len_field(
    2,
    len_field(1, "node-1_5f2c")
    + int_field(2, 15)
    + len_field(3, int_field(1, T0) + int_field(2, 0))  # acquireTime: MicroTime keeps nanos
    + len_field(4, int_field(1, T0 + 7) + int_field(2, 123456000))  # renewTime
    + int_field(5, 0),  # leaseTransitions: a Go *int32, so 0 is written
)


# --- Role, RoleBinding, ClusterRole (rbac.authorization.k8s.io/v1) ----------------------------------------------


def role() -> rbac.Role:
    return rbac.Role(
        metadata=meta.ObjectMeta(name="pod-reader", namespace="default"),
        rules=[
            rbac.PolicyRule(verbs=["get", "list"], apiGroups=[""], resources=["pods"]),
            rbac.PolicyRule(verbs=["get"], apiGroups=["apps"], resources=["deployments"], resourceNames=["web"]),
        ],
    )


ROLE_BYTES = (
    len_field(1, len_field(1, "pod-reader") + len_field(3, "default"))
    + len_field(2, len_field(1, "get") + len_field(1, "list") + len_field(2, "") + len_field(3, "pods"))
    + len_field(2, len_field(1, "get") + len_field(2, "apps") + len_field(3, "deployments") + len_field(4, "web"))
)


def role_binding() -> rbac.RoleBinding:
    return rbac.RoleBinding(
        metadata=meta.ObjectMeta(name="read-pods", namespace="default"),
        subjects=[
            rbac.Subject(kind="ServiceAccount", name="default", namespace="default"),
            rbac.Subject(kind="User", apiGroup="rbac.authorization.k8s.io", name="jane"),
        ],
        roleRef=rbac.RoleRef(apiGroup="rbac.authorization.k8s.io", kind="Role", name="pod-reader"),
    )


ROLE_BINDING_BYTES = (
    len_field(1, len_field(1, "read-pods") + len_field(3, "default"))
    + len_field(2, len_field(1, "ServiceAccount") + len_field(3, "default") + len_field(4, "default"))
    + len_field(2, len_field(1, "User") + len_field(2, "rbac.authorization.k8s.io") + len_field(3, "jane"))
    + len_field(3, len_field(1, "rbac.authorization.k8s.io") + len_field(2, "Role") + len_field(3, "pod-reader"))
)


def cluster_role() -> rbac.ClusterRole:
    selector = meta.LabelSelector(matchLabels={"rbac.example.com/aggregate-to-view": "true"})
    return rbac.ClusterRole(
        metadata=meta.ObjectMeta(name="view"),
        rules=[rbac.PolicyRule(verbs=["get"], nonResourceURLs=["/healthz"])],
        aggregationRule=rbac.AggregationRule(clusterRoleSelectors=[selector]),
    )


CLUSTER_ROLE_BYTES = (
    len_field(1, len_field(1, "view"))
    + len_field(2, len_field(1, "get") + len_field(5, "/healthz"))  # nonResourceURLs = 5
    + len_field(3, len_field(1, entry(1, "rbac.example.com/aggregate-to-view", "true")))  # selectors[0].matchLabels
)


# --- Scale (autoscaling/v1) and events.k8s.io/v1 Event -----------------------------------------------------------


def scale() -> autoscaling.Scale:
    return autoscaling.Scale(
        metadata=meta.ObjectMeta(name="web", namespace="default"),
        spec=autoscaling.ScaleSpec(replicas=5),
        status=autoscaling.ScaleStatus(replicas=3, selector="app=web"),
    )


SCALE_BYTES = (
    len_field(1, len_field(1, "web") + len_field(3, "default"))
    + len_field(2, int_field(1, 5))
    + len_field(3, int_field(1, 3) + len_field(2, "app=web"))
)


def event() -> events.Event:
    return events.Event(
        metadata=meta.ObjectMeta(name="web.17a", namespace="default"),
        eventTime=meta.MicroTime(seconds=T0, nanos=1000),
        reportingController="kubernetes.io/kubelet",
        reportingInstance="kubelet-node-1",
        action="Pulling",
        reason="Pulling",
        regarding=core.ObjectReference(kind="Pod", namespace="default", name="web-0", apiVersion="v1"),
        note="Pulling image",
        type="Normal",
    )


EVENT_BYTES = (
    len_field(1, len_field(1, "web.17a") + len_field(3, "default"))
    + len_field(2, int_field(1, T0) + int_field(2, 1000))  # eventTime
    + len_field(4, "kubernetes.io/kubelet")
    + len_field(5, "kubelet-node-1")
    + len_field(6, "Pulling")  # action
    + len_field(7, "Pulling")  # reason
    + len_field(8, len_field(1, "Pod") + len_field(2, "default") + len_field(3, "web-0") + len_field(5, "v1"))
    + len_field(10, "Pulling image")  # note
    + len_field(11, "Normal")  # type
)


# --- PodTemplate (core/v1) --------------------------------------------------------------------------------


def pod_template() -> core.PodTemplate:
    container = core.Container(name="app", image="nginx:1.27", resources=core.ResourceRequirements())
    return core.PodTemplate(
        metadata=meta.ObjectMeta(name="web", namespace="default"),
        template=core.PodTemplateSpec(
            metadata=meta.ObjectMeta(labels=LABELS),
            spec=core.PodSpec(containers=[container], restartPolicy="Always"),
        ),
    )


POD_TEMPLATE_BYTES = (
    len_field(1, len_field(1, "web") + len_field(3, "default"))
    + len_field(  # template = 2: PodTemplateSpec metadata = 1, spec = 2
        2,
        len_field(1, LABELS_BYTES)
        + len_field(2, len_field(2, len_field(1, "app") + len_field(2, "nginx:1.27") + len_field(8, b""))
                    + len_field(3, "Always")),
    )
)


# fmt: off
GOLDEN: list[tuple[str, Any, bytes]] = [
    ("apps.Deployment", deployment, DEPLOYMENT_BYTES),
    ("core.Pod", pod, POD_BYTES),
    ("core.PodTemplate", pod_template, POD_TEMPLATE_BYTES),
    ("core.Service", service, SERVICE_BYTES),
    ("batch.Job", job, JOB_BYTES),
    ("coordination.Lease", lease, LEASE_BYTES),
    ("rbac.Role", role, ROLE_BYTES),
    ("rbac.RoleBinding", role_binding, ROLE_BINDING_BYTES),
    ("rbac.ClusterRole", cluster_role, CLUSTER_ROLE_BYTES),
    ("autoscaling.Scale", scale, SCALE_BYTES),
    ("events.Event", event, EVENT_BYTES),
]
# fmt: on


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_encodes_to_upstream_bytes(build: Any, golden: bytes) -> None:
    assert serialize(build()) == golden


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_decodes_from_upstream_bytes_and_re_encodes_them(build: Any, golden: bytes) -> None:
    msg = build()
    decoded = type(msg).FromString(golden)
    assert decoded == msg
    assert serialize(decoded) == golden


def test_deployment_envelope_as_kubectl_sends_it() -> None:
    unknown = runtime.Unknown(
        typeMeta=runtime.TypeMeta(apiVersion="apps/v1", kind="Deployment"),
        raw=serialize(deployment()),
        contentEncoding="",
        contentType="",
    )
    envelope = MAGIC + serialize(unknown)
    assert envelope == MAGIC + (
        len_field(1, len_field(1, "apps/v1") + len_field(2, "Deployment"))
        + len_field(2, DEPLOYMENT_BYTES)
        + len_field(3, "")
        + len_field(4, "")
    )
    decoded = apps.Deployment.FromString(runtime.Unknown.FromString(envelope[len(MAGIC) :]).raw)
    assert decoded.spec.strategy.rollingUpdate.maxSurge.strVal == "25%"


# Fields whose number is easy to get wrong: gaps, tombstones, inlined structs, capitalised names.
# (message, field, value, bytes of a message with only that field set)
# fmt: off
SINGLE_FIELDS: list[tuple[type[Message], str, Any, bytes]] = [
    (core.Volume, "volumeSource", core.VolumeSource(configMap=core.ConfigMapVolumeSource()),
     len_field(2, len_field(19, b""))),
    (core.VolumeSource, "projected", core.ProjectedVolumeSource(), len_field(26, b"")),
    (core.VolumeSource, "portworxVolume", core.PortworxVolumeSource(), len_field(24, b"")),
    (core.VolumeSource, "ephemeral", core.EphemeralVolumeSource(), len_field(29, b"")),
    (core.ConfigMapKeySelector, "localObjectReference", core.LocalObjectReference(name="cm"),
     len_field(1, len_field(1, "cm"))),
    (core.EphemeralContainer, "ephemeralContainerCommon", core.EphemeralContainerCommon(name="debug"),
     len_field(1, len_field(1, "debug"))),
    (core.EphemeralContainer, "targetContainerName", "app", len_field(2, "app")),
    (core.Container, "envFrom", [core.EnvFromSource(prefix="X_")], len_field(19, len_field(1, "X_"))),
    (core.Container, "startupProbe", core.Probe(periodSeconds=1), len_field(22, int_field(4, 1))),
    (core.Container, "resizePolicy", [core.ContainerResizePolicy(resourceName="cpu")],
     len_field(23, len_field(1, "cpu"))),
    (core.Container, "restartPolicy", "Always", len_field(24, "Always")),
    (core.ContainerStatus, "lastState", core.ContainerState(), len_field(3, b"")),
    (core.PodSpec, "initContainers", [core.Container(name="init")], len_field(20, len_field(1, "init"))),
    (core.PodSpec, "automountServiceAccountToken", False, int_field(21, 0)),
    (core.PodSpec, "ephemeralContainers", [core.EphemeralContainer()], len_field(34, b"")),
    (core.PodSpec, "hostUsers", False, int_field(37, 0)),
    (core.PodSpec, "resourceClaims", [core.PodResourceClaim(name="gpu")], len_field(39, len_field(1, "gpu"))),
    (core.PodStatus, "nominatedNodeName", "n", len_field(11, "n")),
    (core.PodStatus, "hostIPs", [core.HostIP(ip="10.0.0.1")], len_field(16, len_field(1, "10.0.0.1"))),
    (core.PodResourceClaim, "resourceClaimName", "c", len_field(3, "c")),
    (core.SecurityContext, "windowsOptions", core.WindowsSecurityContextOptions(), len_field(10, b"")),
    (core.PodSecurityContext, "supplementalGroupsPolicy", "Strict", len_field(12, "Strict")),
    (core.ISCSIVolumeSource, "secretRef", core.LocalObjectReference(), len_field(10, b"")),
    (core.ISCSIVolumeSource, "chapAuthSession", True, int_field(11, 1)),
    (core.ServiceSpec, "clusterIPs", ["10.0.0.1"], len_field(18, "10.0.0.1")),
    (core.ServiceSpec, "allocateLoadBalancerNodePorts", False, int_field(20, 0)),
    (core.ServiceSpec, "trafficDistribution", "PreferClose", len_field(23, "PreferClose")),
    (core.ServicePort, "appProtocol", "kubernetes.io/h2c", len_field(6, "kubernetes.io/h2c")),
    (core.EndpointAddress, "nodeName", "n", len_field(4, "n")),
    (core.DaemonEndpoint, "Port", 10250, int_field(1, 10250)),
    (core.NodeSpec, "externalID", "x", len_field(2, "x")),
    (core.NodeSpec, "podCIDRs", ["10.244.0.0/24"], len_field(7, "10.244.0.0/24")),
    (core.NodeStatus, "features", core.NodeFeatures(supplementalGroupsPolicy=True), len_field(13, int_field(1, 1))),
    (core.Event, "reportingComponent", "kubelet", len_field(14, "kubelet")),
    (core.Event, "eventTime", meta.MicroTime(seconds=T0, nanos=5), len_field(10, int_field(1, T0) + int_field(2, 5))),
    (core.PersistentVolumeSpec, "persistentVolumeSource",
     core.PersistentVolumeSource(csi=core.CSIPersistentVolumeSource(driver="d")),
     len_field(2, len_field(22, len_field(1, "d")))),
    (core.PersistentVolumeClaimSpec, "selector", meta.LabelSelector(), len_field(4, b"")),
    (core.PersistentVolumeClaimStatus, "allocatedResourceStatuses", {"storage": "NodeResizePending"},
     entry(7, "storage", "NodeResizePending")),
    (core.ReplicationControllerSpec, "minReadySeconds", 5, int_field(4, 5)),
    (core.LimitRangeItem, "maxLimitRequestRatio", {"cpu": resource.Quantity(string="2")},
     entry(6, "cpu", quantity("2"))),
    (apps.StatefulSetStatus, "availableReplicas", 0, int_field(11, 0)),
    (apps.StatefulSetSpec, "ordinals", apps.StatefulSetOrdinals(start=1), len_field(11, int_field(1, 1))),
    (apps.RollingUpdateStatefulSetStrategy, "maxUnavailable", int_or_string(1), len_field(2, int_or_string_bytes(1))),
    (apps.DaemonSetSpec, "revisionHistoryLimit", 10, int_field(6, 10)),
    (apps.DeploymentStatus, "collisionCount", 0, int_field(8, 0)),
    (apps.ReplicaSetStatus, "terminatingReplicas", 0, int_field(7, 0)),
    (apps.ControllerRevision, "data", runtime.RawExtension(raw=b"{}"), len_field(2, len_field(1, b"{}"))),
    (batch.JobSpec, "podFailurePolicy", batch.PodFailurePolicy(), len_field(11, b"")),
    (batch.JobSpec, "successPolicy", batch.SuccessPolicy(), len_field(16, b"")),
    (batch.JobSpec, "managedBy", "example.com/q", len_field(15, "example.com/q")),
    (batch.JobStatus, "failedIndexes", "1,3-5", len_field(10, "1,3-5")),
    (batch.CronJobSpec, "timeZone", "Etc/UTC", len_field(8, "Etc/UTC")),
    (batch.CronJobStatus, "lastSuccessfulTime", meta.Time(seconds=T0), len_field(5, int_field(1, T0))),
    (coordination.LeaseSpec, "preferredHolder", "b", len_field(7, "b")),
    (events.Event, "deprecatedCount", 2, int_field(15, 2)),
    (events.EventSeries, "lastObservedTime", meta.MicroTime(seconds=T0), len_field(2, int_field(1, T0))),
]
# fmt: on


@pytest.mark.parametrize(
    ("message", "field", "value", "golden"),
    [pytest.param(*case, id=f"{label(case[0])}.{case[1]}") for case in SINGLE_FIELDS],
)
def test_single_field_bytes(message: type[Message], field: str, value: Any, golden: bytes) -> None:
    msg = message()
    if isinstance(value, dict):
        for key, item in value.items():
            target = getattr(msg, field)
            if isinstance(item, Message):
                target[key].CopyFrom(item)
            else:
                target[key] = item
    elif isinstance(value, list):
        getattr(msg, field).extend(value)
    elif isinstance(value, Message):
        getattr(msg, field).CopyFrom(value)
    else:
        setattr(msg, field, value)
    assert serialize(msg) == golden
    assert message.FromString(golden) == msg


# Numbers upstream retired (reserved in our protos).
TOMBSTONES: list[tuple[type[Message], set[int]]] = [
    (core.ServiceSpec, {15, 16}),
    (core.EphemeralVolumeSource, {2}),
    (core.VolumeResourceRequirements, {3}),
    (core.PodResourceClaim, {2}),
    (core.PersistentVolumeClaimStatus, {6}),
    (core.EventSeries, {3}),
    (core.NodeConfigSource, {1}),
]


def test_tombstoned_numbers_are_kept_as_unknown_fields() -> None:
    """Old clients may still send removed fields (ServiceSpec 15 ipFamily, 16 topologyKeys); proto2 keeps
    them as unknown fields and writes them back, and no Capstan field reuses their numbers."""
    wire = len_field(15, "IPv4") + len_field(16, "kubernetes.io/hostname")
    spec = core.ServiceSpec.FromString(wire)
    assert spec.ListFields() == []
    assert serialize(spec) == wire
    for message, numbers in TOMBSTONES:
        assert not numbers & {f.number for f in message.DESCRIPTOR.fields}, message.DESCRIPTOR.name


# The two Events carry no spec: their fields are top-level. Both without "metadata" (= 1).
# fmt: off
CORE_EVENT = {
    "involvedObject": 2, "reason": 3, "message": 4, "source": 5, "firstTimestamp": 6, "lastTimestamp": 7,
    "count": 8, "type": 9, "eventTime": 10, "series": 11, "action": 12, "related": 13, "reportingComponent": 14,
    "reportingInstance": 15,
}
EVENTS_EVENT = {
    "eventTime": 2, "series": 3, "reportingController": 4, "reportingInstance": 5, "action": 6, "reason": 7,
    "regarding": 8, "related": 9, "note": 10, "type": 11, "deprecatedSource": 12, "deprecatedFirstTimestamp": 13,
    "deprecatedLastTimestamp": 14, "deprecatedCount": 15,
}
# fmt: on

# Every field of the messages the golden objects use most: upstream name -> upstream number.
# fmt: off
FIELD_NUMBERS: list[tuple[type[Message], dict[str, int]]] = [
    (apps.DeploymentSpec, {
        "replicas": 1, "selector": 2, "template": 3, "strategy": 4, "minReadySeconds": 5,
        "revisionHistoryLimit": 6, "paused": 7, "progressDeadlineSeconds": 9,
    }),
    (apps.DeploymentStatus, {
        "observedGeneration": 1, "replicas": 2, "updatedReplicas": 3, "readyReplicas": 7, "availableReplicas": 4,
        "unavailableReplicas": 5, "terminatingReplicas": 9, "conditions": 6, "collisionCount": 8,
    }),
    (apps.DeploymentStrategy, {"type": 1, "rollingUpdate": 2}),
    (apps.RollingUpdateDeployment, {"maxUnavailable": 1, "maxSurge": 2}),
    (apps.DeploymentCondition, {
        "type": 1, "status": 2, "lastUpdateTime": 6, "lastTransitionTime": 7, "reason": 4, "message": 5,
    }),
    (apps.StatefulSetSpec, {
        "replicas": 1, "selector": 2, "template": 3, "volumeClaimTemplates": 4, "serviceName": 5,
        "podManagementPolicy": 6, "updateStrategy": 7, "revisionHistoryLimit": 8, "minReadySeconds": 9,
        "persistentVolumeClaimRetentionPolicy": 10, "ordinals": 11,
    }),
    (apps.DaemonSetSpec, {
        "selector": 1, "template": 2, "updateStrategy": 3, "minReadySeconds": 4, "revisionHistoryLimit": 6,
    }),
    (apps.ReplicaSetSpec, {"replicas": 1, "minReadySeconds": 4, "selector": 2, "template": 3}),
    (core.PodTemplateSpec, {"metadata": 1, "spec": 2}),
    (core.PodSpec, {
        "volumes": 1, "initContainers": 20, "containers": 2, "ephemeralContainers": 34, "restartPolicy": 3,
        "terminationGracePeriodSeconds": 4, "activeDeadlineSeconds": 5, "dnsPolicy": 6, "nodeSelector": 7,
        "serviceAccountName": 8, "serviceAccount": 9, "automountServiceAccountToken": 21, "nodeName": 10,
        "hostNetwork": 11, "hostPID": 12, "hostIPC": 13, "shareProcessNamespace": 27, "securityContext": 14,
        "imagePullSecrets": 15, "hostname": 16, "subdomain": 17, "affinity": 18, "schedulerName": 19,
        "tolerations": 22, "hostAliases": 23, "priorityClassName": 24, "priority": 25, "dnsConfig": 26,
        "readinessGates": 28, "runtimeClassName": 29, "enableServiceLinks": 30, "preemptionPolicy": 31,
        "overhead": 32, "topologySpreadConstraints": 33, "setHostnameAsFQDN": 35, "os": 36, "hostUsers": 37,
        "schedulingGates": 38, "resourceClaims": 39,
    }),
    (core.Container, {
        "name": 1, "image": 2, "command": 3, "args": 4, "workingDir": 5, "ports": 6, "envFrom": 19, "env": 7,
        "resources": 8, "resizePolicy": 23, "restartPolicy": 24, "volumeMounts": 9, "volumeDevices": 21,
        "livenessProbe": 10, "readinessProbe": 11, "startupProbe": 22, "lifecycle": 12,
        "terminationMessagePath": 13, "terminationMessagePolicy": 20, "imagePullPolicy": 14,
        "securityContext": 15, "stdin": 16, "stdinOnce": 17, "tty": 18,
    }),
    (core.Probe, {
        "handler": 1, "initialDelaySeconds": 2, "timeoutSeconds": 3, "periodSeconds": 4, "successThreshold": 5,
        "failureThreshold": 6, "terminationGracePeriodSeconds": 7,
    }),
    (core.ProbeHandler, {"exec": 1, "httpGet": 2, "tcpSocket": 3, "grpc": 4}),
    (core.ResourceRequirements, {"limits": 1, "requests": 2, "claims": 3}),
    (core.PodStatus, {
        "phase": 1, "conditions": 2, "message": 3, "reason": 4, "nominatedNodeName": 11, "hostIP": 5,
        "hostIPs": 16, "podIP": 6, "podIPs": 12, "startTime": 7, "initContainerStatuses": 10,
        "containerStatuses": 8, "qosClass": 9, "ephemeralContainerStatuses": 13, "resize": 14,
        "resourceClaimStatuses": 15,
    }),
    (core.ContainerStatus, {
        "name": 1, "state": 2, "lastState": 3, "ready": 4, "restartCount": 5, "image": 6, "imageID": 7,
        "containerID": 8, "started": 9, "allocatedResources": 10, "resources": 11, "volumeMounts": 12, "user": 13,
    }),
    (core.ServiceSpec, {
        "ports": 1, "selector": 2, "clusterIP": 3, "clusterIPs": 18, "type": 4, "externalIPs": 5,
        "sessionAffinity": 7, "loadBalancerIP": 8, "loadBalancerSourceRanges": 9, "externalName": 10,
        "externalTrafficPolicy": 11, "healthCheckNodePort": 12, "publishNotReadyAddresses": 13,
        "sessionAffinityConfig": 14, "ipFamilies": 19, "ipFamilyPolicy": 17, "allocateLoadBalancerNodePorts": 20,
        "loadBalancerClass": 21, "internalTrafficPolicy": 22, "trafficDistribution": 23,
    }),
    (core.ServicePort, {"name": 1, "protocol": 2, "appProtocol": 6, "port": 3, "targetPort": 4, "nodePort": 5}),
    (core.Event, {"metadata": 1, **CORE_EVENT}),
    (core.ObjectReference, {
        "kind": 1, "namespace": 2, "name": 3, "uid": 4, "apiVersion": 5, "resourceVersion": 6, "fieldPath": 7,
    }),
    (batch.JobSpec, {
        "parallelism": 1, "completions": 2, "activeDeadlineSeconds": 3, "podFailurePolicy": 11,
        "successPolicy": 16, "backoffLimit": 7, "backoffLimitPerIndex": 12, "maxFailedIndexes": 13, "selector": 4,
        "manualSelector": 5, "template": 6, "ttlSecondsAfterFinished": 8, "completionMode": 9, "suspend": 10,
        "podReplacementPolicy": 14, "managedBy": 15,
    }),
    (batch.JobStatus, {
        "conditions": 1, "startTime": 2, "completionTime": 3, "active": 4, "succeeded": 5, "failed": 6,
        "terminating": 11, "completedIndexes": 7, "failedIndexes": 10, "uncountedTerminatedPods": 8, "ready": 9,
    }),
    (batch.CronJobSpec, {
        "schedule": 1, "timeZone": 8, "startingDeadlineSeconds": 2, "concurrencyPolicy": 3, "suspend": 4,
        "jobTemplate": 5, "successfulJobsHistoryLimit": 6, "failedJobsHistoryLimit": 7,
    }),
    (batch.CronJobStatus, {"active": 1, "lastScheduleTime": 4, "lastSuccessfulTime": 5}),
    (coordination.LeaseSpec, {
        "holderIdentity": 1, "leaseDurationSeconds": 2, "acquireTime": 3, "renewTime": 4, "leaseTransitions": 5,
        "strategy": 6, "preferredHolder": 7,
    }),
    (events.Event, {"metadata": 1, **EVENTS_EVENT}),
    (rbac.PolicyRule, {"verbs": 1, "apiGroups": 2, "resources": 3, "resourceNames": 4, "nonResourceURLs": 5}),
    (rbac.Subject, {"kind": 1, "apiGroup": 2, "name": 3, "namespace": 4}),
    (rbac.RoleRef, {"apiGroup": 1, "kind": 2, "name": 3}),
    (autoscaling.ScaleSpec, {"replicas": 1}),
    (autoscaling.ScaleStatus, {"replicas": 1, "selector": 2}),
]
# fmt: on


@pytest.mark.parametrize(("message", "numbers"), [pytest.param(*c, id=label(c[0])) for c in FIELD_NUMBERS])
def test_every_field_has_upstream_name_and_number(message: type[Message], numbers: dict[str, int]) -> None:
    assert {f.name: f.number for f in message.DESCRIPTOR.fields} == numbers


# Every new top-level kind: the fields besides metadata = 1 that upstream gives it. Kinds with spec and
# status have them as 2 and 3; the others are listed as they are. No kind carries TypeMeta (kind and
# apiVersion travel in the envelope and are inlined into JSON by the codec).
# fmt: off
KINDS: list[tuple[type[Message], dict[str, int]]] = [
    (core.Pod, {"spec": 2, "status": 3}),
    (core.Service, {"spec": 2, "status": 3}),
    (core.Node, {"spec": 2, "status": 3}),
    (core.PersistentVolume, {"spec": 2, "status": 3}),
    (core.PersistentVolumeClaim, {"spec": 2, "status": 3}),
    (core.ResourceQuota, {"spec": 2, "status": 3}),
    (core.ReplicationController, {"spec": 2, "status": 3}),
    (core.LimitRange, {"spec": 2}),
    (core.ServiceAccount, {"secrets": 2, "imagePullSecrets": 3, "automountServiceAccountToken": 4}),
    (core.Endpoints, {"subsets": 2}),
    (core.Binding, {"target": 2}),
    (core.PodTemplate, {"template": 2}),
    (core.Event, CORE_EVENT),
    (apps.Deployment, {"spec": 2, "status": 3}),
    (apps.ReplicaSet, {"spec": 2, "status": 3}),
    (apps.StatefulSet, {"spec": 2, "status": 3}),
    (apps.DaemonSet, {"spec": 2, "status": 3}),
    (apps.ControllerRevision, {"data": 2, "revision": 3}),
    (batch.Job, {"spec": 2, "status": 3}),
    (batch.CronJob, {"spec": 2, "status": 3}),
    (coordination.Lease, {"spec": 2}),
    (events.Event, EVENTS_EVENT),
    (rbac.Role, {"rules": 2}),
    (rbac.ClusterRole, {"rules": 2, "aggregationRule": 3}),
    (rbac.RoleBinding, {"subjects": 2, "roleRef": 3}),
    (rbac.ClusterRoleBinding, {"subjects": 2, "roleRef": 3}),
    (autoscaling.Scale, {"spec": 2, "status": 3}),
]
# fmt: on


@pytest.mark.parametrize(("kind", "rest"), [pytest.param(*k, id=label(k[0])) for k in KINDS])
def test_kind_has_object_meta_first_and_upstream_top_level_fields(kind: type[Message], rest: dict[str, int]) -> None:
    fields = kind.DESCRIPTOR.fields_by_name
    assert fields["metadata"].number == 1
    assert fields["metadata"].message_type is meta.ObjectMeta.DESCRIPTOR
    assert {f.name: f.number for f in kind.DESCRIPTOR.fields if f.name != "metadata"} == rest
    assert "kind" not in fields and "apiVersion" not in fields


# Scale (a subresource body) and Binding (a create-only body) have no List upstream.
LISTED = [k for k, _ in KINDS if k not in (autoscaling.Scale, core.Binding)]


@pytest.mark.parametrize("kind", [pytest.param(k, id=label(k)) for k in LISTED])
def test_kind_list_is_list_meta_and_items(kind: type[Message]) -> None:
    listing = kind.DESCRIPTOR.file.message_types_by_name[kind.DESCRIPTOR.name + "List"]
    assert [(f.name, f.number) for f in listing.fields] == [("metadata", 1), ("items", 2)]
    metadata, items = listing.fields
    assert metadata.message_type is meta.ListMeta.DESCRIPTOR
    assert items.is_repeated and items.message_type is kind.DESCRIPTOR
