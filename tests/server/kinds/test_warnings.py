"""The warnings kube-apiserver 1.28's strategies send on creates and updates (WarningsOnCreate, WarningsOnUpdate)
of Pods and the pod-templated kinds, and of PersistentVolumes, their claims, Services, Nodes, StorageClasses,
CSIStorageCapacities and RuntimeClasses, through a real core over gRPC and one row over HTTP.

Expected texts are written from kube 1.28's pkg/api/pod/warnings.go, pkg/api/node/util.go,
pkg/api/persistentvolumeclaim/util.go, pkg/api/job/warnings.go and the strategies of pkg/registry/core/{pod,
podtemplate,replicationcontroller}, apps/{deployment,replicaset,statefulset,daemonset} and batch/{job,cronjob}.
On update kube 1.28 warns only when the spec changed (the generation rose; a DaemonSet's template generation)
and then of the whole template, as it is then; a Pod's update never warns; a ReplicationController's update
warns of its stored template; status updates never warn and /scale warns as the kind does.
"""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import orjson
import pytest

from capstan.cli.inprocess import InProcessClient
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.app import build_app, start_http
from server.startup.app import RunningCore
from tests.server.client import Client, Obj, path, raw

NS = "default"
CONTAINER: Obj = {"name": "c", "image": "nginx:1.27"}
LABELS = {"app": "web"}
NAMES = ("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS "
         "label is recommended: [must not contain dots]")
HOSTNAME = ("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS "
            "label is recommended: [must not contain dots]")
ARCH = 'deprecated since v1.14; use "kubernetes.io/arch" instead'
ZONE = 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead'
NULL = "a null labelSelector results in matching no pod"
MERGE = core_pb2.PATCH_TYPE_MERGE

# resource: (group, where its pod template's fields are reported)
KINDS: dict[str, tuple[str, str]] = {
    "pods": ("", ""),
    "podtemplates": ("", "template."),
    "replicationcontrollers": ("", "spec.template."),
    "deployments": ("apps", "spec.template."),
    "replicasets": ("apps", "spec.template."),
    "statefulsets": ("apps", "spec.template."),
    "daemonsets": ("apps", "spec.template."),
    "jobs": ("batch", "spec.template."),
    "cronjobs": ("batch", "spec.jobTemplate.spec.template."),
}
KIND_NAMES = {"pods": "Pod", "podtemplates": "PodTemplate", "replicationcontrollers": "ReplicationController",
              "deployments": "Deployment", "replicasets": "ReplicaSet", "statefulsets": "StatefulSet",
              "daemonsets": "DaemonSet", "jobs": "Job", "cronjobs": "CronJob"}


def at(resource: str, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return path(resource, NS, name, group=KINDS[resource][0], subresource=subresource)


def obj(resource: str, name: str = "web", spec: Obj | None = None, annotations: Obj | None = None,
        **top: Any) -> Obj:
    """A valid object of the kind whose pod spec has `spec` besides one container, and whose pod metadata has
    `annotations`; `top` is merged into the object's own spec."""
    group, _ = KINDS[resource]
    pod_spec: Obj = {"containers": [copy.deepcopy(CONTAINER)], **copy.deepcopy(spec or {})}
    pod_meta: Obj = {"labels": dict(LABELS)}
    if annotations:
        pod_meta["annotations"] = dict(annotations)
    if resource in ("jobs", "cronjobs"):
        pod_spec.setdefault("restartPolicy", "Never")
        pod_meta.pop("labels")
    template = {"metadata": pod_meta, "spec": pod_spec}
    out: Obj = {"apiVersion": f"{group}/v1" if group else "v1", "kind": KIND_NAMES[resource],
                "metadata": {"name": name}}
    if resource == "pods":
        out["metadata"].update(pod_meta)
        out["spec"] = pod_spec
    elif resource == "podtemplates":
        out["template"] = template
    elif resource == "jobs":
        out["spec"] = {"template": template, **top}
    elif resource == "cronjobs":
        out["spec"] = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template, **top}}}
    elif resource == "replicationcontrollers":
        out["spec"] = {"selector": dict(LABELS), "template": template, **top}
    else:
        out["spec"] = {"selector": {"matchLabels": dict(LABELS)}, "template": template, **top}
    return out


