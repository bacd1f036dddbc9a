"""PodSecurity admission: the Pod Security Standards a namespace's pod-security.kubernetes.io labels choose,
enforced on Pods with kube's 403, warned about on Pods and pod-templated workloads, and recorded as kube's audit
annotations, each check worded as kube words it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from capstan.core.v1 import core_service_pb2_grpc
from server.admission import podsecurity
from server.admission.podsecurity import checks
from server.admission.podsecurity.levels import DEFAULT_POLICY, LevelVersion, Policy, policy_to_evaluate
from server.auth.config import INSECURE
from server.machinery import apimetrics
from server.machinery.errors import ApiError
from server.objects.admitting import Attributes
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client, Obj, path, raw, refused

NS = "psa"
PODS = path("pods", NS)
LEVEL = "pod-security.kubernetes.io/"
# What a restricted Pod must say, at the pod and container level.
SAFE_POD: Obj = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
SAFE_CONTAINER: Obj = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RESTRICTED_PLAIN = ('allowPrivilegeEscalation != false (container "c" must set '
                    'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must '
                    'set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must '
                    'set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
                    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def container(name: str = "c", image: str = "nginx", **context: Any) -> Obj:
    out: Obj = {"name": name, "image": image}
    if context:
        out["securityContext"] = context
    return out


def pod(name: str = "p", *, containers: list[Obj] | None = None, annotations: Obj | None = None,
        **spec: Any) -> Obj:
    metadata: Obj = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": containers or [container()], **spec}}


def restricted_pod(name: str = "p", **context: Any) -> Obj:
    return pod(name, containers=[container(**{**SAFE_CONTAINER, **context})], securityContext=SAFE_POD)


async def namespace(client: Client, labels: dict[str, str], name: str = NS) -> Obj:
    return await client.create(path("namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name, "labels": labels}})


async def relabel(client: Client, labels: dict[str, str], name: str = NS) -> list[str]:
    """Set a namespace's labels; the warnings of the update."""
    current = await client.get(path("namespaces", name=name))
    current["metadata"]["labels"] = labels
    response = await client.update_response(path("namespaces", name=name), raw(current))
    return list(response.warnings)


def enforce(level: str, version: str = "latest") -> dict[str, str]:
    return {LEVEL + "enforce": level, LEVEL + "enforce-version": version}


