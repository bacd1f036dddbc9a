"""Which zero values Capstan prints, field by field, as kube-apiserver 1.28's Go types print them.

Go's encoding/json prints a pointer field (`*string`, `*int32`, a pointer to a named string type) whenever it
is non-nil, even to "", 0 or false; a field whose tag lacks omitempty always; a non-pointer struct always
(omitempty never drops a struct; a zero metav1.Time prints as null); and a plain `omitempty` field only when not
zero. Expectations are written from the Go types in k8s.io/api, k8s.io/apiextensions-apiserver and
k8s.io/apimachinery 1.28, never from the transcoder: the codec rows decode a JSON object and print it again (what
every write and every stored revision goes through), the core rows create through a real core over gRPC.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from capstan.api.admissionregistration.v1beta1 import admissionregistration_v1beta1_pb2 as admission_v1beta1
from capstan.api.apiextensions.v1 import apiextensions_pb2 as apiextensions
from capstan.api.authentication.v1 import authentication_pb2 as authentication
from capstan.api.core.v1 import core_pb2 as core
from capstan.api.flowcontrol.v1beta3 import flowcontrol_pb2 as flowcontrol
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.codec import decode, encode
from tests.server.client import Client, Obj, path

FLOWCONTROL = "flowcontrol.apiserver.k8s.io"
WEBHOOK: Obj = {"clientConfig": {"url": "", "service": {"namespace": "ns", "name": "conv", "path": "", "port": 0}},
                "conversionReviewVersions": ["v1"]}


def _crd_version(**fields: Any) -> Obj:
    return {"name": "v1", "served": True, "storage": True, **fields}


def _crd(version: Obj, **spec: Any) -> Obj:
    return {"spec": {"group": "example.com", "scope": "Namespaced", "versions": [version], **spec}}


# (message, JSON in, the part of the printed JSON under test, what Go prints there)
CODEC_ROWS = [
    # Values Go prints though zero and absent from the body: non-pointer fields without omitempty, required or
    # +optional (kube-apiserver 1.28.7's answers to the same creates).
    pytest.param(core.Event, {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}, "reason": "Test"},
                 lambda out: (out["reportingComponent"], out["reportingInstance"]), ("", ""),
                 id="Event.reportingComponent, reportingInstance strings: printed empty"),
    pytest.param(core.Node, {"metadata": {"name": "n"}},
                 lambda out: (out["status"]["daemonEndpoints"], out["status"]["nodeInfo"]["kubeletVersion"],
                              len(out["status"]["nodeInfo"])),
                 ({"kubeletEndpoint": {"Port": 0}}, "", 10),
                 id="NodeSystemInfo strings and DaemonEndpoint.Port: printed zero"),
    pytest.param(apiextensions.CustomResourceDefinition, _crd(_crd_version(deprecated=True, deprecationWarning="")),
                 lambda out: out["spec"]["versions"][0],
                 {"name": "v1", "served": True, "storage": True, "deprecated": True, "deprecationWarning": ""},
                 id="CustomResourceDefinitionVersion.deprecationWarning *string: empty kept"),
    pytest.param(apiextensions.CustomResourceDefinition, _crd(_crd_version(deprecated=False)),
                 lambda out: out["spec"]["versions"][0], {"name": "v1", "served": True, "storage": True},
                 id="CustomResourceDefinitionVersion.deprecated bool omitempty: false omitted"),
    pytest.param(apiextensions.CustomResourceDefinition, _crd(_crd_version(subresources={"scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ""}})),
                 lambda out: out["spec"]["versions"][0]["subresources"]["scale"]["labelSelectorPath"], "",
                 id="CustomResourceSubresourceScale.labelSelectorPath *string: empty kept"),
    pytest.param(apiextensions.CustomResourceDefinition, _crd(_crd_version(), conversion={
        "strategy": "Webhook", "webhook": WEBHOOK}),
                 lambda out: out["spec"]["conversion"]["webhook"]["clientConfig"],
                 {"url": "", "service": {"namespace": "ns", "name": "conv", "path": "", "port": 0}},
                 id="WebhookClientConfig.url, ServiceReference.path and port are pointers: zero kept"),
    pytest.param(flowcontrol.PriorityLevelConfiguration, {"spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 0, "lendablePercent": 0, "borrowingLimitPercent": 0}}},
                 lambda out: out["spec"]["limited"],
                 {"nominalConcurrencyShares": 0, "limitResponse": {"type": ""}, "lendablePercent": 0,
                  "borrowingLimitPercent": 0},
                 id="LimitedPriorityLevelConfiguration.lendablePercent, borrowingLimitPercent *int32: 0 kept"),
    pytest.param(flowcontrol.PriorityLevelConfiguration, {"spec": {"type": "Exempt", "exempt": {
        "nominalConcurrencyShares": 0, "lendablePercent": 0}}},
                 lambda out: out["spec"]["exempt"], {"nominalConcurrencyShares": 0, "lendablePercent": 0},
                 id="ExemptPriorityLevelConfiguration *int32 fields: 0 kept"),
    pytest.param(flowcontrol.FlowSchema, {"status": {"conditions": [{"type": "Dangling", "status": "False"}]}},
                 lambda out: out["status"]["conditions"][0],
                 {"type": "Dangling", "status": "False", "lastTransitionTime": None},
                 id="FlowSchemaCondition.lastTransitionTime metav1.Time: zero printed as null"),
    pytest.param(admission_v1beta1.ValidatingAdmissionPolicy, {"spec": {
        "failurePolicy": "", "matchConstraints": {"matchPolicy": ""}, "validations": [
            {"expression": "true", "reason": ""}]}},
                 lambda out: (out["spec"]["failurePolicy"], out["spec"]["matchConstraints"]["matchPolicy"],
                              out["spec"]["validations"][0]["reason"], out["status"]),
                 ("", "", "", {}),
                 id="ValidatingAdmissionPolicy pointers kept empty; status struct printed as {}"),
    pytest.param(admission_v1beta1.ValidatingAdmissionPolicyList, {"metadata": {}, "items": []},
                 lambda out: "items" in out, False,
                 id="ValidatingAdmissionPolicyList.items omitempty: an empty list omitted"),
    pytest.param(authentication.SelfSubjectReview, {"status": {}}, lambda out: out["status"], {"userInfo": {}},
                 id="SelfSubjectReviewStatus.userInfo struct: printed as {}"),
    pytest.param(core.Pod, {"spec": {"containers": [], "hostAliases": [{"ip": "", "hostnames": ["db"]}]},
                            "status": {"podIPs": [{"ip": ""}], "hostIPs": [{"ip": ""}]}},
                 lambda out: (out["spec"]["hostAliases"], out["status"]["podIPs"], out["status"]["hostIPs"]),
                 ([{"hostnames": ["db"]}], [{}], [{}]),
                 id="HostAlias, PodIP and HostIP ip string omitempty: empty omitted"),
]


@pytest.mark.parametrize(("cls", "obj", "part", "expected"), CODEC_ROWS)
def test_the_codec_prints_zero_values_as_go_does(cls: type[Message], obj: Obj, part: Any, expected: Any) -> None:
    assert part(encode(decode(cls, obj, type_meta=False).message)) == expected


def _level(limited: Obj) -> Obj:
    return {"apiVersion": f"{FLOWCONTROL}/v1beta3", "kind": "PriorityLevelConfiguration", "metadata": {"name": "web"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"},
                                                    **limited}}}


def _crd_object(version: Obj) -> Obj:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}, **version}]}}


LEVELS = path("prioritylevelconfigurations", group=FLOWCONTROL, version="v1beta3")
CRDS = path("customresourcedefinitions", group="apiextensions.k8s.io")


@pytest.mark.parametrize(("resource", "obj", "part", "expected"), [
    pytest.param(LEVELS, _level({"borrowingLimitPercent": 0}),
                 lambda out: out["spec"]["limited"]["borrowingLimitPercent"], 0,
                 id="borrowingLimitPercent *int32: 0 kept"),
    pytest.param(LEVELS, _level({}), lambda out: "borrowingLimitPercent" in out["spec"]["limited"], False,
                 id="borrowingLimitPercent *int32: nil omitted"),
    pytest.param(CRDS, _crd_object({"deprecated": False}), lambda out: "deprecated" in out["spec"]["versions"][0],
                 False, id="deprecated bool omitempty: false omitted"),
    pytest.param(CRDS, _crd_object({"deprecated": True, "deprecationWarning": "use v2"}),
                 lambda out: out["spec"]["versions"][0]["deprecationWarning"], "use v2",
                 id="deprecationWarning *string: set kept"),
])
async def test_a_created_object_prints_zero_values_as_kube_does(
        client: Client, resource: core_pb2.ResourcePath, obj: Obj, part: Any, expected: Any) -> None:
    created = await client.create(resource, obj)
    read = await client.get(path(resource.resource, name=obj["metadata"]["name"], group=resource.group,
                                 version=resource.version))
    assert (part(created), part(read)) == (expected, expected)