async def created_warnings(client: Client, resource: str, body: Obj, **options: Any) -> list[str]:
    response = await client.create_response(at(resource), raw(body), **options)
    return list(response.warnings)


# (id, resource, pod spec, pod annotations, name, expected warnings after the template's prefix; a leading "/"
# marks a text without the prefix, "@" where the prefix repeats)
CREATE_CASES: list[tuple[str, str, Obj, Obj, str, list[str]]] = [
    # Every kind: a clean template warns of nothing; a deprecated node label at the template's path.
    *[(f"{r} clean", r, {}, {}, "web", []) for r in KINDS],
    *[(f"{r} nodeSelector", r, {"nodeSelector": {"beta.kubernetes.io/arch": "amd64"}}, {}, "web",
       [f"spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"]) for r in KINDS],
    # Names that are subdomains but not DNS labels: the kinds naming pods after themselves warn.
    ("pod dotted name", "pods", {}, {}, "web.v1", ["/" + HOSTNAME]),
    *[(f"{r} dotted name", r, {}, {}, "web.v1", ["/" + NAMES])
      for r in ("replicationcontrollers", "deployments", "replicasets", "jobs", "cronjobs")],
    *[(f"{r} dotted name, no warning", r, {}, {}, "web.v1", []) for r in ("podtemplates", "daemonsets")],
    ("node affinity", "deployments", {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "Exists"}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/os", "operator": "Exists"},
            {"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}]}}}, {}, "web",
     ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
      f".matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is {ZONE}",
      "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
      f".matchExpressions[1].key: beta.kubernetes.io/arch is {ARCH}"]),
    ("topology spread", "pods", {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "failure-domain.beta.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": LABELS}}]}, {}, "web",
     [f"spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is {ZONE}",
      f"spec.topologySpreadConstraints[0].labelSelector: {NULL}"]),
    ("pod affinity null selectors", "deployments", {"affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname"},
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": LABELS}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}}, {}, "web",
     [f"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: {NULL}",
      "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
      f".labelSelector: {NULL}"]),
    ("deprecated annotations", "replicasets", {}, {
        "scheduler.alpha.kubernetes.io/critical-pod": "", "security.alpha.kubernetes.io/sysctls": "a=1"}, "web",
     ['metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the '
      '"priorityClassName" field instead',
      'metadata.annotations[security.alpha.kubernetes.io/sysctls]: non-functional in v1.11+; use the "sysctls" '
      'field instead']),
    ("seccomp annotations", "pods", {}, {
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
        "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}, "web",
     ['metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the '
      '"seccompProfile" field instead',
      'metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: non-functional in v1.27+; use the '
      '"seccompProfile" field instead']),
    ("seccomp annotations with the fields", "pods", {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{**CONTAINER, "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}, {
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
        "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}, "web", []),
    ("deprecated volumes", "daemonsets", {"volumes": [
        {"name": "a", "gitRepo": {"repository": "https://example.com/r.git"}},
        {"name": "b", "emptyDir": {}},
        {"name": "c", "cephfs": {"monitors": ["10.0.0.1:6789"]}}]}, {}, "web",
     ["spec.volumes[0].gitRepo: deprecated in v1.11",
      "spec.volumes[2].cephfs: deprecated in v1.28, non-functional in v1.31+"]),
    ("ephemeral claim template", "pods", {"volumes": [{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5"}}}}}}]}, {}, "web",
     ['spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value '
      '"1500m" is invalid, must be an integer']),
    ("duplicate host aliases", "pods", {"hostAliases": [
        {"ip": "10.0.0.1", "hostnames": ["a"]}, {"ip": "10.0.0.2", "hostnames": ["b"]},
        {"ip": "10.0.0.1", "hostnames": ["c"]}]}, {}, "web",
     ['spec.hostAliases[2].ip: duplicate ip "10.0.0.1"']),
    ("image pull secrets", "jobs", {"imagePullSecrets": [{"name": "a"}, {"name": "a"}, {}]}, {}, "web",
     ['spec.imagePullSecrets[1].name: duplicate name "a"', 'spec.imagePullSecrets[2].name: invalid empty name ""']),
    ("fractional memory", "pods", {"containers": [{**CONTAINER, "resources": {
        "requests": {"memory": "1.5", "cpu": "1.5", "ephemeral-storage": "100Mi"}}}]}, {}, "web",
     ['spec.containers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an '
      'integer']),
    ("fractional init container storage", "deployments", {"initContainers": [{**CONTAINER, "name": "i", "resources": {
        "limits": {"ephemeral-storage": "100u"}}}]}, {}, "web",
     ['spec.initContainers[0].resources.limits[ephemeral-storage]: fractional byte value "1m" is invalid, must be '
      'an integer']),  # a template's requests are not defaulted from its limits (a Pod's are)
    ("env hides earlier", "pods", {"containers": [{**CONTAINER, "env": [
        {"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"},
        {"name": "B", "value": "$(B)-more"}, {"name": "B", "value": "$(B)"}]}]}, {}, "web",
     ['spec.containers[0].env[2]: hides previous definition of "A"',
      'spec.containers[0].env[4]: hides previous definition of "B"']),
    ("host IP without host port", "pods", {"containers": [{**CONTAINER, "ports": [
        {"name": "http", "containerPort": 80, "hostIP": "10.0.0.1"}]}]}, {}, "web",
     ["spec.containers[0].ports[0]: hostIP set without hostPort: "
      "{Name:http HostPort:0 ContainerPort:80 Protocol:TCP HostIP:10.0.0.1}"]),
    ("duplicate and overlapping ports", "deployments", {"containers": [
        {**CONTAINER, "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}]},
        {**CONTAINER, "name": "d", "ports": [{"containerPort": 80}, {"containerPort": 81},
                                             {"containerPort": 80, "protocol": "UDP"}]}]}, {}, "web",
     ["spec.containers[1].ports[0]: duplicate port definition with @spec.containers[0].ports[0]",
      "spec.containers[1].ports[1]: overlapping port definition with @spec.containers[0].ports[1]"]),
    ("ambiguous ports", "pods", {"containers": [{**CONTAINER, "ports": [
        {"containerPort": 80, "hostPort": 8080}, {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}]}]},
     {}, "web",
     ["spec.containers[0].ports[1]: dangerously ambiguous port definition with @spec.containers[0].ports[0]"]),
    ("negative grace period", "pods", {"terminationGracePeriodSeconds": -1}, {}, "web",
     ["spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"]),
    ("negative grace period in a template", "deployments", {"terminationGracePeriodSeconds": -5}, {}, "web",
     ["spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"]),
    ("several families in kube's order", "cronjobs", {
        "nodeSelector": {"beta.kubernetes.io/os": "linux"}, "hostAliases": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}],
        "imagePullSecrets": [{}]}, {"scheduler.alpha.kubernetes.io/critical-pod": ""}, "web.v1",
     ["/" + NAMES, 'spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead',
      'metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the '
      '"priorityClassName" field instead',
      'spec.hostAliases[1].ip: duplicate ip "10.0.0.1"', 'spec.imagePullSecrets[0].name: invalid empty name ""']),
]


@pytest.mark.parametrize(("resource", "spec", "annotations", "name", "expected"), [c[1:] for c in CREATE_CASES],
                         ids=[c[0] for c in CREATE_CASES])
async def test_create_warnings(client: Client, resource: str, spec: Obj, annotations: Obj, name: str,
                               expected: list[str]) -> None:
    prefix = KINDS[resource][1]
    wanted = [w[1:] if w.startswith("/") else prefix + w.replace("@", prefix) for w in expected]
    assert await created_warnings(client, resource, obj(resource, name, spec, annotations)) == wanted


# (id, resource, the object's own spec fields, expected warnings): what only some kinds warn of.
KIND_CASES: list[tuple[str, str, Obj, list[str]]] = [
    ("indexed job too large", "jobs", {"completionMode": "Indexed", "completions": 100_001, "parallelism": 10_001},
     ["spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, "
      "Kubernetes might not be able to track completedIndexes when a big number of indexes fail"]),
    ("indexed job at the limits", "jobs", {"completionMode": "Indexed", "completions": 100_000,
                                           "parallelism": 10_001}, []),
    ("indexed cron job too large", "cronjobs", {"completionMode": "Indexed", "completions": 100_001,
                                                "parallelism": 10_001},
     ["spec.jobTemplate.spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism "
      "higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes "
      "fail"]),
    ("stateful set claim templates", "statefulsets", {"volumeClaimTemplates": [
        {"metadata": {"name": "a"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "1Gi"}}}},
        {"metadata": {"name": "b"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "0.5"},
                                                           "limits": {"storage": "1.5"}}}}]},
     ['spec.volumeClaimTemplates[1].resources.requests[storage]: fractional byte value "500m" is invalid, must be '
      'an integer',
      'spec.volumeClaimTemplates[1].resources.limits[storage]: fractional byte value "1500m" is invalid, must be '
      'an integer']),
]


@pytest.mark.parametrize(("resource", "top", "expected"), [c[1:] for c in KIND_CASES],
                         ids=[c[0] for c in KIND_CASES])
async def test_kind_warnings(client: Client, resource: str, top: Obj, expected: list[str]) -> None:
    # A dry run: the warnings are the same, and no controller starts ten thousand pods.
    assert await created_warnings(client, resource, obj(resource, **top), dryRun=["All"]) == expected


async def put(client: Client, resource: str, body: Obj, **options: Any) -> list[str]:
    response = await client.update_response(at(resource, body["metadata"]["name"]), raw(body), **options)
    return list(response.warnings)


async def patch(client: Client, resource: str, document: Obj, subresource: str = "", **options: Any) -> list[str]:
    response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=at(resource, "web", subresource), type=MERGE, patch=orjson.dumps(document),
        options=options))
    return list(response.warnings)


