"""The descriptions Capstan serves (what `kubectl explain` prints) are kube-apiserver 1.28's: each row's text is
components.schemas.<schema>.description, or .properties.<property>.description, of kubernetes 1.28.7's
api/openapi-spec/v3/<group version>_openapi.json; None where kube publishes no description. Both /openapi/v3 and
/openapi/v2 carry it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.openapi import documents
from server.kinds import BUILTIN
from server.registry.discovery import discover
from server.registry.resources import Registry

Doc = dict[str, Any]

CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."

DESCRIPTIONS = [
    # (group version, schema, property or None for the schema's own description, kube 1.28's text)
    ("api/v1", CORE + "ConfigMap", None,
     "ConfigMap holds configuration data for pods to consume."),
    ("api/v1", CORE + "Secret", "type",
     "Used to facilitate programmatic handling of secret data. More info: "
     "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    ("api/v1", CORE + "NodeSystemInfo", "kubeProxyVersion",
     "KubeProxy Version reported by the node."),
    ("apis/apps/v1", "io.k8s.api.apps.v1.StatefulSetCondition", None,
     "StatefulSetCondition describes the state of a statefulset at a certain point."),
    ("apis/batch/v1", "io.k8s.api.batch.v1.CronJobSpec", "schedule",
     "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    ("apis/networking.k8s.io/v1", "io.k8s.api.networking.v1.IPBlock", None,
     "IPBlock describes a particular CIDR (Ex. \"192.168.1.0/24\",\"2001:db8::/64\") that is allowed to the pods "
     "matched by a NetworkPolicySpec's podSelector. The except entry describes CIDRs that should not be included "
     "within this rule."),
    ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.CSIStorageCapacity", "metadata",
     "Standard object's metadata. The name has no particular meaning. It must be a DNS subdomain (dots allowed, 253 "
     "characters). To ensure that there are no conflicts with other CSI drivers on the cluster, the recommendation "
     "is to use csisc-<uuid>, a generated name, or a reverse-domain name which ends with the unique CSI driver "
     "name.\n\n"
     "Objects are namespaced.\n\n"
     "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
    ("apis/autoscaling/v2", "io.k8s.api.autoscaling.v2.ExternalMetricStatus", None,
     "ExternalMetricStatus indicates the current value of a global metric not associated with any Kubernetes object."),
    ("apis/rbac.authorization.k8s.io/v1", "io.k8s.api.rbac.v1.Role", None,
     "Role is a namespaced, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding."),
    ("api/v1", META + "FieldsV1", None,
     "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\n"
     "Each key is either a '.' representing the field itself, and will always map to an empty set, or a string "
     "representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> "
     "is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted "
     "value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a "
     "map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that "
     "key represents is part of the set.\n\n"
     "The exact format is defined in sigs.k8s.io/structured-merge-diff"),
    ("api/v1", CORE + "GRPCAction", None,
     None),
    ("api/v1", META + "WatchEvent", "type",
     None),
    ("api/v1", META + "ObjectMeta", "name",
     "Name must be unique within a namespace. Is required when creating resources, although some resources may allow "
     "a client to request the generation of an appropriate name automatically. Name is primarily intended for "
     "creation idempotence and configuration definition. Cannot be updated. More info: "
     "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
    ("apis/apps/v1", CORE + "Container", "imagePullPolicy",
     "Image pull policy. One of Always, Never, IfNotPresent. Defaults to Always if :latest tag is specified, or "
     "IfNotPresent otherwise. Cannot be updated. More info: "
     "https://kubernetes.io/docs/concepts/containers/images#updating-images"),
    ("apis/apps/v1", CORE + "ContainerPort", "protocol",
     "Protocol for port. Must be UDP, TCP, or SCTP. Defaults to \"TCP\"."),
    ("api/v1", CORE + "ConfigMap", "apiVersion",
     "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized "
     "schemas to the latest internal value, and may reject unrecognized values. More info: "
     "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"),
    ("api/v1", CORE + "PodList", None,
     "PodList is a list of Pods."),
    ("api/v1", CORE + "ComponentCondition", None,
     "Information about the condition of a component."),
    ("apis/apps/v1", "io.k8s.api.apps.v1.DeploymentList", None,
     "DeploymentList is a list of Deployments."),
    # indented lines kept as lines
    ("apis/apps/v1", "io.k8s.api.apps.v1.StatefulSet", None,
     "StatefulSet represents a set of pods with consistent identities. Identities are defined as:\n"
     "  - Network: A single stable DNS and hostname.\n"
     "  - Storage: As many VolumeClaims as requested.\n\n"
     "The StatefulSet guarantees that a given network identity will always map to the same storage identity."),
    ("apis/flowcontrol.apiserver.k8s.io/v1beta3", "io.k8s.api.flowcontrol.v1beta3.LimitedPriorityLevelConfiguration",
     None,
     "LimitedPriorityLevelConfiguration specifies how to handle requests that are subject to limits. It addresses two "
     "issues:\n  - How are requests for this priority level limited?\n"
     "  - What should be done with requests that exceed the limit?"),
    ("api/v1", CORE + "EndpointSubset", None,
     "EndpointSubset is a group of addresses with a common set of ports. The expanded set of endpoints is the "
     "Cartesian product of Addresses x Ports. For example, given:\n\n"
     "\t{\n"
     "\t  Addresses: [{\"ip\": \"10.10.1.1\"}, {\"ip\": \"10.10.2.2\"}],\n"
     "\t  Ports:     [{\"name\": \"a\", \"port\": 8675}, {\"name\": \"b\", \"port\": 309}]\n"
     "\t}\n\n"
     "The resulting set of endpoints can be viewed as:\n\n"
     "\ta: [ 10.10.1.1:8675, 10.10.2.2:8675 ],\n"
     "\tb: [ 10.10.1.1:309, 10.10.2.2:309 ]"),
]


@pytest.fixture(scope="module")
def built() -> documents.Documents:
    return documents.build(discover(Registry(BUILTIN)), version="v1.28.7")


def _description(schema: Doc, prop: str | None) -> str | None:
    found = schema if prop is None else schema["properties"][prop]
    description: str | None = found.get("description")
    return description


@pytest.mark.parametrize(("group_version", "name", "prop", "expected"), DESCRIPTIONS)
def test_v3_description_is_kubes(built: documents.Documents, group_version: str, name: str, prop: str | None,
                                 expected: str | None) -> None:
    doc: Doc = orjson.loads(built.group_versions[group_version].body)
    assert _description(doc["components"]["schemas"][name], prop) == expected


@pytest.mark.parametrize(("group_version", "name", "prop", "expected"), DESCRIPTIONS)
def test_v2_description_is_kubes(built: documents.Documents, group_version: str, name: str, prop: str | None,
                                 expected: str | None) -> None:
    doc: Doc = orjson.loads(built.swagger.body)
    assert _description(doc["definitions"][name], prop) == expected


NO_DEFAULT = object()

DEFAULTS = [
    # (group version, schema, property, kube 1.28's default, NO_DEFAULT where it publishes none)
    ("apis/apps/v1", "io.k8s.api.apps.v1.StatefulSetStatus", "availableReplicas", 0),  # optional, always printed
    ("api/v1", CORE + "ComponentCondition", "status", ""),  # required
    ("apis/authorization.k8s.io/v1", "io.k8s.api.authorization.v1.SubjectAccessReviewStatus", "allowed", False),
    ("api/v1", CORE + "ContainerPort", "protocol", "TCP"),  # +default="TCP"
    ("api/v1", CORE + "Event", "eventTime", {}),  # a MicroTime value, not a pointer
    ("api/v1", META + "ObjectMeta", "creationTimestamp", {}),
    ("api/v1", CORE + "ConfigMap", "immutable", NO_DEFAULT),  # a pointer
    ("api/v1", CORE + "ObjectReference", "name", NO_DEFAULT),  # omitempty
]


@pytest.mark.parametrize(("group_version", "name", "prop", "expected"), DEFAULTS)
def test_defaults_are_kubes(built: documents.Documents, group_version: str, name: str, prop: str,
                            expected: object) -> None:
    schema = orjson.loads(built.group_versions[group_version].body)["components"]["schemas"][name]
    assert schema["properties"][prop].get("default", NO_DEFAULT) == expected