ENFORCED = [
    ("restricted, nothing set", enforce("restricted"), pod(), f'violates PodSecurity "restricted:latest": '
                                                               f"{RESTRICTED_PLAIN}"),
    ("baseline, privileged", enforce("baseline"), pod(containers=[container(privileged=True)]),
     'violates PodSecurity "baseline:latest": privileged (container "c" must not set '
     "securityContext.privileged=true)"),
    ("baseline, host namespaces", enforce("baseline"), pod(hostNetwork=True, hostPID=True, hostIPC=True),
     'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)'),
    ("baseline, host ports of two containers", enforce("baseline"),
     pod(containers=[{**container("a"), "ports": [{"containerPort": 80, "hostPort": 8080}]},
                     {**container("b"), "ports": [{"containerPort": 81, "hostPort": 9090}]}]),
     'violates PodSecurity "baseline:latest": hostPort (containers "a", "b" use hostPorts 8080, 9090)'),
    ("baseline, capabilities", enforce("baseline"),
     pod(containers=[container(capabilities={"add": ["SYS_TIME", "NET_ADMIN", "CHOWN"]})]),
     'violates PodSecurity "baseline:latest": non-default capabilities (container "c" must not include '
     '"NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add)'),
    ("baseline, hostPath volume", enforce("baseline"),
     pod(volumes=[{"name": "host", "hostPath": {"path": "/etc"}}]),
     'violates PodSecurity "baseline:latest": hostPath volumes (volume "host")'),
    ("baseline, AppArmor", enforce("baseline"),
     pod(annotations={"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}),
     'violates PodSecurity "baseline:latest": forbidden AppArmor profile '
     '(container.apparmor.security.beta.kubernetes.io/c="unconfined")'),
    ("baseline, SELinux", enforce("baseline"),
     pod(containers=[container(seLinuxOptions={"type": "spc_t", "user": "root"})]),
     'violates PodSecurity "baseline:latest": seLinuxOptions (container "c" set forbidden '
     'securityContext.seLinuxOptions: type "spc_t"; user may not be set)'),
    ("baseline, seccomp", enforce("baseline"), pod(securityContext={"seccompProfile": {"type": "Unconfined"}}),
     'violates PodSecurity "baseline:latest": seccompProfile (pod must not set securityContext.seccompProfile.type '
     'to "Unconfined")'),
    ("baseline, sysctls", enforce("baseline"),
     pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"},
                                      {"name": "net.ipv4.tcp_syncookies", "value": "1"}]}),
     'violates PodSecurity "baseline:latest": forbidden sysctls (kernel.msgmax)'),
    ("baseline, init and ephemeral-free checks see init containers", enforce("baseline"),
     pod(initContainers=[container("init", privileged=True)]),
     'violates PodSecurity "baseline:latest": privileged (container "init" must not set '
     "securityContext.privileged=true)"),
    ("restricted, volumes and root", enforce("restricted"),
     pod(containers=[container(**SAFE_CONTAINER, runAsUser=0)], securityContext=SAFE_POD,
         volumes=[{"name": "share", "nfs": {"server": "nfs", "path": "/"}},
                  {"name": "host", "hostPath": {"path": "/"}}, {"name": "fine", "emptyDir": {}}]),
     'violates PodSecurity "restricted:latest": restricted volume types (volumes "share", "host" use restricted '
     'volume types "hostPath", "nfs"), runAsUser=0 (container "c" must not set runAsUser=0)'),
    ("restricted, capabilities added", enforce("restricted"),
     restricted_pod(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "NET_RAW"]}),
     'violates PodSecurity "restricted:latest": unrestricted capabilities (container "c" must not include '
     '"NET_RAW" in securityContext.capabilities.add)'),
    ("restricted, explicit false", enforce("restricted"),
     pod(containers=[container(**SAFE_CONTAINER, runAsNonRoot=False)],
         securityContext={**SAFE_POD, "runAsNonRoot": False}),
     'violates PodSecurity "restricted:latest": runAsNonRoot != true (pod and container "c" must not set '
     "securityContext.runAsNonRoot=false)"),
    ("an older version has fewer checks", enforce("restricted", "v1.22"), restricted_pod(runAsUser=0),
     None),
    ("the current version", enforce("restricted", "v1.28"), restricted_pod(runAsUser=0),
     'violates PodSecurity "restricted:v1.28": runAsUser=0 (container "c" must not set runAsUser=0)'),
    ("before v1.22, restricted keeps baseline's capabilities check", enforce("restricted", "v1.21"),
     restricted_pod(capabilities={"add": ["SYS_ADMIN"]}),
     'violates PodSecurity "restricted:v1.21": non-default capabilities (container "c" must not include '
     '"SYS_ADMIN" in securityContext.capabilities.add)'),
    ("a compliant restricted pod", enforce("restricted"), restricted_pod(), None),
    ("baseline admits what only restricted forbids", enforce("baseline"), pod(), None),
    ("privileged admits anything", enforce("privileged"), pod(containers=[container(privileged=True)],
                                                              hostNetwork=True), None),
    ("no labels: privileged", {}, pod(containers=[container(privileged=True)]), None),
    ("windows pods are exempt from the restricted Linux fields", enforce("restricted"),
     pod(os={"name": "windows"}, securityContext={"runAsNonRoot": True}), None),
]


@pytest.mark.parametrize(("case", "labels", "obj", "violation"), ENFORCED, ids=[c[0] for c in ENFORCED])
async def test_enforce(client: Client, case: str, labels: dict[str, str], obj: Obj, violation: str | None) -> None:
    await namespace(client, labels)
    if violation is None:
        created = await client.create(PODS, obj)
        assert created["metadata"]["name"] == "p"
        return
    revision = client.revision()
    failed = await refused(client.create(PODS, obj))
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (
        403, "Forbidden", f'pods "p" is forbidden: {violation}')
    assert client.revision() == revision


async def test_a_generated_name_is_the_one_refused(client: Client) -> None:
    await namespace(client, enforce("baseline"))
    obj = pod(containers=[container(privileged=True)])
    obj["metadata"] = {"generateName": "web-"}
    failed = await refused(client.create(PODS, obj))
    message = failed.status["message"]
    assert message.startswith('pods "web-') and message.endswith('" is forbidden: violates PodSecurity '
                                                                 '"baseline:latest": privileged (container "c" must '
                                                                 'not set securityContext.privileged=true)')


