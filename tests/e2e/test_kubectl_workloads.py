"""The real kubectl against a real `capstan serve`: the apps, batch, coordination, events and rbac kinds.

`create deployment` goes over protobuf (kubectl 1.32 sends it so), `scale` through /scale (a merge patch of
an autoscaling/v1 Scale; with --current-replicas a GET and a PUT), `get` prints the server's Tables and
`describe` reads the objects back. There are no workload controllers, so status stays empty and nothing
waits on a rollout. Expected output is kubectl's against kube-apiserver 1.32.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Capstan, Kubectl, Obj
from tests.e2e.test_kubectl import AGE, PROTOBUF_SENT, table, tables

MANIFESTS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: fluentd}], nodeSelector: {disk: ssd}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: cache}
spec:
  replicas: 2
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec: {containers: [{name: redis, image: redis}]}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock}
spec: {holderIdentity: candidate-a, leaseDurationSeconds: 15}
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: scaled}
eventTime: "2024-05-01T12:00:00.000000Z"
reportingController: example.com/autoscaler
reportingInstance: autoscaler-1
action: Scale
reason: Scaled
type: Normal
regarding: {kind: Deployment, name: web, namespace: NAMESPACE}
note: scaled up
"""
CREATED = ["statefulset.apps/db created", "daemonset.apps/agent created", "replicaset.apps/cache created",
           "lease.coordination.k8s.io/lock created", "event.events.k8s.io/scaled created"]


def ok(ran: tuple[int, str, str], out: str) -> None:
    assert (ran[0], ran[1]) == (0, out), ran[2]


def scale_manager(obj: Obj) -> list[tuple[str, str, Obj]]:
    return [(e["manager"], e["operation"], e["fieldsV1"]) for e in obj["metadata"]["managedFields"]
            if e.get("subresource") == "scale"]


# -- create, scale -------------------------------------------------------------------------------------------------


