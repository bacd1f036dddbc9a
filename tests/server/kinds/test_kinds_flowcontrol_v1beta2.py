"""flowcontrol.apiserver.k8s.io/v1beta2 through the CoreService, served from the v1beta3 storage as kube-apiserver
1.28 serves it: an object written through either version is read through both, v1beta2's
limited.assuredConcurrencyShares being v1beta3's limited.nominalConcurrencyShares; v1beta2's defaults (30 shares)
and validation messages naming the field as v1beta2 does (exact Status); /status, protobuf and Tables.

Expected answers are kube-apiserver's, from pkg/apis/flowcontrol/v1beta2 (conversion.go, defaults.go) and
pkg/apis/flowcontrol/validation (getVersionedFieldNameForConcurrencyShares).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from capstan.api.flowcontrol.v1beta2 import flowcontrol_v1beta2_pb2 as v1beta2_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import PROTOBUF, Client, Obj, path, refused

GROUP = "flowcontrol.apiserver.k8s.io"
QUEUE = {"type": "Queue", "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 20}}


def at(resource: str, version: str, name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return path(resource, "", name, group=GROUP, version=version, subresource=subresource)


def level(version: str, limited: Obj, name: str = "web") -> Obj:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": limited}}


def _spec(obj: Obj) -> Any:
    return obj["spec"]


async def test_discovery_lists_v1beta2_after_the_preferred_v1beta3(client: Client) -> None:
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    versions = [r.version for r in discovered.resources if r.group == GROUP and r.resource == "flowschemas"]
    assert versions == ["v1beta3", "v1beta2"]
    found = next(r for r in discovered.resources if r.group == GROUP and r.version == "v1beta2"
                 and r.resource == "prioritylevelconfigurations")
    assert (found.kind, found.proto_message, [s.name for s in found.subresources]) == (
        "PriorityLevelConfiguration", "k8s.io.api.flowcontrol.v1beta2.PriorityLevelConfiguration", ["status"])


@pytest.mark.parametrize(("written", "read", "written_field", "read_field"), [
    ("v1beta2", "v1beta3", "assuredConcurrencyShares", "nominalConcurrencyShares"),
    ("v1beta3", "v1beta2", "nominalConcurrencyShares", "assuredConcurrencyShares"),
])
async def test_an_object_written_through_one_version_reads_through_the_other(
        client: Client, written: str, read: str, written_field: str, read_field: str) -> None:
    created = await client.create(at("prioritylevelconfigurations", written),
                                  level(written, {written_field: 7, "limitResponse": QUEUE}))
    assert (created["apiVersion"], created["spec"]["limited"][written_field]) == (f"{GROUP}/{written}", 7)
    other = await client.get(at("prioritylevelconfigurations", read, "web"))
    assert other["apiVersion"] == f"{GROUP}/{read}"
    assert other["spec"]["limited"] == {read_field: 7, "lendablePercent": 0, "limitResponse": QUEUE}
    assert other["metadata"] == created["metadata"]
    other["spec"]["limited"][read_field] = 9
    updated, _ = await client.update(at("prioritylevelconfigurations", read, "web"), other)
    assert (updated["spec"]["limited"][read_field], updated["metadata"]["generation"]) == (9, 2)
    again = await client.get(at("prioritylevelconfigurations", written, "web"))
    assert again["spec"]["limited"][written_field] == 9


async def test_v1beta2_defaults_the_shares_to_30(client: Client) -> None:
    created = await client.create(at("prioritylevelconfigurations", "v1beta2"), level("v1beta2", {
        "limitResponse": {"type": "Queue", "queuing": {}}}))
    assert created["spec"] == {"type": "Limited", "limited": {
        "assuredConcurrencyShares": 30, "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}}
    stored = await client.get(at("prioritylevelconfigurations", "v1beta3", "web"))
    assert stored["spec"]["limited"]["nominalConcurrencyShares"] == 30


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


@pytest.mark.parametrize(("limited", "causes"), [
    pytest.param({"assuredConcurrencyShares": -1, "limitResponse": {"type": "Reject"}},
                 [invalid("spec.limited.assuredConcurrencyShares", "-1", "must be positive")], id="negative shares"),
    pytest.param({"assuredConcurrencyShares": 5, "lendablePercent": 101, "limitResponse": {"type": "Reject"}},
                 [invalid("spec.limited.lendablePercent", "101", "must be between 0 and 100, inclusive")],
                 id="lendable percent"),
    pytest.param({"assuredConcurrencyShares": 5, "limitResponse": {"type": "Queue", "queuing": {
        "queues": 2, "handSize": 3}}},
                 [invalid("spec.limited.limitResponse.queuing.handSize", "3", "should not be greater than queues (2)")],
                 id="hand size"),
])
async def test_create_is_refused_with_kubes_status(client: Client, limited: Obj, causes: list[Obj]) -> None:
    before = client.revision()
    failed = await refused(client.create(at("prioritylevelconfigurations", "v1beta2"), level("v1beta2", limited)))
    assert failed.status == kube.invalid("PriorityLevelConfiguration", "web", causes, group=GROUP)
    assert client.revision() == before


async def test_flow_schemas_and_the_bootstrap_objects_read_through_v1beta2(client: Client) -> None:
    _, items = await client.list(at("prioritylevelconfigurations", "v1beta2"))
    levels = {item["metadata"]["name"]: item for item in items}
    assert levels["workload-high"]["spec"]["limited"]["assuredConcurrencyShares"] == 40
    assert "nominalConcurrencyShares" not in levels["workload-high"]["spec"]["limited"]
    assert levels["exempt"]["spec"] == {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0,
                                                                      "lendablePercent": 0}}
    schema = {"apiVersion": f"{GROUP}/v1beta2", "kind": "FlowSchema", "metadata": {"name": "fs"}, "spec": {
        "priorityLevelConfiguration": {"name": "workload-high"}, "rules": [{
            "subjects": [{"kind": "Group", "group": {"name": "devs"}}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}]}}
    created = await client.create(at("flowschemas", "v1beta2"), schema)
    assert (created["spec"]["matchingPrecedence"], created["status"]) == (1000, {})
    through_v1beta3 = await client.get(at("flowschemas", "v1beta3", "fs"))
    assert (_spec(through_v1beta3), through_v1beta3["apiVersion"]) == (created["spec"], f"{GROUP}/v1beta3")


async def test_status_through_v1beta2_keeps_the_spec(client: Client) -> None:
    created = await client.create(at("prioritylevelconfigurations", "v1beta2"), level("v1beta2", {
        "assuredConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}))
    with_status = copy.deepcopy(created)
    with_status["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    with_status["spec"]["limited"]["assuredConcurrencyShares"] = 99
    updated, _ = await client.update(at("prioritylevelconfigurations", "v1beta2", "web", "status"), with_status)
    # lastTransitionTime is a metav1.Time struct: Go prints its zero as null
    printed = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": None}]}
    assert (updated["status"], updated["spec"]) == (printed, created["spec"])


async def test_protobuf_answers_decode_with_the_v1beta2_messages(client: Client) -> None:
    await client.create(at("prioritylevelconfigurations", "v1beta3"), level("v1beta3", {
        "nominalConcurrencyShares": 9, "lendablePercent": 10, "limitResponse": QUEUE}))
    raw = await client.get_raw(at("prioritylevelconfigurations", "v1beta2", "web"), accept=PROTOBUF)
    limited = v1beta2_pb2.PriorityLevelConfiguration.FromString(raw.data).spec.limited
    assert (limited.assuredConcurrencyShares, limited.lendablePercent, limited.limitResponse.queuing.handSize) == (
        9, 10, 4)


async def test_tables_print_the_shares(client: Client) -> None:
    request = core_pb2.GetRequest(path=at("prioritylevelconfigurations", "v1beta2", "workload-high"),
                                  view=core_pb2.ViewOptions(view=core_pb2.VIEW_TABLE, api_version="meta.k8s.io/v1"))
    table = orjson.loads((await client.call(client.stub.Get, request)).object.data)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"]
    assert table["rows"][0]["cells"][:6] == ["workload-high", "Limited", 40, 128, 6, 50]