WARNED = [
    ("warn alone", {LEVEL + "warn": "restricted"}, pod(),
     [f'would violate PodSecurity "restricted:latest": {RESTRICTED_PLAIN}']),
    ("warn at a version", {LEVEL + "warn": "baseline", LEVEL + "warn-version": "v1.26"},
     pod(containers=[container(privileged=True)]),
     ['would violate PodSecurity "baseline:v1.26": privileged (container "c" must not set '
      "securityContext.privileged=true)"]),
    ("warn defaults to a stricter enforce level", {**enforce("baseline")}, pod(), []),
    ("warn stricter than enforce", {**enforce("baseline"), LEVEL + "warn": "restricted"}, pod(),
     [f'would violate PodSecurity "restricted:latest": {RESTRICTED_PLAIN}']),
    ("nothing to warn about", {LEVEL + "warn": "restricted"}, restricted_pod(), []),
]


@pytest.mark.parametrize(("case", "labels", "obj", "warnings"), WARNED, ids=[c[0] for c in WARNED])
async def test_warn_admits_pods(client: Client, case: str, labels: dict[str, str], obj: Obj,
                                warnings: list[str]) -> None:
    await namespace(client, labels)
    response = await client.create_response(PODS, raw(obj))
    assert list(response.warnings) == warnings


def template(**spec: Any) -> Obj:
    return {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [container()], **spec}}


SELECTOR = {"matchLabels": {"app": "a"}}
WORKLOADS = [
    ("deployments", "apps", {"kind": "Deployment", "apiVersion": "apps/v1",
                             "spec": {"selector": SELECTOR, "template": template()}}),
    ("replicasets", "apps", {"kind": "ReplicaSet", "apiVersion": "apps/v1",
                             "spec": {"selector": SELECTOR, "template": template()}}),
    ("statefulsets", "apps", {"kind": "StatefulSet", "apiVersion": "apps/v1",
                              "spec": {"selector": SELECTOR, "serviceName": "s", "template": template()}}),
    ("daemonsets", "apps", {"kind": "DaemonSet", "apiVersion": "apps/v1",
                            "spec": {"selector": SELECTOR, "template": template()}}),
    ("jobs", "batch", {"kind": "Job", "apiVersion": "batch/v1",
                       "spec": {"template": template(restartPolicy="Never")}}),
    ("cronjobs", "batch", {"kind": "CronJob", "apiVersion": "batch/v1",
                           "spec": {"schedule": "* * * * *",
                                    "jobTemplate": {"spec": {"template": template(restartPolicy="Never")}}}}),
    ("replicationcontrollers", "", {"kind": "ReplicationController", "apiVersion": "v1",
                                    "spec": {"selector": {"app": "a"}, "template": template()}}),
    ("podtemplates", "", {"kind": "PodTemplate", "apiVersion": "v1", "template": template()}),
]


@pytest.mark.parametrize(("resource", "group", "obj"), WORKLOADS, ids=[w[0] for w in WORKLOADS])
async def test_workloads_are_warned_never_refused(client: Client, resource: str, group: str, obj: Obj) -> None:
    await namespace(client, enforce("restricted"))  # warn follows enforce: restricted
    obj = {**obj, "metadata": {"name": "w"}}
    response = await client.create_response(path(resource, NS, group=group), raw(obj))
    assert list(response.warnings) == [f'would violate PodSecurity "restricted:latest": {RESTRICTED_PLAIN}']


UPDATES = [
    ("a label: ignored", lambda p: p["metadata"].setdefault("labels", {}).update(app="x"), None),
    ("an image: judged", lambda p: p["spec"]["containers"][0].update(image="nginx:2"),
     f'pods "p" is forbidden: violates PodSecurity "restricted:latest": {RESTRICTED_PLAIN}'),
]


