"""Webhook token authentication and webhook authorization against real HTTPS webhooks that require the client
certificate the kubeconfig names: what is sent (TokenReview, SubjectAccessReview, v1 and v1beta1), how the
answers decide, what is cached, and what a failing webhook means (401; no opinion); and the identity
configurations the core refuses to start with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from capstan.testing.identities import Authority, ReviewWebhook, start_review_webhook
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import AlwaysDeny, Union, decide
from server.auth.config import SecurityConfig
from server.auth.errors import Unauthorized
from server.auth.setup import ConfigError, start_security
from server.auth.webhook import WebhookAuthorizer, WebhookConfigError, WebhookTokenAuthenticator, load_kubeconfig
from server.callouts.client import Callouts
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.objects.core import Core

Obj = dict[str, Any]


def token_answer(spec: Obj) -> Obj:
    if spec["token"] == "good":
        return {"authenticated": True, "user": {"username": "carol", "uid": "42", "groups": ["remote"],
                                                "extra": {"scopes": ["a", "b"]}}}
    if spec["token"] == "other-audience":
        return {"authenticated": True, "user": {"username": "x"}, "audiences": ["elsewhere"]}
    return {"authenticated": False, "error": "unknown token"}


def sar_answer(spec: Obj) -> Obj:
    attributes = spec.get("resourceAttributes") or {}
    if attributes.get("resource") == "widgets":
        return {"allowed": True, "reason": "widgets are fine"}
    if attributes.get("resource") == "secrets":
        return {"allowed": False, "denied": True, "reason": "never secrets"}
    return {"allowed": False}


@pytest.fixture(scope="module")
def ca() -> Authority:
    return Authority.make()


@pytest.fixture(scope="module")
def hooks(ca: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ReviewWebhook]]:
    started = {"token": start_review_webhook(ca, tmp_path_factory.mktemp("token"), token_answer),
               "sar": start_review_webhook(ca, tmp_path_factory.mktemp("sar"), sar_answer)}
    try:
        yield started
    finally:
        for hook in started.values():
            hook.server.stop()


@pytest.fixture
def fresh(hooks: dict[str, ReviewWebhook]) -> dict[str, ReviewWebhook]:
    for hook in hooks.values():
        hook.seen.clear()
        hook.fail = False
    return hooks


@pytest.fixture
async def callouts() -> AsyncIterator[Callouts]:
    client = Callouts()
    try:
        yield client
    finally:
        await client.close()


def kubeconfig(hook: ReviewWebhook, ca: Authority, path: Path) -> Path:
    return hook.kubeconfig(path, ca, ca.issue("kube-apiserver", server=False))


TOKEN_CASES = [
    ("v1", "good", UserInfo("carol", "42", ("remote",), (("scopes", ("a", "b")),))),
    ("v1beta1", "good", UserInfo("carol", "42", ("remote",), (("scopes", ("a", "b")),))),
    ("v1", "bad", None),
    ("v1", "other-audience", "token audiences is invalid"),
]


@pytest.mark.parametrize(("version", "token", "expected"), TOKEN_CASES)
async def test_token_reviews_decide_who_a_token_is(ca: Authority, fresh: dict[str, ReviewWebhook], tmp_path: Path,
                                                   callouts: Callouts, version: str, token: str,
                                                   expected: UserInfo | str | None) -> None:
    hook = fresh["token"]
    authenticator = WebhookTokenAuthenticator(callouts, load_kubeconfig(kubeconfig(hook, ca, tmp_path / "kc")),
                                              version=version, audiences=("https://kubernetes.default.svc",))
    if isinstance(expected, str):
        with pytest.raises(Unauthorized, match=expected):
            await authenticator.authenticate(Credentials(token=token))
    else:
        assert await authenticator.authenticate(Credentials(token=token)) == expected
    sent = hook.seen[0]
    assert sent["apiVersion"] == f"authentication.k8s.io/{version}" and sent["kind"] == "TokenReview"
    assert sent["spec"] == {"token": token, "audiences": ["https://kubernetes.default.svc"]}


async def test_token_answers_are_cached_and_failures_are_401_not_cached(
        ca: Authority, fresh: dict[str, ReviewWebhook], tmp_path: Path, callouts: Callouts) -> None:
    hook = fresh["token"]
    authenticator = WebhookTokenAuthenticator(callouts, load_kubeconfig(kubeconfig(hook, ca, tmp_path / "kc")))
    for _ in range(3):
        assert await authenticator.authenticate(Credentials(token="good")) is not None
        assert await authenticator.authenticate(Credentials(token="bad")) is None
    assert len(hook.seen) == 2  # one review per token within the TTL
    hook.fail = True
    for _ in range(2):
        with pytest.raises(Unauthorized, match="answered 500"):
            await authenticator.authenticate(Credentials(token="new"))
    assert len(hook.seen) == 4
    uncached = WebhookTokenAuthenticator(callouts, load_kubeconfig(kubeconfig(hook, ca, tmp_path / "kc2")),
                                         cache_ttl=0)
    hook.fail = False
    await uncached.authenticate(Credentials(token="good"))
    await uncached.authenticate(Credentials(token="good"))
    assert len(hook.seen) == 6


async def test_a_client_certificate_the_webhook_does_not_trust_is_refused(
        ca: Authority, fresh: dict[str, ReviewWebhook], tmp_path: Path, callouts: Callouts) -> None:
    stranger = Authority.make("stranger")
    path = fresh["token"].kubeconfig(tmp_path / "kc", ca, stranger.issue("kube-apiserver", server=False))
    authenticator = WebhookTokenAuthenticator(callouts, load_kubeconfig(path))
    with pytest.raises(Unauthorized, match="token webhook"):
        await authenticator.authenticate(Credentials(token="good"))


ALICE = UserInfo("alice", "7", ("devs", "system:authenticated"), (("team", ("blue",)),))
SAR_CASES = [
    ("v1", Attributes(ALICE, "get", resource="widgets", api_group="example.com", api_version="v1",
                      namespace="ns", name="w"), Decision.ALLOW, "widgets are fine"),
    ("v1", Attributes(ALICE, "list", resource="secrets", namespace="ns"), Decision.DENY, "never secrets"),
    ("v1", Attributes(ALICE, "get", resource="pods", namespace="ns"), Decision.NO_OPINION, ""),
    ("v1beta1", Attributes(ALICE, "get", resource_request=False, path="/healthz"), Decision.NO_OPINION, ""),
]


@pytest.mark.parametrize(("version", "attributes", "decision", "reason"), SAR_CASES)
async def test_subject_access_reviews_decide(ca: Authority, fresh: dict[str, ReviewWebhook], tmp_path: Path,
                                             callouts: Callouts, version: str, attributes: Attributes,
                                             decision: Decision, reason: str) -> None:
    hook = fresh["sar"]
    authorizer = WebhookAuthorizer(callouts, load_kubeconfig(kubeconfig(hook, ca, tmp_path / "kc")),
                                   version=version)
    assert await authorizer.decide(attributes) == (decision, reason)
    sent = hook.seen[0]
    assert sent["apiVersion"] == f"authorization.k8s.io/{version}" and sent["kind"] == "SubjectAccessReview"
    spec = sent["spec"]
    assert spec["user"] == "alice" and spec["uid"] == "7" and spec["extra"] == {"team": ["blue"]}
    assert spec["groups" if version == "v1" else "group"] == ["devs", "system:authenticated"]
    if attributes.resource_request:
        assert spec["resourceAttributes"]["resource"] == attributes.resource
        assert spec["resourceAttributes"]["verb"] == attributes.verb
    else:
        assert spec["nonResourceAttributes"] == {"path": "/healthz", "verb": "get"}


async def test_decisions_are_cached_by_outcome_and_failures_have_no_opinion(
        ca: Authority, fresh: dict[str, ReviewWebhook], tmp_path: Path, callouts: Callouts) -> None:
    hook = fresh["sar"]
    authorizer = WebhookAuthorizer(callouts, load_kubeconfig(kubeconfig(hook, ca, tmp_path / "kc")),
                                   authorized_ttl=60, unauthorized_ttl=0)
    allowed = Attributes(ALICE, "get", resource="widgets")
    refused = Attributes(ALICE, "get", resource="pods")
    for _ in range(3):
        assert (await authorizer.decide(allowed))[0] is Decision.ALLOW
        assert (await authorizer.decide(refused))[0] is Decision.NO_OPINION
    assert len(hook.seen) == 4  # the allow once, the refusal (TTL 0) every time
    assert authorizer.authorize(allowed)[0] is Decision.ALLOW  # the synchronous path answers from the cache
    assert authorizer.authorize(refused)[0] is Decision.NO_OPINION
    hook.fail = True
    decision, reason = await authorizer.decide(Attributes(ALICE, "get", resource="gadgets"))
    assert decision is Decision.NO_OPINION and "answered 500" in reason
    # a union asks the next mode after the webhook's no-opinion
    union = Union((authorizer, AlwaysDeny()))
    assert await decide(union, Attributes(ALICE, "get", resource="gadgets")) == (
        Decision.NO_OPINION, f"{reason}\nEverything is forbidden.")


@pytest.mark.parametrize(("text", "words"), [
    ("not: [a kubeconfig", "invalid webhook kubeconfig"),
    ("{clusters: [{name: a, cluster: {}}]}", "no cluster server URL"),
])
def test_kubeconfigs_that_name_no_server_are_refused(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "kc"
    path.write_text(text)
    with pytest.raises(WebhookConfigError, match=words):
        load_kubeconfig(path)


@pytest.mark.parametrize(("config", "words"), [
    (SecurityConfig(authorization_modes=("Webhook",)), "requires authorization-webhook-config-file"),
    (SecurityConfig(authorization_webhook_config_file=Path("sar.kc")), "go together"),
    (SecurityConfig(oidc_issuer_url="http://issuer.example", oidc_client_id="x"), "'https' required"),
    (SecurityConfig(authentication_token_webhook_config_file=Path("/nonexistent/kc")), "invalid webhook kubeconfig"),
])
async def test_configurations_the_core_refuses(core: Core, config: SecurityConfig, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        await start_security(core, config)
