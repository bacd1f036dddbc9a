"""core/v1 componentstatuses over HTTP, through both transports, as kube-apiserver 1.28 answers them: computed on
every read (etcd-0 from the store's health, controller-manager from the controllers' Lease, no scheduler), get
and list with their Tables, kube's plain 500 for a component it does not probe, the 405 of a watch, and the
deprecation warning on every answer."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
CS = "/api/v1/componentstatuses"
WARNING = '299 - "v1 ComponentStatus is deprecated in v1.19+"'
# A refused /healthz probe is a failure whose data, the error's text, is the condition's message (no error).
SCHEDULER = {"type": "Healthy", "status": "False",
             "message": 'Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: connect: connection refused'}
MANAGER_DOWN = {"type": "Healthy", "status": "False", "message": 'Get "https://127.0.0.1:10257/healthz": '
                'dial tcp 127.0.0.1:10257: connect: connection refused'}
OK = {"type": "Healthy", "status": "True", "message": "ok"}


def item(name: str, condition: Obj) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": None}, "conditions": [condition]}


async def lease(server: Server, renewed_ago: float) -> None:
    """The controllers' Lease as an elected core holds it, renewed `renewed_ago` seconds ago for 15 s."""
    await server.request("POST", "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": "kube-system"}})
    renewed = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=renewed_ago)
    await server.create("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "capstan-controllers"},
        "spec": {"holderIdentity": "core-1", "leaseDurationSeconds": 15,
                 "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}})


@pytest.mark.parametrize(("renewed_ago", "manager"), [(None, MANAGER_DOWN), (1.0, OK), (60.0, MANAGER_DOWN)],
                         ids=["no lease", "a current lease", "an expired lease"])
async def test_list(server: Server, renewed_ago: float | None, manager: Obj) -> None:
    if renewed_ago is not None:
        await lease(server, renewed_ago)
    resp = await server.request("GET", CS)
    assert resp.status == 200
    assert resp.headers.getall("Warning") == [WARNING]
    assert resp.json() == {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": [
        item("scheduler", SCHEDULER), item("controller-manager", manager), item("etcd-0", OK)]}


GETS = [
    ("etcd-0", "", 200, {"kind": "ComponentStatus", "apiVersion": "v1"} | item("etcd-0", OK)),
    ("scheduler", "", 200, {"kind": "ComponentStatus", "apiVersion": "v1"} | item("scheduler", SCHEDULER)),
    ("etcd-1", "", 500, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": "Component not found: etcd-1", "code": 500}),
    ("", "?watch=1", 405, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": 'watch is not supported on resources of kind "componentstatuses"',
                           "reason": "MethodNotAllowed", "details": {"kind": "componentstatuses"}, "code": 405}),
]


@pytest.mark.parametrize(("name", "query", "code", "answer"), GETS, ids=["etcd", "scheduler", "unknown", "watch"])
async def test_get(server: Server, name: str, query: str, code: int, answer: Obj) -> None:
    resp = await server.request("GET", f"{CS}/{name}{query}" if name else f"{CS}{query}")
    assert (resp.status, resp.json()) == (code, answer)
    assert resp.headers.getall("Warning") == [WARNING]


async def test_writes_are_not_served(server: Server) -> None:
    resp = await server.request("POST", CS, json={"apiVersion": "v1", "kind": "ComponentStatus",
                                                  "metadata": {"name": "x"}})
    assert (resp.status, resp.json()["reason"]) == (405, "MethodNotAllowed")


async def test_table_and_selectors(server: Server) -> None:
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    table = (await server.request("GET", CS, headers=accept)).json()
    assert [(c["name"], c["description"]) for c in table["columnDefinitions"]][1:] == [
        ("Status", "Status of the component conditions"), ("Message", "Message of the component conditions"),
        ("Error", "Error of the component conditions")]
    assert [r["cells"] for r in table["rows"]] == [
        ["scheduler", "Unhealthy", SCHEDULER["message"], ""],
        ["controller-manager", "Unhealthy", MANAGER_DOWN["message"], ""],
        ["etcd-0", "Healthy", "ok", ""]]
    one = (await server.request("GET", f"{CS}/etcd-0", headers=accept)).json()
    assert [r["cells"] for r in one["rows"]] == [["etcd-0", "Healthy", "ok", ""]]
    selected = (await server.request("GET", f"{CS}?fieldSelector=metadata.name%3Detcd-0")).json()
    assert [i["metadata"]["name"] for i in selected["items"]] == ["etcd-0"]
    protobuf = await server.request("GET", CS, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert protobuf.status == 200 and b"etcd-0" in protobuf.body