@pytest.mark.parametrize(("case", "change", "message"), UPDATES, ids=[u[0] for u in UPDATES])
async def test_pod_updates_are_judged_when_an_image_changes(client: Client, case: str, change: Any,
                                                            message: str | None) -> None:
    await namespace(client, {})
    created = await client.create(PODS, pod())
    await relabel(client, enforce("restricted"))
    change(created)
    if message is None:
        await client.update(path("pods", NS, "p"), created)
        return
    failed = await refused(client.update(path("pods", NS, "p"), created))
    assert (failed.status["code"], failed.status["message"]) == (403, message)


@pytest.mark.parametrize(("privileged", "message"), [
    (False, None),
    (True, 'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "debug" must not '
           "set securityContext.privileged=true)"),
])
async def test_ephemeral_containers_are_judged(client: Client, privileged: bool, message: str | None) -> None:
    await namespace(client, enforce("baseline"))
    created = await client.create(PODS, pod())
    debug: Obj = {"name": "debug", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}
    if privileged:
        debug["securityContext"] = {"privileged": True}
    created["spec"]["ephemeralContainers"] = [debug]
    sub = path("pods", NS, "p", subresource="ephemeralcontainers")
    if message is None:
        updated, _ = await client.update(sub, created)
        assert updated["spec"]["ephemeralContainers"][0]["name"] == "debug"
        return
    failed = await refused(client.update(sub, created))
    assert (failed.status["code"], failed.status["message"]) == (403, message)


INVALID = [
    ({LEVEL + "enforce": "strict"}, 'Namespace "psa" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
                                    'Invalid value: "strict": must be one of privileged, baseline, restricted'),
    ({LEVEL + "warn": "baseline", LEVEL + "warn-version": "1.28"},
     'Namespace "psa" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.28": '
     'must be "latest" or "v1.x"'),
    ({LEVEL + "audit": "none", LEVEL + "audit-version": "v2.0"},
     'Namespace "psa" is invalid: [metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "none": must '
     'be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid '
     'value: "v2.0": must be "latest" or "v1.x"]'),
]


@pytest.mark.parametrize(("labels", "message"), INVALID)
async def test_labels_kube_cannot_parse_are_refused(client: Client, labels: dict[str, str], message: str) -> None:
    failed = await refused(namespace(client, labels))
    assert (failed.status["code"], failed.status["message"]) == (422, message)
    await namespace(client, {})
    failed = await refused(relabel(client, labels))
    assert (failed.status["code"], failed.status["message"]) == (422, message)


@pytest.mark.parametrize(("labels", "expected"), [
    ({}, DEFAULT_POLICY),
    (enforce("restricted"), Policy(LevelVersion("restricted"), LevelVersion("privileged"),
                                   LevelVersion("restricted"))),
    ({**enforce("baseline", "v1.25"), LEVEL + "warn-version": "v1.27"},
     Policy(LevelVersion("baseline", 25), LevelVersion("privileged"), LevelVersion("baseline", 27))),
    # a bad enforce level fails closed; bad audit and warn levels fail open, and warn does not follow enforce
    ({LEVEL + "enforce": "x", LEVEL + "audit": "y", LEVEL + "warn": "z"},
     Policy(LevelVersion("restricted"), LevelVersion("privileged"), LevelVersion("privileged"))),
    ({LEVEL + "enforce": "x"}, Policy(LevelVersion("restricted"), LevelVersion("privileged"),
                                      LevelVersion("privileged"))),
])
def test_the_policy_labels_choose(labels: dict[str, str], expected: Policy) -> None:
    assert policy_to_evaluate(labels, DEFAULT_POLICY)[0] == expected


async def judged(client: Client, resource: str, obj: Obj, *, group: str = "", version: str = "v1",
                 old: Obj | None = None) -> Attributes:
    """Run the plugin alone on one request against the running core's store; its attributes after."""
    core = client.running.core
    kind = core.context.registry.get(group, version, resource)
    assert kind is not None
    attrs = Attributes(kind, "UPDATE" if old else "CREATE", obj["metadata"]["name"], NS, obj, old, False)
    [plugin] = podsecurity.plugins(frozenset((podsecurity.NAME,)))
    assert plugin.validate is not None
    await plugin.validate(core.context, attrs)
    return attrs


