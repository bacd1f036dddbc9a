"""Admission webhooks over HTTP, through both transports: real HTTPS webhooks started by the test; a denial is
kube's Status with the webhook's code, a webhook's warnings are Warning headers, a mutation shows in the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from capstan.testing.webhooks import serve
from tests.gateway.conftest import Server
from tests.server.admission.test_admission_webhooks import add_label, allow_warning, configmap, deny, webhook

Obj = dict[str, Any]
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


async def configure(server: Server, resource: str, hook: Obj) -> None:
    kind = "MutatingWebhookConfiguration" if resource.startswith("mutating") else "ValidatingWebhookConfiguration"
    await server.create(f"{ADMISSION}/{resource}", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                                    "metadata": {"name": "hooks"}, "webhooks": [hook]})
    webhooks = server.core.webhooks
    assert webhooks is not None
    for _ in range(200):
        if webhooks.hooks(resource.startswith("mutating")):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the configuration never reached admission")


# (case, configuration resource, handler, HTTP status, Status message or "", Warning headers, labels answered)
CASES: list[tuple[str, str, Callable[[Obj], Obj], int, str, list[str], Obj | None]] = [
    ("denied", "validatingwebhookconfigurations", deny, 403,
     'admission webhook "v.example.com" denied the request: no configmaps today', [], None),
    ("warned", "validatingwebhookconfigurations", allow_warning, 201, "", ['299 - "careful with c"'], None),
    ("mutated", "mutatingwebhookconfigurations", add_label, 201, "", [], {"stamped": "yes"}),
]


@pytest.mark.parametrize(("resource", "handler", "code", "message", "warnings", "labels"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_admission_webhooks_over_http(server: Server, resource: str, handler: Callable[[Obj], Obj], code: int,
                                            message: str, warnings: list[str], labels: Obj | None) -> None:
    async with serve(handler) as hook:
        await configure(server, resource, webhook("v.example.com", hook.client_config()))
        answer = await server.request("POST", CONFIGMAPS, json=configmap("c"))
        assert answer.status == code, answer.body
        assert answer.headers.getall("Warning", []) == warnings
        body = answer.json()
        if message:
            assert (body["kind"], body["code"], body["reason"], body["message"]) == ("Status", code, "Forbidden",
                                                                                     message)
        else:
            assert body["metadata"].get("labels") == labels
        assert len(hook.requests) == 1


def _seconds(path: str) -> float:
    """The ?timeout= a webhook was called with, as seconds (Go's duration as Capstan writes it: `10s`, `2.9s`)."""
    value = path.partition("timeout=")[2].partition("&")[0]
    assert value.endswith("s"), path
    return float(value[:-1])


@pytest.mark.parametrize(("query", "lowest", "highest"), [("", 10.0, 10.0), ("?timeout=3s", 1.0, 3.1)],
                         ids=["no request timeout", "request timeout sooner"])
async def test_webhook_timeout_is_capped_by_the_request_deadline(server: Server, query: str, lowest: float,
                                                                 highest: float) -> None:
    """kube calls a webhook within its timeoutSeconds or what remains of the request's deadline (?timeout, at
    most --request-timeout), whichever is sooner; the split form's gateway sends that deadline to the core as
    the call's gRPC deadline (whose wire form rounds up by milliseconds)."""
    async with serve(lambda request: {"allowed": True}) as hook:
        await configure(server, "validatingwebhookconfigurations",
                        webhook("v.example.com", hook.client_config(), timeoutSeconds=10))
        answer = await server.request("POST", CONFIGMAPS + query, json=configmap("c"))
        assert answer.status == 201, answer.body
    (called,) = hook.paths
    assert lowest <= _seconds(called) <= highest, called


async def test_webhook_metrics_on_the_gateways_metrics(server: Server) -> None:
    """apiserver_admission_webhook_* are on /metrics whichever process runs admission: `capstan serve`'s gateway
    serves its core's collectors, a split gateway asks its core for them (the core's Metrics call)."""
    name = f"metered-{server.transport}.example.com"
    async with serve(deny) as hook:
        await configure(server, "validatingwebhookconfigurations", webhook(name, hook.client_config()))
        answer = await server.request("POST", CONFIGMAPS, json=configmap("c"))
        assert answer.status == 403
    scraped = await server.request("GET", "/metrics")
    assert scraped.status == 200
    text = scraped.body.decode() if isinstance(scraped.body, bytes) else str(scraped.body)
    assert "apiserver_request_total" in text  # the gateway's own figures first
    assert (f'apiserver_admission_webhook_request_total{{code="403",name="{name}",operation="CREATE",'
            f'rejected="true",type="validate"}} 1.0') in text
    assert (f'apiserver_admission_webhook_rejection_count_total{{error_type="no_error",name="{name}",'
            f'operation="CREATE",rejection_code="403",type="validate"}} 1.0') in text
