"""Building the security chain from the command's SecurityConfig, once, when the core starts.

`start_security` answers the GuardedCore both transports call, and `is_proxy` (whether a TLS client certificate
is a front proxy's), which the gRPC servicer needs to read forwarded credentials. With `insecure` every request
is system:unsecured and everything is allowed; otherwise authenticators are kube's union (authn/union.py) in
kube's order (request header, x509, static tokens, service account tokens, OIDC, the token webhook) and
authorizers system:masters' (kube's privileged groups), then the --authorization-mode list in order (Node, RBAC,
Webhook, AlwaysAllow, AlwaysDeny).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from server.auth.audit.auditor import Auditor
from server.auth.audit.policy import PolicyError
from server.auth.audit.start import start_audit
from server.auth.authn import Authenticator as PartAuthenticator
from server.auth.authn import tokenfile
from server.auth.authn.oidc import OidcAuthenticator, OidcConfig, OidcConfigError
from server.auth.authn.requestheader import RequestHeaderAuthenticator
from server.auth.authn.union import UnionAuthenticator
from server.auth.authn.x509 import X509Authenticator
from server.auth.authorizer import AlwaysAllow, AlwaysDeny, Authorizer, PrivilegedGroups, Union
from server.auth.config import SecurityConfig
from server.auth.guard import GuardedCore, unguarded
from server.auth.serviceaccounts import ServiceAccounts, start_service_accounts
from server.auth.webhook import (
    VERSIONS,
    WebhookAuthorizer,
    WebhookConfigError,
    WebhookTokenAuthenticator,
    load_kubeconfig,
)
from server.callouts.client import Callouts, ClientConfig
from server.machinery.pem import Verifier, load_bundle
from server.objects.core import Core
from server.runtime.election import Singleton, awaitable

MODES = ("Node", "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny")


class ConfigError(ValueError):
    """The configuration cannot start (an unknown mode, an unreadable file): the command exits with it."""


@dataclass
class Security:
    guard: GuardedCore
    is_proxy: Callable[[bytes], bool]
    accounts: ServiceAccounts | None = None  # tokens and the issuer's documents
    stops: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    singletons: list[Singleton] = field(default_factory=list)  # elected=True: for the caller to start and stop

    async def stop(self) -> None:
        for stop in reversed(self.stops):
            await stop()


def _never(der: bytes) -> bool:
    return False


async def start_security(core: Core, config: SecurityConfig, *, elected: bool = False) -> Security:
    """ConfigError when the configuration cannot start (an unknown mode, an unreadable file). elected=True
    does not start the ClusterRole aggregation controller but lists it in Security.singletons, for the caller
    to run while it leads."""
    external = _external(config)  # first: flags kube refuses start nothing
    try:
        auditor = start_audit(config, core.registry)  # a policy kube refuses starts nothing
    except PolicyError as err:
        raise ConfigError(str(err)) from None
    try:
        accounts = await start_service_accounts(core, config)
    except (OSError, ValueError) as err:
        raise ConfigError(str(err)) from None
    singletons: list[Singleton] = []
    if config.insecure:
        return _audited(Security(unguarded(core), _never, accounts, [accounts.stop], singletons), auditor)
    unknown = [m for m in config.authorization_modes if m not in MODES]
    if unknown or not config.authorization_modes:
        raise ConfigError(f"authorization-mode {','.join(unknown)!r} is not one of {', '.join(MODES)}")
    try:
        client_cas = load_bundle(config.client_ca_file)
        proxy_cas = load_bundle(config.requestheader_client_ca_file)
        tokens = tokenfile.load(config.token_auth_file) if config.token_auth_file else {}
    except (OSError, ValueError) as err:
        raise ConfigError(str(err)) from None
    requestheader = RequestHeaderAuthenticator(Verifier(proxy_cas), config.requestheader_allowed_names)
    connection: list[PartAuthenticator] = [requestheader, X509Authenticator(Verifier(client_cas))]
    static = tokenfile.TokenFileAuthenticator(tokens)
    token_authenticators: list[PartAuthenticator] = [static]
    if accounts.authenticator is not None:  # caches its own verifications, checks the objects on every call
        token_authenticators.append(accounts.authenticator)
    security = Security(unguarded(core), requestheader.is_proxy, accounts, [accounts.stop], singletons)
    await _external_authenticators(config, external, token_authenticators, security)
    cacheable: list[PartAuthenticator] = [static, *(a for a in token_authenticators
                                                    if isinstance(a, OidcAuthenticator))]
    authorizers: list[Authorizer] = [PrivilegedGroups()]
    for mode in config.authorization_modes:
        if mode == "Webhook":
            authorizers.append(_webhook_authorizer(config, external.authorization_webhook, security))
        elif mode == "Node":
            from server.auth.node import start_node_authorizer

            node = await start_node_authorizer(core)
            security.stops.append(node.stop)
            authorizers.append(node)
        elif mode == "AlwaysAllow":
            authorizers.append(AlwaysAllow())
        elif mode == "AlwaysDeny":
            authorizers.append(AlwaysDeny())
        else:
            from server.auth.rbac.start import start_rbac

            rbac = await start_rbac(core, aggregate=not elected)
            security.stops.append(rbac.stop)
            if elected:
                security.singletons.append(Singleton("AggregationController", awaitable(rbac.aggregation.start),
                                                     rbac.aggregation.stop))
            authorizers.append(rbac)
    authenticator = UnionAuthenticator(connection=connection, tokens=token_authenticators,
                                       anonymous=config.anonymous_auth, cacheable_tokens=cacheable)
    documents = accounts.documents
    security.guard = GuardedCore(core, authenticator, Union(tuple(authorizers)), documents,
                                 audiences=(config.service_account_issuer,))
    return _audited(security, auditor)


@dataclass(frozen=True, slots=True)
class _External:
    """The identity services outside the server, their flags checked and kubeconfigs read before anything
    starts."""

    oidc: OidcConfig | None = None
    token_webhook: ClientConfig | None = None
    authorization_webhook: ClientConfig | None = None


def _external(config: SecurityConfig) -> _External:
    if ("Webhook" in config.authorization_modes) != bool(config.authorization_webhook_config_file):
        raise ConfigError("authorization-mode Webhook and authorization-webhook-config-file go together"
                          if config.authorization_webhook_config_file else
                          "authorization-mode Webhook requires authorization-webhook-config-file")
    for flag, version in (("authentication-token-webhook-version", config.authentication_token_webhook_version),
                          ("authorization-webhook-version", config.authorization_webhook_version)):
        if version not in VERSIONS:
            raise ConfigError(f"unsupported {flag} {version!r}")
    oidc = None
    if config.oidc_issuer_url:
        oidc = OidcConfig(config.oidc_issuer_url, config.oidc_client_id, config.oidc_username_claim,
                          config.oidc_username_prefix, config.oidc_groups_claim, config.oidc_groups_prefix,
                          config.oidc_required_claims, config.oidc_ca_file, config.oidc_signing_algs)
    try:
        if oidc is not None:
            oidc.check()
        tokens = authorization = None
        if config.authentication_token_webhook_config_file:
            tokens = load_kubeconfig(config.authentication_token_webhook_config_file)
        if config.authorization_webhook_config_file:
            authorization = load_kubeconfig(config.authorization_webhook_config_file)
    except (OidcConfigError, WebhookConfigError) as err:
        raise ConfigError(str(err)) from None
    return _External(oidc, tokens, authorization)


async def _external_authenticators(config: SecurityConfig, external: _External, tokens: list[PartAuthenticator],
                                   security: Security) -> None:
    """OIDC and the token webhook, after the service account tokens, as kube orders them."""
    if external.oidc is not None:
        try:
            oidc = OidcAuthenticator(external.oidc)
        except OidcConfigError as err:  # an oidc-ca-file that cannot be read
            raise ConfigError(str(err)) from None
        oidc.start()
        security.stops.append(oidc.stop)
        tokens.append(oidc)
    if external.token_webhook is not None:
        callouts = Callouts()
        security.stops.append(callouts.close)
        tokens.append(WebhookTokenAuthenticator(
            callouts, external.token_webhook, version=config.authentication_token_webhook_version,
            cache_ttl=config.authentication_token_webhook_cache_ttl, audiences=(config.service_account_issuer,)))


def _webhook_authorizer(config: SecurityConfig, client: ClientConfig | None, security: Security) -> WebhookAuthorizer:
    assert client is not None
    callouts = Callouts()
    security.stops.append(callouts.close)
    return WebhookAuthorizer(callouts, client, version=config.authorization_webhook_version,
                             authorized_ttl=config.authorization_webhook_cache_authorized_ttl,
                             unauthorized_ttl=config.authorization_webhook_cache_unauthorized_ttl)


def _audited(security: Security, auditor: Auditor | None) -> Security:
    """Every call of the guard reports to the auditor, whose log is closed last when security stops."""
    if auditor is not None:
        security.guard.auditor = auditor
        security.stops.insert(0, auditor.stop)
    return security
