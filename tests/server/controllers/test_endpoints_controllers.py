"""The endpoint, endpointslice and endpointslicemirroring controllers through a real core over gRPC (the managed
core, which runs kube-controller-manager's parts): a Service with a selector gets an Endpoints and
EndpointSlices listing its Pods as a test marks them Ready through /status, as kube's controllers write them
(pkg/controller/endpoint, pkg/controller/endpointslice, pkg/controller/endpointslicemirroring); a Service
without a selector keeps the user's Endpoints, mirrored into a slice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.server.client import Client, Obj, path
from tests.server.managed import managed_client_fixture  # noqa: F401  (the managed_client fixture)

NS = "default"
SLICES = "discovery.k8s.io"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
IPS = {"a": "10.244.0.1", "b": "10.244.0.2", "c": "10.244.0.3"}
HTTP = {"name": "http", "port": 80, "targetPort": 8080}


def service(selector: dict[str, str] | None, ports: list[Obj], labels: dict[str, str] | None = None,
            **spec: Any) -> Obj:
    body: Obj = {"ports": ports, **spec}
    if selector:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": labels or {"tier": "front"}},
            "spec": body}


def pod(name: str, *, labels: dict[str, str] | None = None, ports: list[Obj] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx", "ports": ports or []}], **spec}}


async def mark(client: Client, name: str, *, ready: bool, ip: str | None = None) -> None:
    """What a kubelet reports: Running, the Pod's IP, and its Ready condition."""
    current = await client.get(path("pods", NS, name))
    address = ip or IPS[name]
    current["status"] = {
        "phase": "Running", "podIP": address, "podIPs": [{"ip": address}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                        "lastTransitionTime": "2024-05-01T10:00:00Z"}]}
    await client.update(path("pods", NS, name, subresource="status"), current)


async def settled(fetch: Callable[[], Awaitable[Any]], want: Any, timeout: float = 3.0) -> Any:
    """What fetch() answers once it equals `want`, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if got == want:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"got {got}, wanted {want}")
        await asyncio.sleep(0.05)


async def endpoints_of(client: Client, name: str = "web") -> Any:
    try:
        return (await client.get(path("endpoints", NS, name))).get("subsets")
    except Exception:
        return "missing"


async def slices_of(client: Client, name: str = "web") -> list[Obj]:
    _, items = await client.list(path("endpointslices", NS, group=SLICES),
                                 labelSelector=f"{SERVICE_NAME}={name}")
    return items


async def slice_bodies(client: Client, name: str = "web") -> list[Obj]:
    """Each slice's addressType, endpoints and ports, ordered by its first address."""
    bodies = [{k: s.get(k) for k in ("addressType", "endpoints", "ports")} for s in await slices_of(client, name)]
    return sorted(bodies, key=lambda b: str((b["endpoints"] or [{}])[0].get("addresses")))


def ref(uids: dict[str, str], name: str) -> Obj:
    return {"kind": "Pod", "namespace": NS, "name": name, "uid": uids[name]}


def address(uids: dict[str, str], name: str, **extra: Any) -> Obj:
    return {"ip": IPS[name], **extra, "targetRef": ref(uids, name)}


def endpoint(uids: dict[str, str], name: str, *, ready: bool, serving: bool | None = None,
             terminating: bool = False, **extra: Any) -> Obj:
    conditions = {"ready": ready, "serving": ready if serving is None else serving, "terminating": terminating}
    return {"addresses": [IPS[name]], "conditions": conditions, **extra, "targetRef": ref(uids, name)}


def port(number: int, name: str = "http") -> Obj:
    return {"name": name, "protocol": "TCP", "port": number}