AUDITED = [
    ("unlabelled: privileged enforced", {}, pod(), {LEVEL + "enforce-policy": "privileged:latest"}),
    ("audit only", {LEVEL + "audit": "restricted"}, pod(),
     {LEVEL + "enforce-policy": "privileged:latest",
      LEVEL + "audit-violations": f'would violate PodSecurity "restricted:latest": {RESTRICTED_PLAIN}'}),
    ("enforce and audit", {**enforce("baseline", "v1.27"), LEVEL + "audit": "baseline",
                           LEVEL + "audit-version": "v1.27"}, pod(),
     {LEVEL + "enforce-policy": "baseline:v1.27"}),
]


@pytest.mark.parametrize(("case", "labels", "obj", "annotations"), AUDITED, ids=[a[0] for a in AUDITED])
async def test_audit_annotations(client: Client, case: str, labels: dict[str, str], obj: Obj,
                                 annotations: dict[str, str]) -> None:
    await namespace(client, labels)
    attrs = await judged(client, "pods", obj)
    assert attrs.audit_annotations == annotations


async def test_workloads_get_audit_violations_without_enforce_policy(client: Client) -> None:
    await namespace(client, {LEVEL + "audit": "baseline"})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": SELECTOR, "template": template(hostNetwork=True)}}
    attrs = await judged(client, "deployments", deployment, group="apps")
    assert attrs.audit_annotations == {
        LEVEL + "audit-violations": 'would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)'}
    assert attrs.warnings == []


EXISTING = [
    ("one violating pod", [pod("a")], enforce("restricted"),
     ['existing pods in namespace "psa" violate the new PodSecurity enforce level "restricted:latest"',
      "a: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"]),
    ("pods sharing reasons are counted", [pod("b", containers=[container(privileged=True)]),
                                          pod("a", containers=[container(privileged=True)]),
                                          pod("c", hostIPC=True), restricted_pod("fine")], enforce("baseline"),
     ['existing pods in namespace "psa" violate the new PodSecurity enforce level "baseline:latest"',
      "a (and 1 other pod): privileged", "c: host namespaces"]),
    ("nothing violates it", [restricted_pod("fine")], enforce("restricted"), []),
    ("a relaxed level is not checked", [pod("a")], enforce("privileged"), []),
]


@pytest.mark.parametrize(("case", "pods", "labels", "warnings"), EXISTING, ids=[e[0] for e in EXISTING])
async def test_a_stricter_enforce_level_warns_about_existing_pods(client: Client, case: str, pods: list[Obj],
                                                                   labels: dict[str, str],
                                                                   warnings: list[str]) -> None:
    await namespace(client, {})
    for obj in pods:
        await client.create(PODS, obj)
    assert await relabel(client, labels) == warnings


@pytest.mark.parametrize(("level", "minor", "count"), [
    ("privileged", None, 0), ("baseline", None, 11), ("restricted", None, 14), ("restricted", 21, 13),
    ("restricted", 7, 12), ("restricted", 999, 14), ("baseline", 0, 11),
])
def test_the_checks_of_a_level_and_version(level: str, minor: int | None, count: int) -> None:
    """Restricted replaces baseline's hostPath, capabilities (from v1.22) and seccomp (from v1.19) checks, and
    adds allowPrivilegeEscalation from v1.8 and runAsUser from v1.23."""
    effective = checks.MAX_MINOR if minor is None or minor > checks.MAX_MINOR else minor
    assert len(checks.checks_for(level, effective) if level != "privileged" else ()) == count


async def test_labels_set_before_the_plugin_judged_them(client: Client) -> None:
    """A namespace whose labels kube cannot parse (set while PodSecurity was off): an update that keeps the same
    errors is let through; its pods are enforced at restricted (a bad enforce level fails closed), with the parse
    error as an audit annotation."""
    chain = client.running.core.context.admission.chain
    client.running.core.context.admission.chain = None
    try:
        await namespace(client, {LEVEL + "enforce": "strict"})
    finally:
        client.running.core.context.admission.chain = chain
    assert await relabel(client, {LEVEL + "enforce": "strict", "team": "a"}) == []
    failed = await refused(client.create(PODS, pod()))
    assert failed.status["message"] == f'pods "p" is forbidden: violates PodSecurity "restricted:latest": ' \
                                       f"{RESTRICTED_PLAIN}"
    attrs = await judged(client, "pods", restricted_pod())
    assert attrs.audit_annotations == {
        LEVEL + "enforce-policy": "restricted:latest",
        LEVEL + "error": 'Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: '
                         '"strict": must be one of privileged, baseline, restricted'}


