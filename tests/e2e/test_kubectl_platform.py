"""The real kubectl against a real `capstan serve`: the policy, networking, discovery, scheduling and node kinds.

`get` prints the server's Tables (headers as kube-apiserver 1.28 names them, short names resolved through
discovery), `explain` reads the OpenAPI documents, and what the server writes at start (the two system
PriorityClasses) is there for kubectl to list.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Kubectl

MANIFESTS = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  rules:
  - host: a.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec: {podSelector: {matchLabels: {app: web}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
ports: [{name: http, port: 80}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: NAMESPACE-nginx}
spec: {controller: example.com/ingress}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: NAMESPACE-batch}
value: 100
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: NAMESPACE-runc}
handler: runc
"""


def rows(text: str) -> list[list[str]]:
    """kubectl's table output split on the two or more spaces between columns (headers hold single spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip("\n").splitlines()]


@pytest.mark.parametrize(("kind", "name", "header", "cells"), [
    ("pdb", "web", ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"],
     ["web", "1", "N/A", "0"]),
    ("ing", "web", ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], ["web", "nginx", "a.example.com", "80"]),
    ("netpol", "web", ["NAME", "POD-SELECTOR", "AGE"], ["web", "app=web"]),
    ("endpointslices", "web", ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"], ["web", "IPv4", "80", "10.0.0.1"]),
    ("ingressclass", "{ns}-nginx", ["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
     ["{ns}-nginx", "example.com/ingress", "<none>"]),
    ("pc", "{ns}-batch", ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"],
     ["{ns}-batch", "100", "false"]),
    ("runtimeclass", "{ns}-runc", ["NAME", "HANDLER", "AGE"], ["{ns}-runc", "runc"]),
])
def test_get_prints_kubes_columns(kubectl: Kubectl, namespace: str, kind: str, name: str, header: list[str],
                                  cells: list[str]) -> None:
    created = kubectl("create", "-f", "-", "-n", namespace, input=MANIFESTS.replace("NAMESPACE", namespace))
    assert created.code == 0, created.err
    shown = kubectl("get", kind, name.replace("{ns}", namespace), "-n", namespace)
    assert shown.code == 0, shown.err
    head, row = rows(shown.out)
    # An empty cell (ADDRESS) leaves no column between its neighbours' spacing: compare what kubectl printed.
    assert head == header
    assert [c for c in row if not re.fullmatch(r"\d+[smhd]", c)][:len(cells)] == [
        c.replace("{ns}", namespace) for c in cells]


def test_system_priority_classes_are_listed(kubectl: Kubectl) -> None:
    shown = kubectl("get", "priorityclasses", "system-cluster-critical", "system-node-critical", "-o", "name")
    assert (shown.code, shown.out) == (0, "priorityclass.scheduling.k8s.io/system-cluster-critical\n"
                                          "priorityclass.scheduling.k8s.io/system-node-critical\n"), shown.err


@pytest.mark.parametrize(("resource", "kind", "group"), [
    ("poddisruptionbudgets", "PodDisruptionBudget", "policy"),
    ("ingresses", "Ingress", "networking.k8s.io"),
    ("ingressclasses", "IngressClass", "networking.k8s.io"),
    ("networkpolicies", "NetworkPolicy", "networking.k8s.io"),
    ("endpointslices", "EndpointSlice", "discovery.k8s.io"),
    ("priorityclasses", "PriorityClass", "scheduling.k8s.io"),
    ("runtimeclasses", "RuntimeClass", "node.k8s.io"),
])
def test_explain(kubectl: Kubectl, resource: str, kind: str, group: str) -> None:
    shown = kubectl("explain", resource)
    assert shown.code == 0, shown.err
    assert f"KIND:       {kind}" in shown.out and f"GROUP:      {group}" in shown.out
