"""Field numbers and names of admissionregistration.k8s.io v1beta1 and v1alpha1 ValidatingAdmissionPolicy and
ValidatingAdmissionPolicyBinding, written by hand from upstream's protobuf tags (k8s.io/api admissionregistration
v1beta1 and v1alpha1 generated.proto, kube 1.28): a renumbered or renamed field fails here. Note upstream's gaps:
ExpressionWarning starts at 2, MatchResources jumps from 4 to 7."""

from __future__ import annotations

from types import ModuleType

import pytest
from google.protobuf.message import Message

from capstan.api.admissionregistration.v1alpha1 import admissionregistration_v1alpha1_pb2 as v1alpha1
from capstan.api.admissionregistration.v1beta1 import admissionregistration_v1beta1_pb2 as v1beta1
from tests.protos.test_wire import len_field

NUMBERS: dict[str, dict[str, int]] = {
    "ValidatingAdmissionPolicy": {"metadata": 1, "spec": 2, "status": 3},
    "ValidatingAdmissionPolicyList": {"metadata": 1, "items": 2},
    "ValidatingAdmissionPolicySpec": {"paramKind": 1, "matchConstraints": 2, "validations": 3, "failurePolicy": 4,
                                      "auditAnnotations": 5, "matchConditions": 6, "variables": 7},
    "ValidatingAdmissionPolicyStatus": {"observedGeneration": 1, "typeChecking": 2, "conditions": 3},
    "TypeChecking": {"expressionWarnings": 1},
    "ExpressionWarning": {"fieldRef": 2, "warning": 3},
    "ParamKind": {"apiVersion": 1, "kind": 2},
    "MatchResources": {"namespaceSelector": 1, "objectSelector": 2, "resourceRules": 3, "excludeResourceRules": 4,
                       "matchPolicy": 7},
    "NamedRuleWithOperations": {"resourceNames": 1, "ruleWithOperations": 2},
    "Validation": {"expression": 1, "message": 2, "reason": 3, "messageExpression": 4},
    "Variable": {"name": 1, "expression": 2},
    "AuditAnnotation": {"key": 1, "valueExpression": 2},
    "ValidatingAdmissionPolicyBinding": {"metadata": 1, "spec": 2},
    "ValidatingAdmissionPolicyBindingList": {"metadata": 1, "items": 2},
    "ValidatingAdmissionPolicyBindingSpec": {"policyName": 1, "paramRef": 2, "matchResources": 3,
                                             "validationActions": 4},
    "ParamRef": {"name": 1, "namespace": 2, "selector": 3, "parameterNotFoundAction": 4},
}
MODULES = {"v1beta1": v1beta1, "v1alpha1": v1alpha1}


@pytest.mark.parametrize(("version", "message", "numbers"),
                         [(v, m, n) for v in MODULES for m, n in NUMBERS.items()],
                         ids=[f"{v}-{m}" for v in MODULES for m in NUMBERS])
def test_every_field_has_upstream_name_and_number(version: str, message: str, numbers: dict[str, int]) -> None:
    module: ModuleType = MODULES[version]
    cls: type[Message] = getattr(module, message)
    assert {f.name: f.number for f in cls.DESCRIPTOR.fields} == numbers
    assert cls.DESCRIPTOR.full_name == f"k8s.io.api.admissionregistration.{version}.{message}"


@pytest.mark.parametrize("module", list(MODULES.values()), ids=list(MODULES))
def test_a_binding_encodes_to_upstream_bytes(module: ModuleType) -> None:
    binding = module.ValidatingAdmissionPolicyBinding(spec=module.ValidatingAdmissionPolicyBindingSpec(
        policyName="p", paramRef=module.ParamRef(name="n", parameterNotFoundAction="Deny"),
        validationActions=["Deny", "Audit"]))
    golden = len_field(2, len_field(1, "p") + len_field(2, len_field(1, "n") + len_field(4, "Deny"))
                       + len_field(4, "Deny") + len_field(4, "Audit"))
    assert binding.SerializeToString(deterministic=True) == golden