CHECKED: list[tuple[str, int | None, Obj, Obj, str]] = [
    # (level, minor, metadata, spec, detail) for what API validation keeps from reaching the server
    ("baseline", None, {}, {"containers": [container(procMount="Unmasked")]},
     'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ("baseline", None, {}, {"securityContext": {"windowsOptions": {"hostProcess": True}},
                            "containers": [container("a", windowsOptions={"hostProcess": True}),
                                           container("b", windowsOptions={"hostProcess": True})]},
     'hostProcess (pod and containers "a", "b" must not set securityContext.windowsOptions.hostProcess=true)'),
    ("baseline", 18, {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                                      "container.seccomp.security.alpha.kubernetes.io/c": "localhost/x"}},
     {"containers": [container()]},
     'seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")'),
    ("baseline", None, {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
     {"containers": [container()]}, ""),
    ("baseline", 26, {}, {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports"}]},
                          "containers": [container()]},
     "forbidden sysctls (net.ipv4.ip_local_reserved_ports)"),
    ("baseline", 27, {}, {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports"}]},
                          "containers": [container()]}, ""),
    ("baseline", None, {"annotations": {"container.apparmor.security.beta.kubernetes.io/b": "unconfined",
                                        "container.apparmor.security.beta.kubernetes.io/a": "x"}},
     {"containers": [container()]},
     'forbidden AppArmor profiles (container.apparmor.security.beta.kubernetes.io/a="x", '
     'container.apparmor.security.beta.kubernetes.io/b="unconfined")'),
    ("restricted", None, {}, {"securityContext": {**SAFE_POD, "seccompProfile": {"type": "Unconfined"},
                                                  "runAsUser": 0},
                              "containers": [container(**SAFE_CONTAINER, seccompProfile={"type": "Unconfined"})],
                              "ephemeralContainers": [container("e", **SAFE_CONTAINER)]},
     'runAsUser=0 (pod must not set runAsUser=0), seccompProfile (pod and container "c" must not set '
     'securityContext.seccompProfile.type to "Unconfined")'),
    ("restricted", 24, {}, {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True},
                            "containers": [container()]},
     'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
     'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
     'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
     '"Localhost")'),
    ("restricted", None, {}, {"securityContext": SAFE_POD, "volumes": [{"name": "v", "flexVolume": {}}],
                              "containers": [container(**SAFE_CONTAINER)],
                              "ephemeralContainers": [container("e", **SAFE_CONTAINER, runAsNonRoot=False)]},
     'restricted volume types (volume "v" uses restricted volume type "flexVolume"), runAsNonRoot != true '
     '(container "e" must not set securityContext.runAsNonRoot=false)'),
]


@pytest.mark.parametrize(("level", "minor", "metadata", "spec", "detail"), CHECKED)
def test_checks_word_what_they_forbid(level: str, minor: int | None, metadata: Obj, spec: Obj,
                                      detail: str) -> None:
    assert checks.forbidden_detail(checks.evaluate(level, minor, metadata, spec)) == detail


@pytest.mark.parametrize(("old", "new", "refused_with"), [
    ({LEVEL + "enforce": "strict"}, {LEVEL + "enforce": "strict", "team": "a"}, None),
    ({LEVEL + "enforce": "strict"}, {LEVEL + "enforce": "stricter"}, 'Invalid value: "stricter"'),
    ({}, {LEVEL + "enforce": "strict"}, 'Invalid value: "strict"'),
])
async def test_namespace_updates_keep_or_refuse_bad_labels(client: Client, old: dict[str, str],
                                                           new: dict[str, str], refused_with: str | None) -> None:
    def ns(labels: dict[str, str]) -> Obj:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": labels}}
    if refused_with is None:
        await judged(client, "namespaces", ns(new), old=ns(old))
        return
    with pytest.raises(ApiError) as failed:
        await judged(client, "namespaces", ns(new), old=ns(old))
    assert refused_with in str(failed.value)


def _count(name: str, labels: dict[str, str]) -> float:
    return apimetrics.REGISTRY.get_sample_value(name, labels) or 0.0