U = dict[str, str]
CASES = [
    pytest.param(
        service({"app": "web"}, [HTTP]), [pod("a"), pod("b")], {},
        lambda u: None,
        lambda u: [{"addressType": "IPv4", "endpoints": None, "ports": None}],
        id="no-pod-has-an-ip"),
    pytest.param(
        service({"app": "web"}, [HTTP]), [pod("a"), pod("b"), pod("c", labels={"app": "other"})],
        {"a": True, "b": False, "c": True},
        lambda u: [{"addresses": [address(u, "a")], "notReadyAddresses": [address(u, "b")],
                    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}],
        lambda u: [{"addressType": "IPv4", "ports": [port(8080)],
                    "endpoints": [endpoint(u, "a", ready=True), endpoint(u, "b", ready=False)]}],
        id="ready-and-not-ready"),
    pytest.param(
        service({"app": "web"}, [{"name": "http", "port": 80, "targetPort": "web"}]),
        [pod("a", ports=[{"name": "web", "containerPort": 9000}]), pod("b", ports=[{"containerPort": 8080}])],
        {"a": True, "b": True},
        lambda u: [{"addresses": [address(u, "a")], "ports": [{"name": "http", "port": 9000, "protocol": "TCP"}]}],
        lambda u: [{"addressType": "IPv4", "ports": [port(9000)], "endpoints": [endpoint(u, "a", ready=True)]},
                   {"addressType": "IPv4", "ports": None, "endpoints": [endpoint(u, "b", ready=True)]}],
        id="named-target-port"),
    pytest.param(
        service({"app": "web"}, [{"port": 80}], publishNotReadyAddresses=True), [pod("a")], {"a": False},
        lambda u: [{"addresses": [address(u, "a")], "ports": [{"port": 80, "protocol": "TCP"}]}],
        lambda u: [{"addressType": "IPv4", "ports": [port(80, "")],
                    "endpoints": [endpoint(u, "a", ready=True, serving=False)]}],
        id="publish-not-ready-addresses"),
    pytest.param(
        service({"app": "web"}, [], clusterIP="None"),
        [pod("a", hostname="a-host", subdomain="web", nodeName="node-1")], {"a": True},
        lambda u: [{"addresses": [address(u, "a", hostname="a-host", nodeName="node-1")]}],
        lambda u: [{"addressType": "IPv4", "ports": None,
                    "endpoints": [{**endpoint(u, "a", ready=True, hostname="a-host"), "nodeName": "node-1"}]}],
        id="headless-without-ports"),
]


@pytest.mark.parametrize(("svc", "pods", "readiness", "subsets", "slices"), CASES)
async def test_service_endpoints_and_slices(managed_client: Client, svc: Obj, pods: list[Obj],
                                            readiness: dict[str, bool], subsets: Callable[[U], Any],
                                            slices: Callable[[U], Any]) -> None:
    await managed_client.create(path("services", NS), svc)
    uids = {p["metadata"]["name"]: (await managed_client.create(path("pods", NS), p))["metadata"]["uid"]
            for p in pods}
    for name, ready in readiness.items():
        await mark(managed_client, name, ready=ready)
    await settled(lambda: endpoints_of(managed_client), subsets(uids))
    await settled(lambda: slice_bodies(managed_client), slices(uids))


async def test_pods_becoming_ready_unready_and_deleted(managed_client: Client) -> None:
    await managed_client.create(path("services", NS), service({"app": "web"}, [HTTP]))
    uid = (await managed_client.create(path("pods", NS), pod("a")))["metadata"]["uid"]
    u = {"a": uid}
    placeholder = [{"addressType": "IPv4", "endpoints": None, "ports": None}]
    await settled(lambda: endpoints_of(managed_client), None)
    await settled(lambda: slice_bodies(managed_client), placeholder)
    ports = [{"name": "http", "port": 8080, "protocol": "TCP"}]
    steps: list[tuple[bool | None, Any, Any]] = [
        (True, [{"addresses": [address(u, "a")], "ports": ports}],
         [{"addressType": "IPv4", "ports": [port(8080)], "endpoints": [endpoint(u, "a", ready=True)]}]),
        (False, [{"notReadyAddresses": [address(u, "a")], "ports": ports}],
         [{"addressType": "IPv4", "ports": [port(8080)], "endpoints": [endpoint(u, "a", ready=False)]}]),
        (None, None, placeholder),
    ]
    for ready, subsets, slices in steps:
        if ready is None:
            await managed_client.delete(path("pods", NS, "a"), gracePeriodSeconds=0)
        else:
            await mark(managed_client, "a", ready=ready)
        await settled(lambda: endpoints_of(managed_client), subsets)
        await settled(lambda: slice_bodies(managed_client), slices)


async def test_metadata_as_kube_writes_it(managed_client: Client) -> None:
    svc = await managed_client.create(path("services", NS), service({"app": "web"}, [HTTP], labels={"tier": "front"}))
    await managed_client.create(path("pods", NS), pod("a"))
    await mark(managed_client, "a", ready=True)
    found = await _slices_with_endpoints(managed_client)
    metadata = found["metadata"]
    assert metadata["generateName"] == "web-" and metadata["name"].startswith("web-")
    assert metadata["labels"] == {"tier": "front", SERVICE_NAME: "web",
                                  MANAGED_BY: "endpointslice-controller.k8s.io"}
    assert metadata["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                            "uid": svc["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]
    assert metadata["annotations"][TRIGGER] == "2024-05-01T10:00:00Z"
    endpoints = await managed_client.get(path("endpoints", NS, "web"))
    assert endpoints["metadata"]["labels"] == {"tier": "front"}
    assert endpoints["metadata"]["annotations"] == {TRIGGER: "2024-05-01T10:00:00Z"}
    assert endpoints["metadata"]["managedFields"][0]["manager"] == "kube-controller-manager"


async def _slices_with_endpoints(client: Client) -> Obj:
    deadline = time.monotonic() + 3.0
    while True:
        found = [s for s in await slices_of(client) if s.get("endpoints")]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError("no slice lists the ready Pod")
        await asyncio.sleep(0.05)