ARCH_SELECTOR = {"nodeSelector": {"beta.kubernetes.io/arch": "amd64"}}
ARCH_WARNING = f"spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"
RELABEL = {"metadata": {"labels": {"touched": "yes"}}}
SELECT_ARCH = {"spec": {"template": {"spec": ARCH_SELECTOR}}}

# (id, resource, stored pod spec, merge patch, subresource, expected warnings of the patch)
UPDATE_CASES: list[tuple[str, str, Obj, Obj, str, list[str]]] = [
    ("a new problem warns", "deployments", {}, SELECT_ARCH, "", [ARCH_WARNING]),
    ("metadata alone: no warning", "deployments", ARCH_SELECTOR, RELABEL, "", []),
    ("a spec change warns of the template as it is", "deployments", ARCH_SELECTOR,
     {"spec": {"replicas": 3}}, "", [ARCH_WARNING]),
    ("a template fixed: no warning", "deployments", ARCH_SELECTOR,
     {"spec": {"template": {"spec": {"nodeSelector": None}}}}, "", []),
    ("replica set", "replicasets", {}, SELECT_ARCH, "", [ARCH_WARNING]),
    ("stateful set", "statefulsets", {}, SELECT_ARCH, "", [ARCH_WARNING]),
    ("job: a spec change", "jobs", ARCH_SELECTOR, {"spec": {"parallelism": 2}}, "", [ARCH_WARNING]),
    ("job: metadata alone", "jobs", ARCH_SELECTOR, RELABEL, "", []),
    ("cron job", "cronjobs", {}, {"spec": {"jobTemplate": {"spec": {"template": {"spec": ARCH_SELECTOR}}}}}, "",
     [f"spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"]),
    ("pod template", "podtemplates", {}, {"template": {"spec": ARCH_SELECTOR}}, "",
     [f"template.spec.nodeSelector[beta.kubernetes.io/arch]: {ARCH}"]),
    ("daemon set: a template change", "daemonsets", {}, SELECT_ARCH, "", [ARCH_WARNING]),
    ("daemon set: no template change", "daemonsets", ARCH_SELECTOR, {"spec": {"minReadySeconds": 5}}, "", []),
    ("pod: never on update", "pods", {}, {"spec": {"activeDeadlineSeconds": 5}, **RELABEL}, "", []),
    # rcStrategy.WarningsOnUpdate checks the stored template: the problem an update adds warns on the next one.
    ("replication controller: the stored template", "replicationcontrollers", {}, SELECT_ARCH, "", []),
    ("replication controller: a stored problem", "replicationcontrollers", ARCH_SELECTOR,
     {"spec": {"replicas": 2}}, "", [ARCH_WARNING]),
    ("scale: as the kind", "deployments", ARCH_SELECTOR, {"spec": {"replicas": 4}}, "scale", [ARCH_WARNING]),
    ("status: never", "deployments", ARCH_SELECTOR, {"status": {"replicas": 1}}, "status", []),
]


