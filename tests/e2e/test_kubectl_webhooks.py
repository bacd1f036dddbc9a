"""An admission webhook with the real kubectl against a real `capstan serve`: the test serves a validating
webhook over HTTPS, kubectl applies its configuration, a denied create prints kube's message and a webhook's
warning prints as kubectl prints kube's; `kubectl get --raw /metrics` then shows the webhook's calls under
kube's apiserver_admission_webhook_* names.

The server is shared by the session: the webhook matches only ConfigMaps labelled with this test's token.
"""

from __future__ import annotations

import uuid
from typing import Any

import yaml

from capstan.testing.webhooks import Background
from tests.e2e.conftest import Kubectl

Obj = dict[str, Any]


def review(request: Obj) -> Obj:
    name = request["name"]
    if name.startswith("bad"):
        return {"allowed": False, "status": {"code": 403, "message": f"{name} is not welcome"}}
    return {"allowed": True, "warnings": [f"{name} is watched"]}


def test_a_validating_webhook_with_kubectl(kubectl: Kubectl) -> None:
    # a letter first: hex digits alone may read as a YAML number (kubectl's yaml.v2 takes "1e123456" for a float)
    token = "t" + uuid.uuid4().hex[:8]
    servers = Background()
    try:
        hook = servers.start(review)
        configuration = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"kubectl-{token}"},
            "webhooks": [{"name": f"check-{token}.example.com", "clientConfig": hook.client_config(),
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}],
                          "objectSelector": {"matchLabels": {"webhook-test": token}},
                          "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"}]}
        applied = kubectl("apply", "-f", "-", input=yaml.safe_dump(configuration))
        assert applied.code == 0, applied.err

        def create(name: str) -> Any:
            cm = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"{name}-{token}", "namespace": "default", "labels": {"webhook-test": token}}}
            return kubectl("create", "-f", "-", input=yaml.safe_dump(cm))

        for _ in range(50):  # the server follows the new configuration within milliseconds
            denied = create("bad")
            if denied.code != 0:
                break
            kubectl("delete", "configmap", f"bad-{token}", "-n", "default")
        # The webhook gave no reason: kube keeps its Status as is, so kubectl names none.
        assert denied.err.strip() == (f'Error from server: error when creating "STDIN": admission webhook '
                                      f'"check-{token}.example.com" denied the request: bad-{token} is not welcome')
        made = create("good")
        assert made.code == 0, made.err
        assert f"Warning: good-{token} is watched" in made.err
        scraped = kubectl("get", "--raw", "/metrics")
        assert scraped.code == 0, scraped.err
        calls = [line for line in scraped.out.splitlines()
                 if line.startswith("apiserver_admission_webhook_request_total{") and f"check-{token}" in line]
        assert any('rejected="true"' in line and 'code="403"' in line for line in calls), calls
        assert any('rejected="false"' in line for line in calls), calls
    finally:
        kubectl("delete", "validatingwebhookconfiguration", f"kubectl-{token}", "--ignore-not-found")
        kubectl("delete", "configmap", f"good-{token}", "-n", "default", "--ignore-not-found")
        servers.close()
