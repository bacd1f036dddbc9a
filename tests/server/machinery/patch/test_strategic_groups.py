"""Strategic merge patch over the other groups' kinds merges lists by the keys their Go types declare
(patchMergeKey/patchStrategy in k8s.io/api and kube-aggregator types.go, server/machinery/schema_hints.py): webhooks and
matchConditions by name, status conditions by type, CSINode drivers by name; a list upstream gives no patch
strategy (CSR conditions, Ingress rules) is replaced whole."""

from __future__ import annotations

from typing import Any, cast

import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from capstan.api.admissionregistration.v1 import admissionregistration_pb2 as admission
from capstan.api.apiregistration.v1 import apiregistration_pb2 as apireg
from capstan.api.autoscaling.v2 import autoscaling_v2_pb2 as autoscaling_v2
from capstan.api.certificates.v1 import certificates_pb2 as certificates
from capstan.api.flowcontrol.v1beta3 import flowcontrol_pb2 as flowcontrol
from capstan.api.networking.v1 import networking_pb2 as networking
from capstan.api.policy.v1 import policy_pb2 as policy
from capstan.api.storage.v1 import storage_pb2 as storage
from server.machinery.patch.strategic import apply_strategic

Obj = dict[str, Any]


def conditions(*types: str) -> Obj:
    return {"status": {"conditions": [{"type": t, "status": "True"} for t in types]}}


def merged_conditions(*types: str) -> Obj:
    """The patch's new condition first, then the live ones, as strategicpatch orders a merged list."""
    return conditions(*types)


def webhooks(*names: str) -> Obj:
    return {"webhooks": [{"name": n, "sideEffects": "None"} for n in names]}


MERGED = [
    (admission.ValidatingWebhookConfiguration, webhooks("a"), webhooks("b"), webhooks("b", "a")),
    (admission.MutatingWebhookConfiguration, webhooks("a"), webhooks("b"), webhooks("b", "a")),
    (admission.ValidatingWebhookConfiguration,
     {"webhooks": [{"name": "a", "matchConditions": [{"name": "x", "expression": "true"}]}]},
     {"webhooks": [{"name": "a", "matchConditions": [{"name": "y", "expression": "false"}]}]},
     {"webhooks": [{"name": "a", "matchConditions": [{"name": "y", "expression": "false"},
                                                     {"name": "x", "expression": "true"}]}]}),
    (admission.MutatingWebhookConfiguration,
     {"webhooks": [{"name": "a", "timeoutSeconds": 10}, {"name": "b", "timeoutSeconds": 10}]},
     {"webhooks": [{"name": "b", "timeoutSeconds": 5}]},
     {"webhooks": [{"name": "a", "timeoutSeconds": 10}, {"name": "b", "timeoutSeconds": 5}]}),
    (apireg.APIService, conditions("Available"), conditions("Degraded"), merged_conditions("Degraded", "Available")),
    (autoscaling_v2.HorizontalPodAutoscaler, conditions("AbleToScale"), conditions("ScalingActive"),
     merged_conditions("ScalingActive", "AbleToScale")),
    (policy.PodDisruptionBudget, conditions("DisruptionAllowed"), conditions("Other"),
     merged_conditions("Other", "DisruptionAllowed")),
    (flowcontrol.FlowSchema, conditions("Dangling"), conditions("Other"), merged_conditions("Other", "Dangling")),
    (flowcontrol.PriorityLevelConfiguration, conditions("ConcurrencyShared"), conditions("Other"),
     merged_conditions("Other", "ConcurrencyShared")),
    (storage.CSINode, {"spec": {"drivers": [{"name": "a", "nodeID": "n1"}]}},
     {"spec": {"drivers": [{"name": "b", "nodeID": "n2"}]}},
     {"spec": {"drivers": [{"name": "b", "nodeID": "n2"}, {"name": "a", "nodeID": "n1"}]}}),
]

REPLACED = [
    (certificates.CertificateSigningRequest, conditions("Approved"), conditions("Failed")),
    (networking.Ingress, {"spec": {"rules": [{"host": "a"}]}}, {"spec": {"rules": [{"host": "b"}]}}),
]


def _id(message: type[Message], patch: Obj) -> str:
    return f"{message.__name__}:{next(iter(patch))}"


@pytest.mark.parametrize(("message", "live", "patch", "expected"),
                         [pytest.param(*row, id=_id(row[0], row[2])) for row in MERGED])
def test_lists_merge_by_upstream_keys(message: type[Message], live: Obj, patch: Obj, expected: Obj) -> None:
    assert apply_strategic(live, patch, cast(Descriptor, message.DESCRIPTOR)) == expected


@pytest.mark.parametrize(("message", "live", "patch"), [pytest.param(*row, id=_id(row[0], row[2])) for row in REPLACED])
def test_lists_without_a_patch_strategy_are_replaced(message: type[Message], live: Obj, patch: Obj) -> None:
    assert apply_strategic(live, patch, cast(Descriptor, message.DESCRIPTOR)) == patch


@pytest.mark.parametrize(("message", "live", "key"), [
    pytest.param(admission.ValidatingWebhookConfiguration, webhooks("a", "b"), {"name": "a"}, id="webhook"),
    pytest.param(autoscaling_v2.HorizontalPodAutoscaler, conditions("AbleToScale", "ScalingActive"),
                 {"type": "AbleToScale"}, id="hpa condition"),
    pytest.param(storage.CSINode, {"spec": {"drivers": [{"name": "a"}, {"name": "b"}]}}, {"name": "a"},
                 id="csinode driver"),
])
def test_delete_directive_removes_one_element_by_key(message: type[Message], live: Obj, key: Obj) -> None:
    path = ["spec", "drivers"] if message is storage.CSINode else (
        ["webhooks"] if "webhooks" in live else ["status", "conditions"])
    patch: Obj = {"$patch": "delete", **key}
    for part in reversed(path):
        patch = {part: [patch]} if part == path[-1] else {part: patch}
    result = apply_strategic(live, patch, cast(Descriptor, message.DESCRIPTOR))
    for part in path:
        result = result[part]
    kept = cast(list[Obj], result)
    assert [e for e in kept if all(e.get(k) == v for k, v in key.items())] == []
    assert len(kept) == 1