@pytest.mark.parametrize(("resource", "stored", "document", "subresource", "expected"),
                         [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
async def test_update_warnings(client: Client, resource: str, stored: Obj, document: Obj, subresource: str,
                               expected: list[str]) -> None:
    await client.create(at(resource), obj(resource, spec=stored))
    assert await patch(client, resource, document, subresource) == expected


async def test_stateful_set_claim_templates_warn_on_every_update(client: Client) -> None:
    """The claim templates warn on every write, at a path kube words differently on update."""
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "0.5"}}}}
    fractional = 'resources.requests[storage]: fractional byte value "500m" is invalid, must be an integer'
    response = await client.create_response(at("statefulsets"), raw(obj("statefulsets",
                                                                        volumeClaimTemplates=[claim])))
    assert list(response.warnings) == [f"spec.volumeClaimTemplates[0].{fractional}"]
    assert await patch(client, "statefulsets", RELABEL) == [f"spec.volumeClaimTemplates[0].Spec.{fractional}"]


async def test_put_apply_and_dry_run_warn(client: Client) -> None:
    """PUT, server-side apply (creating and updating) and dry runs go through the same hooks."""
    assert await created_warnings(client, "deployments", obj("deployments", spec=ARCH_SELECTOR),
                                  dryRun=["All"]) == [ARCH_WARNING]
    stored = await client.create(at("deployments"), obj("deployments"))
    stored["spec"]["template"]["spec"].update(ARCH_SELECTOR)
    assert await put(client, "deployments", stored, dryRun=["All"]) == [ARCH_WARNING]
    assert await put(client, "deployments", stored) == [ARCH_WARNING]
    del stored["metadata"]["resourceVersion"]  # unconditional
    assert await put(client, "deployments", stored) == []  # unchanged: the generation stays
    config = obj("replicasets", spec=ARCH_SELECTOR)
    for attempt in range(2):  # created, then applied again unchanged
        response = await client.call(client.stub.Patch, core_pb2.PatchRequest(
            path=at("replicasets", "web"), type=core_pb2.PATCH_TYPE_APPLY, patch=orjson.dumps(config),
            options={"fieldManager": "test"}))
        assert list(response.warnings) == ([ARCH_WARNING] if attempt == 0 else [])


