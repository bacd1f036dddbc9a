"""The JSON <-> protobuf transcoder on the built-in kinds of core, apps, batch, coordination,
events and rbac, as kube-apiserver prints them.

Each object is JSON in the shape kube-apiserver answers a GET with (defaults applied, every field Go
always prints present), written by hand from the Go types of k8s.io/api. Decoding it, writing the
protobuf bytes, reading them back and encoding again must give the same JSON: a field missing here
would come back, and a wrongly marked emit_zero field would appear or vanish.
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
from capstan.api.rbac.v1 import rbac_pb2 as rbac
from tests.server.machinery.codec.test_transcode import body, roundtrip

T = "2024-05-01T10:00:00Z"
T2 = "2024-05-01T10:05:00Z"


# An ObjectMeta with no creationTimestamp (a template's), as Go prints it: a zero metav1.Time is null.
NO_TIME: dict[str, Any] = {"creationTimestamp": None}


def meta(name: str, namespace: str | None = "default", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out |= {"uid": "6f2a7a3e-0000-4000-8000-000000000001", "resourceVersion": "42", "creationTimestamp": T}
    return out | extra


WEB = {"app": "web"}

# A container as kube-apiserver defaults it: resources is a Go struct, so it is always printed ({}).
NGINX = {
    "name": "nginx",
    "image": "nginx:1.27",
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}

POD_SPEC_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}

DEPLOYMENT = {
    "kind": "Deployment", "apiVersion": "apps/v1",
    "metadata": meta("web", generation=1, labels=WEB, annotations={"deployment.kubernetes.io/revision": "1"}),
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": WEB},
        "template": {"metadata": {"creationTimestamp": None, "labels": WEB},
                     "spec": {"containers": [NGINX], **POD_SPEC_DEFAULTS}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    "status": {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "True", "lastUpdateTime": T, "lastTransitionTime": T,
             "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": T2, "lastTransitionTime": T,
             "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"web-7d4b9c\" has successfully progressed."},
        ],
    },
}  # fmt: skip

POD = {
    "kind": "Pod", "apiVersion": "v1",
    "metadata": meta("web-7d4b9c-x2x4z", labels=WEB | {"pod-template-hash": "7d4b9c"}, ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "u-1",
         "controller": True, "blockOwnerDeletion": True},
    ]),
    "spec": {
        "containers": [{
            "name": "app", "image": "example.com/app:1.0", "command": ["/app"], "args": ["--port=8080"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "MODE", "value": "prod"}, {"name": "EMPTY"}],
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
            "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}},
        }],
        **POD_SPEC_DEFAULTS,
        "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "node-1",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
        ],
        "priority": 0,  # a Go *int32: zero is printed
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    },
    "status": {
        "phase": "Running",
        "conditions": [
            # lastProbeTime is a non-pointer Time without omitzero: kube-apiserver prints null.
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": T},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": T},
        ],
        "hostIP": "192.168.0.10", "hostIPs": [{"ip": "192.168.0.10"}],
        "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
        "startTime": T,
        "containerStatuses": [{
            "name": "app", "state": {"running": {"startedAt": T}}, "lastState": {}, "ready": True,
            "restartCount": 0, "image": "example.com/app:1.0", "imageID": "example.com/app@sha256:abc",
            "containerID": "containerd://0123", "started": True,
        }],
        "qosClass": "Burstable",
    },
}  # fmt: skip

SERVICE = {
    "kind": "Service", "apiVersion": "v1",
    "metadata": meta("web", labels=WEB),
    "spec": {
        "ports": [
            {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"},
            {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090},
            {"name": "node", "protocol": "TCP", "appProtocol": "kubernetes.io/h2c", "port": 81, "targetPort": 0,
             "nodePort": 30081},
        ],
        "selector": WEB,
        "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
        "type": "NodePort",
        "sessionAffinity": "None",
        "externalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    },
    "status": {"loadBalancer": {}},
}  # fmt: skip

JOB_TEMPLATE_SPEC = {
    "template": {
        "metadata": NO_TIME,
        "spec": {"containers": [NGINX | {"name": "report", "command": ["sh", "-c", "date"]}], **POD_SPEC_DEFAULTS,
                 "restartPolicy": "OnFailure"},
    },
    "backoffLimit": 6,
    "completionMode": "NonIndexed",
    "suspend": False,  # a Go *bool: false is printed
    "podReplacementPolicy": "TerminatingOrFailed",
}  # fmt: skip

CRON_JOB = {
    "kind": "CronJob", "apiVersion": "batch/v1",
    "metadata": meta("nightly"),
    "spec": {
        "schedule": "0 3 * * *",
        "timeZone": "Etc/UTC",
        "concurrencyPolicy": "Forbid",
        "suspend": False,
        "jobTemplate": {"metadata": NO_TIME, "spec": JOB_TEMPLATE_SPEC},
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    },
    "status": {
        "active": [{"kind": "Job", "namespace": "default", "name": "nightly-28571234", "uid": "u-3",
                    "apiVersion": "batch/v1", "resourceVersion": "41"}],
        "lastScheduleTime": T, "lastSuccessfulTime": T2,
    },
}  # fmt: skip

JOB = {
    "kind": "Job", "apiVersion": "batch/v1",
    "metadata": meta("nightly-28571234", labels={"batch.kubernetes.io/job-name": "nightly-28571234"}),
    "spec": {"parallelism": 1, "completions": 1, "manualSelector": False, **JOB_TEMPLATE_SPEC,
             "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
    "status": {
        "conditions": [
            {"type": "Complete", "status": "True", "lastProbeTime": T2, "lastTransitionTime": T2},
        ],
        "startTime": T, "completionTime": T2, "succeeded": 1, "terminating": 0,
        "uncountedTerminatedPods": {}, "ready": 0,
    },
}  # fmt: skip

LEASE = {
    "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
    "metadata": meta("kube-controller-manager", "kube-system"),
    "spec": {
        "holderIdentity": "node-1_5f2c0e4a-1b7e-4f1e-9a55-7f0a3c5e9d21",
        "leaseDurationSeconds": 15,
        "acquireTime": "2024-05-01T10:00:00.000000Z",
        "renewTime": "2024-05-01T10:00:07.123456Z",
        "leaseTransitions": 0,  # a Go *int32: zero is printed
    },
}  # fmt: skip

ROLE_BINDING = {
    "kind": "RoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": meta("read-pods"),
    "subjects": [
        {"kind": "ServiceAccount", "name": "default", "namespace": "default"},
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"},
    ],
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
}  # fmt: skip

ROLE = {
    "kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": meta("pod-reader"),
    "rules": [
        {"verbs": ["get", "watch", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["web"]},
    ],
}  # fmt: skip

CLUSTER_ROLE = {
    "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": meta("monitoring", None),
    "rules": None,  # rules has no omitempty: an aggregated role's empty rules print null, Go's nil slice
    "aggregationRule": {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}],
    },
}  # fmt: skip

STATEFUL_SET = {
    "kind": "StatefulSet", "apiVersion": "apps/v1",
    "metadata": meta("db", generation=2),
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "db"}},
                     "spec": {"containers": [NGINX], **POD_SPEC_DEFAULTS}},
        "volumeClaimTemplates": [{
            "metadata": {"name": "data", "creationTimestamp": None},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"},
        }],
        "serviceName": "db",
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    },
    "status": {"observedGeneration": 2, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
               "updatedReplicas": 3, "currentRevision": "db-5d8f", "updateRevision": "db-5d8f",
               "collisionCount": 0, "availableReplicas": 3},
}  # fmt: skip

EVENT = {
    "kind": "Event", "apiVersion": "events.k8s.io/v1",
    "metadata": meta("web.17c8d2b3a4f5e6d7"),
    "eventTime": "2024-05-01T10:00:00.000123Z",
    "series": {"count": 2, "lastObservedTime": "2024-05-01T10:01:00.500000Z"},
    "reportingController": "kubelet", "reportingInstance": "node-1",
    "action": "Pulling", "reason": "Pulling",
    "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u-2", "apiVersion": "v1",
                  "resourceVersion": "7", "fieldPath": "spec.containers{app}"},
    "note": "Pulling image \"nginx:1.27\"", "type": "Normal",
    # The deprecated core/v1 fields are Go structs without omitzero: printed, as null when zero.
    "deprecatedSource": {}, "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None,
}  # fmt: skip

NODE = {
    "kind": "Node", "apiVersion": "v1",
    "metadata": meta("node-1", None, labels={"kubernetes.io/hostname": "node-1"}),
    "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"],
             "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "2", "memory": "8145440Ki", "pods": "110"},
        "allocatable": {"cpu": "2", "memory": "8043040Ki", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": T2, "lastTransitionTime": T,
                        "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
        "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}, {"type": "Hostname", "address": "node-1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1.0",
                     "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.13",
                     "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                     "architecture": "amd64"},
        "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
    },
}  # fmt: skip

SCALE = {
    "kind": "Scale", "apiVersion": "autoscaling/v1",
    "metadata": meta("web"),
    "spec": {"replicas": 5},
    "status": {"replicas": 3, "selector": "app=web"},
}  # fmt: skip

ROUND_TRIPS: list[tuple[str, type[Message], dict[str, Any]]] = [
    ("Deployment", apps.Deployment, DEPLOYMENT),
    ("Pod", core.Pod, POD),
    ("Service/intstr targetPort", core.Service, SERVICE),
    ("CronJob", batch.CronJob, CRON_JOB),
    ("Job", batch.Job, JOB),
    ("Lease/microTime", coordination.Lease, LEASE),
    ("RoleBinding", rbac.RoleBinding, ROLE_BINDING),
    ("Role", rbac.Role, ROLE),
    ("ClusterRole/aggregated", rbac.ClusterRole, CLUSTER_ROLE),
    ("StatefulSet", apps.StatefulSet, STATEFUL_SET),
    ("events.k8s.io Event", events.Event, EVENT),
    ("Node", core.Node, NODE),
    ("Scale", autoscaling.Scale, SCALE),
]


@pytest.mark.parametrize(("cls", "obj"), [pytest.param(c, o, id=i) for i, c, o in ROUND_TRIPS])
def test_round_trip(cls: type[Message], obj: dict[str, Any]) -> None:
    assert roundtrip(cls, obj) == body(obj)


# Values printed in another form than they were written: (cls, JSON in, JSON out).
NORMALIZED: list[tuple[str, type[Message], dict[str, Any], dict[str, Any]]] = [
    ("absent Go structs are printed", apps.Deployment, {"metadata": {"name": "web"}, "spec": {"replicas": 1}},
     {"metadata": {"name": "web", "creationTimestamp": None},
      "spec": {"replicas": 1, "template": {"metadata": NO_TIME, "spec": {"containers": None}}, "strategy": {}},
      "status": {}}),
    ("absent non-pointer IntOrString is 0", core.Service, {"spec": {"ports": [{"port": 80}]}},
     {"metadata": NO_TIME, "spec": {"ports": [{"port": 80, "targetPort": 0}]}, "status": {"loadBalancer": {}}}),
    ("MicroTime keeps microseconds, to UTC", coordination.Lease,
     {"spec": {"renewTime": "2024-05-01T12:00:07.123456+02:00"}},
     {"metadata": NO_TIME, "spec": {"renewTime": "2024-05-01T10:00:07.123456Z"}}),
    ("condition times absent: null", apps.Deployment,
     {"status": {"conditions": [{"type": "Available", "status": "True"}]}},
     {"metadata": NO_TIME, "spec": {"template": {"metadata": NO_TIME, "spec": {"containers": None}}, "strategy": {}},
      "status": {"conditions": [
          {"type": "Available", "status": "True", "lastUpdateTime": None, "lastTransitionTime": None}]}}),
    ("roleRef is always printed, subjects only when set", rbac.ClusterRoleBinding, {"metadata": {"name": "x"}},
     {"metadata": {"name": "x", "creationTimestamp": None}, "roleRef": {"apiGroup": "", "kind": "", "name": ""}}),
    ("Role rules are printed null when absent (Go's nil slice)", rbac.Role, {"metadata": {"name": "x"}},
     {"metadata": {"name": "x", "creationTimestamp": None}, "rules": None}),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "given", "printed"), [pytest.param(*c[1:], id=c[0]) for c in NORMALIZED])
def test_normalized(cls: type[Message], given: dict[str, Any], printed: dict[str, Any]) -> None:
    assert roundtrip(cls, given) == printed


# --- inline structs (capstan.options.v1.json_inline): Go's `json:",inline"` embedding -------------------------------

POD_INLINE = {
    "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": None},
    "spec": {
        "volumes": [
            {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
            {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
        ],
        "containers": [{
            "name": "app", "image": "example.com/app:1.0",
            "envFrom": [{"configMapRef": {"name": "web-env"}}],
            "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                              "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1,
                              "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5, "timeoutSeconds": 1,
                               "successThreshold": 1, "failureThreshold": 3},
        }],
    },
    "status": {},
}  # fmt: skip

PV_INLINE = {
    "metadata": {"name": "pv-1", "creationTimestamp": None},
    "spec": {"capacity": {"storage": "10Gi"}, "hostPath": {"path": "/data", "type": ""},
             "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain"},
    "status": {"phase": "Available"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "obj"),
    [
        pytest.param(core.Pod, POD_INLINE, id="Pod/probes, volumes, envFrom"),
        pytest.param(core.PersistentVolume, PV_INLINE, id="PersistentVolume"),
    ],
)
def test_round_trip_of_inlined_structs(cls: type[Message], obj: dict[str, Any]) -> None:
    assert roundtrip(cls, obj) == body(obj)


def test_quantities_are_printed_in_canonical_form() -> None:
    # "1000" (DecimalSI) prints "1k"; "1e3" would keep its text, as Go's DecimalExponent format does
    # (apimachinery's quantity_test.go: decQuantity(1, 3, DecimalExponent) -> "1e3").
    given = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "resources": {
                        "limits": {"cpu": "1000m", "memory": "1024Mi"},
                        "requests": {"cpu": "0.5", "memory": "1000"},
                    },
                }
            ]
        }
    }
    printed = roundtrip(core.Pod, given)
    assert printed["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "1k"},
    }