def test_create_deployment_round_trips_through_protobuf(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    ran = kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "-n", namespace, "-v=8",
                  version="1.32")
    assert (ran.code, ran.out) == (0, "deployment.apps/web created\n"), ran.err
    assert PROTOBUF_SENT in ran.err
    code, stored = capstan.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert code == 200, stored
    spec = stored["spec"]
    assert (spec["replicas"], spec["selector"], spec["strategy"], spec["revisionHistoryLimit"],
            spec["progressDeadlineSeconds"]) == (
        2, {"matchLabels": {"app": "web"}},
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}, 10, 600)
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    shown = kubectl.json("get", "deployment", "web", "-n", namespace, "-o", "json", version="1.32")
    assert shown["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    (creator,) = [e for e in stored["metadata"]["managedFields"] if e["manager"] == "kubectl-create"]
    assert {"f:replicas", "f:strategy", "f:progressDeadlineSeconds"} <= set(creator["fieldsV1"]["f:spec"])


def test_scale_deployment(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    ok(kubectl("create", "deployment", "web", "--image=nginx", "-n", namespace), "deployment.apps/web created\n")
    ok(kubectl("scale", "deployment", "web", "--replicas=4", "-n", namespace), "deployment.apps/web scaled\n")
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    stored = capstan.get(path)[1]
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (4, 2)
    assert scale_manager(stored) == [("kubectl", "Update", {"f:spec": {"f:replicas": {}}})]
    # --current-replicas reads the Scale, checks it, then writes it back with its resourceVersion.
    ok(kubectl("scale", "deploy", "web", "--current-replicas=4", "--replicas=1", "-n", namespace),
       "deployment.apps/web scaled\n")
    assert capstan.get(path)[1]["spec"]["replicas"] == 1
    ran = kubectl("scale", "deploy", "web", "--current-replicas=9", "--replicas=2", "-n", namespace)
    assert (ran.code, ran.err) == (1, "error: Expected replicas to be 9, was 1\n")
    shown = kubectl("get", "deploy", "web", "--subresource=scale", "-n", namespace)
    assert shown.code == 0, shown.err
    (row,) = table(shown.out)
    assert (row["NAME"], row["DESIRED"], row["AVAILABLE"]) == ("web", "1", "0") and AGE.match(row["AGE"])


@pytest.mark.parametrize(("kind", "name", "replicas"), [("statefulset", "db", 3), ("replicaset", "cache", 0)])
def test_scale_other_kinds(kubectl: Kubectl, capstan: Capstan, namespace: str, kind: str, name: str,
                           replicas: int) -> None:
    assert kubectl("create", "-f", "-", "-n", namespace, input=MANIFESTS.replace("NAMESPACE", namespace)).code == 0
    ok(kubectl("scale", kind, name, f"--replicas={replicas}", "-n", namespace), f"{kind}.apps/{name} scaled\n")
    code, stored = capstan.get(f"/apis/apps/v1/namespaces/{namespace}/{kind}s/{name}")
    assert (code, stored["spec"]["replicas"]) == (200, replicas)


@pytest.mark.parametrize(("args", "out", "path", "check"), [
    (["create", "job", "pi", "--image=perl:5.34", "--", "perl", "-e", "print 1"], "job.batch/pi created\n",
     "/apis/batch/v1/namespaces/{ns}/jobs/pi",
     lambda o: (o["spec"]["template"]["spec"]["restartPolicy"], o["spec"]["backoffLimit"],
                o["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"]) == ("Never", 6, "pi")),
    (["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "date"],
     "cronjob.batch/nightly created\n", "/apis/batch/v1/namespaces/{ns}/cronjobs/nightly",
     lambda o: (o["spec"]["schedule"], o["spec"]["concurrencyPolicy"], o["spec"]["successfulJobsHistoryLimit"]) == (
         "0 3 * * *", "Allow", 3)),
    (["create", "role", "reader", "--verb=get,list", "--resource=configmaps"],
     "role.rbac.authorization.k8s.io/reader created\n",
     "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/reader",
     lambda o: o["rules"] == [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]),
    (["create", "rolebinding", "read", "--role=reader", "--user=alice", "--serviceaccount={ns}:ci"],
     "rolebinding.rbac.authorization.k8s.io/read created\n",
     "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/read",
     lambda o: (o["roleRef"], [s["kind"] for s in o["subjects"]]) == (
         {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}, ["User", "ServiceAccount"])),
])
def test_create_kinds(kubectl: Kubectl, capstan: Capstan, namespace: str, args: list[str], out: str, path: str,
                      check: object) -> None:
    ran = kubectl("-n", namespace, *[a.replace("{ns}", namespace) for a in args])
    assert (ran.code, ran.out) == (0, out), ran.err
    code, stored = capstan.get(path.replace("{ns}", namespace))
    assert code == 200, stored
    assert callable(check) and check(stored), stored


def test_create_cluster_role_and_binding(kubectl: Kubectl, capstan: Capstan, request: pytest.FixtureRequest) -> None:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40]
    ok(kubectl("create", "clusterrole", name, "--verb=get", "--resource=configmaps"),
       f"clusterrole.rbac.authorization.k8s.io/{name} created\n")
    ok(kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}", "--group=devs"),
       f"clusterrolebinding.rbac.authorization.k8s.io/{name} created\n")
    (row,) = [r for r in table(kubectl("get", "clusterrolebindings", "-o", "wide").out) if r["NAME"] == name]
    assert (row["ROLE"], row["GROUPS"], row["USERS"]) == (f"ClusterRole/{name}", "devs", "")
    ok(kubectl("delete", "clusterrolebinding", name),
       f'clusterrolebinding.rbac.authorization.k8s.io "{name}" deleted\n')
    ok(kubectl("delete", "clusterrole", name), f'clusterrole.rbac.authorization.k8s.io "{name}" deleted\n')


def test_validation_errors_as_kubectl_shows_them(kubectl: Kubectl, namespace: str) -> None:
    bad = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec:\n  selector: {matchLabels: {app: a}}\n"
           "  template:\n    metadata: {labels: {app: b}}\n    spec: {containers: [{name: c, image: busybox}]}\n")
    ran = kubectl("create", "-f", "-", "-n", namespace, input=bad)
    assert (ran.code, ran.err) == (1, (
        'The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"b"}: '
        "`selector` does not match template `labels`\n"))
    ran = kubectl("create", "cronjob", "c", "--image=busybox", "--schedule=61 * * * *", "-n", namespace)
    assert (ran.code, ran.err) == (1, (
        'error: failed to create cronjob: CronJob.batch "c" is invalid: spec.schedule: Invalid value: "61 * * * *": '
        "end of range (61) above maximum (59): 61\n"))


# -- get, describe, delete -----------------------------------------------------------------------------------------


