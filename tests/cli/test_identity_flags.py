"""kube-apiserver's identity flags (`--oidc-*`, the token and authorization webhooks, the authorization modes) as
`capstan serve` and `capstan core` read them into the core's SecurityConfig, with kube's defaults, and the
values kube refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from capstan.cli import pki
from capstan.cli.commands import _security, parse_args


@pytest.mark.parametrize("command", ["serve", "core"])
def test_the_flags_reach_the_security_config(command: str, tmp_path: Path) -> None:
    args = parse_args([
        command, "--data-dir", str(tmp_path), "--authorization-mode", "Node,RBAC,Webhook",
        "--oidc-issuer-url", "https://issuer.example", "--oidc-client-id", "capstan",
        "--oidc-username-claim", "email", "--oidc-groups-claim", "groups", "--oidc-groups-prefix", "oidc:",
        "--oidc-required-claim", "hd=example.com", "--oidc-required-claim", "tier=gold",
        "--oidc-signing-algs", "RS256,ES256", "--authentication-token-webhook-config-file", "tokens.kc",
        "--authentication-token-webhook-cache-ttl", "1m30s", "--authorization-webhook-config-file", "sar.kc",
        "--authorization-webhook-version", "v1", "--authorization-webhook-cache-unauthorized-ttl", "10s"])
    config = _security(args, pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.0.0.1",
                                        serving=True))
    assert config.authorization_modes == ("Node", "RBAC", "Webhook")
    assert (config.oidc_issuer_url, config.oidc_client_id, config.oidc_username_claim) == (
        "https://issuer.example", "capstan", "email")
    assert config.oidc_required_claims == (("hd", "example.com"), ("tier", "gold"))
    assert config.oidc_signing_algs == ("RS256", "ES256")
    assert (config.authentication_token_webhook_config_file, config.authentication_token_webhook_cache_ttl,
            config.authentication_token_webhook_version) == (Path("tokens.kc"), 90.0, "v1beta1")
    assert (config.authorization_webhook_version, config.authorization_webhook_cache_authorized_ttl,
            config.authorization_webhook_cache_unauthorized_ttl) == ("v1", 300.0, 10.0)


@pytest.mark.parametrize("argv", [
    ["--authorization-mode", "ABAC"],
    ["--oidc-required-claim", "no-equals-sign"],
    ["--authentication-token-webhook-cache-ttl", "2 minutes"],
    ["--authorization-webhook-version", "v2"],
])
def test_flags_kube_refuses(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["serve", *argv])
