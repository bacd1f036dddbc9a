"""The apps, batch, coordination, events and rbac kinds over HTTP: JSON and protobuf bodies both ways,
discovery of their subresources (/scale as autoscaling/v1 Scale), /scale's verbs, and Tables as kubectl asks
for them. Expected answers are kube-apiserver 1.32's."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from capstan.api.apps.v1 import apps_pb2
from capstan.api.autoscaling.v1 import autoscaling_pb2
from capstan.api.batch.v1 import batch_pb2
from gateway.codecs import protobuf
from tests.gateway import kube
from tests.gateway.conftest import Server

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SCALE = f"{DEPLOYMENTS}/web/scale"
POD_TEMPLATE: Obj = {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
DEPLOYMENT: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": POD_TEMPLATE}}
SCALE_VERBS = ["get", "patch", "update"]
STATUS_VERBS = ["get", "patch", "update"]


def scale_entry(resource: str) -> Obj:
    return {"name": f"{resource}/scale", "singularName": "", "namespaced": True, "group": "autoscaling",
            "version": "v1", "kind": "Scale", "verbs": SCALE_VERBS}


# ---------------------------------------------------------------- discovery


async def test_apps_resource_list_names_scale_as_autoscaling_v1(server: Server) -> None:
    resp = await server.request("GET", "/apis/apps/v1")
    entries = {e["name"]: e for e in resp.json()["resources"]}
    assert (resp.status, sorted(entries)) == (200, [
        "controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
        "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
        "statefulsets/scale", "statefulsets/status"])
    for resource in ("deployments", "replicasets", "statefulsets"):
        assert entries[f"{resource}/scale"] == scale_entry(resource)
        assert list(entries[f"{resource}/scale"]) == ["name", "singularName", "namespaced", "group", "version",
                                                      "kind", "verbs"]
    assert entries["deployments/status"] == {"name": "deployments/status", "singularName": "", "namespaced": True,
                                             "kind": "Deployment", "verbs": STATUS_VERBS}
    deployments = entries["deployments"]
    assert (deployments["shortNames"], deployments["categories"], deployments["kind"]) == (
        ["deploy"], ["all"], "Deployment")


@pytest.mark.parametrize(("group", "resource", "short_names", "categories", "namespaced"), [
    ("apps", "replicasets", ["rs"], ["all"], True),
    ("apps", "statefulsets", ["sts"], ["all"], True),
    ("apps", "daemonsets", ["ds"], ["all"], True),
    ("apps", "controllerrevisions", None, None, True),
    ("batch", "jobs", None, ["all"], True),
    ("batch", "cronjobs", ["cj"], ["all"], True),
    ("coordination.k8s.io", "leases", None, None, True),
    ("events.k8s.io", "events", ["ev"], None, True),
    ("rbac.authorization.k8s.io", "roles", None, None, True),
    ("rbac.authorization.k8s.io", "clusterroles", None, None, False),
    ("rbac.authorization.k8s.io", "rolebindings", None, None, True),
    ("rbac.authorization.k8s.io", "clusterrolebindings", None, None, False),
])
async def test_names_and_scopes(server: Server, group: str, resource: str, short_names: list[str] | None,
                                categories: list[str] | None, namespaced: bool) -> None:
    resp = await server.request("GET", f"/apis/{group}/v1")
    entry = next(e for e in resp.json()["resources"] if e["name"] == resource)
    assert (entry.get("shortNames"), entry.get("categories"), entry["namespaced"]) == (
        short_names, categories, namespaced)


async def test_aggregated_discovery_response_kind_of_scale(server: Server) -> None:
    resp = await server.request("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    apps = next(i for i in resp.json()["items"] if i["metadata"].get("name") == "apps")
    deployments = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deployments["subresources"] == [
        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
         "verbs": SCALE_VERBS},
        {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
         "verbs": STATUS_VERBS}]
    groups = [i["metadata"].get("name") for i in resp.json()["items"]]  # kube-aggregator's priorities' order
    assert groups[:5] == ["apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
                          "authorization.k8s.io"]


# ---------------------------------------------------------------- JSON and protobuf both ways


async def test_deployment_json_in_protobuf_out_and_back(server: Server) -> None:
    created = await server.create(DEPLOYMENTS, DEPLOYMENT)
    got = await server.request("GET", f"{DEPLOYMENTS}/web", headers={"Accept": PROTOBUF})
    api_version, kind, raw = protobuf.decode_envelope(got.body)
    decoded = apps_pb2.Deployment.FromString(raw)
    assert (got.status, got.content_type, api_version, kind) == (200, PROTOBUF, "apps/v1", "Deployment")
    assert (decoded.metadata.resourceVersion, decoded.spec.replicas, decoded.spec.strategy.rollingUpdate.maxSurge.strVal
            ) == (created["metadata"]["resourceVersion"], 1, "25%")
    decoded.spec.replicas = 3
    decoded.metadata.ClearField("managedFields")
    put = await server.request("PUT", f"{DEPLOYMENTS}/web", body=protobuf.encode_envelope(
        "apps/v1", "Deployment", decoded.SerializeToString()), headers={"Content-Type": PROTOBUF})
    assert (put.status, put.json()["spec"]["replicas"], put.json()["metadata"]["generation"]) == (200, 3, 2)


async def test_job_protobuf_in_json_out(server: Server) -> None:
    job = batch_pb2.Job()
    job.metadata.name = "pi"
    container = job.spec.template.spec.containers.add()
    container.name, container.image = "pi", "perl"
    job.spec.template.spec.restartPolicy = "Never"
    resp = await server.request("POST", "/apis/batch/v1/namespaces/default/jobs", body=protobuf.encode_envelope(
        "batch/v1", "Job", job.SerializeToString()), headers={"Content-Type": PROTOBUF})
    doc = resp.json()
    assert (resp.status, doc["kind"], doc["spec"]["backoffLimit"], doc["spec"]["template"]["metadata"]["labels"][
        "job-name"]) == (201, "Job", 6, "pi")


async def test_validation_answer_over_http(server: Server) -> None:
    bad = {**DEPLOYMENT, "spec": {"template": POD_TEMPLATE}}
    resp = await server.request("POST", DEPLOYMENTS, json=bad)
    assert (resp.status, resp.json()["message"]) == (422, (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.template.metadata.labels: '
        'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`]'))


# ---------------------------------------------------------------- /scale


async def test_scale_get_json_and_protobuf(server: Server) -> None:
    created = await server.create(DEPLOYMENTS, DEPLOYMENT)
    got = await server.request("GET", SCALE)
    m = created["metadata"]
    assert (got.status, got.content_type, got.json()) == (200, "application/json", {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "default", "uid": m["uid"], "resourceVersion": m["resourceVersion"],
                     "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": 1}, "status": {"replicas": 0, "selector": "app=web"}})
    as_proto = await server.request("GET", SCALE, headers={"Accept": PROTOBUF})
    api_version, kind, raw = protobuf.decode_envelope(as_proto.body)
    scale = autoscaling_pb2.Scale.FromString(raw)
    assert (as_proto.content_type, api_version, kind, scale.spec.replicas, scale.status.selector) == (
        PROTOBUF, "autoscaling/v1", "Scale", 1, "app=web")


async def test_scale_put_protobuf_as_client_go_scale_client_sends_it(server: Server) -> None:
    await server.create(DEPLOYMENTS, DEPLOYMENT)
    got = await server.request("GET", SCALE, headers={"Accept": PROTOBUF})
    _, _, raw = protobuf.decode_envelope(got.body)
    scale = autoscaling_pb2.Scale.FromString(raw)
    scale.spec.replicas = 4
    put = await server.request("PUT", SCALE, body=protobuf.encode_envelope(
        "autoscaling/v1", "Scale", scale.SerializeToString()), headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF})
    api_version, kind, raw = protobuf.decode_envelope(put.body)
    assert (put.status, api_version, kind, autoscaling_pb2.Scale.FromString(raw).spec.replicas) == (
        200, "autoscaling/v1", "Scale", 4)
    stale = await server.request("PUT", SCALE, body=protobuf.encode_envelope(
        "autoscaling/v1", "Scale", scale.SerializeToString()), headers={"Content-Type": PROTOBUF})
    assert (stale.status, stale.json()) == (409, kube.status(409, "Conflict", (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your '
        "changes to the latest version and try again"), {"name": "web", "group": "apps", "kind": "deployments"}))
    wrong_kind = await server.request("PUT", SCALE, body=protobuf.encode_envelope(
        "apps/v1", "Deployment", scale.SerializeToString()), headers={"Content-Type": PROTOBUF})
    assert (wrong_kind.status, wrong_kind.json()["message"]) == (400, (
        "the object provided is unrecognized (must be of type Scale): object of kind Deployment in version apps/v1"))


@pytest.mark.parametrize(("content_type", "document"), [
    ("application/merge-patch+json", {"spec": {"replicas": 5}}),
    ("application/strategic-merge-patch+json", {"spec": {"replicas": 5}}),
    ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": 5}]),
    ("application/apply-patch+yaml", {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 5}}),
])
async def test_scale_patch_over_http(server: Server, content_type: str, document: Any) -> None:
    await server.create(DEPLOYMENTS, DEPLOYMENT)
    query = "?fieldManager=kubectl&force=true" if "apply" in content_type else ""
    resp = await server.request("PATCH", SCALE + query, body=orjson.dumps(document),
                                headers={"Content-Type": content_type})
    assert (resp.status, resp.json()["kind"], resp.json()["spec"]["replicas"]) == (200, "Scale", 5)
    stored = (await server.request("GET", f"{DEPLOYMENTS}/web")).json()
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (5, 2)


async def test_scale_verbs_and_subresources_not_served(server: Server) -> None:
    await server.create(DEPLOYMENTS, DEPLOYMENT)
    delete = await server.request("DELETE", SCALE)
    assert (delete.status, delete.json()) == (405, kube.method_not_allowed())
    daemon_sets = "/apis/apps/v1/namespaces/default/daemonsets"
    await server.create(daemon_sets, {**DEPLOYMENT, "kind": "DaemonSet"})
    missing = await server.request("GET", f"{daemon_sets}/web/scale")
    assert (missing.status, missing.json()) == (404, kube.not_found_path())


# ---------------------------------------------------------------- Tables


def cells(table: Obj) -> list[list[Any]]:
    return [row["cells"] for row in table["rows"]]


async def test_deployment_table(server: Server) -> None:
    await server.create(DEPLOYMENTS, DEPLOYMENT)
    resp = await server.request("GET", DEPLOYMENTS, headers={"Accept": TABLE})
    table = resp.json()
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0), ("Available", "string", 0),
        ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1)]
    (row,) = cells(table)
    assert row[:4] == ["web", "0/1", 0, 0] and row[5:] == ["web", "nginx", "app=web"]
    assert table["columnDefinitions"][2]["description"] == (
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.")


async def test_job_cronjob_and_binding_tables(server: Server) -> None:
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    job_template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}
    job = await server.create(jobs, {"metadata": {"name": "pi"}, "spec": {"template": job_template}})
    (row,) = cells((await server.request("GET", jobs, headers={"Accept": TABLE})).json())
    uid = job["metadata"]["uid"]
    assert row[:3] == ["pi", "0/1", ""]  # kube 1.28's columns: no Status
    assert row[4:] == ["pi", "perl", f"batch.kubernetes.io/controller-uid={uid}"]
    cron_jobs = "/apis/batch/v1/namespaces/default/cronjobs"
    await server.create(cron_jobs, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": job_template}}}})
    (row,) = cells((await server.request("GET", cron_jobs, headers={"Accept": TABLE})).json())
    assert row[:5] == ["nightly", "0 3 * * *", "False", 0, "<none>"]  # kube 1.28's columns: no Timezone
    assert row[6:] == ["pi", "perl", "<none>"]
    bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    await server.create(bindings, {"metadata": {"name": "read"}, "roleRef": {"kind": "Role", "name": "reader"},
                                   "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                                                {"kind": "ServiceAccount", "name": "ci", "namespace": "build"}]})
    (row,) = cells((await server.request("GET", bindings, headers={"Accept": TABLE})).json())
    assert [row[0], row[1], *row[3:]] == ["read", "Role/reader", "alice", "devs", "build/ci"]
    roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
    await server.create(roles, {"metadata": {"name": "reader"}, "rules": [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]})
    table = (await server.request("GET", roles, headers={"Accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
