"""ResourceQuota over custom resources (`count/<plural>.<group>`), as kube's e2e "should create a ResourceQuota and
capture the life of a custom resource" walks it: status counts them, admission refuses past the hard limit, and
a deletion gives the slot back."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.server.client import Client, Failed, Obj, path
from tests.server.crd.test_crds import CRDS, crd_body, established, widget
from tests.server.managed import managed_client_fixture  # noqa: F401  (the managed_client fixture)

NS = "default"
COUNT = "count/widgets.example.com"
WIDGETS = path("widgets", NS, group="example.com")


async def used(client: Client, name: str, want: dict[str, str], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status: Obj = (await client.get(path("resourcequotas", NS, name))).get("status") or {}
        got = {k: v for k, v in (status.get("used") or {}).items() if k in want}
        if got == want:
            return
        assert time.monotonic() < deadline, f"quota {name} used {status.get('used')}, wanted {want}"
        await asyncio.sleep(0.05)


def quota(name: str, hard: dict[str, Any]) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}}


async def test_the_life_of_a_custom_resource_under_quota(managed_client: Client) -> None:
    client = managed_client
    await client.create(CRDS, crd_body())
    await established(client, "widgets.example.com")
    await client.create(path("resourcequotas", NS), quota("q", {COUNT: "1", "resourcequotas": "1"}))
    await used(client, "q", {COUNT: "0", "resourcequotas": "1"})
    await client.create(WIDGETS, widget("one"))
    await used(client, "q", {COUNT: "1"})
    try:
        await client.create(WIDGETS, widget("two"))
    except Failed as err:
        assert err.status["code"] == 403
        assert err.status["message"] == (
            f'widgets.example.com "two" is forbidden: exceeded quota: q, requested: {COUNT}=1, used: {COUNT}=1, '
            f"limited: {COUNT}=1")
    else:
        raise AssertionError("the second widget was admitted past the quota")
    await client.delete(path("widgets", NS, "one", group="example.com"))
    await used(client, "q", {COUNT: "0"})
    await client.create(WIDGETS, widget("three"))  # the slot is free again
