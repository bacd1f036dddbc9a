"""Golden bytes and field numbers for flowcontrol.apiserver.k8s.io/v1beta2.

Every expectation is written by hand from upstream's protobuf tags (k8s.io/api/flowcontrol/v1beta2
generated.proto), never derived from our descriptors: a renumbered or renamed field fails here. v1beta2 differs
from v1beta3 in one name, LimitedPriorityLevelConfiguration's field 1 (assuredConcurrencyShares), so the same
bytes decode in both versions with the shares under each version's name.
"""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from capstan.api.flowcontrol.v1beta2 import flowcontrol_v1beta2_pb2 as v1beta2
from capstan.api.flowcontrol.v1beta3 import flowcontrol_pb2 as v1beta3
from capstan.api.meta.v1 import meta_pb2 as meta
from tests.protos.test_wire import int_field, label, len_field


def limited_level() -> v1beta2.PriorityLevelConfiguration:
    return v1beta2.PriorityLevelConfiguration(
        metadata=meta.ObjectMeta(name="web"),
        spec=v1beta2.PriorityLevelConfigurationSpec(type="Limited", limited=v1beta2.LimitedPriorityLevelConfiguration(
            assuredConcurrencyShares=5, lendablePercent=10, borrowingLimitPercent=20,
            limitResponse=v1beta2.LimitResponse(type="Queue", queuing=v1beta2.QueuingConfiguration(
                queues=64, handSize=8, queueLengthLimit=50)))),
        status=v1beta2.PriorityLevelConfigurationStatus(conditions=[
            v1beta2.PriorityLevelConfigurationCondition(type="Ready", status="True", reason="R", message="M")]),
    )


LIMITED_LEVEL = (
    len_field(1, len_field(1, "web"))
    + len_field(2, len_field(1, "Limited")
                + len_field(2, int_field(1, 5)
                            + len_field(2, len_field(1, "Queue")
                                        + len_field(2, int_field(1, 64) + int_field(2, 8) + int_field(3, 50)))
                            + int_field(3, 10) + int_field(4, 20)))
    + len_field(3, len_field(1, len_field(1, "Ready") + len_field(2, "True") + len_field(4, "R") + len_field(5, "M")))
)


def flow_schema() -> v1beta2.FlowSchema:
    return v1beta2.FlowSchema(
        metadata=meta.ObjectMeta(name="fs"),
        spec=v1beta2.FlowSchemaSpec(
            priorityLevelConfiguration=v1beta2.PriorityLevelConfigurationReference(name="web"), matchingPrecedence=500,
            distinguisherMethod=v1beta2.FlowDistinguisherMethod(type="ByUser"),
            rules=[v1beta2.PolicyRulesWithSubjects(
                subjects=[v1beta2.Subject(kind="ServiceAccount", serviceAccount=v1beta2.ServiceAccountSubject(
                    namespace="ns", name="sa"))],
                resourceRules=[v1beta2.ResourcePolicyRule(verbs=["get"], apiGroups=[""], resources=["pods"],
                                                          clusterScope=True, namespaces=["*"])],
                nonResourceRules=[v1beta2.NonResourcePolicyRule(verbs=["get"], nonResourceURLs=["/healthz"])])]),
    )


FLOW_SCHEMA = (
    len_field(1, len_field(1, "fs"))
    + len_field(2, len_field(1, len_field(1, "web")) + int_field(2, 500) + len_field(3, len_field(1, "ByUser"))
                + len_field(4, len_field(1, len_field(1, "ServiceAccount")
                                         + len_field(4, len_field(1, "ns") + len_field(2, "sa")))
                            + len_field(2, len_field(1, "get") + len_field(2, "") + len_field(3, "pods")
                                        + int_field(4, 1) + len_field(5, "*"))
                            + len_field(3, len_field(1, "get") + len_field(6, "/healthz"))))
)

GOLDEN = [("PriorityLevelConfiguration", limited_level, LIMITED_LEVEL), ("FlowSchema", flow_schema, FLOW_SCHEMA)]


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_encodes_to_upstream_bytes(build: object, golden: bytes) -> None:
    assert build().SerializeToString(deterministic=True) == golden  # type: ignore[operator]


