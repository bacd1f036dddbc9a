"""CertificateSigningRequest Table columns against kube-apiserver 1.28's printCertificateSigningRequest."""

from __future__ import annotations

from typing import Any

import pytest

from server.kinds.certificates import CERTIFICATE_SIGNING_REQUESTS as CSRS
from server.machinery.values import Obj
from server.registry.printing import columns_for
from tests.server.registry.printing.test_corev1_kinds import cells


def test_headers() -> None:
    assert [(c.name, c.type, c.format) for c in columns_for(CSRS)] == [
        ("Name", "string", "name"), ("Age", "string", ""), ("SignerName", "string", ""), ("Requestor", "string", ""),
        ("RequestedDuration", "string", ""), ("Condition", "string", "")]


SPEC = {"signerName": "kubernetes.io/kube-apiserver-client", "username": "admin"}


@pytest.mark.parametrize(("spec", "status", "expected"), [
    pytest.param(SPEC, {}, ["kubernetes.io/kube-apiserver-client", "admin", "<none>", "Pending"], id="pending"),
    pytest.param({**SPEC, "expirationSeconds": 86400}, {"conditions": [{"type": "Approved"}], "certificate": "eA=="},
                 ["kubernetes.io/kube-apiserver-client", "admin", "24h", "Approved,Issued"], id="issued"),
    pytest.param({"username": "u", "expirationSeconds": 600}, {"conditions": [{"type": "Approved"},
                                                                              {"type": "Failed"}]},
                 ["<none>", "u", "10m", "Approved,Failed"], id="failed"),
    pytest.param(SPEC, {"conditions": [{"type": "Approved"}, {"type": "Denied"}]},
                 ["kubernetes.io/kube-apiserver-client", "admin", "<none>", "Denied"], id="denied first"),
])
def test_cells(spec: Obj, status: Obj, expected: list[Any]) -> None:
    assert cells(CSRS, {"metadata": {"name": "erin"}, "spec": spec, "status": status}) == ["erin", "60m", *expected]
