"""Issuing service account tokens: kube's serviceaccount.Claims and JWTTokenGenerator as of 1.28.

A token is a JWS signed with the signing key (RS256 for RSA, ES256/384/512 for ECDSA), header `alg` and `kid`
(the key's id, keys.py) and no `typ`, as go-jose writes it. Claims, exactly 1.28's (no `jti`, which 1.29 added):
  iss  the configured issuer             sub  system:serviceaccount:<ns>:<name>
  aud  the audiences (a list)            iat, nbf  now; exp  now + expirationSeconds
  kubernetes.io  {namespace, serviceaccount {name, uid}, pod {name, uid} | secret {name, uid}}
`warnafter` belongs to kube's extended pod tokens (--service-account-extend-token-expiration), which nothing
here issues.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jwt

from server.auth.serviceaccounts.keys import PrivateKey, algorithm, key_id
from server.machinery.user import service_account_username


@dataclass(frozen=True, slots=True)
class ObjectRef:
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Account:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Issued:
    token: str
    expires: int  # unix seconds: the token's exp


class TokenIssuer:
    def __init__(self, *, issuer: str, signing_key: PrivateKey, audiences: tuple[str, ...]) -> None:
        """audiences: the API server's own (kube's --api-audiences), given to a request that names none."""
        self.issuer = issuer
        self.audiences = audiences
        self._key = signing_key
        public = signing_key.public_key()
        self._algorithm = algorithm(public)
        self._kid = key_id(public)

    def claims(self, account: Account, *, audiences: tuple[str, ...], expiration_seconds: int,
               pod: ObjectRef | None = None, secret: ObjectRef | None = None,
               now: int | None = None) -> dict[str, Any]:
        issued_at = int(time.time()) if now is None else now
        private: dict[str, Any] = {"namespace": account.namespace,
                                   "serviceaccount": {"name": account.name, "uid": account.uid}}
        if pod is not None:
            private["pod"] = {"name": pod.name, "uid": pod.uid}
        elif secret is not None:
            private["secret"] = {"name": secret.name, "uid": secret.uid}
        return {"aud": list(audiences), "exp": issued_at + expiration_seconds, "iat": issued_at,
                "iss": self.issuer, "kubernetes.io": private, "nbf": issued_at,
                "sub": service_account_username(account.namespace, account.name)}

    def sign(self, claims: dict[str, Any]) -> str:
        return jwt.encode(claims, self._key, algorithm=self._algorithm, headers={"kid": self._kid, "typ": None})

    def issue(self, account: Account, *, audiences: tuple[str, ...], expiration_seconds: int,
              pod: ObjectRef | None = None, secret: ObjectRef | None = None, now: int | None = None) -> Issued:
        claims = self.claims(account, audiences=audiences, expiration_seconds=expiration_seconds, pod=pod,
                             secret=secret, now=now)
        return Issued(self.sign(claims), int(claims["exp"]))
