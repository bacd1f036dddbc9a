"""Secret-based service account tokens, as kube 1.28 issues and accepts them (pkg/serviceaccount/legacy.go).

A `kubernetes.io/service-account-token` Secret names its ServiceAccount in an annotation; the tokens controller
(server/controllers/tokens.py) fills its `token`, `ca.crt` and `namespace`, and the authenticator
(authenticator.py) accepts the token for as long as the Secret holds exactly it and the ServiceAccount it names
exists with the uid it names. Such a token never expires and names no audience, so it is good for the API
server's own audiences.

The token is a JWS signed with the service account signing key, header `alg` and `kid` only (go-jose writes no
`typ`), issuer `kubernetes/serviceaccount`, and these claims (LegacyClaims):
  sub  system:serviceaccount:<ns>:<name>
  kubernetes.io/serviceaccount/namespace, .../secret.name, .../service-account.name, .../service-account.uid
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import jwt

from server.auth.serviceaccounts.keys import PrivateKey, algorithm, key_id
from server.machinery.user import SERVICE_ACCOUNT_PREFIX, service_account_username

ISSUER = "kubernetes/serviceaccount"
LAST_USED_LABEL = "kubernetes.io/legacy-token-last-used"  # the day a token was last used, UTC, set by the server
SECRET_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"
TOKEN_KEY, CA_KEY, NAMESPACE_KEY = "token", "ca.crt", "namespace"  # the Secret's data a controller fills

_NAMESPACE = "kubernetes.io/serviceaccount/namespace"
_SECRET = "kubernetes.io/serviceaccount/secret.name"
_ACCOUNT = "kubernetes.io/serviceaccount/service-account.name"
_ACCOUNT_UID = "kubernetes.io/serviceaccount/service-account.uid"


def signed(claims: dict[str, Any], key: PrivateKey) -> str:
    """A compact JWS of `claims` as kube's JWTTokenGenerator signs one: header alg and kid, keys sorted."""
    public = key.public_key()
    return jwt.encode(dict(sorted(claims.items())), key, algorithm=algorithm(public),
                      headers={"kid": key_id(public), "typ": None})


def token_for(key: PrivateKey, *, namespace: str, account: str, account_uid: str, secret: str) -> str:
    """The token the tokens controller puts into the Secret `secret` for the ServiceAccount `account`."""
    return signed({"iss": ISSUER, "sub": service_account_username(namespace, account), _NAMESPACE: namespace,
                   _SECRET: secret, _ACCOUNT: account, _ACCOUNT_UID: account_uid}, key)


def digest(token: bytes) -> bytes:
    """What the indexes keep of a Secret's token to compare a presented one with (never the token itself)."""
    return hashlib.sha256(token).digest()


class Refused(ValueError):
    """The legacy token's claims are not kube's: the message is the validator's."""


@dataclass(frozen=True, slots=True)
class Claims:
    namespace: str
    account: str
    account_uid: str
    secret: str


def claims_of(claims: dict[str, Any]) -> Claims:
    """The legacy validator's claim checks, in its order (Refused with its words)."""
    def text(name: str) -> str:
        value = claims.get(name, "")
        if not isinstance(value, str):
            raise Refused(f"{name} claim is malformed")
        return value

    subject = text("sub")
    if not subject:
        raise Refused("sub claim is missing")
    found = Claims(text(_NAMESPACE), text(_ACCOUNT), text(_ACCOUNT_UID), text(_SECRET))
    for value, name in ((found.namespace, "namespace"), (found.secret, "secretName"),
                        (found.account, "serviceAccountName"), (found.account_uid, "serviceAccountUID")):
        if not value:
            raise Refused(f"{name} claim is missing")
    parts = subject[len(SERVICE_ACCOUNT_PREFIX):].split(":") if subject.startswith(SERVICE_ACCOUNT_PREFIX) else []
    if len(parts) != 2 or parts[0] != found.namespace or parts[1] != found.account:
        raise Refused("sub claim is invalid")
    return found
