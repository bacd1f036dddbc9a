"""A test's webhooks, served and registered with the cluster: what the `capstan_webhooks` fixture hands out, so a
Python operator's admission and conversion webhooks are tested against a real API server as envtest tests Go ones.

Each call runs the handler as a real HTTPS server (webhooks.py `serve`, on a thread of its own, 127.0.0.1 and a
free port) and registers it: a ValidatingWebhookConfiguration, a MutatingWebhookConfiguration, or a CRD's
`spec.conversion`. close() undoes it all: configurations deleted, each CRD's conversion put back as it was, the
servers stopped. The API server must reach 127.0.0.1: a Capstan the plugin started does; a remote cluster
(--capstan-kubeconfig) does not.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kubernetes import client

from capstan.testing.access import delete
from capstan.testing.rest import request
from capstan.testing.webhooks import Background, Handler, WebhookServer

Obj = dict[str, Any]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# Seconds given to the server to follow a new registration (it watches configurations and CRDs; a change
# reaches it within milliseconds): the call returns after them, so the test's next request meets the webhook.
SETTLE = 0.3


class Webhooks:
    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._servers = Background()
        self._configurations: list[str] = []
        self._conversions: dict[str, Obj] = {}  # CRD name -> its spec.conversion before

    def validating(self, handler: Handler, rules: Sequence[Obj], *, name: str = "validate.capstan.test",
                   **fields: Any) -> WebhookServer:
        """Serve `handler` and register it as one validating webhook on `rules` (admissionregistration/v1
        RuleWithOperations); `fields` set the webhook's others (failurePolicy, objectSelector, ...)."""
        return self._admission(handler, rules, name, fields, mutating=False)

    def mutating(self, handler: Handler, rules: Sequence[Obj], *, name: str = "mutate.capstan.test",
                 **fields: Any) -> WebhookServer:
        """As validating(), as a mutating webhook: the handler may answer `patch` (a list of JSON Patch ops)."""
        return self._admission(handler, rules, name, fields, mutating=True)

    def conversion(self, handler: Handler, crd: str, *, review_versions: Sequence[str] = ("v1",)) -> WebhookServer:
        """Serve `handler` as the conversion webhook of the CRD named `crd` (e.g. "gadgets.example.com"): it
        gets ConversionReview requests and answers `convertedObjects` and `result`."""
        server = self._servers.start(handler)
        current = request(self._api, "GET", f"{CRDS}/{crd}")
        self._conversions.setdefault(crd, dict(current["spec"].get("conversion") or {"strategy": "None"}))
        patch = {"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": server.client_config(), "conversionReviewVersions": list(review_versions)}}}}
        request(self._api, "PATCH", f"{CRDS}/{crd}", body=patch, content_type="application/merge-patch+json")
        time.sleep(SETTLE)
        return server

    def _admission(self, handler: Handler, rules: Sequence[Obj], name: str, fields: Obj, *,
                   mutating: bool) -> WebhookServer:
        server = self._servers.start(handler)
        kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
        collection = f"{ADMISSION}/{'mutating' if mutating else 'validating'}webhookconfigurations"
        hook = {"name": name, "clientConfig": server.client_config(), "rules": list(rules), "sideEffects": "None",
                "admissionReviewVersions": ["v1"], **fields}
        configuration = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                         "metadata": {"generateName": "capstan-test-"}, "webhooks": [hook]}
        made = request(self._api, "POST", collection, body=configuration)
        self._configurations.append(f"{collection}/{made['metadata']['name']}")
        time.sleep(SETTLE)
        return server

    def close(self) -> None:
        try:
            delete(self._api, self._configurations)
            for crd, before in self._conversions.items():
                restored = {**before, "webhook": before.get("webhook")}  # null removes the test's
                request(self._api, "PATCH", f"{CRDS}/{crd}", body={"spec": {"conversion": restored}},
                        content_type="application/merge-patch+json")
        finally:
            self._configurations, self._conversions = [], {}
            self._servers.close()

