"""pods/log, pods/exec, pods/attach and pods/portforward over HTTP, through both transports: Capstan has no
kubelets, so each answers what kube-apiserver 1.28 answers before and after it fails to reach one (the checks of
pkg/registry/core/pod's LogLocation and streamLocation word for word, 204 for the log of a Pod on no node)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
NS = "/api/v1/namespaces/default"


async def pod(server: Server, name: str, containers: list[str], *, init: tuple[str, ...] = (),
              node: str = "") -> None:
    await server.create(f"{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": c, "image": "i"} for c in containers],
        "initContainers": [{"name": c, "image": "i"} for c in init]}})
    if node:
        bound = await server.request("POST", f"{NS}/pods/{name}/binding", json={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"kind": "Node", "name": node}})
        assert bound.status == 201


async def node(server: Server, name: str, addresses: list[Obj], port: int = 0) -> None:
    status: Obj = {"addresses": addresses}
    if port:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
    await server.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                          "status": status})


def failure(code: int, message: str, reason: str = "") -> Obj:
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:
        out["reason"] = reason
    return out | {"code": code}


def bad(message: str) -> Obj:
    return failure(400, message, "BadRequest")


IP = [{"type": "ExternalIP", "address": "203.0.113.9"}, {"type": "InternalIP", "address": "127.0.0.9"}]
# (case, method, subresource and query, pod's containers, init containers, node ("": none), node's addresses
# (None: no Node object), answer code, answer (None: no body))
CASES = [
    ("log of an unbound pod", "GET", "log", ["a"], (), "", None, 204, None),
    ("log names no container of several", "GET", "log", ["a", "b"], ("i",), "", None, 400,
     bad("a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]")),
    ("log names a container the pod lacks", "GET", "log?container=z", ["a", "b"], (), "", None, 400,
     bad("container z is not valid for pod p")),
    ("log of an init container", "GET", "log?container=i", ["a", "b"], ("i",), "", None, 204, None),
    ("log on a missing node", "GET", "log", ["a"], (), "n1", None, 404,
     failure(404, 'nodes "n1" not found', "NotFound") | {"details": {"name": "n1", "kind": "nodes"}}),
    ("log on a node without addresses", "GET", "log", ["a"], (), "n1", [], 500,
     failure(500, "no preferred addresses found; known addresses: []")),
    ("log on a node whose kubelet is unreachable", "GET", "log?container=a", ["a", "b"], (), "n1", IP, 500,
     failure(500, 'Get "https://127.0.0.9:10250/containerLogs/default/p/a": dial tcp 127.0.0.9:10250: connect: '
                  "connection refused")),
    ("exec on an unbound pod", "POST", "exec?command=ls", ["a"], (), "", None, 400,
     bad("pod p does not have a host assigned")),
    ("exec by GET names no container of several", "GET", "exec?command=ls", ["a", "b"], (), "", None, 400,
     bad("a container name must be specified for pod p, choose one of: [a b]")),
    ("attach names a container the pod lacks", "POST", "attach?container=z", ["a"], (), "", None, 400,
     bad("container z is not valid for pod p")),
    ("exec on a node whose kubelet is unreachable", "POST", "exec?command=ls", ["a"], (), "n1", IP, 500,
     failure(500, "error dialing backend: dial tcp 127.0.0.9:10250: connect: connection refused")),
    ("portforward on an unbound pod", "POST", "portforward?ports=80", ["a", "b"], (), "", None, 400,
     bad("pod p does not have a host assigned")),
]


@pytest.mark.parametrize(("method", "sub", "containers", "init", "node_name", "addresses", "code", "answer"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_kubelet_subresources_answer_as_kube_without_a_kubelet(
    server: Server, method: str, sub: str, containers: list[str], init: tuple[str, ...], node_name: str,
    addresses: list[Obj] | None, code: int, answer: Obj | None,
) -> None:
    await pod(server, "p", containers, init=init, node=node_name)
    if addresses is not None:
        await node(server, node_name, addresses)
    resp = await server.request(method, f"{NS}/pods/p/{sub}")
    assert resp.status == code
    if answer is None:
        assert resp.body == b""
    else:
        assert resp.json() == answer


async def test_the_kubelet_port_is_the_nodes(server: Server) -> None:
    await pod(server, "p", ["a"], node="n1")
    await node(server, "n1", [{"type": "Hostname", "address": "localhost"}], port=10255)
    resp = await server.request("GET", f"{NS}/pods/p/portforward?ports=80")
    assert resp.json()["message"] == "error dialing backend: dial tcp localhost:10255: connect: connection refused"


async def test_a_missing_pod_and_discovery(server: Server) -> None:
    missing = await server.request("GET", f"{NS}/pods/nope/log")
    assert (missing.status, missing.json()["message"]) == (404, 'pods "nope" not found')
    listed = {r["name"]: r for r in (await server.request("GET", "/api/v1")).json()["resources"]}
    assert {name: (listed[name]["kind"], listed[name]["verbs"]) for name in (
        "pods/log", "pods/exec", "pods/attach", "pods/portforward")} == {
        "pods/log": ("Pod", ["get"]), "pods/exec": ("PodExecOptions", ["create", "get"]),
        "pods/attach": ("PodAttachOptions", ["create", "get"]),
        "pods/portforward": ("PodPortForwardOptions", ["create", "get"])}