def custom_endpoints(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": "web", "labels": labels or {"tier": "front"}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata,
            "subsets": [{"addresses": [{"ip": "10.1.2.3", "nodeName": "node-1"}],
                         "notReadyAddresses": [{"ip": "10.1.2.4"}],
                         "ports": [{"name": "http", "port": 8080}]},
                        {"addresses": [{"ip": "fd00::5"}], "ports": [{"name": "http", "port": 8080}]}]}


MIRRORED = [
    {"addressType": "IPv4", "ports": [port(8080)],
     "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}, "nodeName": "node-1"},
                   {"addresses": ["10.1.2.4"], "conditions": {"ready": False}}]},
    {"addressType": "IPv6", "ports": [port(8080)],
     "endpoints": [{"addresses": ["fd00::5"], "conditions": {"ready": True}}]},
]
MIRRORING = [
    pytest.param(service(None, [HTTP]), custom_endpoints(), MIRRORED, id="mirrored"),
    pytest.param(service(None, [HTTP]), custom_endpoints({"endpointslice.kubernetes.io/skip-mirror": "true"}), [],
                 id="skip-mirror"),
    pytest.param(service(None, [HTTP]),
                 custom_endpoints(annotations={"control-plane.alpha.kubernetes.io/leader": "{}"}), [],
                 id="leader-election-record"),
]


@pytest.mark.parametrize(("svc", "endpoints", "slices"), MIRRORING)
async def test_endpoints_without_selector_are_mirrored(managed_client: Client, svc: Obj, endpoints: Obj,
                                                       slices: list[Obj]) -> None:
    await managed_client.create(path("services", NS), svc)
    created = await managed_client.create(path("endpoints", NS), endpoints)
    await settled(lambda: slice_bodies(managed_client), slices)
    await asyncio.sleep(0.3)  # the endpoint controller leaves a Service without selector alone
    assert (await managed_client.get(path("endpoints", NS, "web")))["subsets"] == created["subsets"]
    for mirrored in await slices_of(managed_client):
        metadata = mirrored["metadata"]
        assert metadata["generateName"] == "web-"
        assert metadata["labels"] == {**endpoints["metadata"]["labels"], SERVICE_NAME: "web",
                                      MANAGED_BY: "endpointslicemirroring-controller.k8s.io"}
        assert metadata["ownerReferences"] == [{"apiVersion": "v1", "kind": "Endpoints", "name": "web",
                                                "uid": created["metadata"]["uid"], "controller": True,
                                                "blockOwnerDeletion": True}]


async def test_mirrored_slices_follow_the_endpoints(managed_client: Client) -> None:
    await managed_client.create(path("services", NS), service(None, [HTTP]))
    created = await managed_client.create(path("endpoints", NS), custom_endpoints(annotations={"note": "kept"}))
    await settled(lambda: slice_bodies(managed_client), MIRRORED)
    assert all(s["metadata"]["annotations"] == {"note": "kept"} for s in await slices_of(managed_client))
    created["subsets"] = created["subsets"][:1]
    created["subsets"][0].pop("notReadyAddresses")
    await managed_client.update(path("endpoints", NS, "web"), created)
    await settled(lambda: slice_bodies(managed_client), [{**MIRRORED[0], "endpoints": MIRRORED[0]["endpoints"][:1]}])
    await managed_client.delete(path("endpoints", NS, "web"))
    await settled(lambda: slice_bodies(managed_client), [])


async def test_deleting_the_service_deletes_its_endpoints_and_slices(managed_client: Client) -> None:
    await managed_client.create(path("services", NS), service({"app": "web"}, [HTTP]))
    await settled(lambda: endpoints_of(managed_client), None)
    await settled(lambda: slice_bodies(managed_client), [{"addressType": "IPv4", "endpoints": None, "ports": None}])
    await managed_client.delete(path("services", NS, "web"))
    await settled(lambda: endpoints_of(managed_client), "missing")
    await settled(lambda: slice_bodies(managed_client), [])


async def test_headless_service_labels(managed_client: Client) -> None:
    await managed_client.create(path("services", NS), service({"app": "web"}, [HTTP], clusterIP="None"))
    await settled(lambda: endpoints_of(managed_client), None)
    labels = (await managed_client.get(path("endpoints", NS, "web")))["metadata"]["labels"]
    assert labels == {"tier": "front", "service.kubernetes.io/headless": ""}
    found = await settled(lambda: _first_labels(managed_client), {
        "tier": "front", "service.kubernetes.io/headless": "", SERVICE_NAME: "web",
        MANAGED_BY: "endpointslice-controller.k8s.io"})
    assert found


async def _first_labels(client: Client) -> Any:
    found = await slices_of(client)
    return found[0]["metadata"]["labels"] if found else None
