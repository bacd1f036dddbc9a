"""ValidatingAdmissionPolicy with the real kubectl against a real `capstan serve` started with kube's flags
(`--feature-gates=ValidatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true`):
kubectl applies a policy and its binding, lists them with kube's columns, and a denied create prints kube's
message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Kubectl, start_capstan, stop_capstan, write_kubeconfig

Obj = dict[str, Any]
FLAGS = ("--feature-gates=ValidatingAdmissionPolicy=true",
         "--runtime-config=admissionregistration.k8s.io/v1beta1=true")
POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "small-data"},
    "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                                                      "apiVersions": ["v1"], "resources": ["configmaps"]}]},
             "validations": [{"expression": "size(object.data) <= 1", "message": "one key at most"}]},
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "small-data-binding"},
    "spec": {"policyName": "small-data", "validationActions": ["Deny"]},
}


@pytest.fixture(scope="module")
def enabled_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    base = tmp_path_factory.mktemp("vap")
    serving = start_capstan(base / "data", *FLAGS)
    try:
        kubeconfig: Path = base / "kubeconfig"
        write_kubeconfig(base / "data", kubeconfig)
        yield Kubectl(kubeconfig, base / "cache")
    finally:
        stop_capstan(serving)


def test_a_policy_with_kubectl(enabled_kubectl: Kubectl) -> None:
    kubectl = enabled_kubectl
    applied = kubectl("apply", "-f", "-", input=yaml.safe_dump_all([POLICY, BINDING]))
    assert applied.code == 0, applied.err
    listed = kubectl("get", "validatingadmissionpolicies")
    assert listed.code == 0, listed.err
    header, row = listed.out.splitlines()[:2]
    assert header.split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert row.split()[:3] == ["small-data", "1", "<unset>"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"},
          "data": {"a": "1", "b": "2"}}
    for _ in range(50):  # the server follows the new binding within milliseconds
        denied = kubectl("create", "-f", "-", input=yaml.safe_dump(cm))
        if denied.code != 0:
            break
        kubectl("delete", "configmap", "big", "-n", "default")
    assert denied.err.strip() == ('The configmaps "big" is invalid: : ValidatingAdmissionPolicy \'small-data\' with '
                                  "binding 'small-data-binding' denied request: one key at most")
