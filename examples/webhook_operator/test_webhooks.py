"""The Gadget operator's webhooks tested against a real API server with Capstan's pytest plugin: the CRD applied
once per session (`capstan_apply`), each webhook served over HTTPS and registered for the test
(`capstan_webhooks`), and what the server then does with a Gadget checked through the official client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from capstan.testing.apply import Applier
from capstan.testing.registered import Webhooks
from capstan.testing.rest import request
from examples.webhook_operator.webhooks import GROUP, OWNER_LABEL, convert, mutate, validate

HERE = Path(__file__).parent
RULES = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [GROUP], "apiVersions": ["*"],
          "resources": ["gadgets"]}]


@pytest.fixture(scope="session")
def gadgets(capstan_apply: Applier) -> None:
    capstan_apply(HERE / "crd.yaml")


def gadget(name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def collection(namespace: str, version: str = "v1") -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/gadgets"


def test_the_validating_webhook_refuses_a_gadget_without_size(
        gadgets: None, capstan_webhooks: Webhooks, capstan_namespace: str, k8s_client: client.ApiClient) -> None:
    hook = capstan_webhooks.validating(validate, RULES)
    request(k8s_client, "POST", collection(capstan_namespace), body=gadget("fine", size=2))
    with pytest.raises(client.ApiException) as refused:
        request(k8s_client, "POST", collection(capstan_namespace), body=gadget("empty", size=0))
    status = json.loads(refused.value.body or "{}")
    assert (refused.value.status, status["message"]) == (
        422, 'admission webhook "validate.capstan.test" denied the request: spec.size must be positive, not 0')
    assert [r["request"]["name"] for r in hook.requests] == ["fine", "empty"]


def test_the_mutating_webhook_labels_every_gadget(
        gadgets: None, capstan_webhooks: Webhooks, capstan_namespace: str, k8s_client: client.ApiClient) -> None:
    capstan_webhooks.mutating(mutate, RULES)
    made = request(k8s_client, "POST", collection(capstan_namespace), body=gadget("labelled", size=1))
    assert made["metadata"]["labels"] == {OWNER_LABEL: "gadget-operator"}


def test_the_conversion_webhook_serves_v2_from_v1(
        gadgets: None, capstan_webhooks: Webhooks, capstan_namespace: str, k8s_client: client.ApiClient) -> None:
    capstan_webhooks.conversion(convert, f"gadgets.{GROUP}")
    request(k8s_client, "POST", collection(capstan_namespace), body=gadget("old", color="red", size=1))
    as_v2 = request(k8s_client, "GET", collection(capstan_namespace, "v2") + "/old")
    assert (as_v2["apiVersion"], as_v2["spec"]) == (f"{GROUP}/v2", {"paint": "red", "size": 1})
    request(k8s_client, "POST", collection(capstan_namespace, "v2"), body=gadget("new", "v2", paint="blue"))
    as_v1 = request(k8s_client, "GET", collection(capstan_namespace) + "/new")
    assert as_v1["spec"] == {"color": "blue"}
