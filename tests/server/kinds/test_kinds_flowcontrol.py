"""flowcontrol.apiserver.k8s.io/v1beta3 through the CoreService: CRUD, kube-apiserver 1.28's defaults and
validation (exact Status), /status, the mandatory and suggested objects written and reconciled at start as kube's
APF configuration producer does, Tables and the protobuf wire.

Expected answers are kube-apiserver's, from pkg/apis/flowcontrol/{v1beta3/defaults.go,validation},
k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go, pkg/registry/flowcontrol/ensurer and
pkg/printers/internalversion/printers.go.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from capstan.api.flowcontrol.v1beta3 import flowcontrol_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server import kube
from tests.server.client import PROTOBUF, Client, Obj, path, refused

GROUP = "flowcontrol.apiserver.k8s.io"
ANNOTATION = "apf.kubernetes.io/autoupdate-spec"
QUEUE = {"type": "Queue", "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 20}}

# The kind and a minimal valid body (without metadata) of both kinds.
KINDS: dict[str, tuple[str, Obj]] = {
    "flowschemas": ("FlowSchema", {"spec": {"priorityLevelConfiguration": {"name": "global-default"}, "rules": [{
        "subjects": [{"kind": "User", "user": {"name": "alice"}}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}]}}),
    "prioritylevelconfigurations": ("PriorityLevelConfiguration", {"spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}),
}
MANDATORY = {"flowschemas": ["catch-all", "exempt"], "prioritylevelconfigurations": ["catch-all", "exempt"]}
SUGGESTED = {
    "flowschemas": ["endpoint-controller", "global-default", "kube-controller-manager", "kube-scheduler",
                    "kube-system-service-accounts", "probes", "service-accounts", "system-leader-election",
                    "system-node-high", "system-nodes", "workload-leader-election"],
    "prioritylevelconfigurations": ["global-default", "leader-election", "node-high", "system", "workload-high",
                                    "workload-low"],
}


def at(resource: str, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return path(resource, "", name, group=GROUP, version="v1beta3", subresource=subresource)


def body(resource: str, name: str = "web", **top: Any) -> Obj:
    """The kind's minimal body named `name`, with `spec` merged from `top`."""
    kind, base = KINDS[resource]
    obj: Obj = {"apiVersion": f"{GROUP}/v1beta3", "kind": kind, "metadata": {"name": name}, **copy.deepcopy(base)}
    obj["spec"] = {**obj["spec"], **top.get("spec", {})}
    return obj


async def create(client: Client, resource: str, name: str = "web", **top: Any) -> Obj:
    return await client.create(at(resource), body(resource, name, **top))


FOUND = {"type": "Dangling", "status": "False", "reason": "Found",
         "message": 'This FlowSchema references the PriorityLevelConfiguration object named "global-default" and it '
                    "exists"}


async def _dangling_written(client: Client) -> Obj:
    for _ in range(500):
        found = await client.get(at("flowschemas", "web"))
        if (found.get("status") or {}).get("conditions"):
            return found
        await asyncio.sleep(0.01)
    raise AssertionError("no Dangling condition written")