async def test_warning_header_over_http(running: RunningCore) -> None:
    """The gateway sends each warning as a `Warning: 299 - "<text>"` header, quotes escaped."""
    client = InProcessClient(running.guard)
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session, session.post(
                f"http://127.0.0.1:{port}/apis/apps/v1/namespaces/{NS}/deployments",
                json=obj("deployments", "web.v1", ARCH_SELECTOR)) as response:
            assert response.status == 201, await response.text()
            assert response.headers.getall("Warning", []) == [
                f'299 - "{NAMES}"',
                '299 - "spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use '
                '\\"kubernetes.io/arch\\" instead"']
    finally:
        await runner.cleanup()
        await client.close()


REGION = 'deprecated since v1.17; use "topology.kubernetes.io/region" instead'
BETA_CLASS = ('metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use '
              '"storageClassName" attribute instead')
HINTS = "service.kubernetes.io/topology-aware-hints"
CLAIM_SPEC: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}

# (id, resource path, body, expected warnings): kinds whose strategies warn on every write, created and then
# relabelled (an update changing nothing the warnings look at).
OTHER_CASES: list[tuple[str, core_pb2.ResourcePath, Obj, list[str]]] = [
    ("claim", path("persistentvolumeclaims", NS), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "x", "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
        "spec": {**CLAIM_SPEC, "resources": {"requests": {"storage": "1.5"}}}},
     [BETA_CLASS, 'spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer']),
    ("claim, clean", path("persistentvolumeclaims", NS), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "x"}, "spec": CLAIM_SPEC}, []),
    ("volume", path("persistentvolumes"), {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "x", "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "cephfs": {"monitors": ["10.0.0.1:6789"]},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "beta.kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}},
     [BETA_CLASS, "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/os "
      'is deprecated since v1.14; use "kubernetes.io/os" instead',
      "spec.cephfs: deprecated in v1.28, non-functional in v1.31+"]),
    ("service", path("services", NS), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "annotations": {HINTS: "auto"}},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "externalIPs": ["10.1.1.1", "2001:DB8:0:0::1"],
                 "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8:0::/64"]}},
     [f"annotation {HINTS} is deprecated, please use service.kubernetes.io/topology-mode instead",
      'spec.externalIPs[1]: IPv6 address "2001:DB8:0:0::1" is not in RFC 5952 canonical format ("2001:db8::1"), '
      "which may cause controller apply-loops",
      'spec.loadBalancerSourceRanges[1]: IPv6 prefix "2001:db8:0::/64" is not in RFC 5952 canonical format '
      '("2001:db8::/64"), which may cause controller apply-loops']),
    ("external name service", path("services", NS), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
        "spec": {"type": "ExternalName", "externalName": "db.example.com", "externalIPs": ["10.1.1.1"]}},
     ['spec.externalIPs is ignored when spec.type is "ExternalName"']),
    ("service, clean", path("services", NS), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
        "spec": {"ports": [{"port": 80}], "externalIPs": ["2001:db8::1"]}}, []),
    ("node", path("nodes"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"},
                             "spec": {"externalID": "i-123"}},
     ["spec.externalID: this field is deprecated, and is unused by Kubernetes"]),
    ("storage class", path("storageclasses", group="storage.k8s.io"), {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"},
        "provisioner": "example.com/p", "allowedTopologies": [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": ["a"]},
            {"key": "failure-domain.beta.kubernetes.io/zone", "values": ["a"]}]}]},
     [f"allowedTopologies[0].matchLabelExpressions[1].key: {ZONE}"]),
    ("storage capacity", path("csistoragecapacities", NS, group="storage.k8s.io"), {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "x"},
        "storageClassName": "sc", "nodeTopology": {
            "matchLabels": {"beta.kubernetes.io/arch": "amd64"},
            "matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/region", "operator": "Exists"}]}},
     [f"nodeTopology.matchExpressions[0].key: failure-domain.beta.kubernetes.io/region is {REGION}",
      f"nodeTopology.matchLabels.beta.kubernetes.io/arch: {ARCH}"]),
    ("runtime class", path("runtimeclasses", group="node.k8s.io"), {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "x"}, "handler": "runc",
        "scheduling": {"nodeSelector": {"kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}}},
     [f"scheduling.nodeSelector: {ARCH}"]),
]


@pytest.mark.parametrize(("at_path", "body", "expected"), [c[1:] for c in OTHER_CASES],
                         ids=[c[0] for c in OTHER_CASES])
async def test_other_kinds_warn_on_every_write(client: Client, at_path: core_pb2.ResourcePath, body: Obj,
                                               expected: list[str]) -> None:
    response = await client.create_response(at_path, raw(body))
    assert list(response.warnings) == expected
    named = core_pb2.ResourcePath()
    named.CopyFrom(at_path)
    named.name = "x"
    relabelled = await client.call(client.stub.Patch, core_pb2.PatchRequest(
        path=named, type=MERGE, patch=orjson.dumps(RELABEL)))
    assert list(relabelled.warnings) == expected
