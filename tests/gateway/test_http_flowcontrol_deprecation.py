"""flowcontrol.apiserver.k8s.io/v1beta2 answers carry kube 1.28's deprecation warning (the version's prerelease
lifecycle: deprecated in 1.26, removed in 1.29, replaced by v1beta3), on every verb; v1beta3 answers carry none."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
GROUP = "/apis/flowcontrol.apiserver.k8s.io"
FS_WARNING = ('299 - "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema is deprecated in v1.26+, unavailable in '
              'v1.29+; use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"')
PL_WARNING = ('299 - "flowcontrol.apiserver.k8s.io/v1beta2 PriorityLevelConfiguration is deprecated in v1.26+, '
              'unavailable in v1.29+; use flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration"')


def level(version: str, name: str) -> Obj:
    return {"apiVersion": f"flowcontrol.apiserver.k8s.io/{version}", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name}, "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}


def schema(version: str, name: str) -> Obj:
    return {"apiVersion": f"flowcontrol.apiserver.k8s.io/{version}", "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 5000}}


@pytest.mark.parametrize(("version", "resource", "body", "warning"), [
    ("v1beta2", "flowschemas", schema, FS_WARNING),
    ("v1beta2", "prioritylevelconfigurations", level, PL_WARNING),
    ("v1beta3", "flowschemas", schema, None),
    ("v1beta3", "prioritylevelconfigurations", level, None),
])
async def test_every_answer_of_a_deprecated_version_warns(server: Server, version: str, resource: str,
                                                          body: Any, warning: str | None) -> None:
    collection = f"{GROUP}/{version}/{resource}"
    expected = [warning] if warning else []
    created = await server.request("POST", collection, json=body(version, "x"))
    assert created.status == 201, created.body
    for method, path, sent, code in [
        ("GET", collection, None, 200),
        ("GET", f"{collection}/x", None, 200),
        ("PATCH", f"{collection}/x", {"metadata": {"labels": {"a": "b"}}}, 200),
        ("GET", f"{collection}/missing", None, 404),
        ("DELETE", f"{collection}/x", None, 200),
    ]:
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else None
        resp = await server.request(method, path, json=sent, headers=headers)
        assert resp.status == code, (method, path, resp.body)
        assert resp.headers.getall("Warning", []) == expected, (method, path)
    assert created.headers.getall("Warning", []) == expected