@pytest.mark.parametrize("resource", list(KINDS))
async def test_create_get_update_status_and_delete(client: Client, resource: str) -> None:
    kind, _ = KINDS[resource]
    created = await create(client, resource)
    assert (created["kind"], created["metadata"]["generation"], created["status"]) == (kind, 1, {})
    if resource == "flowschemas":  # the APF configuration controller writes its Dangling condition at once
        created = await _dangling_written(client)
    assert await client.get(at(resource, "web")) == created
    with_status = copy.deepcopy(created)
    # a condition the controller agrees with, so that it leaves the status to this test
    with_status["status"] = {"conditions": [{**FOUND, "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
    with_status["spec"] = {"ignored": True}
    with_status["metadata"]["labels"] = {"ignored": "too"}
    updated, _ = await client.update(at(resource, "web", "status"), with_status)
    # The status strategies keep the stored metadata and spec.
    assert (updated["status"], updated["spec"], "labels" in updated["metadata"]) == (
        with_status["status"], created["spec"], False)
    respecced = copy.deepcopy(updated)
    respecced["status"] = {}
    if resource == "flowschemas":
        respecced["spec"]["matchingPrecedence"] = 500
    else:
        respecced["spec"]["limited"]["nominalConcurrencyShares"] = 7
    respecced, _ = await client.update(at(resource, "web"), respecced)
    assert (respecced["metadata"]["generation"], respecced["status"]) == (2, with_status["status"])
    deleted = await client.delete(at(resource, "web"))
    assert deleted["status"] == "Success"
    failed = await refused(client.get(at(resource, "web")))
    assert failed.status == kube.failure(404, "NotFound", f'{resource}.{GROUP} "web" not found',
                                         kube.details(name="web", group=GROUP, kind=resource))


@pytest.mark.parametrize(("resource", "top", "expected"), [
    pytest.param("flowschemas", {}, {"priorityLevelConfiguration": {"name": "global-default"},
                                     "matchingPrecedence": 1000, "rules": KINDS["flowschemas"][1]["spec"]["rules"]},
                 id="flowschema precedence"),
    pytest.param("prioritylevelconfigurations", {"spec": {"limited": {"limitResponse": {"type": "Queue",
                                                                                        "queuing": {}}}}},
                 {"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0,
                                                 "limitResponse": {"type": "Queue", "queuing": {
                                                     "queues": 64, "handSize": 8, "queueLengthLimit": 50}}}},
                 id="limited level"),
    pytest.param("prioritylevelconfigurations", {"spec": {"type": "Exempt", "limited": None, "exempt": {}}},
                 {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
                 id="exempt level"),
])
async def test_defaults(client: Client, resource: str, top: Obj, expected: Obj) -> None:
    obj = body(resource, **top)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    created = await client.create(at(resource), obj)
    assert created["spec"] == expected


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


def required(field: str, detail: str) -> Obj:
    return kube.cause("FieldValueRequired", f"Required value: {detail}", field)


@pytest.mark.parametrize(("resource", "spec", "causes"), [
    pytest.param("flowschemas", {"matchingPrecedence": 10001, "distinguisherMethod": {"type": "ByGroup"}}, [
        invalid("spec.matchingPrecedence", "10001", "must not be greater than 10000"),
        kube.field_not_supported("spec.distinguisherMethod.type", '"ByGroup"', ["ByNamespace", "ByUser"])],
        id="flowschema precedence and distinguisher"),
    pytest.param("flowschemas", {"priorityLevelConfiguration": {"name": ""}, "rules": [{"subjects": []}]}, [
        required("spec.priorityLevelConfiguration.name", "must reference a priority level"),
        required("spec.rules[0].subjects", "subjects must contain at least one value"),
        required("spec.rules[0]", "at least one of resourceRules and nonResourceRules has to be non-empty")],
        id="flowschema reference and rules"),
    pytest.param("prioritylevelconfigurations", {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "lendablePercent": 101,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 2, "handSize": 3, "queueLengthLimit": -1}}}}, [
        invalid("spec.limited.lendablePercent", "101", "must be between 0 and 100, inclusive"),
        invalid("spec.limited.limitResponse.queuing.queueLengthLimit", "-1", "must be positive"),
        invalid("spec.limited.limitResponse.queuing.handSize", "3", "should not be greater than queues (2)")],
        id="limited level"),
    pytest.param("prioritylevelconfigurations", {"type": "Limited", "limited": {
        "limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}}, [
        kube.field_forbidden("spec.limited.limitResponse.queuing",
                             "must be nil if limited.limitResponse.type is not Limited")], id="reject with queuing"),
    pytest.param("prioritylevelconfigurations", {"type": "Exempt"}, [
        kube.field_forbidden("spec.limited", "must be nil if the type is not Limited")], id="exempt with limited"),
    pytest.param("prioritylevelconfigurations", {"type": "Limitless", "limited": None}, [
        kube.field_not_supported("spec.type", '"Limitless"', ["Exempt", "Limited"])], id="unknown type"),
])
async def test_create_is_refused_with_kubes_status(client: Client, resource: str, spec: Obj,
                                                   causes: list[Obj]) -> None:
    kind, _ = KINDS[resource]
    obj = body(resource, spec=spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    failed = await refused(client.create(at(resource), obj))
    assert failed.status == kube.invalid(kind, "web", causes, group=GROUP)


# ---------------------------------------------------------------- the objects written at start


@pytest.mark.parametrize("resource", list(KINDS))
async def test_mandatory_and_suggested_objects_exist_with_the_autoupdate_annotation(
        client: Client, resource: str) -> None:
    _, items = await client.list(at(resource))
    assert sorted(i["metadata"]["name"] for i in items) == sorted(MANDATORY[resource] + SUGGESTED[resource])
    assert {i["metadata"]["annotations"][ANNOTATION] for i in items} == {"true"}


async def test_the_bootstrap_objects_are_kubes(client: Client) -> None:
    exempt = await client.get(at("prioritylevelconfigurations", "exempt"))
    assert exempt["spec"] == {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}
    catch_all = await client.get(at("prioritylevelconfigurations", "catch-all"))
    assert catch_all["spec"] == {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}, "lendablePercent": 0}}
    probes = await client.get(at("flowschemas", "probes"))
    assert probes["spec"] == {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2, "rules": [{
        "subjects": [{"kind": "Group", "group": {"name": "system:unauthenticated"}},
                     {"kind": "Group", "group": {"name": "system:authenticated"}}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}]}
    condition = probes["status"]["conditions"][0]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "Dangling", "status": "False", "reason": "Found",
        "message": 'This FlowSchema references the PriorityLevelConfiguration object named "exempt" and it exists'}


async def _start(store: LmdbStore) -> Any:
    return await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)


