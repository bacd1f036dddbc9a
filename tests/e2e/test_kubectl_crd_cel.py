"""CEL validation rules of a CustomResourceDefinition (x-kubernetes-validations) as the real kubectl meets them
against a real `capstan serve`: `kubectl apply` of an object breaking a rule is refused with kube-apiserver's
422 text (`The <Kind> "<name>" is invalid: <path>: Invalid value: "<type>": <message>`), a good one is
created, and an update breaking a transition rule (one using oldSelf) is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import Kubectl, Obj
from tests.e2e.test_kubectl_crds import Names


@pytest.fixture
def n(kubectl: Kubectl) -> Iterator[Names]:
    names = Names(f"g{uuid.uuid4().hex[:8]}.example.com", uuid.uuid4().hex[:6])
    yield names
    kubectl("delete", "crd", names.crd, "--ignore-not-found", "--wait=false")


def crd_yaml(n: Names) -> str:
    spec = {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
                {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"},
            ],
            "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                           "mode": {"type": "string"},
                           "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}}
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": n.crd},
        "spec": {"group": n.group, "scope": "Namespaced",
                 "names": {"plural": n.plural, "singular": n.singular, "kind": n.kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": spec}}}}]}})


def widget(n: Names, name: str, **spec: object) -> str:
    body: Obj = {"apiVersion": f"{n.group}/v1", "kind": n.kind, "metadata": {"name": name}, "spec": spec}
    return yaml.safe_dump(body)


CASES = [
    pytest.param({"replicas": 5, "maxReplicas": 3, "mode": "a", "size": 1},
                 'spec: Invalid value: "object": replicas must not exceed maxReplicas', id="rule-with-message"),
]


@pytest.mark.parametrize(("spec", "error"), CASES)
def test_apply_checks_the_rules(kubectl: Kubectl, namespace: str, n: Names, spec: Obj, error: str) -> None:
    ran = kubectl("apply", "-f", "-", input=crd_yaml(n))
    assert ran.code == 0, ran.err
    ran = kubectl("wait", "--for=condition=Established", f"crd/{n.crd}", "--timeout=10s")
    assert ran.code == 0, ran.err

    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget(n, "bad", **spec))
    assert (ran.code, ran.out) == (1, ""), ran.out
    assert ran.err == f'The {n.kind} "bad" is invalid: {error}\n', ran.err

    good = {"replicas": 2, "maxReplicas": 3, "mode": "a", "size": 2}
    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget(n, "good", **good))
    assert (ran.code, ran.out) == (0, f"{n.resource}/good created\n"), ran.err

    transitions = [
        ({**good, "size": 1}, 'spec.size: Invalid value: "integer": failed rule: self >= oldSelf'),
        ({**good, "mode": "b"}, 'spec: Invalid value: "object": mode is immutable'),
    ]
    for changed, refusal in transitions:
        ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget(n, "good", **changed))
        assert ran.code == 1, ran.out
        assert ran.err == f'The {n.kind} "good" is invalid: {refusal}\n', ran.err
    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget(n, "good", **{**good, "size": 3}))
    assert (ran.code, ran.out) == (0, f"{n.resource}/good configured\n"), ran.err
