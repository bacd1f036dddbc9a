"""API Priority and Fairness classification (server/auth/apf.py) and the FlowSchemas' Dangling condition
(server/controllers/flowcontrol.py), against a running core: kube's matching rules, a FlowSchema created now
classifying the next request, dangling FlowSchemas skipped, and the nominal seats per priority level."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from server.auth.apf import matches
from server.auth.attributes import Attributes
from server.machinery.user import UserInfo
from server.startup.app import RunningCore
from tests.server.client import Client, Failed, Obj, path

GROUP = "flowcontrol.apiserver.k8s.io"
SCHEMAS = path("flowschemas", group=GROUP, version="v1beta3")
LEVELS = path("prioritylevelconfigurations", group=GROUP, version="v1beta3")
NOXU = UserInfo("noxu", groups=("system:authenticated",))
ROBOT = UserInfo("system:serviceaccount:team:robot", groups=("system:serviceaccounts", "system:authenticated"))

ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}


def spec(subjects: list[Obj], resource_rules: list[Obj] | None = None,
         non_resource_rules: list[Obj] | None = None) -> Obj:
    return {"rules": [{"subjects": subjects, "resourceRules": resource_rules or [],
                       "nonResourceRules": non_resource_rules or []}]}


def user(name: str) -> Obj:
    return {"kind": "User", "user": {"name": name}}


def get(resource: str, namespace: str = "", who: UserInfo = NOXU, **more: Any) -> Attributes:
    return Attributes(who, "get", api_group=more.pop("group", ""), api_version="v1", resource=resource,
                      namespace=namespace, **more)


@pytest.mark.parametrize(("flow", "attrs", "expected"), [
    (spec([user("noxu")], [ALL_RESOURCES]), get("pods", "default"), True),
    (spec([user("*")], [ALL_RESOURCES]), get("pods", "default"), True),
    (spec([user("foo")], [ALL_RESOURCES]), get("pods", "default"), False),
    (spec([{"kind": "Group", "group": {"name": "system:authenticated"}}], [ALL_RESOURCES]), get("pods"), True),
    (spec([{"kind": "Group", "group": {"name": "system:masters"}}], [ALL_RESOURCES]), get("pods"), False),
    (spec([{"kind": "ServiceAccount", "serviceAccount": {"namespace": "team", "name": "*"}}], [ALL_RESOURCES]),
     get("pods", who=ROBOT), True),
    (spec([{"kind": "ServiceAccount", "serviceAccount": {"namespace": "other", "name": "robot"}}], [ALL_RESOURCES]),
     get("pods", who=ROBOT), False),
    # a namespaced request needs its namespace listed; a cluster-scoped one needs clusterScope
    (spec([user("noxu")], [{**ALL_RESOURCES, "clusterScope": False}]), get("nodes"), False),
    (spec([user("noxu")], [{**ALL_RESOURCES, "namespaces": ["kube-system"]}]), get("pods", "default"), False),
    (spec([user("noxu")], [{**ALL_RESOURCES, "resources": ["pods/log"]}]),
     get("pods", "default", subresource="log"), True),
    (spec([user("noxu")], [{**ALL_RESOURCES, "apiGroups": ["apps"]}]), get("pods", "default"), False),
    (spec([user("noxu")], [{**ALL_RESOURCES, "verbs": ["list"]}]), get("pods", "default"), False),
    # non-resource URLs: "*", exact, and "/prefix/*" (the prefix itself too)
    (spec([user("noxu")], non_resource_rules=[{"verbs": ["get"], "nonResourceURLs": ["*"]}]),
     Attributes(NOXU, "get", resource_request=False, path="/version"), True),
    (spec([user("noxu")], non_resource_rules=[{"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}]),
     Attributes(NOXU, "get", resource_request=False, path="/healthz"), True),
    (spec([user("noxu")], non_resource_rules=[{"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}]),
     Attributes(NOXU, "get", resource_request=False, path="/healthzz"), False),
    (spec([user("noxu")], non_resource_rules=[{"verbs": ["post"], "nonResourceURLs": ["*"]}]),
     Attributes(NOXU, "get", resource_request=False, path="/version"), False),
    (spec([user("noxu")], [ALL_RESOURCES]), Attributes(NOXU, "get", resource_request=False, path="/version"), False),
])
def test_matching_as_kubes_rules(flow: Obj, attrs: Attributes, expected: bool) -> None:
    assert matches(flow, attrs) is expected


def level(name: str, shares: int = 10) -> Obj:
    return {"apiVersion": f"{GROUP}/v1beta3", "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                                                    "limitResponse": {"type": "Reject"}}}}


def schema(name: str, level_name: str, precedence: int = 1000) -> Obj:
    return {"apiVersion": f"{GROUP}/v1beta3", "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {"matchingPrecedence": precedence, "priorityLevelConfiguration": {"name": level_name},
                     "rules": [{"subjects": [user("noxu")],
                                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}


async def eventually(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < deadline, "never came true"
        await asyncio.sleep(0.02)


VERSION = Attributes(NOXU, "get", resource_request=False, path="/version")


async def test_a_flow_schema_created_now_classifies_the_next_request(client: Client, running: RunningCore) -> None:
    classifier = running.classifier
    assert classifier is not None
    # before: kube's suggested global-default takes every authenticated user's requests
    default = await client.get(path("flowschemas", group=GROUP, version="v1beta3", name="global-default"))
    found = classifier.classify(VERSION)
    assert found is not None and found[0] == default["metadata"]["uid"]
    created_level = await client.create(LEVELS, level("e2e-level"))
    created = await client.create(SCHEMAS, schema("e2e-schema", "e2e-level", precedence=500))

    async def classified() -> bool:
        return classifier.classify(VERSION) == (created["metadata"]["uid"], created_level["metadata"]["uid"])

    await eventually(classified)
    other = Attributes(UserInfo("foo", groups=("system:authenticated",)), "get", resource_request=False,
                       path="/version")
    assert classifier.classify(other) != classifier.classify(VERSION)


async def test_a_dangling_flow_schema_matches_nothing(client: Client, running: RunningCore) -> None:
    classifier = running.classifier
    assert classifier is not None
    before = classifier.classify(VERSION)
    await client.create(SCHEMAS, schema("dangling", "no-such-level", precedence=1))
    await asyncio.sleep(0.2)
    assert classifier.classify(VERSION) == before


async def dangling(client: Client, name: str) -> Obj | None:
    found = await client.get(path("flowschemas", group=GROUP, version="v1beta3", name=name))
    return next((c for c in (found.get("status") or {}).get("conditions") or [] if c["type"] == "Dangling"), None)


async def test_the_dangling_condition_follows_the_priority_level(client: Client, running: RunningCore) -> None:
    await client.create(SCHEMAS, schema("follower", "later"))

    async def condition(status: str) -> Obj | None:
        found = await dangling(client, "follower")
        return found if found is not None and found["status"] == status else None

    missing = await eventually(lambda: condition("True"))
    assert (missing["reason"], missing["message"]) == (
        "NotFound", 'This FlowSchema references the PriorityLevelConfiguration object named "later" but there is '
                    "no such object")
    await client.create(LEVELS, level("later"))
    found = await eventually(lambda: condition("False"))
    assert (found["reason"], found["message"]) == (
        "Found", 'This FlowSchema references the PriorityLevelConfiguration object named "later" and it exists')
    await client.delete(path("prioritylevelconfigurations", group=GROUP, version="v1beta3", name="later"))
    await eventually(lambda: condition("True"))


async def test_the_bootstrap_flow_schemas_are_not_dangling(client: Client) -> None:
    for name in ("exempt", "catch-all", "global-default", "system-nodes"):
        condition = await eventually(lambda name=name: dangling(client, name))
        assert condition["status"] == "False", name


async def test_nominal_seats_per_priority_level(client: Client, running: RunningCore) -> None:
    classifier = running.classifier
    assert classifier is not None
    await client.create(LEVELS, level("tiny", shares=1))

    async def listed() -> dict[str, int] | None:
        seats = classifier.nominal_seats()
        return seats if "tiny" in seats else None

    seats = await eventually(listed)
    assert seats["exempt"] == 0  # an exempt level's shares default to 0
    assert all(value >= 1 for name, value in seats.items() if name != "exempt")
    registry = CollectorRegistry()
    registry.register(classifier.collector())
    text = generate_latest(registry).decode()
    assert f'apiserver_flowcontrol_nominal_limit_seats{{priority_level="tiny"}} {float(seats["tiny"])}' in text
    with pytest.raises(Failed):
        await client.get(path("prioritylevelconfigurations", group=GROUP, version="v1beta3", name="absent"))
