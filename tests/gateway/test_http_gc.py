"""DELETE with a propagation policy over HTTP: DeleteOptions from the body or the query reach the core, the
answer is the marked owner (or the Success Status), and the garbage collector finishes the job."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.gateway import kube
from tests.gateway.conftest import Obj, Server

CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
DEADLINE = 10.0  # seconds the collector may take


async def gone(server: Server, url: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while (await server.request("GET", url)).status != 404:
        assert time.monotonic() < deadline, f"{url} still there after {DEADLINE}s"
        await asyncio.sleep(0.02)


def ref(owner: Obj) -> Obj:
    m = owner["metadata"]
    return {"apiVersion": "v1", "kind": owner["kind"], "name": m["name"], "uid": m["uid"], "blockOwnerDeletion": True}


@pytest.mark.parametrize(
    ("query", "body", "finalizers", "dependent_survives"),
    [
        ("", {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}, ["foregroundDeletion"],
         False),
        ("?propagationPolicy=Orphan", None, ["orphan"], True),
        ("?orphanDependents=true", None, ["orphan"], True),
        ("", {"propagationPolicy": "Background"}, None, False),
        ("?propagationPolicy=Background", None, None, False),
    ],
    ids=["body-foreground", "query-orphan", "query-orphanDependents", "body-background", "query-background"],
)
async def test_delete_with_a_propagation_policy(
    server: Server, query: str, body: Obj | None, finalizers: list[str] | None, dependent_survives: bool
) -> None:
    owner = await server.create(CM, {"metadata": {"name": "owner"}})
    await server.create(SECRETS, {"metadata": {"name": "dependent", "ownerReferences": [ref(owner)]}})
    resp = await server.request("DELETE", f"{CM}/owner{query}", json=body)
    assert resp.status == 200, resp.body
    if finalizers is None:
        assert resp.json() == kube.success("owner", "configmaps", owner["metadata"]["uid"])
    else:
        m = resp.json()["metadata"]
        assert (m["finalizers"], m["deletionGracePeriodSeconds"]) == (finalizers, 0)
        assert kube.RFC3339.fullmatch(m["deletionTimestamp"])
    await gone(server, f"{CM}/owner")
    if not dependent_survives:
        await gone(server, f"{SECRETS}/dependent")
        return
    dependent = await server.request("GET", f"{SECRETS}/dependent")
    assert dependent.status == 200 and "ownerReferences" not in dependent.json()["metadata"]


async def test_orphan_dependents_with_a_propagation_policy_is_422(server: Server) -> None:
    await server.create(CM, {"metadata": {"name": "owner"}})
    resp = await server.request("DELETE", f"{CM}/owner?orphanDependents=false&propagationPolicy=Orphan")
    assert (resp.status, resp.json()) == (422, kube.invalid_option(
        "DeleteOptions", "propagationPolicy", "FieldValueInvalid",
        'Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set'))