def _evaluation(decision: str, level: str, version: str, mode: str, resource: str = "pod") -> dict[str, str]:
    return {"decision": decision, "policy_level": level, "policy_version": version, "mode": mode,
            "request_operation": "create", "resource": resource, "subresource": ""}


PRIVILEGED_ALLOWED = _evaluation("allow", "privileged", "latest", "enforce")


@pytest.mark.parametrize(("labels", "kind", "counted"), [
    # an unlabelled namespace: the privileged policy's allow, counted as kube counts it
    ({}, "pod", [PRIVILEGED_ALLOWED]),
    ({LEVEL + "enforce": "restricted"}, "pod", [_evaluation("deny", "restricted", "latest", "enforce")]),
    ({LEVEL + "enforce": "baseline", LEVEL + "enforce-version": "v1.25"}, "pod",
     [_evaluation("allow", "baseline", "v1.25", "enforce")]),
    ({LEVEL + "audit": "restricted", LEVEL + "audit-version": "v1.99"}, "pod",
     [_evaluation("allow", "privileged", "latest", "enforce"), _evaluation("deny", "restricted", "future", "audit")]),
    # a workload is never enforced: its warn level's denial is what is counted
    ({LEVEL + "warn": "restricted"}, "deployment", [_evaluation("deny", "restricted", "latest", "warn", "controller")]),
])
async def test_evaluations_are_counted_as_kubes_metrics_count_them(client: Client, labels: dict[str, str], kind: str,
                                                                    counted: list[dict[str, str]]) -> None:
    await namespace(client, labels)
    before = [_count("pod_security_evaluations_total", c) for c in counted]
    if kind == "pod" and labels.get(LEVEL + "enforce") == "restricted":
        await refused(client.create(PODS, pod()))  # refused: counted all the same
    elif kind == "pod":
        await client.create(PODS, pod())
    else:
        await client.create(path("deployments", NS, group="apps"), {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container()]}}}})
    assert [_count("pod_security_evaluations_total", c) - b for c, b in zip(counted, before, strict=True)] == [
        1.0] * len(counted)


RESTRICTED_EVERYWHERE = Policy(LevelVersion("restricted"), LevelVersion("restricted"), LevelVersion("restricted"))


@pytest.mark.parametrize(("exemptions", "namespace_name", "runtime_class", "admitted"), [
    (podsecurity.Exemptions(), NS, None, False),  # the configured default refuses it
    (podsecurity.Exemptions(namespaces=frozenset({NS})), NS, None, True),
    (podsecurity.Exemptions(namespaces=frozenset({"other"})), NS, None, False),
    (podsecurity.Exemptions(usernames=frozenset({"system:unsecured"})), NS, None, True),  # the insecure core's user
    (podsecurity.Exemptions(runtime_classes=frozenset({"sandboxed"})), NS, "sandboxed", True),
    (podsecurity.Exemptions(runtime_classes=frozenset({"sandboxed"})), NS, "plain", False),
])
async def test_a_configuration_sets_the_default_and_who_is_exempt(
        tmp_path: Path, exemptions: podsecurity.Exemptions, namespace_name: str, runtime_class: str | None,
        admitted: bool) -> None:
    configuration = podsecurity.Configuration(defaults=RESTRICTED_EVERYWHERE, exemptions=exemptions)
    store, running = await bootstrapped.started(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0),
                                                security=INSECURE, namespace_controllers=False,
                                                podsecurity_configuration=configuration)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_service_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            await namespace(client, {}, namespace_name)
            spec: Obj = {}
            if runtime_class is not None:
                await client.create(path("runtimeclasses", group="node.k8s.io"), {
                    "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": runtime_class},
                    "handler": "runc"})
                spec["runtimeClassName"] = runtime_class
            exempt_before = _count("pod_security_exemptions_total", {
                "request_operation": "create", "resource": "pod", "subresource": ""})
            call = client.create(path("pods", namespace_name), pod(**spec))
            if admitted:
                created = await call
                assert created["metadata"]["name"] == "p"
                assert _count("pod_security_exemptions_total", {
                    "request_operation": "create", "resource": "pod", "subresource": ""}) == exempt_before + 1
            else:
                failed = await refused(call)
                assert failed.status["message"].startswith('pods "p" is forbidden: violates PodSecurity '
                                                           '"restricted:latest"')
    finally:
        await running.stop()
        await store.close()
