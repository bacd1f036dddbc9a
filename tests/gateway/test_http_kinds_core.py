"""The core/v1 kinds over HTTP, through both transports: JSON and protobuf bodies both ways (the Kubernetes
`k8s\\x00` envelope and upstream-numbered messages), Tables as kubectl asks for them, /binding and the
pods/proxy, which needs a kubelet (absent: 404), and discovery of the kinds."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from capstan.api.core.v1 import core_pb2 as core
from capstan.api.meta.v1 import meta_pb2
from gateway.codecs import protobuf as protobuf_codec
from tests.gateway.conftest import Server

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"


def envelope(message: Message, kind: str) -> bytes:
    return protobuf_codec.encode_envelope("v1", kind, message.SerializeToString())


def pod_message(name: str) -> core.Pod:
    return core.Pod(metadata={"name": name}, spec=core.PodSpec(containers=[core.Container(
        name="app", image="nginx:1.27", ports=[core.ContainerPort(containerPort=80)],
        livenessProbe=core.Probe(handler=core.ProbeHandler(httpGet=core.HTTPGetAction(path="/healthz"))))]))


async def test_a_protobuf_pod_is_created_defaulted_and_read_back_in_both_encodings(server: Server) -> None:
    created = await server.request("POST", PODS, body=envelope(pod_message("web"), "Pod"),
                                   headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF})
    assert (created.status, created.content_type) == (201, PROTOBUF)
    api_version, kind, raw = protobuf_codec.decode_envelope(created.body)
    assert (api_version, kind) == ("v1", "Pod")
    stored = core.Pod.FromString(raw)
    container = stored.spec.containers[0]
    assert (container.imagePullPolicy, container.terminationMessagePath, container.ports[0].protocol) == (
        "IfNotPresent", "/dev/termination-log", "TCP")
    assert (container.livenessProbe.handler.httpGet.path, container.livenessProbe.periodSeconds) == ("/healthz", 10)
    assert (stored.spec.restartPolicy, stored.spec.dnsPolicy, stored.status.phase) == ("Always", "ClusterFirst",
                                                                                         "Pending")
    as_json = (await server.request("GET", f"{PODS}/web")).json()
    assert as_json["spec"]["containers"][0]["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 0,
                                                                            "scheme": "HTTP"}
    again = await server.request("GET", f"{PODS}/web", headers={"Accept": PROTOBUF})
    assert protobuf_codec.decode_envelope(again.body)[2] == raw  # the same bytes, read back


async def test_a_json_service_reads_back_as_protobuf(server: Server) -> None:
    created = await server.create(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                             "spec": {"type": "NodePort", "selector": {"app": "web"},
                                                      "ports": [{"port": 80, "targetPort": "http"}]}})
    got = await server.request("GET", f"{SERVICES}/web", headers={"Accept": PROTOBUF})
    svc = core.Service.FromString(protobuf_codec.decode_envelope(got.body)[2])
    assert (svc.spec.clusterIP, svc.spec.ports[0].nodePort) == (created["spec"]["clusterIP"],
                                                                created["spec"]["ports"][0]["nodePort"])
    assert (svc.spec.ports[0].targetPort.type, svc.spec.ports[0].targetPort.strVal) == (1, "http")
    assert list(svc.spec.ipFamilies) == ["IPv4"]


async def test_a_protobuf_list_of_pods(server: Server) -> None:
    for name in ("a", "b"):
        await server.request("POST", PODS, body=envelope(pod_message(name), "Pod"),
                             headers={"Content-Type": PROTOBUF})
    listed = await server.request("GET", PODS, headers={"Accept": PROTOBUF})
    api_version, kind, raw = protobuf_codec.decode_envelope(listed.body)
    assert (api_version, kind) == ("v1", "PodList")
    assert [p.metadata.name for p in core.PodList.FromString(raw).items] == ["a", "b"]


async def test_binding_over_http_in_json_and_protobuf(server: Server) -> None:
    for name in ("a", "b"):
        await server.create(PODS, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    bound = await server.request("POST", f"{PODS}/a/binding", json={
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"}, "target": {"kind": "Node", "name": "n1"}})
    assert (bound.status, bound.json()) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                  "status": "Success", "code": 201})
    binding = core.Binding(metadata={"name": "b"}, target=core.ObjectReference(kind="Node", name="n2"))
    as_proto = await server.request("POST", f"{PODS}/b/binding", body=envelope(binding, "Binding"),
                                    headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF})
    assert as_proto.status == 201, as_proto.body
    api_version, kind, raw = protobuf_codec.decode_envelope(as_proto.body)
    assert (api_version, kind, meta_pb2.Status.FromString(raw).status) == ("v1", "Status", "Success")
    nodes = {name: (await server.request("GET", f"{PODS}/{name}")).json()["spec"]["nodeName"] for name in "ab"}
    assert nodes == {"a": "n1", "b": "n2"}


async def test_discovery_lists_the_core_kinds(server: Server) -> None:
    listed = {r["name"]: r for r in (await server.request("GET", "/api/v1")).json()["resources"]}
    assert listed["pods"] | {"storageVersionHash": "-"} == {
        "name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "-"}
    assert listed["pods/binding"] == {"name": "pods/binding", "singularName": "", "namespaced": True,
                                      "kind": "Binding", "verbs": ["create"]}
    assert (listed["nodes"]["namespaced"], listed["persistentvolumes"]["namespaced"]) == (False, False)
    assert listed["services/status"]["verbs"] == ["get", "patch", "update"]


async def test_pod_table(server: Server) -> None:
    await server.create(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "node-1", "containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}})
    resp = await server.request("GET", PODS, headers={"Accept": TABLE})
    doc = resp.json()
    assert (resp.status, doc["kind"]) == (200, "Table")
    assert [(c["name"], c["priority"]) for c in doc["columnDefinitions"]] == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
        ("Nominated Node", 1), ("Readiness Gates", 1)]
    (row,) = doc["rows"]
    assert row["cells"][:4] == ["web", "0/2", "Pending", "0"]
    assert row["cells"][5:] == ["<none>", "node-1", "<none>", "<none>"]
    assert row["object"]["kind"] == "PartialObjectMetadata"


async def test_service_and_node_tables(server: Server) -> None:
    await server.create(SERVICES, {"metadata": {"name": "web"}, "spec": {"clusterIP": "10.96.0.50", "selector": {
        "app": "web"}, "ports": [{"port": 80}]}})
    resp = await server.request("GET", f"{SERVICES}/web", headers={"Accept": TABLE})
    (row,) = resp.json()["rows"]
    assert row["cells"][:5] == ["web", "ClusterIP", "10.96.0.50", "<none>", "80/TCP"]
    assert row["cells"][6] == "app=web"
    await server.create("/api/v1/nodes", {"metadata": {"name": "node-1"}, "status": {
        "conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.32.0"}}})
    nodes = (await server.request("GET", "/api/v1/nodes", headers={"Accept": TABLE})).json()
    assert [r["cells"][:3] for r in nodes["rows"]] == [["node-1", "Ready", "<none>"]]
    assert nodes["rows"][0]["cells"][4] == "v1.32.0"
