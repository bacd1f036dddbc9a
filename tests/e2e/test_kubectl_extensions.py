"""The real kubectl against a real `capstan serve`: the admissionregistration, apiregistration, autoscaling and
storage.k8s.io kinds.

`get` prints the server's Tables (headers as kube-apiserver 1.28 names them, short names resolved through
discovery), `explain` reads the OpenAPI documents, and the Local APIServices the elected controller writes are
there for kubectl to list.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.test_kubectl_platform import rows

WEBHOOKS = ("webhooks: [{name: check.example.com, clientConfig: {url: 'https://hooks.example.com/'}, "
            "sideEffects: None, admissionReviewVersions: [v1]}]")
MANIFESTS = {
    "hpa": """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}
""",
    "sc": """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: NAMESPACE-fast}
provisioner: example.com/fast
""",
    "csidriver": """\
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: NAMESPACE.csi.example.com}
spec: {}
""",
    "csinode": """\
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: NAMESPACE-node}
spec: {drivers: [{name: csi.example.com, nodeID: n1}]}
""",
    "csistoragecapacity": """\
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: capacity}
storageClassName: fast
capacity: 1024Mi
""",
    "volumeattachment": """\
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: NAMESPACE-va}
spec: {attacher: csi.example.com, nodeName: node-1, source: {persistentVolumeName: pv-1}}
""",
    "validatingwebhookconfiguration": f"""\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: NAMESPACE-check}}
{WEBHOOKS}
""",
    "mutatingwebhookconfiguration": f"""\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: NAMESPACE-inject}}
{WEBHOOKS}
""",
}


@pytest.mark.parametrize(("kind", "name", "header", "cells"), [
    ("hpa", "web", ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
     ["web", "Deployment/web", "<unknown>/80%", "1", "5", "0"]),
    ("sc", "{ns}-fast", ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"],
     ["{ns}-fast", "example.com/fast", "Delete", "Immediate", "false"]),
    ("csidriver", "{ns}.csi.example.com", ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
                                           "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"],
     ["{ns}.csi.example.com", "true", "false", "false", "<unset>", "false", "Persistent"]),
    ("csinode", "{ns}-node", ["NAME", "DRIVERS", "AGE"], ["{ns}-node", "1"]),
    ("csistoragecapacity", "capacity", ["NAME", "CREATED AT"], ["capacity"]),  # kube 1.28: no printer of its own
    ("volumeattachment", "{ns}-va", ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
     ["{ns}-va", "csi.example.com", "pv-1", "node-1", "false"]),
    ("validatingwebhookconfiguration", "{ns}-check", ["NAME", "WEBHOOKS", "AGE"], ["{ns}-check", "1"]),
    ("mutatingwebhookconfiguration", "{ns}-inject", ["NAME", "WEBHOOKS", "AGE"], ["{ns}-inject", "1"]),
])
def test_get_prints_kubes_columns(kubectl: Kubectl, namespace: str, kind: str, name: str, header: list[str],
                                  cells: list[str]) -> None:
    created = kubectl("create", "-f", "-", "-n", namespace, input=MANIFESTS[kind].replace("NAMESPACE", namespace))
    assert created.code == 0, created.err
    shown = kubectl("get", kind, name.replace("{ns}", namespace), "-n", namespace)
    assert shown.code == 0, shown.err
    head, row = rows(shown.out)
    assert head == header
    assert [c for c in row if not re.fullmatch(r"\d+[smhd]", c)][:len(cells)] == [
        c.replace("{ns}", namespace) for c in cells]


def test_local_apiservices_are_listed(kubectl: Kubectl) -> None:
    shown = kubectl("get", "apiservices", "v1.", "v1.apps", "v2.autoscaling")
    assert shown.code == 0, shown.err
    head, *table = rows(shown.out)
    assert head == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert [r[:3] for r in table] == [["v1.", "Local", "True"], ["v1.apps", "Local", "True"],
                                      ["v2.autoscaling", "Local", "True"]]


@pytest.mark.parametrize(("resource", "kind", "group", "version"), [
    ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1"),
    ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1"),
    ("apiservices", "APIService", "apiregistration.k8s.io", "v1"),
    ("hpa", "HorizontalPodAutoscaler", "autoscaling", "v2"),
    ("storageclasses", "StorageClass", "storage.k8s.io", "v1"),
    ("csidrivers", "CSIDriver", "storage.k8s.io", "v1"),
    ("csinodes", "CSINode", "storage.k8s.io", "v1"),
    ("csistoragecapacities", "CSIStorageCapacity", "storage.k8s.io", "v1"),
    ("volumeattachments", "VolumeAttachment", "storage.k8s.io", "v1"),
    ("csr", "CertificateSigningRequest", "certificates.k8s.io", "v1"),
    ("flowschemas", "FlowSchema", "flowcontrol.apiserver.k8s.io", "v1beta3"),
    ("prioritylevelconfigurations", "PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io", "v1beta3"),
    ("componentstatuses", "ComponentStatus", "", "v1"),
])
def test_explain(kubectl: Kubectl, resource: str, kind: str, group: str, version: str) -> None:
    shown = kubectl("explain", resource)
    assert shown.code == 0, shown.err
    assert f"KIND:       {kind}" in shown.out
    assert f"GROUP:      {group}" in shown.out if group else "GROUP:" not in shown.out
    assert f"VERSION:    {version}" in shown.out
