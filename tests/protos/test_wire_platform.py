"""Golden bytes and a JSON round trip for the policy, networking, discovery, scheduling and node kinds.

As in test_wire_kinds.py, every expected byte is written by hand from upstream's numbers (the protobuf tags of
k8s.io/api <group>/v1 generated.proto), as tag = number << 3 | wire type, never derived from our descriptors:
a renumbered field fails here. The round trips decode those bytes into the JSON form kubectl prints and encode
it back to the same bytes.
"""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from capstan.api.discovery.v1 import discovery_pb2 as discovery
from capstan.api.networking.v1 import networking_pb2 as networking
from capstan.api.node.v1 import node_pb2 as node
from capstan.api.policy.v1 import policy_pb2 as policy
from capstan.api.scheduling.v1 import scheduling_pb2 as scheduling
from server.machinery.schema import ProtoSchema
from server.machinery.values import Obj
from tests.protos.test_wire import entry, int_field, len_field

META = len_field(1, len_field(1, "web"))  # ObjectMeta{name: web}


def _int_or_string(value: int) -> bytes:
    return int_field(1, 0) + int_field(2, value) + len_field(3, "")


CASES: list[tuple[type[Message], bytes, Obj]] = [
    (policy.PodDisruptionBudget,
     META + len_field(2, len_field(1, _int_or_string(2)) + len_field(2, entry(1, "app", "web"))
                      + len_field(4, "AlwaysAllow"))
     + len_field(3, int_field(1, 3) + int_field(3, 1) + int_field(4, 3) + int_field(5, 2) + int_field(6, 3)),
     {"metadata": {"name": "web"},
      "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}},
               "unhealthyPodEvictionPolicy": "AlwaysAllow"},
      "status": {"observedGeneration": 3, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
                 "expectedPods": 3}}),
    (networking.Ingress,
     META + len_field(2, len_field(3, len_field(1, "a.example.com") + len_field(2, len_field(1, len_field(1, (
         len_field(1, "/") + len_field(2, len_field(4, len_field(1, "web") + len_field(2, int_field(2, 80))))
         + len_field(3, "Prefix"))))))
                      + len_field(4, "nginx"))
     + len_field(3, len_field(1, len_field(1, len_field(1, "192.0.2.1")))),
     {"metadata": {"name": "web"},
      "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com", "http": {"paths": [
          {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
      "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
    (networking.IngressClass,
     META + len_field(2, len_field(1, "example.com/ingress") + len_field(2, (
         len_field(1, "k8s.example.com") + len_field(2, "Config") + len_field(3, "c") + len_field(4, "Cluster")))),
     {"metadata": {"name": "web"},
      "spec": {"controller": "example.com/ingress", "parameters": {
          "apiGroup": "k8s.example.com", "kind": "Config", "name": "c", "scope": "Cluster"}}}),
    (networking.NetworkPolicy,
     META + len_field(2, len_field(1, b"") + len_field(3, len_field(1, len_field(1, "TCP") + len_field(
         2, _int_or_string(53)) + int_field(3, 60)) + len_field(2, len_field(3, len_field(1, "10.0.0.0/8"))))
                      + len_field(4, "Egress")),
     {"metadata": {"name": "web"},
      "spec": {"podSelector": {}, "egress": [{"ports": [{"protocol": "TCP", "port": 53, "endPort": 60}],
                                              "to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
               "policyTypes": ["Egress"]}}),
    (discovery.EndpointSlice,
     META + len_field(2, len_field(1, "10.0.0.1") + len_field(2, int_field(1, 1)) + len_field(6, "n1"))
     + len_field(3, len_field(1, "https") + len_field(2, "TCP") + int_field(3, 6443)) + len_field(4, "IPv4"),
     {"metadata": {"name": "web"}, "addressType": "IPv4",
      "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "nodeName": "n1"}],
      "ports": [{"name": "https", "protocol": "TCP", "port": 6443}]}),
    (scheduling.PriorityClass,
     META + int_field(2, 1000) + int_field(3, 1) + len_field(4, "batch") + len_field(5, "Never"),
     {"metadata": {"name": "web"}, "value": 1000, "globalDefault": True, "description": "batch",
      "preemptionPolicy": "Never"}),
    (node.RuntimeClass,
     META + len_field(2, "runc") + len_field(3, entry(1, "cpu", len_field(1, "250m")))
     + len_field(4, entry(1, "pool", "a") + len_field(2, len_field(1, "k") + len_field(2, "Exists"))),
     {"metadata": {"name": "web"}, "handler": "runc", "overhead": {"podFixed": {"cpu": "250m"}},
      "scheduling": {"nodeSelector": {"pool": "a"}, "tolerations": [{"key": "k", "operator": "Exists"}]}}),
]


@pytest.mark.parametrize(("message", "wire", "json_form"), CASES, ids=[c[0].__name__ for c in CASES])
def test_upstream_bytes_decode_to_kubes_json_and_back(message: type[Message], wire: bytes, json_form: Obj) -> None:
    schema = ProtoSchema(message)
    decoded = schema.from_proto(wire)
    decoded.get("metadata", {}).pop("creationTimestamp", None)
    assert decoded == json_form
    assert message.FromString(schema.to_proto(json_form)) == message.FromString(wire)
