"""POST pods/{name}/eviction and POST namespaces/{ns}/bindings over HTTP, through both transports, answered as
kube-apiserver 1.28 answers them (pkg/registry/core/pod/storage/eviction.go): the Pod deleted with a Success
Status, or kube's 429/500/400/404 Status word for word, and the budget charged by compare-and-swap."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
NS = "/api/v1/namespaces/default"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


def eviction(name: str, api_version: str = "policy/v1", **extra: Any) -> Obj:
    return {"apiVersion": api_version, "kind": "Eviction", "metadata": {"name": name}, **extra}


async def pod(server: Server, name: str, *, phase: str = "Running", ready: bool = True) -> None:
    await server.create(f"{NS}/pods", {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": name, "labels": {"app": "web"}},
                                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    got = (await server.request("GET", f"{NS}/pods/{name}")).json()
    got["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    assert (await server.request("PUT", f"{NS}/pods/{name}/status", json=got)).status == 200


async def budget(server: Server, name: str, status: Obj | None, *, selector: Obj | None = None) -> None:
    await server.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
                               "spec": {"minAvailable": 1,
                                        "selector": selector if selector is not None else {
                                            "matchLabels": {"app": "web"}}}})
    if status is not None:
        got = (await server.request("GET", f"{PDBS}/{name}")).json()
        got["status"] = {"observedGeneration": 1, **status}
        assert (await server.request("PUT", f"{PDBS}/{name}/status", json=got)).status == 200


def too_many(cause: str, retry_after: int = 0) -> Obj:
    details: Obj = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": VIOLATES,
            "reason": "TooManyRequests", "details": details, "code": 429}


ALLOWS = {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}
EXHAUSTED = {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2}

# (case, pod phase, pod ready, budgets' statuses (None: never observed by a controller), status code, answer or
# None for SUCCESS, pod deleted)
CASES = [
    ("no budget", "Running", True, [], 201, None, True),
    ("a pending pod ignores budgets", "Pending", True, [EXHAUSTED], 201, None, True),
    ("a failed pod ignores budgets", "Failed", True, [EXHAUSTED], 201, None, True),
    ("budget allows one", "Running", True, [ALLOWS], 201, None, True),
    ("budget exhausted", "Running", True, [EXHAUSTED], 429,
     too_many("The disruption budget b0 needs 2 healthy pods and has 2 currently"), False),
    ("budget not observed yet", "Running", True, [None], 429,
     too_many("The disruption budget b0 is still being processed by the server.", 10), False),
    ("an unready pod goes when the budget is met", "Running", False, [EXHAUSTED], 201, None, True),
    ("two budgets", "Running", True, [ALLOWS, ALLOWS], 500,
     {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
      "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
      "code": 500}, False),
]


@pytest.mark.parametrize(("phase", "ready", "budgets", "code", "answer", "deleted"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_eviction_answers_as_kube(server: Server, phase: str, ready: bool, budgets: list[Obj | None],
                                        code: int, answer: Obj | None, deleted: bool) -> None:
    await pod(server, "p", phase=phase, ready=ready)
    for i, status in enumerate(budgets):
        await budget(server, f"b{i}", status)
    resp = await server.request("POST", f"{NS}/pods/p/eviction", json=eviction("p"))
    assert (resp.status, resp.json()) == (code, answer or SUCCESS)
    if code == 429 and answer and answer["details"].get("retryAfterSeconds"):
        assert resp.headers["Retry-After"] == "10"
    gone = (await server.request("GET", f"{NS}/pods/p")).status == 404
    assert gone == deleted


async def test_an_eviction_charges_the_budget(server: Server) -> None:
    await pod(server, "p")
    await budget(server, "b", ALLOWS)
    assert (await server.request("POST", f"{NS}/pods/p/eviction", json=eviction("p"))).status == 201
    status = (await server.request("GET", f"{PDBS}/b")).json()["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["p"]
    condition = status["conditions"][0]
    assert {k: condition[k] for k in ("type", "status", "reason", "message", "observedGeneration")} == {
        "type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": "",
        "observedGeneration": 1}
    await pod(server, "q")  # the budget now allows nothing more
    refused = await server.request("POST", f"{NS}/pods/q/eviction", json=eviction("q"))
    assert refused.status == 429


async def test_a_dry_run_eviction_changes_nothing(server: Server) -> None:
    await pod(server, "p")
    await budget(server, "b", ALLOWS)
    before = server.revision()
    resp = await server.request("POST", f"{NS}/pods/p/eviction?dryRun=All", json=eviction("p"))
    assert (resp.status, server.revision()) == (201, before)
    conflicting = await server.request("POST", f"{NS}/pods/p/eviction?dryRun=All",
                                       json=eviction("p", deleteOptions={"dryRun": []}) | {
                                           "deleteOptions": {"dryRun": ["All", "All"]}})
    assert (conflicting.status, conflicting.json()["message"]) == (
        400, "Non-matching dry-run options in request and content: [All] and [All All]")


@pytest.mark.parametrize(("path", "body", "code", "message"), [
    ("pods/p/eviction", eviction("other"), 400, "name in URL does not match name in Eviction object"),
    ("pods/nope/eviction", eviction("nope"), 404, 'pods "nope" not found'),
    ("pods/p/eviction", eviction("p", "policy/v1beta2"), 400,
     "the API version in the data (policy/v1beta2) does not match the expected API version (policy/v1)"),
])
async def test_eviction_refusals(server: Server, path: str, body: Obj, code: int, message: str) -> None:
    await pod(server, "p")
    resp = await server.request("POST", f"{NS}/{path}", json=body)
    assert (resp.status, resp.json()["message"]) == (code, message)


async def test_a_v1beta1_eviction_with_delete_options_deletes_gracefully(server: Server) -> None:
    await pod(server, "p")
    await server.request("POST", f"{NS}/pods/p/binding", json={
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}})
    resp = await server.request("POST", f"{NS}/pods/p/eviction", json=eviction(
        "p", "policy/v1beta1", deleteOptions={"gracePeriodSeconds": 7}))
    assert (resp.status, resp.json()) == (201, SUCCESS)
    got = (await server.request("GET", f"{NS}/pods/p")).json()  # bound: a graceful deletion has begun
    assert got["metadata"]["deletionGracePeriodSeconds"] == 7


async def test_bindings_bind_the_pod_the_body_names(server: Server) -> None:
    await pod(server, "p", phase="Pending")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "n1"}}
    resp = await server.request("POST", f"{NS}/bindings", json=binding)
    assert (resp.status, resp.json()) == (201, SUCCESS)
    assert (await server.request("GET", f"{NS}/pods/p")).json()["spec"]["nodeName"] == "n1"
    again = await server.request("POST", f"{NS}/bindings", json=binding)
    assert (again.status, again.json()["message"]) == (
        409, 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"')
    elsewhere = await server.request("POST", f"{NS}/bindings", json=binding | {
        "metadata": {"name": "p", "namespace": "kube-system"}})
    assert (elsewhere.status, elsewhere.json()["message"]) == (
        400, "the namespace of the provided object does not match the namespace sent on the request")