async def test_a_restart_restores_mandatory_objects_and_follows_the_annotation(tmp_path: Path) -> None:
    """Mandatory: always kube's. Suggested: kube's while autoupdate-spec is "true", the user's once "false";
    deleted ones come back; a stale object still marked "true" goes."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    running = await _start(store)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_service_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            for name, annotation in (("catch-all", "false"), ("workload-low", "false"), ("workload-high", "true")):
                level = await client.get(at("prioritylevelconfigurations", name))
                level["metadata"]["annotations"][ANNOTATION] = annotation
                level["spec"]["limited"]["nominalConcurrencyShares"] = 77
                await client.update(at("prioritylevelconfigurations", name), level)
            await client.delete(at("flowschemas", "probes"))
            await client.create(at("prioritylevelconfigurations"), {
                **body("prioritylevelconfigurations", "stale"), "metadata": {
                    "name": "stale", "annotations": {ANNOTATION: "true"}}})
            await client.create(at("flowschemas"), body("flowschemas", "mine"))
    finally:
        await running.stop()
    running = await _start(store)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_service_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            shares = {}
            for name in ("catch-all", "workload-low", "workload-high"):
                level = await client.get(at("prioritylevelconfigurations", name))
                shares[name] = (level["spec"]["limited"]["nominalConcurrencyShares"],
                                level["metadata"]["annotations"][ANNOTATION])
            assert shares == {"catch-all": (5, "true"), "workload-low": (77, "false"), "workload-high": (40, "true")}
            assert (await client.get(at("flowschemas", "probes")))["spec"]["matchingPrecedence"] == 2
            _, levels = await client.list(at("prioritylevelconfigurations"))
            assert "stale" not in {i["metadata"]["name"] for i in levels}
            mine = await client.get(at("flowschemas", "mine"))
            assert "annotations" not in mine["metadata"]
            assert mine["status"]["conditions"][0]["status"] == "False"  # global-default exists
    finally:
        await running.stop()
        await store.close()


async def test_a_restart_keeps_the_exempt_levels_own_member_and_writes_nothing_when_nothing_changed(
        tmp_path: Path) -> None:
    """The exempt level's `exempt` member is the user's: a restart keeps it, and a restart after that (nothing
    differing from kube's objects) writes nothing."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    try:
        running = await _start(store)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
                client = Client(core_service_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
                level = await client.get(at("prioritylevelconfigurations", "exempt"))
                level["spec"]["exempt"]["nominalConcurrencyShares"] = 7
                await client.update(at("prioritylevelconfigurations", "exempt"), level)
        finally:
            await running.stop()
        for _ in range(2):
            before = store.current_revision()
            running = await _start(store)
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
                    client = Client(core_service_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
                    level = await client.get(at("prioritylevelconfigurations", "exempt"))
                    assert level["spec"] == {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 7,
                                                                          "lendablePercent": 0}}
                    written = [int(item["metadata"]["resourceVersion"])
                               for resource in ("flowschemas", "prioritylevelconfigurations")
                               for item in (await client.list(at(resource)))[1]]
                    assert max(written) <= before
            finally:
                await running.stop()
    finally:
        await store.close()


# ---------------------------------------------------------------- wire and tables


async def test_protobuf_answers_decode_with_the_kinds_messages(client: Client) -> None:
    await create(client, "prioritylevelconfigurations", spec={"limited": {
        "nominalConcurrencyShares": 9, "lendablePercent": 10, "borrowingLimitPercent": 20, "limitResponse": QUEUE}})
    raw = await client.get_raw(at("prioritylevelconfigurations", "web"), accept=PROTOBUF)
    limited = flowcontrol_pb2.PriorityLevelConfiguration.FromString(raw.data).spec.limited
    assert (limited.nominalConcurrencyShares, limited.lendablePercent, limited.borrowingLimitPercent,
            limited.limitResponse.queuing.handSize) == (9, 10, 20, 4)
    schema = flowcontrol_pb2.FlowSchema.FromString((await client.get_raw(at("flowschemas", "probes"),
                                                                          accept=PROTOBUF)).data)
    assert list(schema.spec.rules[0].nonResourceRules[0].nonResourceURLs) == ["/healthz", "/readyz", "/livez"]


@pytest.mark.parametrize(("resource", "name", "columns", "cells"), [
    ("flowschemas", "probes",
     ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"],
     ["probes", "exempt", 2, "<none>"]),
    ("flowschemas", "service-accounts",
     ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"],
     ["service-accounts", "workload-low", 9000, "ByUser"]),
    ("prioritylevelconfigurations", "exempt",
     ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"],
     ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]),
    ("prioritylevelconfigurations", "workload-high",
     ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"],
     ["workload-high", "Limited", 40, 128, 6, 50]),
])
async def test_tables(client: Client, resource: str, name: str, columns: list[str], cells: list[object]) -> None:
    request = core_pb2.GetRequest(path=at(resource, name), view=core_pb2.ViewOptions(
        view=core_pb2.VIEW_TABLE, api_version="meta.k8s.io/v1"))
    table = orjson.loads((await client.call(client.stub.Get, request)).object.data)
    assert [c["name"] for c in table["columnDefinitions"]] == columns
    row = table["rows"][0]["cells"]
    assert row[:len(cells)] == cells
    if resource == "flowschemas":
        assert row[-1] == "False"  # the Dangling condition: the level exists
