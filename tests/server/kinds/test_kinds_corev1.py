"""The core/v1 kinds beyond config through a real core over gRPC: every verb per kind, kube-apiserver's defaults
and validation (exact Status), field selectors, subresources (pods/status, pods/binding), cluster IP and node
port allocation (across restarts and concurrent creates), and Pods' graceful deletion.

Expected answers are written from kube-apiserver 1.32's source: pkg/apis/core/v1/defaults.go,
pkg/apis/core/validation, pkg/registry/core/{pod,service,node,...}, plugin/pkg/admission.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import ipaddress
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.machinery.validation import names as validation_names
from server.machinery.validation.names import is_label_value, is_qualified_name
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server import kube
from tests.server.client import Client, Failed, Obj, path, raw, refused

NS = "default"
NODE_TERM = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
PREFERRED = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
ANTI = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                  "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


# a resource.Quantity as field.ErrorBody prints it (%#v: its String has a pointer receiver)
QUANTITY_1, QUANTITY_2 = (f'resource.Quantity{{i:resource.int64Amount{{value:{v}, scale:0}}, '
                          f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"{v}", Format:"DecimalSI"}}'
                          for v in (1, 2))


def required(field: str, detail: str = "") -> Obj:
    return kube.cause("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", field)


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


def duplicate(field: str, rendered: str) -> Obj:
    return kube.cause("FieldValueDuplicate", f"Duplicate value: {rendered}", field)


def not_found_value(field: str, rendered: str) -> Obj:
    return kube.cause("FieldValueNotFound", f"Not found: {rendered}", field)


def pod(name: str = "web", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}


def service(name: str = "web", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


# A minimal valid object of each kind: (resource, namespaced, object).
KINDS: list[tuple[str, bool, Obj]] = [
    ("serviceaccounts", True, {"metadata": {"name": "robot"}}),
    ("services", True, service()),
    ("endpoints", True, {"metadata": {"name": "web"},
                         "subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80}]}]}),
    ("pods", True, pod()),
    ("nodes", False, {"metadata": {"name": "node-1"}}),
    ("events", True, {"metadata": {"name": "web.1"}, "involvedObject": {"kind": "Pod", "name": "web",
                                                                      "namespace": NS},
                      "reason": "Pulled", "message": "pulled", "type": "Normal"}),
    ("persistentvolumes", False, {"metadata": {"name": "pv-1"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
    ("persistentvolumeclaims", True, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    ("resourcequotas", True, {"metadata": {"name": "quota"}, "spec": {"hard": {"pods": "10"}}}),
    ("limitranges", True, {"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container"}]}}),
    ("replicationcontrollers", True, {"metadata": {"name": "web"}, "spec": {"template": {
        "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}),
]  # fmt: skip


def _at(resource: str, namespaced: bool, name: str = "") -> Any:
    return path(resource, NS if namespaced else "", name)


@pytest.mark.parametrize(("resource", "namespaced", "obj"), KINDS, ids=[k[0] for k in KINDS])
async def test_every_verb(client: Client, resource: str, namespaced: bool, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    created = await client.create_unprotected(_at(resource, namespaced), copy.deepcopy(obj))
    rv = created["metadata"]["resourceVersion"]
    assert created["metadata"]["name"] == name
    assert await client.get(_at(resource, namespaced, name)) == created
    assert name in await client.names(_at(resource, namespaced))
    changed = copy.deepcopy(created)
    changed["metadata"]["labels"] = {"touched": "yes"}
    updated, was_created = await client.update(_at(resource, namespaced, name), changed)
    assert not was_created and updated["metadata"]["labels"] == {"touched": "yes"}
    events = await client.events(_at(resource, namespaced), lambda e: e[0] == "MODIFIED", resourceVersion=rv)
    assert events[-1][1]["metadata"]["labels"] == {"touched": "yes"}
    gone = await client.delete(_at(resource, namespaced, name), propagationPolicy="Background")  # as kubectl
    # The Success Status or the deleted object, as the kind's store answers (test_delete.py has the table).
    assert (gone.get("details") or gone["metadata"])["uid"] == created["metadata"]["uid"]
    failed = await refused(client.get(_at(resource, namespaced, name)))
    assert failed.status == kube.not_found(resource, name)


async def test_discovery_offers_the_pod_subresources(client: Client) -> None:
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    found = {r.resource: r for r in discovered.resources}
    assert sorted(s.name for s in found["pods"].subresources) == [
        "attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "status"]
    assert (found["pods"].short_names, found["pods"].categories) == (["po"], ["all"])
    assert {r: list(found[r].short_names) for r in ("services", "endpoints", "nodes", "events",
                                                    "persistentvolumes", "persistentvolumeclaims",
                                                    "resourcequotas", "limitranges", "replicationcontrollers",
                                                    "serviceaccounts")} == {
        "services": ["svc"], "endpoints": ["ep"], "nodes": ["no"], "events": ["ev"], "persistentvolumes": ["pv"],
        "persistentvolumeclaims": ["pvc"], "resourcequotas": ["quota"], "limitranges": ["limits"],
        "replicationcontrollers": ["rc"], "serviceaccounts": ["sa"]}
    assert [r for r in found if "all" in found[r].categories and not found[r].group] == [
        "services", "pods", "replicationcontrollers"]
    assert (found["nodes"].namespaced, found["persistentvolumes"].namespaced) == (False, False)


# ---------------------------------------------------------------- defaults

POD_DEFAULTED_SPEC: Obj = {
    "containers": [{
        "name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m"}, "requests": {"cpu": "500m"}},
        "livenessProbe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1,
                          "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "Always",
    }],
    "volumes": [{"name": "config", "configMap": {"name": "cm", "defaultMode": 420}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "token", "secret": {"secretName": "s", "defaultMode": 420}}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
    "schedulerName": "default-scheduler",
    "tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}],
    "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
}  # fmt: skip


async def test_pod_defaults_match_kube_apiserver(client: Client) -> None:
    given = pod(containers=[{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}],
                             "resources": {"limits": {"cpu": "0.5"}}, "livenessProbe": {"httpGet": {"port": 80}}}],
                volumes=[{"name": "config", "configMap": {"name": "cm"}}, {"name": "scratch"},
                         {"name": "token", "secret": {"secretName": "s"}}])
    created = await client.create(path("pods", NS), given)
    assert created["spec"] == POD_DEFAULTED_SPEC
    assert list(created["spec"]["containers"][0]) == list(POD_DEFAULTED_SPEC["containers"][0])  # Go's field order
    assert created["status"] == {"phase": "Pending", "qosClass": "Burstable"}


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("registry.example.com:5000/team/app", "Always"), ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("localhost/app", "Always"),
])  # fmt: skip
async def test_image_pull_policy_follows_the_tag(client: Client, image: str, policy: str) -> None:
    created = await client.create(path("pods", NS), pod(containers=[{"name": "app", "image": image}]))
    assert created["spec"]["containers"][0]["imagePullPolicy"] == policy


@pytest.mark.parametrize(("resources", "qos"), [
    ({}, "BestEffort"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
    ({"requests": {"memory": "1Gi"}}, "Burstable"),
])  # fmt: skip
async def test_pod_qos_class(client: Client, resources: Obj, qos: str) -> None:
    created = await client.create(path("pods", NS), pod(containers=[{"name": "a", "image": "i",
                                                                     "resources": resources}]))
    assert created["status"]["qosClass"] == qos


# (resource, namespaced, given, the fields expected in the created object)
DEFAULTS: list[tuple[str, str, bool, Obj, Obj]] = [
    ("service ClusterIP", "services", True, service(), {"spec": {
        "ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}], "type": "ClusterIP",
        "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster"}, "status": {"loadBalancer": {}}}),
    ("service ClientIP affinity", "services", True, service(sessionAffinity="ClientIP"), {"spec": {
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}}),
    ("service LoadBalancer", "services", True, service(type="LoadBalancer"), {"spec": {
        "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True}}),
    ("service ExternalName", "services", True, service(type="ExternalName", externalName="db.example.com", ports=[]),
     {"spec": {"type": "ExternalName", "externalName": "db.example.com", "sessionAffinity": "None"}}),
    ("endpoints port protocol", "endpoints", True, {"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
     {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}]}),
    ("pvc", "persistentvolumeclaims", True, KINDS[7][2], {"spec": {"volumeMode": "Filesystem"},
                                                          "status": {"phase": "Pending"}}),
    ("pv", "persistentvolumes", False, KINDS[6][2], {"spec": {
        "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem",
        "hostPath": {"path": "/data", "type": ""}},
        "status": {"phase": "Pending"}}),
    ("rc", "replicationcontrollers", True, KINDS[10][2], {"metadata": {"labels": {"app": "web"}, "generation": 1},
     "spec": {"replicas": 1, "selector": {"app": "web"}}, "status": {"replicas": 0}}),
    ("limitrange", "limitranges", True, {"metadata": {"name": "l"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}},
     {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
                          "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "64Mi"}}]}}),
    ("node allocatable", "nodes", False, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}},
     {"status": {"capacity": {"cpu": "2"}, "allocatable": {"cpu": "2"}}}),
    # Convert_v1_NodeSpec_To_core_NodeSpec and back: podCIDR is authoritative, podCIDRs follows it.
    ("node podCIDR", "nodes", False, {"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.9.0/24"}},
     {"spec": {"podCIDR": "10.244.9.0/24", "podCIDRs": ["10.244.9.0/24"]}}),
    ("node podCIDRs", "nodes", False, {"metadata": {"name": "n"}, "spec": {"podCIDRs": ["10.244.9.0/24"]}},
     {"spec": {"podCIDR": "10.244.9.0/24", "podCIDRs": ["10.244.9.0/24"]}}),
]  # fmt: skip


def _contains(whole: Any, part: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _contains(whole[k], v) for k, v in part.items())
    return bool(whole == part)


@pytest.mark.parametrize(("resource", "namespaced", "given", "expected"), [d[1:] for d in DEFAULTS],
                         ids=[d[0] for d in DEFAULTS])
async def test_defaults(client: Client, resource: str, namespaced: bool, given: Obj, expected: Obj) -> None:
    created = await client.create(_at(resource, namespaced), copy.deepcopy(given))
    assert _contains(created, expected), created


async def test_pv_status_on_create_is_pending_without_a_transition_time(client: Client) -> None:
    # kube-apiserver 1.28.7: {"phase": "Pending"} (PersistentVolumeLastPhaseTransitionTime is alpha, off).
    created = await client.create(path("persistentvolumes"), copy.deepcopy(KINDS[6][2]))
    assert created["status"] == {"phase": "Pending"}


# ---------------------------------------------------------------- validation

PORT_RANGE = "must be between 1 and 65535, inclusive"
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")

SYSCTL_MSG = ("must have at most 253 characters and match regex "
              "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$")
ID_RANGE = "must be between 0 and 2147483647, inclusive"

VALIDATION: list[tuple[str, str, Obj, str, list[Obj]]] = [
    ("no containers", "pods", pod(containers=[]), "Pod", [required("spec.containers")]),
    ("container name and image", "pods", pod(containers=[{}]), "Pod",
     [required("spec.containers[0].name"), required("spec.containers[0].image")]),
    ("container name not a label", "pods", pod(containers=[{"name": "App", "image": "i"}]), "Pod",
     [invalid("spec.containers[0].name", '"App"', LABEL_MSG)]),
    ("duplicate container names", "pods", pod(containers=[{"name": "a", "image": "i"}, {"name": "a", "image": "i"}]),
     "Pod", [duplicate("spec.containers[1].name", '"a"')]),
    ("port range", "pods", pod(containers=[{"name": "a", "image": "i", "ports": [{"containerPort": 70000}]}]),
     "Pod", [invalid("spec.containers[0].ports[0].containerPort", "70000", PORT_RANGE)]),
    ("restart policy", "pods", pod(restartPolicy="Sometimes"), "Pod",
     [kube.field_not_supported("spec.restartPolicy", '"Sometimes"', ["Always", "OnFailure", "Never"])]),
    ("mount of no volume", "pods", pod(containers=[{"name": "a", "image": "i",
                                                    "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]),
     "Pod", [not_found_value("spec.containers[0].volumeMounts[0].name", '"v"')]),
    ("request above limit", "pods", pod(containers=[{"name": "a", "image": "i", "resources": {
        "limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}]), "Pod",
     [invalid("spec.containers[0].resources.requests", '"2"', "must be less than or equal to cpu limit of 1")]),
    ("probe without handler", "pods", pod(containers=[{"name": "a", "image": "i", "readinessProbe": {
        "periodSeconds": 5}}]), "Pod", [required("spec.containers[0].readinessProbe", "must specify a handler type")]),
    ("sysctl names", "pods", pod(securityContext={"sysctls": [
        {"name": "foo-", "value": "bar"}, {"name": "kernel.shmmax", "value": "1"},
        {"name": "safe-and-unsafe", "value": "1"}, {"name": "bar..", "value": "42"}, {"name": "", "value": "1"},
        {"name": "kernel.shmmax", "value": "2"}]}), "Pod",
     [invalid("spec.securityContext.sysctls[0].name", '"foo-"', SYSCTL_MSG),
      invalid("spec.securityContext.sysctls[3].name", '"bar.."', SYSCTL_MSG),
      required("spec.securityContext.sysctls[4].name"),
      duplicate("spec.securityContext.sysctls[5].name", '"kernel.shmmax"')]),
    ("pod user and group IDs", "pods", pod(securityContext={
        "runAsUser": -1, "runAsGroup": 2147483648, "fsGroup": 0, "supplementalGroups": [1, -2]}), "Pod",
     [invalid("spec.securityContext.runAsUser", "-1", ID_RANGE),
      invalid("spec.securityContext.runAsGroup", "2147483648", ID_RANGE),
      invalid("spec.securityContext.supplementalGroups[1]", "-2", ID_RANGE)]),
    # (kube 1.28.7 answered these side by side; a set pointer prints as its address there, a placeholder here)
    ("container user and group IDs", "pods", pod(containers=[{"name": "app", "image": "nginx", "securityContext": {
        "runAsUser": -1, "runAsGroup": -2}}]), "Pod",
     [invalid("spec.containers[0].securityContext.runAsUser", "-1", ID_RANGE),
      invalid("spec.containers[0].securityContext.runAsGroup", "-2", ID_RANGE)]),
    ("privilege escalation off beside CAP_SYS_ADMIN", "pods", pod(containers=[{"name": "app", "image": "nginx",
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}}]), "Pod",
     [invalid("spec.containers[0].securityContext", "core.SecurityContext{Capabilities:(*core.Capabilities)"
              "(0xc000000000), Privileged:(*bool)(nil), SELinuxOptions:(*core.SELinuxOptions)(nil), WindowsOptions:"
              "(*core.WindowsSecurityContextOptions)(nil), RunAsUser:(*int64)(nil), RunAsGroup:(*int64)(nil), "
              "RunAsNonRoot:(*bool)(nil), ReadOnlyRootFilesystem:(*bool)(nil), AllowPrivilegeEscalation:(*bool)"
              "(0xc000000000), ProcMount:(*core.ProcMountType)(nil), SeccompProfile:(*core.SeccompProfile)(nil)}",
              "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN")]),
    # validateVolumeSource's checks of the common sources, as kube-apiserver 1.28.7 answered these beside it
    ("volume sources", "pods", pod(volumes=[
        {"name": "a", "configMap": {"name": "", "defaultMode": 1000, "items": [{"key": "", "path": "../x"}]}},
        {"name": "b", "secret": {"items": [{"key": "k", "path": "/abs", "mode": -1}]}},
        {"name": "c", "persistentVolumeClaim": {}},
        {"name": "d", "hostPath": {"path": "/a/../b", "type": "Foo"}},
        {"name": "e", "emptyDir": {"sizeLimit": "-1"}},
        {"name": "f", "projected": {"sources": [
            {"configMap": {"name": "x", "items": [{"key": "k", "path": "p"}]}},
            {"secret": {"name": "y", "items": [{"key": "k", "path": "p"}]}},
            {"serviceAccountToken": {"path": "t", "expirationSeconds": 10}}]}}]), "Pod",
     [required("spec.volumes[0].configMap.name"),
      invalid("spec.volumes[0].configMap.defaultMode", "1000",
              "must be a number between 0 and 0777 (octal), both inclusive"),
      required("spec.volumes[0].configMap.items[0].key"),
      invalid("spec.volumes[0].configMap.items[0].path", '"../x"', "must not contain '..'"),
      required("spec.volumes[1].secret.secretName"),
      invalid("spec.volumes[1].secret.items[0].path", '"/abs"', "must be a relative path"),
      invalid("spec.volumes[1].secret.items[0].mode", "-1",
              "must be a number between 0 and 0777 (octal), both inclusive"),
      required("spec.volumes[2].persistentVolumeClaim.claimName"),
      invalid("spec.volumes[3].hostPath.path", '"/a/../b"', "must not contain '..'"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "Foo": supported values: "", "BlockDevice", '
                 '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
                 "spec.volumes[3].hostPath.type"),
      kube.field_forbidden("spec.volumes[4].emptyDir.sizeLimit", "SizeLimit field must be a valid resource quantity"),
      invalid("spec.volumes[5].projected", '"y"', "conflicting duplicate paths"),
      invalid("spec.volumes[5].projected.sources[2].serviceAccountToken.expirationSeconds", "10",
              "may not specify a duration less than 10 minutes")]),
    # validateEnvVarValueFrom, as kube-apiserver 1.28.7 answered these beside it
    ("env value sources", "pods", pod(containers=[{"name": "app", "image": "i", "env": [
        {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
        {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name['x']"}}},
        {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
        {"name": "D", "valueFrom": {}},
        {"name": "E", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "F", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "a b"}, "secretKeyRef": {"key": "k"}}},
        {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.foo"}}}]}]), "Pod",
     [invalid("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", '"x"',
              "error converting fieldPath: field label not supported: x"),
      invalid("spec.containers[0].env[1].valueFrom.fieldRef.fieldPath", """\"metadata.name['x']\"""",
              "error converting fieldPath: field label does not support subscript: metadata.name['x']"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "status.phase": supported values: "metadata.name", '
                 '"metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", '
                 '"status.hostIPs", "status.podIP", "status.podIPs"',
                 "spec.containers[0].env[2].valueFrom.fieldRef.fieldPath"),
      invalid("spec.containers[0].env[3].valueFrom", '""',
              "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
      invalid("spec.containers[0].env[4].valueFrom", '""', "may not be specified when `value` is not empty"),
      invalid("spec.containers[0].env[5].valueFrom.configMapKeyRef.key", '"a b"', CONFIG_KEY_MSG),
      invalid("spec.containers[0].env[5].valueFrom.secretKeyRef.name", '""', kube.DNS1123_SUBDOMAIN),
      invalid("spec.containers[0].env[5].valueFrom", '""', "may not have more than one field specified at a time"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "limits.foo": supported values: "limits.cpu", '
                 '"limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", '
                 '"requests.memory"', "spec.containers[0].env[6].valueFrom.resourceFieldRef.resource")]),
    # checkHostPortConflicts, as kube-apiserver 1.28.7 answered beside it: across the regular containers, and each
    # init container alone (under kube's path, initContainers[0], whichever it is)
    ("host ports taken twice", "pods", pod(initContainers=[
        {"name": "i0", "image": "i", "ports": [{"containerPort": 1, "hostPort": 81}]},
        {"name": "i1", "image": "i", "ports": [{"containerPort": 1, "hostPort": 82}, {"containerPort": 2,
                                                                                     "hostPort": 82}]}],
        containers=[{"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]},
                    {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 80},
                                                          {"containerPort": 82, "hostPort": 80, "protocol": "UDP"}]}]),
     "Pod", [
         kube.cause("FieldValueDuplicate", 'Duplicate value: "TCP//80"', "spec.containers[1].ports[0].hostPort"),
         kube.cause("FieldValueDuplicate", 'Duplicate value: "TCP//82"', "spec.initContainers[0].ports[1].hostPort")]),
    ("host network with another host port", "pods", pod(hostNetwork=True, containers=[{
        "name": "app", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 81}]}]), "Pod",
     [invalid("spec.containers[0].ports[0].hostPort", "81", "must match `containerPort` when `hostNetwork` is true")]),
    ("tolerations", "pods", pod(tolerations=[
        {"key": "k", "operator": "Exists", "value": "v"},
        {"operator": "Equal", "value": "v"},
        {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"},
        {"key": "k", "operator": "In"},
        {"key": "a/b/c", "value": "-bad-"},
        {"key": "k", "effect": "Sometimes"}]), "Pod",
     [invalid("spec.tolerations[0].operator", 'core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", '
              "TolerationSeconds:(*int64)(nil)}", "value must be empty when `operator` is 'Exists'"),
      invalid("spec.tolerations[1].operator", '"Equal"',
              'operator must be Exists when `key` is empty, which means "match all values and all keys"'),
      invalid("spec.tolerations[2].effect", '"NoSchedule"',
              "effect must be 'NoExecute' when `tolerationSeconds` is set"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "In": supported values: "Equal", "Exists"',
                 "spec.tolerations[3].operator"),
      invalid("spec.tolerations[4].key", '"a/b/c"', is_qualified_name("a/b/c")[0]),
      invalid("spec.tolerations[4].operator", '"-bad-"', is_label_value("-bad-")[0]),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "Sometimes": supported values: "NoSchedule", '
                 '"PreferNoSchedule", "NoExecute"', "spec.tolerations[5].effect")]),
    ("node affinity", "pods", pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Gt", "values": ["1", "2"]},
                                 {"key": "k", "operator": "Near"}],
            "matchFields": [{"key": "spec.x", "operator": "Exists"},
                            {"key": "metadata.name", "operator": "In", "values": ["Bad_N"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {
            "matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]}}]}}), "Pod",
     [required(f"{NODE_TERM}.matchExpressions[0].values", "must be specified when `operator` is 'In' or 'NotIn'"),
      required(f"{NODE_TERM}.matchExpressions[1].values",
               "must be specified single value when `operator` is 'Lt' or 'Gt'"),
      invalid(f"{NODE_TERM}.matchExpressions[2].operator", '"Near"', "not a valid selector operator"),
      invalid(f"{NODE_TERM}.matchFields[0].operator", '"Exists"', "not a valid selector operator"),
      invalid(f"{NODE_TERM}.matchFields[0].key", '"spec.x"', "not a valid field selector key"),
      invalid(f"{NODE_TERM}.matchFields[1].values[0]", '"Bad_N"', validation_names.is_dns1123_subdomain("Bad_N")[0]),
      invalid(f"{PREFERRED}.weight", "0", "must be in the range 1-100"),
      kube.field_forbidden(f"{PREFERRED}.preference.matchExpressions[0].values",
                           "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]),
    ("pod affinity", "pods", pod(affinity={
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {
            "topologyKey": "k", "namespaces": ["Bad_NS"], "labelSelector": {"matchLabels": {"a": "-x-"}}}}]}}),
     "Pod",
     [required("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
               "can not be empty"),
      invalid("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", '""',
              "name part must be non-empty"),
      invalid("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", '""',
              is_qualified_name("")[-1]),
      invalid(f"{ANTI}.weight", "101", "must be in the range 1-100"),
      invalid(f"{ANTI}.podAffinityTerm.labelSelector.matchLabels", '"-x-"', is_label_value("-x-")[0]),
      invalid(f"{ANTI}.podAffinityTerm.namespace", '"Bad_NS"', validation_names.is_dns1123_label("Bad_NS")[0])]),
    ("topology spread", "pods", pod(topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Maybe"},
        {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 0,
         "nodeAffinityPolicy": "Maybe"},
        {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}]), "Pod",
     [invalid("spec.topologySpreadConstraints[0].maxSkew", "0", "must be greater than zero"),
      required("spec.topologySpreadConstraints[0].topologyKey", "can not be empty"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "Maybe": supported values: "DoNotSchedule", '
                 '"ScheduleAnyway"', "spec.topologySpreadConstraints[0].whenUnsatisfiable"),
      duplicate("spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}", '"{z, ScheduleAnyway}"'),
      invalid("spec.topologySpreadConstraints[1].minDomains", "0", "must be greater than zero"),
      invalid("spec.topologySpreadConstraints[1].minDomains", "0",
              "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
      kube.cause("FieldValueNotSupported", 'Unsupported value: "Maybe": supported values: "Honor", "Ignore"',
                 "spec.topologySpreadConstraints[1].nodeAffinityPolicy")]),
    ("dns policy None without a config", "pods", pod(dnsPolicy="None"), "Pod",
     [required("spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None")]),
    ("dns config", "pods", pod(dnsConfig={"nameservers": ["bad", "1.1.1.1", "2.2.2.2", "010.0.0.1"],
                                          "searches": ["Bad_Search.", "ok.com."], "options": [{"value": "x"}]}), "Pod",
     [invalid("spec.dnsConfig.nameservers", '[]string{"bad", "1.1.1.1", "2.2.2.2", "010.0.0.1"}',
              "must not have more than 3 nameservers"),
      invalid("spec.dnsConfig.nameservers[0]", '"bad"', "must be valid IP address"),
      invalid("spec.dnsConfig.searches[0]", '"Bad_Search"', validation_names.is_dns1123_subdomain("Bad_Search")[0]),
      required("spec.dnsConfig.options[0]", "must not be empty")]),
    ("host aliases and gates", "pods", pod(hostAliases=[{"ip": "x", "hostnames": ["a", "B_"]}],
                                           readinessGates=[{"conditionType": "a/b/c"}],
                                           schedulingGates=[{"name": "g"}, {"name": "g"}]), "Pod",
     [invalid("spec.readinessGates[0].conditionType", '"a/b/c"', is_qualified_name("a/b/c")[0]),
      duplicate("spec.schedulingGates[1]", '"g"'),
      invalid("spec.hostAliases.ip", '"x"', "must be valid IP address"),
      invalid("spec.hostAliases.hostnames", '"B_"', validation_names.is_dns1123_subdomain("B_")[0])]),
    ("service session affinity timeout", "services", service(sessionAffinity="ClientIP", sessionAffinityConfig={
        "clientIP": {"timeoutSeconds": 0}}), "Service",
     [invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", "0",
              "must be greater than 0 and less than 86400")]),
    ("service external IPs", "services", service(externalIPs=["bad", "0.0.0.0", "127.0.0.1", "169.254.1.1",
                                                              "224.0.0.5", "1.2.3.4"]), "Service",
     [invalid("spec.externalIPs[0]", '"bad"', "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
      invalid("spec.externalIPs[1]", '"0.0.0.0"', "may not be unspecified (0.0.0.0)"),
      invalid("spec.externalIPs[2]", '"127.0.0.1"', "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
      invalid("spec.externalIPs[3]", '"169.254.1.1"', "may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
      invalid("spec.externalIPs[4]", '"224.0.0.5"',
              "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")]),
    ("service source ranges", "services", service(loadBalancerSourceRanges=["bad"]), "Service",
     [kube.field_forbidden("spec.LoadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'"),
      invalid("spec.LoadBalancerSourceRanges", '"[bad]"',
              "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 ")]),
    ("service app protocol and traffic policy", "services", service(ports=[{"port": 80, "appProtocol": "a/b/c"}],
                                                                    externalTrafficPolicy="Local"), "Service",
     [invalid("spec.ports[0].appProtocol", '"a/b/c"', is_qualified_name("a/b/c")[0]),
      invalid("spec.externalTrafficPolicy", '"Local"', "may only be set when `type` is 'NodePort' or 'LoadBalancer'")]),
    ("service unknown ip family", "services", service(ipFamilies=["IPv7"]), "Service",
     [kube.cause("FieldValueNotSupported", 'Unsupported value: "IPv7": supported values: "IPv4", "IPv6"',
                 "spec.ipFamilies[0]")]),
    ("service without ports", "services", service(ports=[]), "Service", [required("spec.ports")]),
    ("service port range and names", "services", service(ports=[{"port": 0}, {"port": 81}]), "Service",
     [required("spec.ports[0].name"), invalid("spec.ports[0].port", "0", PORT_RANGE),
      invalid("spec.ports[0].targetPort", "0", PORT_RANGE), required("spec.ports[1].name")]),
    ("service duplicate port", "services", service(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}]),
     "Service", [duplicate("spec.ports[1]", 'core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), '
                           'Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')]),
    # kube-apiserver 1.28.7's answer to the same body (kubectl create beside it): the node port, then the port
    ("service duplicate node port", "services", service(type="NodePort", ports=[
        {"port": 80, "nodePort": 30080}, {"name": "b", "port": 80, "nodePort": 30080}]), "Service",
     [required("spec.ports[0].name"), duplicate("spec.ports[1].nodePort", "30080"),
      duplicate("spec.ports[1]", 'core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), '
                'Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')]),
    ("service type", "services", service(type="Magic"), "Service",
     [kube.field_not_supported("spec.type", '"Magic"', ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"])]),
    ("service nodePort on ClusterIP", "services", service(ports=[{"port": 80, "nodePort": 30080}]), "Service",
     [kube.field_forbidden("spec.ports[0].nodePort", "may not be used when `type` is 'ClusterIP'")]),
    ("rc selector mismatch", "replicationcontrollers", {"metadata": {"name": "r"}, "spec": {
        "selector": {"app": "other"}, "template": {"metadata": {"labels": {"app": "web"}},
                                                   "spec": {"containers": [{"name": "a", "image": "i"}]}}}},
     "ReplicationController", [invalid("spec.template.metadata.labels", 'map[string]string{"app":"web"}',
                                       "`selector` does not match template `labels`")]),
    ("pvc without storage", "persistentvolumeclaims", {"metadata": {"name": "c"}, "spec": {}},
     "PersistentVolumeClaim", [required("spec.accessModes", "at least 1 access mode is required"),
                               required("spec.resources[storage]")]),
    ("pv without source", "persistentvolumes", {"metadata": {"name": "p"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}, "PersistentVolume",
     [required("spec", "must specify a volume type")]),
    # the rows below as kube-apiserver 1.28.7 answered them, side by side
    ("pv negative capacity and two sources", "persistentvolumes", {"metadata": {"name": "p"}, "spec": {
        "capacity": {"storage": "-1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"},
        "nfs": {"server": "a", "path": "/b"}}}, "PersistentVolume",
     [invalid("spec.capacity[storage]", "-1073741824", "must be a valid resource quantity"),
      invalid("spec.capacity[storage]", '"-1Gi"', "must be greater than zero"),
      kube.field_forbidden("spec.nfs", "may not specify more than 1 volume type")]),
    ("pvc ReadWriteOncePod with another mode", "persistentvolumeclaims", {"metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
     "PersistentVolumeClaim",
     [kube.field_forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes")]),
    ("pvc of no storage", "persistentvolumeclaims", {"metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}}}, "PersistentVolumeClaim",
     [invalid("spec.resources[storage]", '"0"', "must be greater than zero")]),
    ("pv without capacity", "persistentvolumes", {"metadata": {"name": "p"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}, "PersistentVolume",
     [required("spec.capacity"), kube.cause(
         "FieldValueNotSupported", 'Unsupported value: core.ResourceList(nil): supported values: "storage"',
         "spec.capacity")]),
    ("pv capacity beside storage", "persistentvolumes", {"metadata": {"name": "p"}, "spec": {
        "capacity": {"storage": "1Gi", "cpu": "1"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}},
     "PersistentVolume", [kube.cause("FieldValueNotSupported", (
         'Unsupported value: core.ResourceList{"cpu":resource.Quantity{i:resource.int64Amount{value:1, scale:0}, '
         'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1", Format:"DecimalSI"}, '
         '"storage":resource.Quantity{i:resource.int64Amount{value:1073741824, scale:0}, '
         'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1Gi", Format:"BinarySI"}}: supported values: "storage"'),
         "spec.capacity")]),
    ("node taints, at kube's metadata.taints path", "nodes", {"metadata": {"name": "n"}, "spec": {"taints": [
        {"key": "a", "effect": "Bogus"}, {"key": "b", "effect": "NoSchedule"}, {"key": "b", "value": "x",
                                                                                "effect": "NoSchedule"}]}}, "Node",
     [kube.cause("FieldValueNotSupported",
                 'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
                 "metadata.taints[0].effect"),
      kube.cause("FieldValueDuplicate", 'Duplicate value: core.Taint{Key:"b", Value:"x", Effect:"NoSchedule", '
                 "TimeAdded:<nil>}: taints must be unique by key and effect pair", "metadata.taints[2]")]),
    ("node podCIDR no CIDR", "nodes", {"metadata": {"name": "n"}, "spec": {"podCIDR": "x"}}, "Node",
     [invalid("spec.podCIDRs[0]", '[]string{"x"}', "must be valid CIDR")]),
    ("node podCIDRs of one family, repeated", "nodes", {"metadata": {"name": "n"}, "spec": {
        "podCIDRs": ["10.0.0.0/24", "10.0.0.0/24"]}}, "Node",
     [invalid("spec.podCIDRs", '[]string{"10.0.0.0/24", "10.0.0.0/24"}',
              "may specify no more than one CIDR for each IP family"),
      kube.cause("FieldValueDuplicate", 'Duplicate value: "10.0.0.0/24"', "spec.podCIDRs[1]")]),
    ("endpoint address no IP, told twice", "endpoints", {"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "x"}]}]}, "Endpoints",
     [invalid("subsets[0].addresses[0].ip", '"x"', "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
      invalid("subsets[0].addresses[0].ip", '"x"', "must be a valid IP address")]),
    ("endpoint address loopback", "endpoints", {"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}]}]}, "Endpoints",
     [invalid("subsets[0].addresses[0].ip", '"127.0.0.1"', "may not be in the loopback range (127.0.0.0/8, ::1/128)")]),
    ("limit range type neither standard nor qualified", "limitranges", {"metadata": {"name": "l"}, "spec": {
        "limits": [{"type": "Foo"}, {"type": "Pod"}, {"type": "Pod"}]}}, "LimitRange",
     [invalid("spec.limits[0].type", '"Foo"', "must be a standard limit type or fully qualified"),
      kube.cause("FieldValueDuplicate", 'Duplicate value: "Pod"', "spec.limits[2].type")]),
    # ObjectMeta as apimachinery's ValidateObjectMetaAccessor and core's ValidateObjectMeta check it (kube 1.28.7
    # answered these side by side)
    ("negative generation", "configmaps", {"metadata": {"name": "c", "generation": -1}}, "ConfigMap",
     [invalid("metadata.generation", "-1", "must be greater than or equal to 0")]),
    ("finalizer not a qualified name", "configmaps", {"metadata": {"name": "c", "finalizers": ["a/b/c"]}},
     "ConfigMap", [invalid("metadata.finalizers", '"a/b/c"', is_qualified_name("a/b/c")[0])]),
    ("finalizer neither standard nor qualified", "configmaps", {"metadata": {"name": "c", "finalizers": [
        "kubernetes", "x"]}}, "ConfigMap",
     [invalid("metadata.finalizers[1]", '"x"', "name is neither a standard finalizer name nor is it fully qualified")]),
    ("orphan and foreground finalizers", "configmaps", {"metadata": {"name": "c", "finalizers": [
        "orphan", "foregroundDeletion"]}}, "ConfigMap",
     [invalid("metadata.finalizers", '[]string{"orphan", "foregroundDeletion"}',
              "finalizer orphan and foregroundDeletion cannot be both set")]),
    ("owner reference missing its parts", "configmaps", {"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "apps/", "kind": "", "name": "", "uid": ""}]}}, "ConfigMap",
     [invalid("metadata.ownerReferences.apiVersion", '"apps/"', "version must not be empty"),
      invalid("metadata.ownerReferences.kind", '""', "kind must not be empty"),
      invalid("metadata.ownerReferences.name", '""', "name must not be empty"),
      invalid("metadata.ownerReferences.uid", '""', "uid must not be empty")]),
    ("an Event as owner", "configmaps", {"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]}}, "ConfigMap",
     [invalid("metadata.ownerReferences", 'v1.OwnerReference{APIVersion:"v1", Kind:"Event", Name:"e", UID:"u", '
              "Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}",
              "/v1, Kind=Event is disallowed from being an owner")]),
    # (a set pointer prints as its address, which kube's is; Capstan prints a placeholder)
    ("two controllers", "configmaps", {"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2", "controller": True}]}}, "ConfigMap",
     [invalid("metadata.ownerReferences", "[]v1.OwnerReference{" + ", ".join(
         f'v1.OwnerReference{{APIVersion:"v1", Kind:"Pod", Name:"{n}", UID:"{u}", Controller:(*bool)(0xc000000000), '
         "BlockOwnerDeletion:(*bool)(nil)}" for n, u in (("a", "1"), ("b", "2"))) + "}",
              'Only one reference can have Controller set to true. Found "true" in references for Pod/a and Pod/b')]),
    ("config key '.'", "configmaps", {"metadata": {"name": "c"}, "data": {".": "v"}}, "ConfigMap",
     [invalid("data[.]", '"."', "must not be '.'")]),
    ("config key '..'", "configmaps", {"metadata": {"name": "c"}, "data": {"..": "v"}}, "ConfigMap",
     [invalid("data[..]", '".."', "must not be '..'")]),
    ("config key starting with '..'", "configmaps", {"metadata": {"name": "c"}, "binaryData": {"..a": "dg=="}},
     "ConfigMap", [invalid("binaryData[..a]", '"..a"', "must not start with '..'")]),
    ("config key ending in a newline", "configmaps", {"metadata": {"name": "c"}, "data": {"ok": "v", "a\n": "v"}},
     "ConfigMap", [invalid("data[a\n]", '"a\\n"', CONFIG_KEY_MSG)]),
    ("config key of 254 characters", "configmaps", {"metadata": {"name": "c"}, "data": {"k" * 254: "v"}},
     "ConfigMap", [invalid(f"data[{'k' * 254}]", f'"{"k" * 254}"', "must be no more than 253 characters")]),
    ("config key in data and binaryData", "configmaps", {"metadata": {"name": "c"}, "data": {"a": "v"},
     "binaryData": {"a": "dg=="}}, "ConfigMap", [invalid("data[a]", '"a"', "duplicate of key present in binaryData")]),
    ("config map over 1 MiB in UTF-8", "configmaps", {"metadata": {"name": "c"}, "data": {"a": "\u00e9" * 600_000}},
     "ConfigMap", [kube.cause("FieldValueTooLong", "Too long: must have at most 1048576 bytes", "[]")]),
    ("config map binaryData over 1 MiB decoded", "configmaps", {"metadata": {"name": "c"}, "binaryData": {
        "a": base64.b64encode(b"x" * (1 << 20)).decode(), "b": "eA=="}}, "ConfigMap",
     [kube.cause("FieldValueTooLong", "Too long: must have at most 1048576 bytes", "[]")]),
    ("secret over 1 MiB decoded", "secrets", {"metadata": {"name": "s"}, "data": {
        "a": base64.b64encode(b"x" * (1 << 20)).decode()}}, "Secret",
     [kube.cause("FieldValueTooLong", "Too long: must have at most 1048576 bytes", "data")]),
    ("tls secret without its keys", "secrets", {"metadata": {"name": "s"}, "type": "kubernetes.io/tls"}, "Secret",
     [required("data[tls.crt]"), required("data[tls.key]")]),
    ("basic-auth secret without either key", "secrets", {"metadata": {"name": "s"}, "type": "kubernetes.io/basic-auth"},
     "Secret", [required("data[username]"), required("data[password]")]),
    # (encoding/json's scanner as Go 1.21 has it, which kube 1.28 is built with: a newer Go's json v2 says
    # "invalid character 'n' looking for beginning of value" here)
    ("dockerconfigjson secret that is not JSON", "secrets", {"metadata": {"name": "s"},
     "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "bm9wZQ=="}}, "Secret",
     [invalid("data[.dockerconfigjson]", '"<secret contents redacted>"',
              "invalid character 'o' in literal null (expecting 'u')")]),
    ("service-account-token secret without its account", "secrets", {
        "metadata": {"name": "s"}, "type": "kubernetes.io/service-account-token"}, "Secret",
     [required("metadata.annotations[kubernetes.io/service-account.name]")]),
    # (kube walks the names in Go's map order, which varies; the decoded map is sorted here)
    ("quota names and scopes", "resourcequotas", {"metadata": {"name": "q"}, "spec": {
        "hard": {"pods": "-1", "bad/resource name": "1", "widgets": "1", "storage": "1"}, "scopes": ["Nope"]}},
     "ResourceQuota",
     [invalid("spec.hard[bad/resource name]", '"bad/resource name"', is_qualified_name("bad/resource name")[0]),
      invalid("spec.hard[pods]", '"-1"', "must be greater than or equal to 0"),
      invalid("spec.hard[storage]", '"storage"', "must be a standard resource for quota"),
      invalid("spec.hard[widgets]", '"widgets"', "must be a standard resource type or fully qualified"),
      invalid("spec.hard[widgets]", '"widgets"', "must be a standard resource for quota"),
      invalid("spec.scopes", '[]core.ResourceQuotaScope{"Nope"}', "unsupported scope")]),
    ("limit range min above max", "limitranges", {"metadata": {"name": "l"}, "spec": {"limits": [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
        {"type": "Pod", "max": {"cpu": "2"}, "default": {"cpu": "1"}},
        {"type": "PersistentVolumeClaim", "default": {"storage": "1Gi"}}]}}, "LimitRange",
     [invalid("spec.limits[0].min[cpu]", QUANTITY_2, "min value 2 is greater than max value 1"),
      invalid("spec.limits[0].defaultRequest[cpu]", QUANTITY_1, "min value 2 is greater than default request value 1"),
      invalid("spec.limits[0].default[cpu]", QUANTITY_2, "min value 2 is greater than default value 1"),
      kube.field_forbidden("spec.limits[1].default", "may not be specified when `type` is 'Pod'"),
      required("spec.limits[2].limits",
               "either minimum or maximum storage value is required, but neither was provided")]),
    ("quota scope that does not apply", "resourcequotas", {"metadata": {"name": "q"}, "spec": {
        "hard": {"configmaps": "1", "pods": "1"}, "scopes": ["BestEffort"]}}, "ResourceQuota",
     [invalid("spec.scopes", '[]core.ResourceQuotaScope{"BestEffort"}', "unsupported scope applied to resource")]),
    ("quota scopes that conflict", "resourcequotas", {"metadata": {"name": "q"}, "spec": {
        "hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}}, "ResourceQuota",
     [invalid("spec.scopes", '[]core.ResourceQuotaScope{"Terminating", "NotTerminating"}', "conflicting scopes")]),
]  # fmt: skip


@pytest.mark.parametrize(("resource", "obj", "kind", "causes"), [v[1:] for v in VALIDATION],
                         ids=[v[0] for v in VALIDATION])
async def test_validation(client: Client, resource: str, obj: Obj, kind: str, causes: list[Obj]) -> None:
    namespaced = resource not in ("persistentvolumes", "nodes")
    before = client.revision()
    failed = await refused(client.create(_at(resource, namespaced), obj))
    assert failed.status == kube.invalid(kind, obj["metadata"]["name"], causes)
    assert client.revision() == before


@pytest.mark.parametrize(("resource", "obj"), [
    ("secrets", {"metadata": {"name": "s"}, "data": {"a": base64.b64encode(b"x" * 1_000_000).decode()}}),
    ("configmaps", {"metadata": {"name": "c"}, "binaryData": {"a": base64.b64encode(b"x" * 1_000_000).decode()}}),
    ("configmaps", {"metadata": {"name": "c"}, "data": {"a": "x" * 1_000_000}}),
], ids=["secret", "binaryData", "data"])
async def test_payload_size_counts_decoded_bytes(client: Client, resource: str, obj: Obj) -> None:
    """A payload's size is its bytes as kube holds them: base64 counts what it decodes to (1.33 MB of base64
    holds 1,000,000 bytes, under the 1 MiB bound)."""
    created = await client.create(path(resource, NS), obj)
    assert created["metadata"]["name"] == obj["metadata"]["name"]


async def test_service_names_are_dns1035_labels(client: Client) -> None:
    failed = await refused(client.create(path("services", NS), service("1web")))
    assert failed.status["details"]["causes"][0]["message"].startswith(
        'Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters')


async def test_pod_spec_is_mostly_immutable(client: Client) -> None:
    created = await client.create(path("pods", NS), pod())
    image = copy.deepcopy(created)
    image["spec"]["containers"][0]["image"] = "nginx:1.28"
    updated, _ = await client.update(path("pods", NS, "web"), image)
    assert updated["spec"]["containers"][0]["image"] == "nginx:1.28"
    policy = copy.deepcopy(updated)
    policy["spec"]["restartPolicy"] = "Never"
    failed = await refused(client.update(path("pods", NS, "web"), policy))
    (cause,) = failed.status["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec", "FieldValueForbidden")
    assert cause["message"].startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")


def _both_moved(spec: Obj, other: str) -> None:
    spec["clusterIP"], spec["clusterIPs"] = other, [other]


def _singular_moved(spec: Obj, other: str) -> None:
    spec["clusterIP"] = other  # clusterIPs as stored: normalizeClusterIPs makes them [clusterIP]


# (what the Service is created with, how the update moves its cluster IP): each is kube's `may not change once set`
CLUSTER_IP_MOVES: list[tuple[str, dict[str, Any], Callable[[Obj, str], None]]] = [
    ("both fields", {}, _both_moved),
    ("clusterIP alone", {}, _singular_moved),
    # kube's test-cmd: a headless Service applied again with a clusterIP (apply keeps the stored clusterIPs)
    ("headless, clusterIP alone", {"clusterIP": "None"}, _singular_moved),
]


@pytest.mark.parametrize(("created_with", "move"), [(c[1], c[2]) for c in CLUSTER_IP_MOVES],
                         ids=[c[0] for c in CLUSTER_IP_MOVES])
async def test_service_cluster_ip_is_immutable(client: Client, created_with: dict[str, Any],
                                               move: Callable[[Obj, str], None]) -> None:
    created = await client.create(path("services", NS), service(**created_with))
    moved = copy.deepcopy(created)
    ip = created["spec"]["clusterIP"]
    other = "10.0.0.12" if ip == "None" else str(ipaddress.ip_address(ip) + 1)
    move(moved["spec"], other)
    failed = await refused(client.update(path("services", NS, "web"), moved))
    assert failed.status == kube.invalid("Service", "web", [
        invalid("spec.clusterIPs[0]", f'[]string{{"{other}"}}', "may not change once set")])
    # A PUT without the allocated values keeps them (patchAllocatedValues).
    bare = copy.deepcopy(created)
    del bare["spec"]["clusterIP"], bare["spec"]["clusterIPs"]
    bare["metadata"]["labels"] = {"x": "y"}
    kept, _ = await client.update(path("services", NS, "web"), bare)
    assert (kept["spec"]["clusterIP"], kept["spec"]["clusterIPs"], kept["metadata"]["labels"]) == (ip, [ip], {"x": "y"})


# ---------------------------------------------------------------- field selectors

async def test_pod_field_selectors(client: Client) -> None:
    await client.create(path("pods", NS), pod("a", nodeName="node-1"))
    await client.create(path("pods", NS), pod("b", restartPolicy="Never", hostNetwork=True))
    await client.create(path("pods", NS), pod("c", serviceAccountName="robot"))
    cases = {
        "spec.nodeName=node-1": ["a"], "spec.nodeName=": ["b", "c"], "spec.restartPolicy=Never": ["b"],
        "spec.hostNetwork=true": ["b"], "spec.serviceAccountName=robot": ["c"], "status.phase=Pending": ["a", "b", "c"],
        "spec.schedulerName=default-scheduler,metadata.name!=a": ["b", "c"], "status.podIP=": ["a", "b", "c"],
        "status.nominatedNodeName=": ["a", "b", "c"],
    }
    for selector, names in cases.items():
        assert await client.names(path("pods", NS), fieldSelector=selector) == names, selector
    failed = await refused(client.list(path("pods", NS), fieldSelector="spec.image=x"))
    assert failed.status["code"] == 400


async def test_event_node_and_rc_field_selectors(client: Client) -> None:
    await client.create(path("events", NS), copy.deepcopy(KINDS[5][2]))
    other = copy.deepcopy(KINDS[5][2]) | {"reason": "Killing", "type": "Warning"}
    other["metadata"] = {"name": "web.2"}
    other["source"] = {"component": "kubelet"}
    await client.create(path("events", NS), other)
    for selector, names in {"involvedObject.kind=Pod": ["web.1", "web.2"], "reason=Killing": ["web.2"],
                            "type=Normal": ["web.1"], "source=kubelet": ["web.2"],
                            "involvedObject.name=web,involvedObject.namespace=default": ["web.1", "web.2"]}.items():
        assert await client.names(path("events", NS), fieldSelector=selector) == names, selector
    await client.create(path("nodes"), {"metadata": {"name": "cordoned"}, "spec": {"unschedulable": True}})
    await client.create(path("nodes"), {"metadata": {"name": "open"}})
    assert await client.names(path("nodes"), fieldSelector="spec.unschedulable=true") == ["cordoned"]
    await client.create(path("replicationcontrollers", NS), copy.deepcopy(KINDS[10][2]))
    assert await client.names(path("replicationcontrollers", NS), fieldSelector="status.replicas=0") == ["web"]


# ---------------------------------------------------------------- subresources

async def test_replication_controller_scale(client: Client) -> None:
    """An RC's /scale reads its plain label-map selector as a query and writes spec.replicas."""
    rc = copy.deepcopy(KINDS[10][2])
    created = await client.create(path("replicationcontrollers", NS), rc)
    scale_path = path("replicationcontrollers", NS, created["metadata"]["name"], subresource="scale")
    scale = await client.get(scale_path)
    selector = ",".join(f"{k}={v}" for k, v in sorted(created["spec"]["selector"].items()))
    assert (scale["kind"], scale["apiVersion"], scale["spec"], scale["status"]) == (
        "Scale", "autoscaling/v1", {"replicas": created["spec"]["replicas"]}, {"replicas": 0, "selector": selector})
    scale["spec"]["replicas"] = 7
    updated, _ = await client.update(scale_path, scale)
    assert updated["spec"]["replicas"] == 7
    stored = await client.get(path("replicationcontrollers", NS, created["metadata"]["name"]))
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (7, 2)


async def test_pod_status_subresource_changes_only_status(client: Client) -> None:
    created = await client.create(path("pods", NS), pod())
    running = copy.deepcopy(created)
    running["status"] = {"phase": "Running", "podIP": "10.244.0.9", "podIPs": [{"ip": "10.244.0.9"}]}
    running["spec"]["containers"][0]["image"] = "changed"
    updated, _ = await client.update(path("pods", NS, "web", subresource="status"), running)
    assert updated["status"]["phase"] == "Running"
    assert updated["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert await client.names(path("pods", NS), fieldSelector="status.podIP=10.244.0.9") == ["web"]


async def test_binding_assigns_the_node_once(client: Client) -> None:
    await client.create(path("pods", NS), pod())
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web", "annotations": {"a": "b"}},
               "target": {"kind": "Node", "name": "node-1"}}
    resp = await client.create_response(path("pods", NS, "web", subresource="binding"), raw(binding))
    assert _json(resp.object.data) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                       "code": 201}
    bound = await client.get(path("pods", NS, "web"))
    assert (bound["spec"]["nodeName"], bound["metadata"]["annotations"]) == ("node-1", {"a": "b"})
    (scheduled,) = bound["status"]["conditions"]
    assert (scheduled["type"], scheduled["status"], scheduled["lastProbeTime"]) == ("PodScheduled", "True", None)
    again = await refused(client.create_response(path("pods", NS, "web", subresource="binding"), raw(binding)))
    assert again.status == kube.conflict("pods/binding", "web", 'pod web is already assigned to node "node-1"')
    wrong = await refused(client.create_response(path("pods", NS, "other", subresource="binding"), raw(binding)))
    assert wrong.status == kube.bad_request("name in URL does not match name in Binding object")
    missing = {**binding, "metadata": {"name": "nope"}}
    absent = await refused(client.create_response(path("pods", NS, "nope", subresource="binding"), raw(missing)))
    assert absent.status == kube.not_found("pods", "nope")


@pytest.mark.parametrize("binders", [2, 8])
async def test_concurrent_bindings_take_turns_and_one_wins(client: Client, binders: int) -> None:
    # BindingREST writes through the one guaranteed-update path: the binders of one Pod take turns, so exactly
    # one assigns it and every other one is refused as binding an assigned Pod.
    await client.create(path("pods", NS), pod())

    async def bind(node: str) -> Any:
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                   "target": {"kind": "Node", "name": node}}
        try:
            return await client.create_response(path("pods", NS, "web", subresource="binding"), raw(binding))
        except Failed as err:
            return err

    answers = await asyncio.gather(*(bind(f"node-{i}") for i in range(binders)))
    won = [i for i, answer in enumerate(answers) if not isinstance(answer, Failed)]
    assert len(won) == 1
    bound = await client.get(path("pods", NS, "web"))
    assert bound["spec"]["nodeName"] == f"node-{won[0]}"
    assert [answers[i].status for i in range(binders) if i not in won] == [kube.conflict(
        "pods/binding", "web", f'pod web is already assigned to node "node-{won[0]}"')] * (binders - 1)


def _json(data: bytes) -> Obj:
    out: Obj = orjson.loads(data)
    return out


# ---------------------------------------------------------------- allocation


async def test_kubernetes_service_is_created_at_bootstrap(client: Client) -> None:
    svc = await client.get(path("services", NS, "kubernetes"))
    assert (svc["spec"]["clusterIP"], svc["spec"]["ports"]) == (
        "10.96.0.1", [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}])
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    # A deleted Service's address is free again. (Not the bootstrap's own here: the core that wrote it, the
    # bootstrapped template's, holds its reservation for up to a minute, as another server's in-flight create.)
    made = await client.create(path("services", NS), service("first", clusterIP="10.96.0.7"))
    await client.delete(path("services", NS, "first"))
    again = await client.create(path("services", NS), service("mine", clusterIP=made["spec"]["clusterIP"]))
    assert again["spec"]["clusterIP"] == "10.96.0.7"


async def test_cluster_ip_allocation(client: Client) -> None:
    network = ipaddress.ip_network("10.96.0.0/12")
    created = await client.create(path("services", NS), service("a"))
    ip = created["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in network and created["spec"]["clusterIPs"] == [ip]
    chosen = await client.create(path("services", NS), service("b", clusterIP="10.96.0.10"))
    assert chosen["spec"]["clusterIPs"] == ["10.96.0.10"]
    taken = await refused(client.create(path("services", NS), service("c", clusterIP="10.96.0.10")))
    assert taken.status == kube.invalid("Service", "c", [invalid(
        "spec.clusterIPs", '[]string{"10.96.0.10"}',
        "failed to allocate IP 10.96.0.10: provided IP is already allocated")])
    outside = await refused(client.create(path("services", NS), service("d", clusterIP="10.0.0.5")))
    assert outside.status == kube.invalid("Service", "d", [invalid(
        "spec.clusterIPs", '[]string{"10.0.0.5"}', "failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not "
        "in the valid range. The range of valid IPs is 10.96.0.0/12")])
    headless = await client.create(path("services", NS), service("e", clusterIP="None"))
    assert (headless["spec"]["clusterIPs"], headless["spec"]["ipFamilies"]) == (["None"], ["IPv4"])
    await client.delete(path("services", NS, "b"))
    again = await client.create(path("services", NS), service("f", clusterIP="10.96.0.10"))
    assert again["spec"]["clusterIP"] == "10.96.0.10"  # freed by the delete


async def test_node_port_allocation(client: Client) -> None:
    created = await client.create(path("services", NS), service("a", type="NodePort", ports=[
        {"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30443}]))
    ports = [p["nodePort"] for p in created["spec"]["ports"]]
    assert ports[1] == 30443 and 30000 <= ports[0] <= 32767
    taken = await refused(client.create(path("services", NS), service("b", type="NodePort", ports=[
        {"port": 80, "nodePort": 30443}])))
    assert taken.status == kube.invalid("Service", "b", [invalid("spec.ports[0].nodePort", "30443",
                                                                 "provided port is already allocated")])
    outside = await refused(client.create(path("services", NS), service("c", type="NodePort", ports=[
        {"port": 80, "nodePort": 80}])))
    assert outside.status == kube.invalid("Service", "c", [invalid(
        "spec.ports[0].nodePort", "80", "provided port is not in the valid range. The range of valid ports is "
        "30000-32767")])
    # Back to ClusterIP: the node ports go with the type.
    back = copy.deepcopy(created)
    back["spec"]["type"] = "ClusterIP"
    updated, _ = await client.update(path("services", NS, "a"), back)
    assert [p.get("nodePort") for p in updated["spec"]["ports"]] == [None, None]


@pytest.fixture
async def small_range(tmp_path: Path) -> AsyncIterator[tuple[Client, Path]]:
    """A core whose service range has 6 usable addresses (the first is the `kubernetes` Service's)."""
    async with _core(tmp_path, "10.0.0.0/29") as client:
        yield client, tmp_path


class _core:
    """A core on tmp_path's store, for tests that restart it."""

    def __init__(self, directory: Path, cidr: str) -> None:
        self.directory, self.cidr = directory, cidr

    async def __aenter__(self) -> Client:
        self.store = await LmdbStore.open(self.directory / "lmdb", StoreOptions(sync=False, compact_interval=0,
                                                                               future_wait=0.5))
        self.running: RunningCore = await start_core(self.store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                                     service_cluster_ip_range=self.cidr)
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.running.grpc_port}")
        return Client(core_pb2_grpc.CoreServiceStub(self.channel), self.running)  # type: ignore[no-untyped-call]

    async def __aexit__(self, *_: object) -> None:
        await self.channel.close()
        await self.running.stop()
        await self.store.close()


async def test_concurrent_creates_never_share_an_address(small_range: tuple[Client, Path]) -> None:
    client, _ = small_range
    results = await asyncio.gather(*(client.create(path("services", NS), service(f"s{i}")) for i in range(5)),
                                   return_exceptions=True)
    ips = [r["spec"]["clusterIP"] for r in results if isinstance(r, dict)]
    assert len(ips) == 5 == len(set(ips)) and "10.0.0.1" not in ips
    full = await refused(client.create(path("services", NS), service("s5")))
    assert full.status["code"] == 500
    assert full.status["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"


async def test_allocations_survive_a_restart(tmp_path: Path) -> None:
    async with _core(tmp_path, "10.0.0.0/29") as client:
        first = await client.create(path("services", NS), service("a", type="NodePort"))
    async with _core(tmp_path, "10.0.0.0/29") as client:
        ip, port = first["spec"]["clusterIP"], first["spec"]["ports"][0]["nodePort"]
        taken = await refused(client.create(path("services", NS), service("b", clusterIP=ip)))
        assert taken.status["details"]["causes"][0]["message"].endswith("provided IP is already allocated")
        clash = await refused(client.create(path("services", NS), service("c", type="NodePort", ports=[
            {"port": 80, "nodePort": port}])))
        assert clash.status["details"]["causes"][0]["message"].endswith("provided port is already allocated")
        others = await asyncio.gather(*(client.create(path("services", NS), service(f"d{i}")) for i in range(4)))
        assert ip not in {o["spec"]["clusterIP"] for o in others}
        assert (await client.get(path("services", NS, "kubernetes")))["spec"]["clusterIP"] == "10.0.0.1"


async def test_a_restart_leaves_the_kubernetes_service_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                              ) -> None:
    async with _core(tmp_path, "10.0.0.0/29") as client:
        first = await client.get(path("services", NS, "kubernetes"))
    with caplog.at_level(logging.WARNING, logger="server.startup.bootstrap"):
        async with _core(tmp_path, "10.0.0.0/29") as client:
            again = await client.get(path("services", NS, "kubernetes"))
    assert again["metadata"] == first["metadata"]
    assert [r.getMessage() for r in caplog.records if r.name == "server.startup.bootstrap"] == []


# ---------------------------------------------------------------- graceful deletion


async def test_an_unbound_pod_is_deleted_at_once(client: Client) -> None:
    await client.create(path("pods", NS), pod())
    gone = await client.delete(path("pods", NS, "web"))
    assert (gone["kind"], gone["metadata"]["name"]) == ("Pod", "web")  # the pod store's ReturnDeletedObject
    await refused(client.get(path("pods", NS, "web")))


async def test_a_bound_pod_is_deleted_gracefully_then_for_good(client: Client) -> None:
    created = await client.create(path("pods", NS), pod(nodeName="node-1", terminationGracePeriodSeconds=1))
    rv = created["metadata"]["resourceVersion"]
    marked = await client.delete(path("pods", NS, "web"))
    m = marked["metadata"]
    assert (m["deletionGracePeriodSeconds"], "deletionTimestamp" in m) == (1, True)
    again = await client.delete(path("pods", NS, "web"))  # pending: the same object, no write
    assert again["metadata"]["resourceVersion"] == m["resourceVersion"]
    events = await client.events(path("pods", NS), lambda e: e[0] == "DELETED", resourceVersion=rv, timeout=5)
    assert [e[0] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0][1]["metadata"]["deletionGracePeriodSeconds"] == 1


async def test_grace_period_zero_deletes_a_bound_pod_at_once(client: Client) -> None:
    await client.create(path("pods", NS), pod(nodeName="node-1"))
    marked = await client.delete(path("pods", NS, "web"))
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    shorter = await client.delete(path("pods", NS, "web"), gracePeriodSeconds=10)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    gone = await client.delete(path("pods", NS, "web"), gracePeriodSeconds=0)
    assert (gone["kind"], gone["metadata"]["name"]) == ("Pod", "web")
    await refused(client.get(path("pods", NS, "web")))


async def test_a_marked_pod_goes_after_a_restart(tmp_path: Path) -> None:
    async with _core(tmp_path, "10.96.0.0/12") as client:
        await client.create(path("pods", NS), pod(nodeName="node-1", terminationGracePeriodSeconds=1))
        await client.delete(path("pods", NS, "web"))
    await asyncio.sleep(1.2)
    async with _core(tmp_path, "10.96.0.0/12") as client:
        for _ in range(50):
            if not await client.names(path("pods", NS)):
                break
            await asyncio.sleep(0.1)
        assert await client.names(path("pods", NS)) == []


async def test_a_patch_to_node_port_allocates_node_ports(client: Client) -> None:
    await client.create(path("services", NS), service())
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=path("services", NS, "web"), type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE,
        patch=orjson.dumps({"spec": {"type": "NodePort"}})))
    patched = _json(response.object.data)
    assert patched["spec"]["type"] == "NodePort"
    assert 30000 <= patched["spec"]["ports"][0]["nodePort"] <= 32767
    assert patched["spec"]["externalTrafficPolicy"] == "Cluster"


async def test_a_cluster_ip_service_with_external_ips_has_no_traffic_policy(client: Client) -> None:
    """SetDefaults_Service (1.28) gives externalTrafficPolicy to NodePort and LoadBalancer Services only."""
    created = await client.create(path("services", NS), service(externalIPs=["1.2.3.4"]))
    assert "externalTrafficPolicy" not in created["spec"]


@pytest.mark.parametrize(("spec", "cluster_ip", "node_ports", "health"), [
    # kube-apiserver 1.28.7's dry-run answers (kubectl create --dry-run=server beside it): its dry-run allocators
    # look for nothing: the range's own address, and a node port one above the highest the request has (32769 first)
    ({"ports": [{"port": 80}]}, "10.96.0.0", [], None),
    ({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443, "nodePort": 30443},
                                    {"name": "c", "port": 8080}, {"name": "d", "port": 80, "protocol": "UDP"}]},
     "10.96.0.0", [32769, 30443, 32770, 32769], None),
    # a requested address is checked against the range only: the kubernetes Service's is given again
    ({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
     "10.96.0.1", [32769], 32770),
])
async def test_a_dry_run_create_allocates_as_kubes_dry_run_allocators(
        client: Client, spec: Obj, cluster_ip: str, node_ports: list[int], health: int | None) -> None:
    before = client.revision()
    created = await client.create(path("services", NS), service("trial", **spec), dryRun=["All"])
    assert created["spec"]["clusterIP"] == cluster_ip and created["spec"]["clusterIPs"] == [cluster_ip]
    assert [p.get("nodePort") for p in created["spec"]["ports"] if p.get("nodePort")] == node_ports
    assert created["spec"].get("healthCheckNodePort") == health
    assert client.revision() == before  # nothing stored, nothing reserved


async def test_a_node_port_serves_one_port_over_two_protocols(client: Client) -> None:
    dns = await client.create(path("services", NS), service("dns", type="NodePort", ports=[
        {"name": "udp", "port": 53, "protocol": "UDP", "nodePort": 30053},
        {"name": "tcp", "port": 53, "protocol": "TCP", "nodePort": 30053}]))
    assert [p["nodePort"] for p in dns["spec"]["ports"]] == [30053, 30053]
    twice = await refused(client.create(path("services", NS), service("twice", type="NodePort", ports=[
        {"name": "a", "port": 80, "nodePort": 30080}, {"name": "b", "port": 81, "nodePort": 30080}])))
    assert twice.status == kube.invalid("Service", "twice", [
        invalid("spec.ports[1].nodePort", "30080", "provided port is already allocated")])


async def test_server_side_apply_matches_ports_without_a_protocol(client: Client) -> None:
    """structured-merge-diff defaults a list-map key it is missing: a port applied without a protocol is the
    TCP one already stored, not a second port."""
    manifest: Obj = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}}
    for selector in ("web", "web2"):
        manifest["spec"]["selector"] = {"app": selector}
        response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
            path=path("services", NS, "web"), type=core_pb2.PATCH_TYPE_APPLY, patch=orjson.dumps(manifest),
            options={"fieldManager": "tester"}))
        applied = _json(response.object.data)
    assert applied["spec"]["ports"] == [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}]
    assert applied["spec"]["selector"] == {"app": "web2"}
    owned = applied["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:ports"]
    assert 'k:{"port":80,"protocol":"TCP"}' in owned
