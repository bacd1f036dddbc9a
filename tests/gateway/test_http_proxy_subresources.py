"""pods/proxy, services/proxy and nodes/proxy over HTTP, through both transports: Capstan dials nothing, so each
answers what kube-apiserver 1.28 answers when the backend does not answer (ResourceLocation's checks word for
word, then the proxy transport's 503 `error trying to reach service: dial tcp ...`), for every method and for
paths that go on past the subresource."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import requestinfo
from tests.gateway.conftest import Server

Obj = dict[str, Any]
NS = "/api/v1/namespaces/default"


def failure(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                "reason": reason}
    if details is not None:
        out["details"] = details
    return out | {"code": code}


def unreachable(address: str) -> Obj:
    return failure(503, "ServiceUnavailable",
                   f"error trying to reach service: dial tcp {address}: connect: connection refused")


async def pod(server: Server, name: str, ports: list[int], ips: list[str]) -> None:
    await server.create(f"{NS}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {
        "app": "web"}}, "spec": {"containers": [{"name": "a", "image": "i", "ports": [
            {"containerPort": p} for p in ports]}]}})
    if ips:
        live = (await server.request("GET", f"{NS}/pods/{name}")).json()
        live["status"] = {"phase": "Running", "podIP": ips[0], "podIPs": [{"ip": ip} for ip in ips]}
        assert (await server.request("PUT", f"{NS}/pods/{name}/status", json=live)).status == 200


POD_CASES = [
    ("a pod without an IP", "GET", "p/proxy/", [80], [], 400, failure(400, "BadRequest", "address not allowed")),
    ("the first container port", "GET", "p/proxy/metrics", [8080, 9090], ["10.1.2.3"], 503,
     unreachable("10.1.2.3:8080")),
    ("the port named", "POST", "p:9090/proxy/a/b", [8080], ["10.1.2.3"], 503, unreachable("10.1.2.3:9090")),
    ("the scheme's port", "PUT", "https:p:/proxy", [], ["10.1.2.3"], 503, unreachable("10.1.2.3:443")),
    ("http's port", "DELETE", "p/proxy/x", [], ["fd00::5"], 503, unreachable("[fd00::5]:80")),
    ("a loopback IP", "PATCH", "p/proxy", [80], ["127.0.0.1"], 400, failure(400, "BadRequest", "address not allowed")),
    ("an invalid name", "GET", "a:p:1:2/proxy", [80], ["10.1.2.3"], 400,
     failure(400, "BadRequest", 'invalid pod request "a:p:1:2"')),
    ("a missing pod", "GET", "q/proxy", [80], ["10.1.2.3"], 404,
     failure(404, "NotFound", 'pods "q" not found', {"name": "q", "kind": "pods"})),
]


@pytest.mark.parametrize(("method", "path", "ports", "ips", "code", "answer"), [c[1:] for c in POD_CASES],
                         ids=[c[0] for c in POD_CASES])
async def test_pod_proxy(server: Server, method: str, path: str, ports: list[int], ips: list[str], code: int,
                         answer: Obj) -> None:
    await pod(server, "p", ports, ips)
    resp = await server.request(method, f"{NS}/pods/{path}")
    assert (resp.status, resp.json()) == (code, answer)


async def service(server: Server, ports: list[Obj], subsets: list[Obj] | None) -> None:
    """A Service without a selector and the Endpoints written for it (None: none written)."""
    await server.create(f"{NS}/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                           "spec": {"ports": ports}})
    if subsets is not None:
        await server.create(f"{NS}/endpoints", {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "s"},
                                                "subsets": subsets})


def subset(ip: str, target: str | None, port: int = 8080, name: str = "") -> Obj:
    address: Obj = {"ip": ip}
    if target is not None:
        address["targetRef"] = {"kind": "Pod", "namespace": "default", "name": target}
    return {"addresses": [address], "ports": [{"name": name, "port": port, "protocol": "TCP"}]}


SERVICE_CASES = [
    ("no service port of that number", "GET", "s:81/proxy/", [{"port": 80}], [], 503,
     failure(503, "ServiceUnavailable", 'no service port 81 found for service "s"')),
    ("no subsets", "GET", "s:80/proxy/", [{"port": 80}], [], 503,
     failure(503, "ServiceUnavailable", 'no endpoints available for service "s"')),
    ("an endpoint: its pod IP dialed", "POST", "s/proxy/a/b", [{"port": 80}], [subset("10.1.2.3", "p")], 503,
     unreachable("10.1.2.3:8080")),
    ("by port number, its name", "PATCH", "https:s:80/proxy", [{"name": "web", "port": 80}],
     [subset("10.1.2.3", "p", 8443, "web")], 503, unreachable("10.1.2.3:8443")),
    ("an address without a pod", "PUT", "s/proxy", [{"port": 80}], [subset("10.9.9.9", None)], 503,
     failure(503, "ServiceUnavailable", 'no endpoints available for service "s"')),
    ("an address whose pod has another IP", "GET", "s/proxy", [{"port": 80}], [subset("10.9.9.9", "p")], 503,
     failure(503, "ServiceUnavailable", 'no endpoints available for service "s"')),
    ("a port name the endpoints lack", "GET", "s:web/proxy", [{"port": 80}], [subset("10.1.2.3", "p")], 503,
     failure(503, "ServiceUnavailable", 'no endpoints available for service "s:web"')),
    ("a missing service", "DELETE", "t:80/proxy", [{"port": 80}], None, 404,
     failure(404, "NotFound", 'services "t" not found', {"name": "t", "kind": "services"})),
    ("missing endpoints", "GET", "s/proxy", [{"port": 80}], None, 404,
     failure(404, "NotFound", 'endpoints "s" not found', {"name": "s", "kind": "endpoints"})),
    ("an invalid name", "GET", "ftp:s:80/proxy", [{"port": 80}], None, 400,
     failure(400, "BadRequest", 'invalid service request "ftp:s:80"')),
]


@pytest.mark.parametrize(("method", "path", "ports", "subsets", "code", "answer"),
                         [c[1:] for c in SERVICE_CASES], ids=[c[0] for c in SERVICE_CASES])
async def test_service_proxy(server: Server, method: str, path: str, ports: list[Obj], subsets: list[Obj] | None,
                             code: int, answer: Obj) -> None:
    await pod(server, "p", [8080], ["10.1.2.3"])
    await service(server, ports, subsets)
    resp = await server.request(method, f"{NS}/services/{path}")
    assert (resp.status, resp.json()) == (code, answer)


async def node(server: Server, addresses: list[Obj], port: int = 0) -> None:
    status: Obj = {"addresses": addresses}
    if port:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
    await server.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                          "status": status})


NODE_CASES = [
    ("the kubelet", "GET", "n1/proxy/stats/summary", [{"type": "InternalIP", "address": "10.0.0.1"}], 0, 503,
     unreachable("10.0.0.1:10250")),
    ("the kubelet's own port", "POST", "n1:10255/proxy/", [{"type": "InternalIP", "address": "10.0.0.1"}], 10255,
     503, unreachable("10.0.0.1:10255")),
    ("another port", "DELETE", "n1:9100/proxy/metrics", [{"type": "Hostname", "address": "node-1"}], 0, 503,
     unreachable("node-1:9100")),
    ("a loopback address", "GET", "n1/proxy", [{"type": "InternalIP", "address": "127.0.0.1"}], 0, 400,
     failure(400, "BadRequest", "address not allowed")),
    ("no address", "GET", "n1/proxy", [], 0, 500, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                   "status": "Failure", "message":
                                                   "no preferred addresses found; known addresses: []", "code": 500}),
    ("a missing node", "GET", "n2/proxy", [], 0, 404,
     failure(404, "NotFound", 'nodes "n2" not found', {"name": "n2", "kind": "nodes"})),
]


@pytest.mark.parametrize(("method", "path", "addresses", "port", "code", "answer"), [c[1:] for c in NODE_CASES],
                         ids=[c[0] for c in NODE_CASES])
async def test_node_proxy(server: Server, method: str, path: str, addresses: list[Obj], port: int, code: int,
                          answer: Obj) -> None:
    await node(server, addresses, port)
    resp = await server.request(method, f"/api/v1/nodes/{path}")
    assert (resp.status, resp.json()) == (code, answer)


async def test_only_connecters_answer_other_methods(server: Server) -> None:
    """PUT on pods/exec (whose verbs are create and get) is kube's 405, as is any method but GET on /log."""
    await pod(server, "p", [80], [])
    for method, sub in (("PUT", "exec"), ("DELETE", "log")):
        resp = await server.request(method, f"{NS}/pods/p/{sub}")
        assert (resp.status, resp.json()["reason"]) == (405, "MethodNotAllowed"), (method, sub)


PARSED = [
    ("GET", "/api/v1/namespaces/ns/services/x:80/proxy/a/b",
     requestinfo.RequestInfo("get", "", "v1", "services", "ns", "x:80", "proxy", "/a/b")),
    ("DELETE", "/api/v1/nodes/n/proxy/a/",
     requestinfo.RequestInfo("delete", "", "v1", "nodes", "", "n", "proxy", "/a/")),
    ("PUT", "/api/v1/namespaces/ns/pods/p/proxy/",
     requestinfo.RequestInfo("update", "", "v1", "pods", "ns", "p", "proxy", "/")),
    ("POST", "/api/v1/namespaces/ns/pods/p/proxy",
     requestinfo.RequestInfo("create", "", "v1", "pods", "ns", "p", "proxy", "")),
    ("GET", "/api/v1/namespaces/ns/pods/p/log/more", None),
]


@pytest.mark.parametrize(("method", "path", "parsed"), PARSED)
def test_proxy_paths_parse_as_kube_parses_them(method: str, path: str, parsed: requestinfo.RequestInfo | None
                                               ) -> None:
    assert requestinfo.parse(method, path, {}) == parsed