def test_v1beta3_reads_v1beta2_shares_as_nominal() -> None:
    """The bytes are the same in both versions: only the name of field 1 differs."""
    level = v1beta3.PriorityLevelConfiguration.FromString(LIMITED_LEVEL)
    assert level.spec.limited.nominalConcurrencyShares == 5
    assert level.SerializeToString(deterministic=True) == LIMITED_LEVEL


FIELD_NUMBERS: list[tuple[type[Message], dict[str, int]]] = [
    (v1beta2.FlowSchema, {"metadata": 1, "spec": 2, "status": 3}),
    (v1beta2.FlowSchemaList, {"metadata": 1, "items": 2}),
    (v1beta2.FlowSchemaSpec, {"priorityLevelConfiguration": 1, "matchingPrecedence": 2, "distinguisherMethod": 3,
                              "rules": 4}),
    (v1beta2.FlowSchemaStatus, {"conditions": 1}),
    (v1beta2.FlowSchemaCondition, {"type": 1, "status": 2, "lastTransitionTime": 3, "reason": 4, "message": 5}),
    (v1beta2.FlowDistinguisherMethod, {"type": 1}),
    (v1beta2.PolicyRulesWithSubjects, {"subjects": 1, "resourceRules": 2, "nonResourceRules": 3}),
    (v1beta2.Subject, {"kind": 1, "user": 2, "group": 3, "serviceAccount": 4}),
    (v1beta2.UserSubject, {"name": 1}),
    (v1beta2.GroupSubject, {"name": 1}),
    (v1beta2.ServiceAccountSubject, {"namespace": 1, "name": 2}),
    (v1beta2.ResourcePolicyRule, {"verbs": 1, "apiGroups": 2, "resources": 3, "clusterScope": 4, "namespaces": 5}),
    (v1beta2.NonResourcePolicyRule, {"verbs": 1, "nonResourceURLs": 6}),
    (v1beta2.PriorityLevelConfigurationReference, {"name": 1}),
    (v1beta2.PriorityLevelConfiguration, {"metadata": 1, "spec": 2, "status": 3}),
    (v1beta2.PriorityLevelConfigurationList, {"metadata": 1, "items": 2}),
    (v1beta2.PriorityLevelConfigurationSpec, {"type": 1, "limited": 2, "exempt": 3}),
    (v1beta2.PriorityLevelConfigurationStatus, {"conditions": 1}),
    (v1beta2.PriorityLevelConfigurationCondition, {"type": 1, "status": 2, "lastTransitionTime": 3, "reason": 4,
                                                   "message": 5}),
    (v1beta2.LimitedPriorityLevelConfiguration, {"assuredConcurrencyShares": 1, "limitResponse": 2,
                                                 "lendablePercent": 3, "borrowingLimitPercent": 4}),
    (v1beta2.ExemptPriorityLevelConfiguration, {"nominalConcurrencyShares": 1, "lendablePercent": 2}),
    (v1beta2.LimitResponse, {"type": 1, "queuing": 2}),
    (v1beta2.QueuingConfiguration, {"queues": 1, "handSize": 2, "queueLengthLimit": 3}),
]


@pytest.mark.parametrize(("message", "numbers"), [pytest.param(*c, id=label(c[0])) for c in FIELD_NUMBERS])
def test_every_field_has_upstream_name_and_number(message: type[Message], numbers: dict[str, int]) -> None:
    assert {f.name: f.number for f in message.DESCRIPTOR.fields} == numbers


@pytest.mark.parametrize("message", [v1beta2.FlowSchema, v1beta2.PriorityLevelConfiguration], ids=label)
def test_messages_live_in_the_upstream_package(message: type[Message]) -> None:
    """The envelope names kinds by Go package; a message in the wrong proto package breaks client-go's decoding."""
    assert message.DESCRIPTOR.full_name == f"k8s.io.api.flowcontrol.v1beta2.{message.__name__}"