def without_age(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    for row in rows:
        assert AGE.match(row.pop("AGE")), row
    return rows


def test_get_tables(kubectl: Kubectl, namespace: str) -> None:
    created = kubectl("create", "-f", "-", "-n", namespace, input=MANIFESTS.replace("NAMESPACE", namespace))
    assert created.out.splitlines() == CREATED
    ok(kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "-n", namespace),
       "deployment.apps/web created\n")
    ok(kubectl("create", "job", "pi", "--image=perl", "-n", namespace), "job.batch/pi created\n")
    ok(kubectl("create", "cronjob", "nightly", "--image=busybox", "--schedule=@daily", "-n", namespace),
       "cronjob.batch/nightly created\n")
    wide = kubectl("get", "deploy,sts,rs,jobs", "-o", "wide", "-n", namespace)
    assert wide.code == 0, wide.err
    deploy, sts, rs, jobs = (without_age(t) for t in tables(wide.out))
    assert (deploy, sts, rs) == (
        [{"NAME": "deployment.apps/web", "READY": "0/3", "UP-TO-DATE": "0", "AVAILABLE": "0", "CONTAINERS": "nginx",
          "IMAGES": "nginx:1.27", "SELECTOR": "app=web"}],
        [{"NAME": "statefulset.apps/db", "READY": "0/1", "CONTAINERS": "db", "IMAGES": "postgres:16"}],
        [{"NAME": "replicaset.apps/cache", "DESIRED": "2", "CURRENT": "0", "READY": "0", "CONTAINERS": "redis",
          "IMAGES": "redis", "SELECTOR": "app=cache"}])
    (job,) = jobs
    assert (job["NAME"], job["COMPLETIONS"], job["DURATION"], job["CONTAINERS"]) == (  # 1.28: no STATUS column
        "job.batch/pi", "0/1", "", "pi")
    assert job["SELECTOR"].startswith("batch.kubernetes.io/controller-uid=")
    daemon_sets = kubectl("get", "ds", "-n", namespace).out.splitlines()
    assert [re.split(r"\s{2,}", line) for line in daemon_sets] == [
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
        ["agent", "0", "0", "0", "0", "0", "disk=ssd", daemon_sets[1].split()[-1]]]
    cron_jobs = kubectl("get", "cronjobs", "-n", namespace).out.splitlines()
    assert [re.split(r"\s{2,}", line) for line in cron_jobs] == [
        ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],  # 1.28: no TIMEZONE column
        ["nightly", "@daily", "False", "0", "<none>", cron_jobs[1].split()[-1]]]
    plain = kubectl("get", "deployments", "-n", namespace)
    assert plain.out.splitlines()[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    other = kubectl("get", "leases,events.events.k8s.io", "-n", namespace)
    leases, events = tables(other.out)
    assert [(r["NAME"], r["HOLDER"]) for r in leases] == [("lease.coordination.k8s.io/lock", "candidate-a")]
    assert [(r["TYPE"], r["REASON"], r["OBJECT"], r["MESSAGE"]) for r in events] == [
        ("Normal", "Scaled", "deployment/web", "scaled up")]
    everything = kubectl("get", "all", "-n", namespace)
    names = [row["NAME"] for t in tables(everything.out) for row in t]
    assert {"deployment.apps/web", "replicaset.apps/cache", "statefulset.apps/db", "daemonset.apps/agent",
            "job.batch/pi", "cronjob.batch/nightly"} <= set(names)


DESCRIBED = [
    ("deployment", "web", ["Selector:               app=web",
                           "Replicas:               3 desired | 0 updated | 0 total | 0 available | 0 unavailable",
                           "StrategyType:           RollingUpdate",
                           "RollingUpdateStrategy:  25% max unavailable, 25% max surge"]),
    ("statefulset", "db", ["Selector:           app=db", "Replicas:           1 desired | 0 total",
                           "Update Strategy:    RollingUpdate"]),
    ("daemonset", "agent", ["Selector:       app=agent", "Node-Selector:  disk=ssd"]),
    ("replicaset", "cache", ["Selector:     app=cache", "Replicas:     0 current / 2 desired"]),
    ("job", "pi", ["Parallelism:      1", "Completions:      1", "Completion Mode:  NonIndexed",
                   "Backoff Limit:    6"]),
    ("cronjob", "nightly", ["Schedule:                      @daily", "Concurrency Policy:            Allow"]),
    ("lease", "lock", ["  Holder Identity:         candidate-a", "  Lease Duration Seconds:  15"]),
    ("role", "reader", ["  configmaps  []                 []              [get]"]),
    ("rolebinding", "read", ["  Kind:  Role", "  Name:  reader", "  User  alice  "]),
]


def test_describe_and_delete_each_kind(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    assert kubectl("create", "-f", "-", "-n", namespace, input=MANIFESTS.replace("NAMESPACE", namespace)).code == 0
    for args in (["deployment", "web", "--image=nginx", "--replicas=3"], ["job", "pi", "--image=perl"],
                 ["cronjob", "nightly", "--image=busybox", "--schedule=@daily"],
                 ["role", "reader", "--verb=get", "--resource=configmaps"],
                 ["rolebinding", "read", "--role=reader", "--user=alice"]):
        assert kubectl("create", *args, "-n", namespace).code == 0
    for kind, name, lines in DESCRIBED:  # kubectl 1.32's describe: 1.28's shows no Job's Backoff Limit
        ran = kubectl("describe", kind, name, "-n", namespace, version="1.32")
        assert ran.code == 0, ran.err
        text = ran.out.splitlines()
        assert text[0].split() == ["Name:", name], ran.out
        missing = [line for line in lines if line not in text]
        assert not missing, f"{kind}: {missing} not in\n{ran.out}"
    groups = {"deployment": "apps", "statefulset": "apps", "daemonset": "apps", "replicaset": "apps",
              "job": "batch", "cronjob": "batch", "lease": "coordination.k8s.io", "role": "rbac.authorization.k8s.io",
              "rolebinding": "rbac.authorization.k8s.io"}
    for kind, name, _ in DESCRIBED:
        ok(kubectl("delete", kind, name, "-n", namespace), f'{kind}.{groups[kind]} "{name}" deleted\n')
    ok(kubectl("delete", "events.events.k8s.io", "scaled", "-n", namespace),
       'event.events.k8s.io "scaled" deleted\n')
    left = kubectl("get", "deploy,sts,ds,rs,jobs,cronjobs,leases,roles,rolebindings", "-n", namespace)
    assert (left.code, left.out, left.err) == (0, "", f"No resources found in {namespace} namespace.\n")
