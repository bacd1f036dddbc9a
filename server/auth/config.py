"""How the core's security is configured: kube-apiserver's authentication, authorization and audit flags as
one frozen value, filled by the `capstan` command (capstan/cli/commands.py) and read once when the core starts.

Files are paths the command resolved (the generated cert dir's defaults included); an empty path means the
feature is off. `insecure` is `capstan serve --insecure`: every request runs as system:unsecured
(system:masters) and nothing is authorized — the throwaway mode for tests and demos.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    insecure: bool = False
    # --authorization-mode: "Node", "RBAC" (default), "Webhook", "AlwaysAllow", "AlwaysDeny", tried in order
    # (kube's union).
    authorization_modes: tuple[str, ...] = ("RBAC",)
    anonymous_auth: bool = True
    # --client-ca-file: CAs whose client certificates authenticate (CN = user, O = groups).
    client_ca_file: Path | None = None
    # --token-auth-file: kube's CSV (token,user,uid,"group1,group2").
    token_auth_file: Path | None = None
    # Service account tokens: issued with the signing key, verified with every key file (the signing key's
    # public half always among them).
    service_account_issuer: str = DEFAULT_ISSUER
    service_account_key_files: tuple[Path, ...] = ()
    service_account_signing_key_file: Path | None = None
    # Request-header (front proxy) authentication: a client certificate from this CA (and, when the list is
    # not empty, with one of these common names) may assert the user in the header/metadata names below.
    requestheader_client_ca_file: Path | None = None
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ("X-Remote-User",)
    requestheader_group_headers: tuple[str, ...] = ("X-Remote-Group",)
    requestheader_extra_headers_prefix: tuple[str, ...] = ("X-Remote-Extra-",)
    # The CA clients trust for this server: published as the kube-root-ca.crt ConfigMap in every namespace.
    root_ca_file: Path | None = None
    # kube-controller-manager's --cluster-signing-cert-file and --cluster-signing-key-file: the CA that signs
    # approved kubernetes.io/kube-apiserver-client CertificateSigningRequests (server/controllers/csrsigning.py).
    cluster_signing_cert_file: Path | None = None
    cluster_signing_key_file: Path | None = None
    # OpenID Connect (kube's --oidc-*; server/auth/authn/oidc.py): on when oidc_issuer_url is set.
    oidc_issuer_url: str = ""
    oidc_client_id: str = ""
    oidc_username_claim: str = "sub"
    oidc_username_prefix: str = ""
    oidc_groups_claim: str = ""
    oidc_groups_prefix: str = ""
    oidc_required_claims: tuple[tuple[str, str], ...] = ()
    oidc_ca_file: Path | None = None
    oidc_signing_algs: tuple[str, ...] = ("RS256",)
    # Webhook token authentication and webhook authorization (server/auth/webhook.py): kubeconfig files naming
    # the remote service, the review API version, and how long answers are cached (seconds).
    authentication_token_webhook_config_file: Path | None = None
    authentication_token_webhook_version: str = "v1beta1"
    authentication_token_webhook_cache_ttl: float = 120.0
    authorization_webhook_config_file: Path | None = None
    authorization_webhook_version: str = "v1beta1"
    authorization_webhook_cache_authorized_ttl: float = 300.0
    authorization_webhook_cache_unauthorized_ttl: float = 30.0
    audit_log_path: str = ""  # "-" is standard output, as kube's
    audit_policy_file: Path | None = None
    audit_log_maxsize: int = 0  # megabytes before rotating; 0 is lumberjack's (and kube's) 100
    audit_log_maxbackup: int = 0
    audit_log_shared: bool = False  # other processes append to the same file: the workers of one server


INSECURE = SecurityConfig(insecure=True, authorization_modes=("AlwaysAllow",))
